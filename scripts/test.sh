#!/usr/bin/env bash
# Builds the install tree and runs every test: unit tests and the end-to-end tests that compile
# real OpenMP programs with clang-19 and clang-22 and run them against dist/.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build-dist.sh
cargo test --release --workspace --no-fail-fast
