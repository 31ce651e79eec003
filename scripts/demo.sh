#!/usr/bin/env bash
# Builds everything, compiles examples/saxpy.c with clang-19 for x86-64 offloading, and runs it
# against our runtime, then lists plugins and devices.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang-19 >/dev/null || { echo "clang-19 is missing: run .ci/install-deps.sh" >&2; exit 1; }
scripts/build-dist.sh
mkdir -p target/demo
clang-19 -O2 -fopenmp -fopenmp-targets=x86_64-pc-linux-gnu examples/saxpy.c -o target/demo/saxpy
echo "--- running target/demo/saxpy with LD_LIBRARY_PATH=dist/lib"
LD_LIBRARY_PATH=$PWD/dist/lib target/demo/saxpy
echo "--- dist/bin/omptarget-info"
dist/bin/omptarget-info
