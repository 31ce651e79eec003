#!/usr/bin/env bash
# Installs what the build and tests need beyond Rust and gcc (Debian bookworm):
# clang-19 with LLVM 19's libomp and libomptarget (the reference runtime), clang-22 with llvm-22
# (clang-22 runs its llvm-offload-binary for every offload build) and clang-tools-22 (its
# clang-linker-wrapper), clang-22's omp.h from libomp-22-dev and LLVM 22's runtime from liboffload-22 (both unpacked
# aside: libomp-22-dev conflicts with libomp-19-dev, and LLVM 22's libomptarget.so.22.1 must
# not be on the loader's path, where it would stand in for ours), valgrind (memcheck runs),
# FileCheck and not from llvm-19-tools and llvm-22-tools (LLVM's own test suites),
# lld-19 and rocm-device-libs (AMDGPU code objects; lld-22 links clang-22's, with LLVM 22's
# device runtime that scripts/build-llvm22-device-runtime.sh builds from LLVM 22's sources; clang-tools-19's clang-offload-packager and
# llvm-19's llvm-readelf take them apart in the tests), Debian's HSA runtime libhsa-runtime64-1
# (the AMDGPU plugin loads it; without /dev/kfd its hsa_init fails), and
# the NVPTX toolchain (ptxas and libdevice from NVIDIA's PyPI wheel) for the CUDA plugin's tests,
# Open MPI (openmpi-bin's mpirun, libopenmpi3's libmpi.so.40) for the MPI plugin's tests, and
# elfutils (eu-stack: the stacks of every thread of a program the tests saw hang), and python3
# (scripts/module-cycles.py, which a test runs: no import cycles between a crate's modules),
# and flang-22 and flang-19 (Fortran programs on the host devices: tests/tests/fortran.rs), and
# python3-yaml (LLVM 19's header generator, for scripts/build-llvm19-gpu-libc.sh).
set -euo pipefail
SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
need=""
for cmd in python3 clang-19 clang-22 flang-22 flang-new-19 llvm-offload-binary-22 clang-linker-wrapper-22 valgrind eu-stack FileCheck-19 not-19 FileCheck-22 not-22 ld.lld-19 ld.lld-22 clang-offload-packager-19; do command -v $cmd >/dev/null || need=1; done
[ -e /usr/lib/llvm-19/lib/libomptarget.so.19.1 ] || need=1
[ -e /usr/lib/x86_64-linux-gnu/amdgcn/bitcode/ockl.bc ] || need=1
[ -e /usr/lib/llvm-19/bin/llvm-readelf ] || need=1
/usr/bin/python3 -c 'import yaml' 2>/dev/null || need=1
[ -e /usr/lib/x86_64-linux-gnu/libhsa-runtime64.so.1 ] || need=1
[ -e /usr/lib/x86_64-linux-gnu/libmpi.so.40 ] && command -v mpirun >/dev/null || need=1
if [ -n "$need" ]; then
    $SUDO apt-get update -q
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
        clang-19 libomp-19-dev clang-22 flang-22 flang-19 llvm-22 clang-tools-22 valgrind llvm-19-tools llvm-22-tools \
        lld-19 lld-22 rocm-device-libs libhsa-runtime64-1 clang-tools-19 llvm-19 openmpi-bin libopenmpi3 \
        elfutils python3 python3-yaml
fi
root=${LLVM22_OMP_ROOT:-/opt/llvm22-omp}
if [ ! -e "$root/usr/lib/llvm-22/lib/clang/22/include/omp.h" ] ||
   [ ! -e "$root/usr/lib/llvm-22/lib/libomptarget.so.22.1" ]; then
    tmp=$(mktemp -d)
    (cd "$tmp" && apt-get download libomp-22-dev liboffload-22 >/dev/null &&
     for deb in *.deb; do $SUDO dpkg -x "$deb" "$root"; done)
    rm -rf "$tmp"
fi
$SUDO bash "$(dirname "$0")/../scripts/setup-nvptx-toolchain.sh" "${NVPTX_CUDA_PATH:-/opt/cuda-min}"
echo "dependencies ready"
