#!/usr/bin/env bash
# Driver calls per construct, ours beside LLVM 19's, counted on the emulated CUDA driver from
# OMPTARGET_EMU_TRACE: each kind of construct of bench/gpu/per_construct.c runs 1 and 101 times
# with the same clang-19 binary (sm_90 with an x86-64 twin); (calls(101) - calls(1)) / 100 is one
# construct's cost. Prints a markdown table. Needs dist/ (scripts/build-dist.sh) and the NVPTX
# toolchain in /opt/cuda-min.
set -euo pipefail
cd "$(dirname "$0")/.."
work=target/emu-driver-calls
mkdir -p "$work"
PATH=/opt/cuda-min/bin:$PATH clang-19 -O2 -fopenmp -foffload-lto \
    -fopenmp-targets=nvptx64-nvidia-cuda,x86_64-pc-linux-gnu -Xopenmp-target=nvptx64-nvidia-cuda \
    -march=sm_90 --cuda-path=/opt/cuda-min --libomptarget-nvptx-bc-path=/usr/lib/llvm-19/lib \
    bench/gpu/per_construct.c -o "$work/per_construct" 2>/dev/null

# trace RUNTIME KIND N -> the trace file's path
trace() {
    local file="$work/$1-$2-$3.trace"
    rm -f "$file"
    if [ "$1" = ours ]; then
        LD_LIBRARY_PATH=$PWD/dist/emu:$PWD/dist/lib LIBOMPTARGET_PLUGINS_TO_LOAD=cuda \
            OMP_TARGET_OFFLOAD=mandatory OMPTARGET_EMU_TRACE=$file "$work/per_construct" "$2" "$3" >/dev/null
    else
        LD_LIBRARY_PATH=$PWD/dist/emu:/usr/lib/llvm-19/lib OMP_DEFAULT_DEVICE=4 \
            OMP_TARGET_OFFLOAD=mandatory OMPTARGET_EMU_TRACE=$file "$work/per_construct" "$2" "$3" >/dev/null
    fi
    echo "$file"
}

# count FILE CATEGORY
count() {
    local pattern
    case $2 in
        launches) pattern='^cuLaunchKernel ' ;;
        copies) pattern='^cuMemcpy' ;;
        syncs) pattern='^(cuStreamSynchronize|cuEventSynchronize|cuCtxSynchronize) ' ;;
        queries) pattern='^cuStreamQuery ' ;;
        events) pattern='^(cuEventRecord|cuStreamWaitEvent) ' ;;
        allocs) pattern='^(cuMemAlloc|cuMemFree)' ;;
        context) pattern='^cuCtxSetCurrent ' ;;
        all) pattern='.' ;;
    esac
    grep -cE "$pattern" "$1" || true
}

categories="launches copies syncs queries events allocs context all"
echo "| construct | runtime | $(echo $categories | sed 's/ / | /g') |"
echo "|---|---|$(for c in $categories; do printf -- '---|'; done)"
for kind in empty map_to map_tofrom enter_exit update nowait; do
    for runtime in llvm19 ours; do
        one=$(trace $runtime $kind 1)
        many=$(trace $runtime $kind 101)
        row="| $kind | $runtime |"
        for c in $categories; do
            a=$(count "$one" $c); b=$(count "$many" $c)
            row="$row $(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.2f", (b - a) / 100 }') |"
        done
        echo "$row"
    done
done
