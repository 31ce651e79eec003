#!/usr/bin/env bash
# Builds LLVM 22's GPU device runtime (openmp/device: the code every OpenMP kernel links, with
# the team reductions and `parallel` regions of clang-22's programs), which Debian does not
# package, from the sources scripts/fetch-llvm-offload-tests.sh 22 extracts from Debian's
# LLVM 22 source tarball. The way LLVM's openmp/device/CMakeLists.txt builds it: each source
# compiled by clang-22 to bitcode for the generic target, then linked into one module.
#
#   scripts/build-llvm22-device-runtime.sh [--with-libc] [OUT]   (default target/llvm22-device-runtime)
#
# --with-libc builds it as LLVM does when a GPU libc is installed (OMPTARGET_HAS_LIBC), for
# scripts/build-llvm22-gpu-libc.sh; OUT then gets the two runtimes only.
#
# Writes OUT/libomptarget-nvptx.bc and OUT/libomptarget-amdgpu.bc, which clang-22 programs link
# with -Xoffload-linker-<triple> (tests/src/lib.rs): the AMDGPU one serves every gfx target,
# gfx942 included. Idempotent; prints OUT.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
with_libc=()
[ "${1:-}" = --with-libc ] && { with_libc=(-DOMPTARGET_HAS_LIBC); shift; }
out=${1:-$root/target/llvm22-device-runtime}
# Debian's rocm-device-libs (ROCm 5.2) stops at gfx940: the two one-constant libraries a gfx942
# build asks for beyond it (its ISA version and code object ABI 6) are made from their gfx940
# and ABI 5 siblings, in OUT/gfx942-device-libs beside links to Debian's others. Only kernels
# that call math functions (ocml) need them; see README "APUs and coherent nodes".
gfx942_libs() {
    local dir=$out/gfx942-device-libs debian=/usr/lib/x86_64-linux-gnu/amdgcn/bitcode
    # The runtime as the library clang-22 links without -nogpulib (-lompdevice), so that a
    # build that links the device libraries by --rocm-device-lib-path finds it by -L.
    if [ ! -e "$out/amdgpu/libompdevice.a" ]; then
        mkdir -p "$out/amdgpu"
        /usr/lib/llvm-22/bin/llvm-ar rcs "$out/amdgpu/.libompdevice.a.part" "$out/libomptarget-amdgpu.bc"
        mv "$out/amdgpu/.libompdevice.a.part" "$out/amdgpu/libompdevice.a"
    fi
    [ -e "$dir/oclc_isa_version_942.bc" ] && return 0
    [ -d "$debian" ] || { echo "no $debian (rocm-device-libs): gfx942 device libraries skipped" >&2; return 0; }
    mkdir -p "$dir"
    for f in "$debian"/*.bc; do ln -sf "$f" "$dir/"; done
    derive() { # from to old-value new-value
        /usr/lib/llvm-22/bin/llvm-dis "$debian/$1" -o - | sed "s/constant i32 $3,/constant i32 $4,/" |
            /usr/lib/llvm-22/bin/llvm-as -o "$dir/.$2.part"
        mv "$dir/.$2.part" "$dir/$2"
    }
    derive oclc_abi_version_500.bc oclc_abi_version_600.bc 500 600
    derive oclc_isa_version_940.bc oclc_isa_version_942.bc 9400 9402
}
if [ -e "$out/libomptarget-nvptx.bc" ] && [ -e "$out/libomptarget-amdgpu.bc" ]; then
    [ ${#with_libc[@]} = 0 ] && gfx942_libs
    echo "$out"
    exit 0
fi
tests=$("$root/scripts/fetch-llvm-offload-tests.sh" 22)
src=$(cd "$tests/../.." && pwd)
[ -e "$src/openmp/device/CMakeLists.txt" ] || { echo "no openmp/device in $src" >&2; exit 1; }

# LLVM's compile options for the runtime (openmp/device/CMakeLists.txt), at its release -O3.
common=(-O3 -flto -std=c++17 -fvisibility=hidden -nogpulib -nostdlibinc -fno-rtti
        -fno-exceptions -fconvergent-functions -Wno-unknown-cuda-version
        -mllvm -vectorize-slp=false -DSHARED_SCRATCHPAD_SIZE=512
        -I"$src/openmp/device/include" -I"$src/libc" -I"$src/offload/include" "${with_libc[@]}")
build() { # name triple extra-options...
    local name=$1 triple=$2; shift 2
    local objects tmp
    tmp=$(mktemp -d)
    objects=()
    for f in "$src"/openmp/device/src/*.cpp; do
        # Stub.cpp is the runtime's host-side placeholder, not part of the GPU library.
        [ "$(basename "$f")" = Stub.cpp ] && continue
        clang++-22 --target="$triple" "${common[@]}" "$@" -c "$f" -o "$tmp/$(basename "$f" .cpp).bc"
        objects+=("$tmp/$(basename "$f" .cpp).bc")
    done
    mkdir -p "$out"
    # Written aside and renamed, so an interrupted build never looks complete.
    /usr/lib/llvm-22/bin/llvm-link "${objects[@]}" -o "$out/.$name.part"
    mv "$out/.$name.part" "$out/$name"
    rm -rf "$tmp"
}
build libomptarget-nvptx.bc nvptx64-nvidia-cuda --cuda-feature=+ptx63
build libomptarget-amdgpu.bc amdgcn-amd-amdhsa -Xclang -mcode-object-version=none
[ ${#with_libc[@]} = 0 ] && gfx942_libs
echo "$out"
