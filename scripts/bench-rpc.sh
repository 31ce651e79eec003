#!/usr/bin/env bash
# The cost of device code calling the host, ours beside LLVM 22's runtime on an emulated driver
# (gfx90a on the emulated HSA runtime, or sm_90 on the emulated CUDA driver, each with an x86-64
# twin whose kernels are LLVM's own RPC client): a host-call round trip (__llvm_omp_host_call),
# a device printf round trip (LLVM's GPU libc's exchange), the CPU time of the thread waiting
# for a kernel that waits a second for the host, and the CPU time the process uses in a second
# with no kernel running. The runtimes take turns on the same binary, `rounds` times each, so
# the ratios come from the same stretch of the machine's time.
#
#   scripts/bench-rpc.sh [calls] [rounds] [amdgpu|cuda]      (defaults 2000, 5, amdgpu)
#
# Needs dist/ (scripts/build-dist.sh), LLVM 22's device runtime (scripts/build-llvm22-device-
# runtime.sh), LLVM 22's sources (scripts/fetch-llvm-offload-tests.sh 22), LLVM 22's runtime
# unpacked by .ci/install-deps.sh and, for cuda, the NVPTX toolchain it sets up.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
calls=${1:-2000}
rounds=${2:-5}
gpu=${3:-amdgpu}
src=$(bash "$root/scripts/fetch-llvm-offload-tests.sh" 22 2>/dev/null)
src=${src%/offload/test}
llvm22=${LLVM22_OMP_ROOT:-/opt/llvm22-omp}/usr/lib/llvm-22
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# A run that fails is reported and the rounds go on.
set +o pipefail
case $gpu in
    amdgpu) triple=amdgcn-amd-amdhsa arch=gfx90a lanes=64 runtime=amdgpu
            # clang-22 runs ld.lld for the GPU link: LLVM 22's, through a directory of its own.
            mkdir -p "$work/bin" && ln -s /usr/lib/llvm-22/bin/ld.lld "$work/bin/ld.lld"
            gpu_flags=() ;;
    cuda)   triple=nvptx64-nvidia-cuda arch=sm_90 lanes=32 runtime=nvptx
            cuda=${NVPTX_CUDA_PATH:-/opt/cuda-min}
            mkdir -p "$work/bin" && ln -s "$cuda/bin/ptxas" "$cuda/bin/nvlink" "$work/bin/"
            gpu_flags=(-foffload-lto "--cuda-path=$cuda") ;;
    *) echo "bench-rpc.sh: no emulated driver for '$gpu' (amdgpu or cuda)" >&2; exit 2 ;;
esac
flags=(-O2 -fopenmp -Wno-openmp-target -nogpulib -Wno-unused-command-line-argument
       -Xopenmp-target=$triple -march=$arch -Xoffload-linker-$triple
       "$root/target/llvm22-device-runtime/libomptarget-$runtime.bc" "${gpu_flags[@]}"
       -I"$llvm22/lib/clang/22/include" -I"$src/libc/shared" -I"$src/offload/include"
       -L"$root/dist/lib" -L/usr/lib/llvm-19/lib
       -DTWIN_LANES=$lanes) # the twin's client addresses the mailbox with the GPU's lanes
PATH=$work/bin:$PATH clang++-22 "${flags[@]}" -fopenmp-targets=$triple \
    "$root/tests/programs/rpc_host_call.cpp" -o "$work/prog"
PATH=$work/bin:$PATH clang++-22 "${flags[@]}" -fopenmp-targets=$triple,x86_64-pc-linux-gnu \
    "$root/tests/programs/rpc_host_call.cpp" -o "$work/prog.twin"

run() { # who
    local libs hsa=()
    case $1 in
        # Our AMDGPU plugin opens the HSA runtime HSA_RUNTIME_LIB names, else the system's.
        ours) libs=$root/dist/emu:$root/dist/lib
              hsa=(HSA_RUNTIME_LIB="$root/dist/emu/libhsa-runtime64.so.1") ;;
        llvm22) libs=$root/dist/emu:$llvm22/lib:/usr/lib/llvm-19/lib ;;
    esac
    env -u LIBOMPTARGET_PLUGINS_TO_LOAD -u HSA_RUNTIME_LIB "${hsa[@]}" LD_LIBRARY_PATH="$libs" \
        OMPTARGET_EMU_TWINS="$work/prog.twin" OMP_TARGET_OFFLOAD=mandatory \
        timeout 300 "$work/prog" "$calls" 2>&1 >/dev/null | sed -n 's/^/  /p'
}
echo "# $gpu ($arch): $calls calls each; $rounds rounds, the runtimes taking turns ($(date -u +%F), $(git -C "$root" rev-parse --short HEAD))"
for round in $(seq "$rounds"); do
    for who in ours llvm22; do
        echo "round $round $who:"
        run $who
    done
done
