#!/usr/bin/env bash
# Fetches LLVM's offload test suite (offload/test of Debian's source tarball of the installed
# clang's version) for tests/src/llvm_suite.rs. LLVM's test files are not kept in this
# repository, so CI fetches them. For 22, also the sources of LLVM 22's GPU device runtime
# (openmp/device, with the headers it includes from libc/shared and offload/include), which
# Debian does not package: scripts/build-llvm22-device-runtime.sh builds it; its RPC client
# (libc/shared/rpc.h) drives tests/tests/rpc.rs, and the rest of libc/ holds the GPU libc sources
# scripts/build-llvm22-gpu-libc.sh builds. For 19, LLVM 19's libc/: its RPC client
# (src/__support/RPC/rpc.h), the older protocol's judge there, and the GPU libc sources
# scripts/build-llvm19-gpu-libc.sh builds.
#
#   scripts/fetch-llvm-offload-tests.sh [19|22]     (default 19)
#     19: llvm-toolchain-19 1:19.1.7, for clang-19 against LLVM 19's runtime and ours
#     22: llvm-toolchain-22 1:22.1.8, for clang-22 against LLVM 22's runtime and ours
#
# Cache directory: $LLVM_OFFLOAD_SUITE_DIR, else target/llvm-offload-suite/ under the workspace
# (each version in a folder of its own there). Idempotent: nothing is downloaded when the tests
# are already extracted. Prints the path of offload/test.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${LLVM_OFFLOAD_SUITE_DIR:-$root/target/llvm-offload-suite}
# The checksums are those of Debian's signed .dsc files (llvm-toolchain-19_19.1.7-3~deb12u1.dsc,
# llvm-toolchain-22_22.1.8-1~deb12u1.dsc): a truncated or altered download must not turn into a
# silently smaller test suite. The 22.1.8 tarball is served from the main pool (the security
# pool that carries the binaries does not serve it); the bytes are the same.
case ${1:-19} in
    19) name=llvm-toolchain-19_19.1.7
        pool=http://deb.debian.org/debian/pool/main/l/llvm-toolchain-19
        sha256=ae498f3bc58ae2d9f64ef5f0c035c4240152bf015a5b7738b15c22e93bdc97ce ;;
    22) name=llvm-toolchain-22_22.1.8
        pool=http://deb.debian.org/debian/pool/main/l/llvm-toolchain-22
        sha256=b49b9277aef97616320b2da259e1f8174c65b0ce2fbe2e8629644a97693402fe ;;
    *) echo "usage: $0 [19|22]" >&2; exit 2 ;;
esac
tarball=$name.orig.tar.xz
url=${LLVM_OFFLOAD_SUITE_URL:-$pool/$tarball}
tests=$dir/$name/offload/test
parts=('*/offload/test/*')
[ "${1:-19}" = 22 ] && parts+=('*/openmp/device/*' '*/libc/*' '*/offload/include/*')
[ "${1:-19}" = 19 ] && parts+=('*/libc/*')
# Every part extracted: the list of parts written after the extraction is this one.
marker=$dir/$name/.parts

if [ -e "$tests/lit.cfg" ] && [ "$(cat "$marker" 2>/dev/null)" = "${parts[*]}" ]; then
    echo "$tests"
    exit 0
fi
mkdir -p "$dir"
if ! echo "$sha256  $dir/$tarball" | sha256sum -c --status 2>/dev/null; then
    echo "downloading $url" >&2
    if command -v curl >/dev/null; then
        curl -fsSL --retry 3 -o "$dir/$tarball.part" "$url"
    else
        wget -q -O "$dir/$tarball.part" "$url"
    fi
    echo "$sha256  $dir/$tarball.part" | sha256sum -c --status ||
        { echo "checksum mismatch for $url" >&2; rm -f "$dir/$tarball.part"; exit 1; }
    mv "$dir/$tarball.part" "$dir/$tarball"
fi
echo "extracting ${parts[*]} from $tarball" >&2
# Extract aside and rename, so an interrupted run never looks complete.
rm -rf "$dir/.extract-$name"
mkdir -p "$dir/.extract-$name"
tar -xJf "$dir/$tarball" -C "$dir/.extract-$name" --wildcards "${parts[@]}"
rm -rf "${dir:?}/$name"
printf '%s\n' "${parts[*]}" > "$dir/.extract-$name/$name/.parts"
mv "$dir/.extract-$name/$name" "$dir/$name"
rmdir "$dir/.extract-$name"
# Only these parts are needed: the tarball is dropped once they are out.
rm -f "$dir/$tarball"
echo "$tests"
