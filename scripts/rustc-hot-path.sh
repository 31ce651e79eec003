#!/usr/bin/env bash
# Cargo's workspace rustc wrapper (.cargo/config.toml): compiles the crates on every
# construct's path, the core and the host plugin, at LLVM inlining threshold 3000 instead of
# the default 225. Their per-construct paths are chains of small calls (entry point, mapping
# rules, table, queue, a plugin's shims and device); inlined, `target enter data` runs 7 % and
# `target exit data` 12 % fewer instructions (callgrind, bench/programs/mappings.c; see
# BENCHMARKS.md). Everything else keeps the default: for the whole workspace the install tree
# grew from 9.0 to 10.9 MB, past its 10 MB target, for no measured gain.
# Bash, not sh: dash drops environment variables whose names are no shell names, such as
# the CARGO_BIN_EXE_<binary-with-hyphens> that Cargo sets for integration tests.
rustc=$1
shift
case " $* " in
*" --crate-name omptarget_core "* | *" --crate-name omptarget_rtl_host "*)
    exec "$rustc" "$@" -C llvm-args=-inline-threshold=3000
    ;;
esac
exec "$rustc" "$@"
