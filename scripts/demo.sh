#!/usr/bin/env bash
# Builds everything, compiles examples/saxpy.c with clang-19 (and examples/saxpy.f90 with
# flang-22) for x86-64 offloading and runs it against our runtime, then lists plugins and
# devices; then runs the program built for an NVIDIA GPU through our CUDA plugin on the
# emulated CUDA driver.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang-19 >/dev/null || { echo "clang-19 is missing: run .ci/install-deps.sh" >&2; exit 1; }
scripts/build-dist.sh
mkdir -p target/demo
clang-19 -O2 -fopenmp -fopenmp-targets=x86_64-pc-linux-gnu examples/saxpy.c -o target/demo/saxpy
echo "--- running target/demo/saxpy with LD_LIBRARY_PATH=dist/lib"
LD_LIBRARY_PATH=$PWD/dist/lib target/demo/saxpy
if command -v flang-22 >/dev/null; then
    flang-22 -O2 -fopenmp -fopenmp-targets=x86_64-pc-linux-gnu -L"$PWD/dist/lib" -L/usr/lib/llvm-19/lib \
        -Xoffload-linker -lomptarget-host-device examples/saxpy.f90 -o target/demo/saxpy-f90
    echo "--- running target/demo/saxpy-f90 (flang-22) with LD_LIBRARY_PATH=dist/lib"
    LD_LIBRARY_PATH=$PWD/dist/lib target/demo/saxpy-f90
fi
echo "--- dist/bin/omptarget-info"
dist/bin/omptarget-info
# The same program built for an NVIDIA GPU (sm_90) with an x86-64 twin, run through our CUDA
# plugin on the emulated CUDA driver (dist/emu): no GPU needed. See docs/emulated-drivers.md.
if [ -x /opt/cuda-min/bin/ptxas ]; then
    PATH=/opt/cuda-min/bin:$PATH clang-19 -O2 -fopenmp -foffload-lto \
        -fopenmp-targets=nvptx64-nvidia-cuda,x86_64-pc-linux-gnu \
        -Xopenmp-target=nvptx64-nvidia-cuda -march=sm_90 --cuda-path=/opt/cuda-min \
        --libomptarget-nvptx-bc-path=/usr/lib/llvm-19/lib examples/saxpy.c -o target/demo/saxpy-sm_90 2>/dev/null
    echo "--- running target/demo/saxpy-sm_90 on the emulated CUDA driver (LD_LIBRARY_PATH=dist/emu:dist/lib)"
    LD_LIBRARY_PATH=$PWD/dist/emu:$PWD/dist/lib LIBOMPTARGET_PLUGINS_TO_LOAD=cuda OMP_TARGET_OFFLOAD=mandatory \
        OMPTARGET_EMU_TRACE=$PWD/target/demo/cuda-calls.txt target/demo/saxpy-sm_90
    echo "    $(wc -l <target/demo/cuda-calls.txt) driver calls traced in target/demo/cuda-calls.txt"
    rm -f target/demo/cuda-calls.txt
else
    echo "--- skipping the emulated CUDA run: no NVPTX toolchain in /opt/cuda-min (.ci/install-deps.sh installs it)"
fi
