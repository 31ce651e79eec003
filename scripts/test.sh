#!/usr/bin/env bash
# Builds the install tree and runs every test: unit tests, the end-to-end tests and the
# conformance suite that compile real OpenMP programs with clang-19 and clang-22 and run them
# against dist/ (and LLVM 19's runtime), valgrind runs, and LLVM 19's own offload tests
# (fetched once from Debian's source tarball into target/).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build-dist.sh
scripts/fetch-llvm-offload-tests.sh >/dev/null
cargo test --release --workspace --no-fail-fast
