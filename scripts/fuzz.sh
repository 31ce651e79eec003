#!/usr/bin/env bash
# Coverage-guided fuzzing of every parser of untrusted bytes, images and device printf requests
# (fuzz/src/lib.rs lists the targets), with libFuzzer on stable Rust: libfuzzer-sys builds
# libFuzzer from its sources and rustc's SanitizerCoverage pass instruments our code (stable -C
# flags; no nightly needed).
#
#   scripts/fuzz.sh list                  the targets
#   scripts/fuzz.sh seeds                 compile real programs with clang-19 and clang-22 for
#                                         x86_64, NVPTX and AMDGPU and seed fuzz/corpus/ from them,
#                                         and write device printf calls as both GPUs send them
#   scripts/fuzz.sh run TARGET [RUNS]     fuzz TARGET for RUNS executions (default 10 million),
#                                         starting from fuzz/corpus/TARGET; crashes are written to
#                                         fuzz/crashes/TARGET/; prints libFuzzer's final stats
#   scripts/fuzz.sh merge TARGET          fold what the last run found into fuzz/corpus/TARGET,
#                                         keeping only inputs that add coverage
#   scripts/fuzz.sh replay                the ordinary test CI runs: every saved input, once
#   scripts/fuzz.sh smoke                 every target fuzzed briefly (20 000 runs), as
#                                         scripts/test.sh does
#
# Work corpora and the instrumented build live under target/fuzz/. The saved corpora and
# reproducers are replayed by `cargo test -p omptarget-fuzz` (part of scripts/test.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
work=$root/target/fuzz
triple=x86_64-unknown-linux-gnu
# --target keeps these flags off build scripts, which must not be instrumented.
instrument="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing -Cdebug-assertions -Copt-level=3"

fuzzer() {
    RUSTFLAGS="$instrument" CARGO_TARGET_DIR="$work/build" \
        cargo build --release --quiet -p omptarget-fuzz --features libfuzzer --bin omptarget-fuzz \
        --target "$triple" >&2
    echo "$work/build/$triple/release/omptarget-fuzz"
}

