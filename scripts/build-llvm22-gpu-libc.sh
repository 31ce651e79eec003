#!/usr/bin/env bash
# Builds the part of LLVM 22's GPU C library that works through the RPC server (device printf,
# the stdio file functions, exit/abort/system, malloc/free), which Debian does not package, from
# the libc/ sources scripts/fetch-llvm-offload-tests.sh 22 extracts from Debian's LLVM 22 source
# tarball, with the compile options LLVM's libc/cmake gives a GPU build (LTO bitcode for the
# generic target, the GPU configuration of libc/config/gpu/config.json). Beside each library,
# LLVM 22's device runtime built as LLVM builds it when a GPU libc exists (OMPTARGET_HAS_LIBC:
# its printf, malloc and assert then go to libc instead of its own stand-ins).
#
#   scripts/build-llvm22-gpu-libc.sh [OUT]   (default target/llvm22-gpu-libc)
#
# Writes OUT/<triple>/libc.a and OUT/<triple>/libomptarget-<nvptx|amdgpu>.bc for
# nvptx64-nvidia-cuda and amdgcn-amd-amdhsa; a clang-22 program links both into its device image
# (README, "Device code calling the host"). Idempotent; prints OUT.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/target/llvm22-gpu-libc}
if [ -e "$out/nvptx64-nvidia-cuda/libc.a" ] && [ -e "$out/amdgcn-amd-amdhsa/libc.a" ] &&
    [ -e "$out/nvptx64-nvidia-cuda/libomptarget-nvptx.bc" ] &&
    [ -e "$out/amdgcn-amd-amdhsa/libomptarget-amdgpu.bc" ]; then
    echo "$out"
    exit 0
fi
tests=$("$root/scripts/fetch-llvm-offload-tests.sh" 22)
src=$(cd "$tests/../.." && pwd)
libc=$src/libc
[ -d "$libc/src/stdio/gpu" ] || { echo "no libc/src/stdio/gpu in $src" >&2; exit 1; }

# The entry points whose GPU implementations are RPC requests, and what they need.
sources=("$libc"/src/stdio/gpu/*.cpp "$libc"/src/stdlib/gpu/*.cpp
         "$libc"/src/stdlib/exit.cpp "$libc"/src/stdlib/_Exit.cpp "$libc"/src/stdlib/atexit.cpp
         "$libc"/src/__support/OSUtil/gpu/exit.cpp "$libc"/src/__support/OSUtil/gpu/io.cpp
         "$libc"/src/__support/GPU/allocator.cpp "$libc"/src/__support/RPC/rpc_client.cpp
         "$libc"/src/errno/libc_errno.cpp "$libc"/src/assert/gpu/__assert_fail.cpp)
# libc/cmake/modules/LLVMLibCCompileOptionRules.cmake for a GPU full build, and the values of
# libc/config/gpu/config.json that these sources read. atexit and exit are C++20 there (constinit).
common=(-O3 -flto -nogpulib -fvisibility=hidden -fconvergent-functions -Wno-multi-gpu
        -fno-exceptions -fno-rtti -nostdlibinc -DLIBC_FULL_BUILD -DLIBC_TARGET_OS_IS_GPU
        -DLIBC_COPT_PUBLIC_PACKAGING -DLIBC_NAMESPACE=__llvm_libc_22_1_8_
        -DLIBC_ERRNO_MODE=LIBC_ERRNO_MODE_SHARED -DLIBC_THREAD_MODE=LIBC_THREAD_MODE_SINGLE
        -I"$libc" -I"$libc/include")
build() { # triple extra-options...
    local triple=$1; shift
    local tmp objects=() f std object
    tmp=$(mktemp -d)
    for f in "${sources[@]}"; do
        std=-std=c++17
        case $f in */stdlib/atexit.cpp | */stdlib/exit.cpp) std=-std=c++20 ;; esac
        object=$tmp/$(realpath --relative-to="$libc/src" "$f" | tr / _)
        object=${object%.cpp}.o
        clang++-22 --target="$triple" "$@" $std "${common[@]}" -c "$f" -o "$object"
        objects+=("$object")
    done
    mkdir -p "$out/$triple"
    # Written aside and renamed, so an interrupted build never looks complete.
    /usr/lib/llvm-22/bin/llvm-ar rcs "$tmp/libc.a" "${objects[@]}"
    mv "$tmp/libc.a" "$out/$triple/libc.a"
    rm -rf "$tmp"
}
build nvptx64-nvidia-cuda -Wno-unknown-cuda-version --cuda-feature=+ptx63
build amdgcn-amd-amdhsa -Xclang -mcode-object-version=none
runtime=$(mktemp -d)
"$root/scripts/build-llvm22-device-runtime.sh" --with-libc "$runtime" >/dev/null
mv "$runtime/libomptarget-nvptx.bc" "$out/nvptx64-nvidia-cuda/"
mv "$runtime/libomptarget-amdgpu.bc" "$out/amdgcn-amd-amdhsa/"
rm -rf "$runtime"
echo "$out"
