#!/usr/bin/env bash
# Builds the part of LLVM 19's GPU C library that works through the RPC server (device printf
# and the rpc_fprintf that LLVM 19's device runtime prints with, the stdio file functions,
# exit/abort, malloc/free, rpc_host_call), which Debian does not package, from the libc/
# sources scripts/fetch-llvm-offload-tests.sh 19 extracts from Debian's LLVM 19 source tarball.
# The compile options are those LLVM 19's libc/cmake gives a GPU build (LTO bitcode for the
# generic target, the GPU configuration of libc/config/gpu/config.json), and the archives take
# the form of LLVM 19's libcgpu-<arch>.a (add_gpu_entrypoint_library): each member a host object
# that embeds the member's bitcode as an offloading image of arch `generic`, so that the archive
# goes on the host's link line, as LLVM 19's lit.cfg and clang-19's driver put it.
#
#   scripts/build-llvm19-gpu-libc.sh [OUT]   (default target/llvm19-gpu-libc)
#
# Writes OUT/libcgpu-nvptx.a and OUT/libcgpu-amdgpu.a. Debian's LLVM 19 device runtime for
# AMDGPU was built for a GPU libc (its printf calls rpc_fprintf and reads libc's stdout), so
# kernel printf on gfx90a links only with one. Idempotent; prints OUT.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/target/llvm19-gpu-libc}
if [ -e "$out/libcgpu-nvptx.a" ] && [ -e "$out/libcgpu-amdgpu.a" ]; then
    echo "$out"
    exit 0
fi
tests=$("$root/scripts/fetch-llvm-offload-tests.sh" 19)
src=$(cd "$tests/../.." && pwd)
libc=$src/libc
[ -e "$libc/src/gpu/rpc_fprintf.cpp" ] || { echo "no libc/src/gpu/rpc_fprintf.cpp in $src" >&2; exit 1; }
bin=/usr/lib/llvm-19/bin
# The public headers these sources include are generated in LLVM 19 (newhdrgen, from YAML), as
# its libc/include/CMakeLists.txt does: Debian's python3 with python3-yaml.
headers=$(mktemp -d)
trap 'rm -rf "$headers"' EXIT
for h in stdio stdlib; do
    /usr/bin/python3 "$libc/newhdrgen/yaml_to_classes.py" "$libc/newhdrgen/yaml/$h.yaml" \
        --h_def_file "$libc/include/$h.h.def" --output_dir "$headers" >/dev/null
done

# The entry points whose GPU implementations are RPC requests, and what they need.
sources=("$libc"/src/stdio/gpu/*.cpp "$libc"/src/stdlib/gpu/*.cpp "$libc"/src/gpu/*.cpp
         "$libc"/src/stdlib/exit.cpp "$libc"/src/stdlib/_Exit.cpp "$libc"/src/stdlib/atexit.cpp
         "$libc"/src/__support/OSUtil/gpu/exit.cpp "$libc"/src/__support/OSUtil/gpu/io.cpp
         "$libc"/src/__support/GPU/allocator.cpp "$libc"/src/__support/RPC/rpc_client.cpp
         "$libc"/src/errno/libc_errno.cpp "$libc"/src/assert/gpu/__assert_fail.cpp)
# libc/cmake/modules/LLVMLibCCompileOptionRules.cmake for a GPU full build, and the values of
# libc/config/gpu/config.json that these sources read. atexit and exit are C++20 there (constinit).
common=(-O3 -flto -nogpulib -fvisibility=hidden -fconvergent-functions -Wno-multi-gpu
        -fno-exceptions -fno-rtti -nostdlibinc -DLIBC_FULL_BUILD -DLIBC_TARGET_OS_IS_GPU
        -DLIBC_COPT_PUBLIC_PACKAGING -DLIBC_NAMESPACE=__llvm_libc_19_1_7_
        -DLIBC_ERRNO_MODE=LIBC_ERRNO_MODE_SHARED -I"$libc" -I"$headers" -I"$libc/include")
build() { # name triple image-options compile-options...
    local name=$1 triple=$2 image=$3; shift 3
    local tmp objects=() f base std
    tmp=$(mktemp -d)
    : > "$tmp/stub.cpp"
    for f in "${sources[@]}"; do
        base=$tmp/$(realpath --relative-to="$libc/src" "$f" | tr / _)
        base=${base%.cpp}
        std=-std=c++17
        case $f in */stdlib/atexit.cpp | */stdlib/exit.cpp) std=-std=c++20 ;; esac
        "$bin/clang++" --target="$triple" "$@" $std "${common[@]}" -c "$f" -o "$base.bc"
        # The bitcode as an offloading image, embedded in an empty host object.
        "$bin/clang-offload-packager" -o "$base.gpubin" \
            "--image=file=$base.bc,triple=$triple,arch=generic$image"
        "$bin/clang++" --target=x86_64-pc-linux-gnu -nostdlib -c "$tmp/stub.cpp" \
            -Xclang -fembed-offload-object="$base.gpubin" -o "$base.o"
        objects+=("$base.o")
    done
    mkdir -p "$out"
    # Written aside and renamed, so an interrupted build never looks complete.
    "$bin/llvm-ar" rcs "$tmp/$name" "${objects[@]}"
    mv "$tmp/$name" "$out/$name"
    rm -rf "$tmp"
}
build libcgpu-nvptx.a nvptx64-nvidia-cuda ,feature=+ptx63 -Wno-unknown-cuda-version --cuda-feature=+ptx63
build libcgpu-amdgpu.a amdgcn-amd-amdhsa "" -Xclang -mcode-object-version=none
echo "$out"
