#!/usr/bin/env bash
# Driver calls per construct, ours beside LLVM 19's, counted on an emulated GPU driver from
# OMPTARGET_EMU_TRACE: each kind of construct of bench/gpu/per_construct.c runs 1 and 101 times
# with the same clang-19 binary (a GPU image with an x86-64 twin); (calls(101) - calls(1)) / 100
# is one construct's cost. Prints a markdown table.
#   scripts/emu-driver-calls.sh [cuda]   the emulated CUDA driver (sm_90; needs /opt/cuda-min)
#   scripts/emu-driver-calls.sh amdgpu   the emulated HSA runtime (gfx90a; packets counted too)
# Needs dist/ (scripts/build-dist.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
gpu=${1:-cuda}
work=target/emu-driver-calls/$gpu
mkdir -p "$work"
case $gpu in
    cuda)
        PATH=/opt/cuda-min/bin:$PATH clang-19 -O2 -fopenmp -foffload-lto \
            -fopenmp-targets=nvptx64-nvidia-cuda,x86_64-pc-linux-gnu -Xopenmp-target=nvptx64-nvidia-cuda \
            -march=sm_90 --cuda-path=/opt/cuda-min --libomptarget-nvptx-bc-path=/usr/lib/llvm-19/lib \
            bench/gpu/per_construct.c -o "$work/per_construct" 2>/dev/null
        categories="launches copies syncs queries events allocs context all" ;;
    amdgpu)
        clang-19 -O2 -fopenmp -fopenmp-targets=amdgcn-amd-amdhsa,x86_64-pc-linux-gnu \
            -Xopenmp-target=amdgcn-amd-amdhsa -march=gfx90a \
            --rocm-device-lib-path=/usr/lib/x86_64-linux-gnu/amdgcn/bitcode \
            bench/gpu/per_construct.c -o "$work/per_construct" 2>/dev/null
        categories="dispatches barriers barrier_bits signals copies waits handlers allocs all" ;;
    *) echo "usage: $0 [cuda|amdgpu]" >&2; exit 2 ;;
esac

# trace RUNTIME KIND N -> the trace file's path
trace() {
    local file="$work/$1-$2-$3.trace"
    rm -f "$file"
    if [ "$1" = ours ]; then
        LD_LIBRARY_PATH=$PWD/dist/emu:$PWD/dist/lib LIBOMPTARGET_PLUGINS_TO_LOAD=$gpu \
            HSA_RUNTIME_LIB=$PWD/dist/emu/libhsa-runtime64.so.1 \
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
        copies) pattern='^(cuMemcpy|hsa_amd_memory_async_copy)' ;;
        syncs) pattern='^(cuStreamSynchronize|cuEventSynchronize|cuCtxSynchronize) ' ;;
        queries) pattern='^cuStreamQuery ' ;;
        events) pattern='^(cuEventRecord|cuStreamWaitEvent) ' ;;
        allocs) pattern='^(cuMemAlloc|cuMemFree|hsa_amd_memory_pool_allocate|hsa_amd_memory_pool_free)' ;;
        context) pattern='^cuCtxSetCurrent ' ;;
        dispatches) pattern='^packet .* type=dispatch ' ;;
        barriers) pattern='^packet .* type=barrier-' ;;
        barrier_bits) pattern='^packet .* barrier=1 ' ;;
        signals) pattern='^(hsa_signal_create|hsa_amd_signal_create) ' ;;
        waits) pattern='^hsa_signal_wait_scacquire ' ;;
        handlers) pattern='^hsa_amd_signal_async_handler ' ;;
        all) pattern='^(cu|hsa_)' ;;
    esac
    grep -cE "$pattern" "$1" || true
}

echo "| construct | runtime | $(echo $categories | sed 's/ / | /g') |"
echo "|---|---|$(for c in $categories; do printf -- '---|'; done)"
for kind in empty map_to map_tofrom enter_exit update nowait data_nowait; do
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