# Seeds: programs built for every target by both compilers. LLVM 22's GPU device runtime is
# not packaged for this system, so clang-22's GPU images link LLVM 19's (its bitcode for the
# one architecture, through ld.lld-19 for AMDGPU) from fuzz/seeds/device_image.c, which needs
# nothing LLVM 22 added to it; its host images and PTX come from every source.
seeds() {
    # A folder of this run's own: two runs never write each other's programs.
    mkdir -p "$work"
    local out cuda=${NVPTX_CUDA_PATH:-/opt/cuda-min}
    out=$(mktemp -d "$work/seed-programs.XXXXXX")
    local omp22=${LLVM22_OMP_ROOT:-/opt/llvm22-omp}/usr/lib/llvm-22/lib/clang/22/include
    local rocm=/usr/lib/x86_64-linux-gnu/amdgcn/bitcode llvm19=/usr/lib/llvm-19/lib
    mkdir -p "$out/bin" && ln -sf "$(command -v ld.lld-19)" "$out/bin/ld.lld"
    cargo build --release --quiet -p omptarget-fuzz --bin omptarget-fuzz-seeds
    local seed=$root/target/release/omptarget-fuzz-seeds
    rm -f fuzz/corpus/*/seed-*
    local src stem
    for src in fuzz/seeds/device_image.c tests/programs/constructs.c tests/programs/emu_indirect_calls.c; do
        stem=$(basename "$src" .c)
        # clang-19
        local c19=(clang-19 -O2 -fopenmp -Wno-unused-command-line-argument "$src")
        "${c19[@]}" -fopenmp-targets=x86_64-pc-linux-gnu -o "$out/$stem-clang19-x86_64"
        PATH=$cuda/bin:$PATH "${c19[@]}" --offload-arch=sm_90 -foffload-lto --cuda-path="$cuda" \
            --libomptarget-nvptx-bc-path=$llvm19 -o "$out/$stem-clang19-nvptx"
        "${c19[@]}" --offload-arch=gfx90a --rocm-device-lib-path=$rocm -o "$out/$stem-clang19-amdgcn"
        "${c19[@]}" --offload-arch=sm_90 --offload-device-only -S -o "$out/$stem-clang19.ptx"
        "$seed" fuzz/corpus "clang19-$stem" "$out/$stem-clang19"-{x86_64,nvptx,amdgcn} \
            "$out/$stem-clang19.ptx"
        # clang-22: links -lomptarget (ours, from dist/) and -lomp (LLVM 19's)
        local c22=(clang-22 -O2 -fopenmp -Wno-unused-command-line-argument -I"$omp22" -L"$root/dist/lib" -L$llvm19 "$src")
        "${c22[@]}" -fopenmp-targets=x86_64-pc-linux-gnu -o "$out/$stem-clang22-x86_64"
        "${c22[@]}" --offload-arch=sm_90 --offload-device-only -nogpulib --cuda-path="$cuda" -S -o "$out/$stem-clang22.ptx"
        local programs=("$out/$stem-clang22-x86_64" "$out/$stem-clang22.ptx")
        if [ "$stem" = device_image ]; then
            PATH=$cuda/bin:$PATH "${c22[@]}" --offload-arch=sm_90 -foffload-lto -nogpulib \
                -Xoffload-linker $llvm19/libomptarget-nvptx-sm_90.bc --cuda-path="$cuda" \
                -o "$out/$stem-clang22-nvptx"
            PATH=$out/bin:$PATH "${c22[@]}" --offload-arch=gfx90a -fno-offload-lto -nogpulib \
                -Xoffload-linker $llvm19/libomptarget-amdgpu-gfx90a.bc -o "$out/$stem-clang22-amdgcn" \
                2> >(grep -v "is not a recognized feature" >&2)
            programs+=("$out/$stem-clang22-nvptx" "$out/$stem-clang22-amdgcn")
        fi
        "$seed" fuzz/corpus "clang22-$stem" "${programs[@]}"
    done
    for cc in 19 22; do
        "clang-$cc" -O2 -shared -fPIC fuzz/seeds/plugin_library.c -o "$out/plugin_library-clang$cc.so"
        "$seed" fuzz/corpus "clang$cc-plugin_library" "$out/plugin_library-clang$cc.so"
    done
    # Device printf requests, as NVPTX's and AMDGPU's clients lay out their arguments.
    "$seed" --printf fuzz/corpus
    rm -rf "$out"
}

# What the fuzzer found and kept is packed beside the seeds (fuzz/corpus/TARGET.found.tar.xz:
# thousands of similar images, a few MiB unpacked, compress well).
unpack_found() {
    local target=$1 into=$2
    mkdir -p "$into"
    if [ -e "fuzz/corpus/$target.found.tar.xz" ]; then
        tar -xJf "fuzz/corpus/$target.found.tar.xz" -C "$into"
    fi
}

run() {
    local target=$1 runs=${2:-10000000}
    local bin
    bin=$(fuzzer)
    unpack_found "$target" "$work/corpus/$target"
    mkdir -p "fuzz/crashes/$target"
    # Sizes up to the largest real image (a PTX text is about 44 KiB); 4 GiB of resident memory
    # is libFuzzer's signal of unbounded growth; 10 s on one input, a hang.
    FUZZ_TARGET=$target "$bin" "$work/corpus/$target" "fuzz/corpus/$target" \
        -runs="$runs" -max_len=65536 -rss_limit_mb=4096 -malloc_limit_mb=1024 -timeout=10 \
        -print_final_stats=1 -artifact_prefix="fuzz/crashes/$target/" 2>&1 |
        grep -v -E '^#[0-9]+\s+(NEW|REDUCE|pulse)' | grep -v -E '^"|# Uses:|dictionary' | tail -20
}

merge() {
    local target=$1 bin
    bin=$(fuzzer)
    local merged=$work/merged/$target
    rm -rf "$merged" && mkdir -p "$merged"
    unpack_found "$target" "$work/corpus/$target"
    # The smallest set of inputs with all the coverage of the seeds and what was found.
    FUZZ_TARGET=$target "$bin" -merge=1 -max_len=65536 "$merged" "fuzz/corpus/$target" \
        "$work/corpus/$target" 2>&1 | grep MERGE-OUTER | tail -1
    for seed in "fuzz/corpus/$target"/seed-*; do
        rm -f "$merged/$(sha1sum "$seed" | cut -d' ' -f1)"
    done
    (cd "$merged" && find . -type f | sort |
        tar --owner=0 --group=0 --numeric-owner --mtime=@0 -cf - -T - | xz -9 >"$root/fuzz/corpus/$target.found.tar.xz")
    echo "fuzz/corpus/$target.found.tar.xz: $(ls "$merged" | wc -l) inputs, $(du -sh "$merged" | cut -f1) unpacked, $(du -h "fuzz/corpus/$target.found.tar.xz" | cut -f1) packed"
    # The coverage of what is kept: libFuzzer's count of edges (cov) and features (ft).
    FUZZ_TARGET=$target "$bin" -runs=0 -max_len=65536 "$merged" "fuzz/corpus/$target" 2>&1 |
        grep -E 'INITED' | sed 's/^/kept: /'
}

# Every target for a few seconds from its saved inputs, as scripts/test.sh runs it: the
# instrumented build and the targets keep working between fuzzing runs. A fixed seed keeps the
# runs the same from one CI run to the next.
smoke() {
    local bin target
    bin=$(fuzzer)
    local targets
    targets=$(cargo run --release --quiet -p omptarget-fuzz --bin omptarget-fuzz-seeds -- --list |
        cut -d' ' -f1)
    for target in $targets; do
        local dir=$work/smoke/$target
        rm -rf "$dir" && mkdir -p "$dir/corpus" "$dir/crashes"
        unpack_found "$target" "$dir/corpus"
        if ! FUZZ_TARGET=$target "$bin" "$dir/corpus" "fuzz/corpus/$target" -runs=20000 -seed=1 \
            -max_len=65536 -rss_limit_mb=4096 -malloc_limit_mb=1024 -timeout=10 \
            -max_total_time=120 -artifact_prefix="$dir/crashes/" >"$dir/log" 2>&1; then
            tail -30 "$dir/log" >&2
            echo "fuzz smoke: $target failed (reproducer in $dir/crashes/)" >&2
            return 1
        fi
        echo "fuzz smoke: $target: $(grep -E '^Done' "$dir/log")"
    done
}

case "${1:-}" in
    list) cargo run --release --quiet -p omptarget-fuzz --bin omptarget-fuzz-seeds -- --list ;;
    seeds) seeds ;;
    run) run "${2:?target}" "${3:-}" ;;
    merge) merge "${2:?target}" ;;
    replay) cargo test --release -p omptarget-fuzz ;;
    smoke) smoke ;;
    *) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
