#!/usr/bin/env bash
# Builds the install tree and runs every test: the README's demo (scripts/demo.sh), unit tests,
# the end-to-end tests and the conformance suite that compile real OpenMP programs with clang-19
# and clang-22 and run them against dist/ (and LLVM 19's runtime), valgrind runs, and LLVM's own
# offload test suites of 19 (built by clang-19) and 22 (built by clang-22), fetched once from
# Debian's source tarballs into target/ (with the sources of LLVM 22's GPU device runtime and GPU
# libc, and of LLVM 19's GPU libc, built there for clang-22's and clang-19's GPU programs), a
# short run of every fuzz target, then the Debian packages (installed, checked and purged:
# scripts/test-packages.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build-dist.sh
# The README's first command, as a newcomer runs it: each of the demo's three programs (clang-19,
# flang-22, and sm_90 on the emulated CUDA driver) runs on an offload device, not the host
# fallback, and computes the right result.
mkdir -p target
if ! scripts/demo.sh >target/demo.log 2>&1; then
    cat target/demo.log
    echo "test.sh: scripts/demo.sh failed" >&2
    exit 1
fi
demo_runs=$(grep -c '^saxpy on an offload device (device [0-9]* of [0-9]*): correct$' target/demo.log || true)
if [ "$demo_runs" != 3 ]; then
    cat target/demo.log
    echo "test.sh: scripts/demo.sh ran $demo_runs of its 3 programs correctly on an offload device" >&2
    exit 1
fi
scripts/fetch-llvm-offload-tests.sh 19 >/dev/null
scripts/fetch-llvm-offload-tests.sh 22 >/dev/null
scripts/build-llvm22-device-runtime.sh >/dev/null
scripts/build-llvm22-gpu-libc.sh >/dev/null
scripts/build-llvm19-gpu-libc.sh >/dev/null
cargo test --release --workspace --no-fail-fast
# The workspace's lints (Cargo.toml): every unsafe block has its SAFETY line, also in an unsafe fn.
cargo clippy --workspace --all-targets --quiet
# The fuzz targets, instrumented and fuzzed briefly from their saved inputs (FUZZING.md).
scripts/fuzz.sh smoke
# The example plugin is its own workspace, as a vendor's copy would be: its unit tests and a
# real program run on it through dist/.
cargo test --release --manifest-path examples/plugin-example/Cargo.toml

# The Debian packages: built, installed with dpkg, checked and purged. This changes the
# machine's packages, so it runs only where we may (root or sudo without a password) and is
# required in CI.
if [ "$(id -u)" = 0 ] || sudo -n true 2>/dev/null; then
    scripts/test-packages.sh
elif [ -n "${CI:-}" ]; then
    echo "test.sh: the package tests need root or passwordless sudo" >&2
    exit 1
else
    echo "test.sh: skipping scripts/test-packages.sh (needs root or passwordless sudo)"
fi
