#!/usr/bin/env bash
# Fetches LLVM 19's offload test suite (offload/test of the Debian source tarball that matches
# the installed clang-19 1:19.1.7) for tests/src/llvm_suite.rs. LLVM's test files are not kept
# in this repository, so CI fetches them.
#
# Cache directory: $LLVM_OFFLOAD_SUITE_DIR, else target/llvm-offload-suite/ under the workspace.
# Idempotent: nothing is downloaded when the tests are already extracted. Prints the path of
# offload/test.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${LLVM_OFFLOAD_SUITE_DIR:-$root/target/llvm-offload-suite}
name=llvm-toolchain-19_19.1.7
tarball=$name.orig.tar.xz
url=${LLVM_OFFLOAD_SUITE_URL:-http://deb.debian.org/debian/pool/main/l/llvm-toolchain-19/$tarball}
# From Debian's signed llvm-toolchain-19_19.1.7-3~deb12u1.dsc: a truncated or altered download
# must not turn into a silently smaller test suite.
sha256=ae498f3bc58ae2d9f64ef5f0c035c4240152bf015a5b7738b15c22e93bdc97ce
tests=$dir/$name/offload/test

if [ -e "$tests/lit.cfg" ]; then
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
echo "extracting offload/test from $tarball" >&2
# Extract aside and rename, so an interrupted run never looks complete.
rm -rf "$dir/.extract"
mkdir -p "$dir/.extract"
tar -xJf "$dir/$tarball" -C "$dir/.extract" --wildcards '*/offload/test/*'
rm -rf "$dir/$name"
mv "$dir/.extract/$name" "$dir/$name"
rmdir "$dir/.extract"
echo "$tests"
