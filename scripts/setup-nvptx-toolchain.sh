#!/usr/bin/env bash
# Makes the smallest CUDA folder clang-19 accepts as --cuda-path for NVPTX OpenMP offload
# builds, with no CUDA toolkit: ptxas and libdevice from NVIDIA's PyPI wheel
# nvidia-cuda-nvcc-cu12, and stand-ins for what the wheel lacks.
#
#   scripts/setup-nvptx-toolchain.sh DEST      (nothing done if DEST/bin/ptxas exists)
#   PATH=DEST/bin:$PATH clang-19 -O2 -foffload-lto -fopenmp --offload-arch=sm_90 --cuda-path=DEST prog.c
#
# NVPTX_FROM=DIR takes ptxas and libdevice from an existing such folder (/opt/cuda-min, say)
# instead of downloading; NVCC_WHEEL picks the wheel (default: the version checked here).
#
# Two stand-ins make one translation unit build, which is all this folder supports:
# - nvlink (the wheel has none) copies the one cubin it is given. -foffload-lto is needed so the
#   program's device code and LLVM's device runtime are one module, hence one cubin.
# - bin/ptxas compiles the module whole, not as the relocatable object (-c) clang asks for to
#   hand to nvlink: the cubin is then executable (ET_EXEC, with program headers), as nvlink's
#   output would be; a relocatable cubin is not something cuModuleLoadData is known to load.
#   clang's nvlink wrapper takes only relocatable inputs, so ptxas labels the cubin ET_REL and
#   the stand-in nvlink restores ET_EXEC (an ELF with program headers was linked already).
set -euo pipefail
dest=${1:?usage: $0 DEST}
[ -e "$dest/bin/ptxas" ] && { echo "NVPTX toolchain already in $dest"; exit 0; }

mkdir -p "$dest/bin" "$dest/nvvm/libdevice" "$dest/include"
if [ -n "${NVPTX_FROM:-}" ]; then
    # A folder made by this script keeps the real ptxas beside the stand-in.
    real=$NVPTX_FROM/bin/ptxas.real
    [ -e "$real" ] || real=$NVPTX_FROM/bin/ptxas
    install -m 755 "$real" "$dest/bin/ptxas.real"
    install -m 644 "$NVPTX_FROM/nvvm/libdevice/libdevice.10.bc" "$dest/nvvm/libdevice/"
else
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    python3 -m pip download --quiet --no-deps --only-binary=:all: -d "$tmp" \
        "${NVCC_WHEEL:-nvidia-cuda-nvcc-cu12==12.9.86}"
    python3 -m zipfile -e "$tmp"/nvidia_cuda_nvcc_cu12-*.whl "$tmp/wheel"
    install -m 755 "$tmp/wheel/nvidia/cuda_nvcc/bin/ptxas" "$dest/bin/ptxas.real"
    install -m 644 "$tmp/wheel/nvidia/cuda_nvcc/nvvm/libdevice/libdevice.10.bc" "$dest/nvvm/libdevice/"
fi
# clang takes the folder for a CUDA install when include/ exists, and reads version.txt.
"$dest/bin/ptxas.real" --version | sed -n 's/.*release \([0-9.]*\).*/CUDA Version \1/p' >"$dest/version.txt"

cat >"$dest/bin/nvlink" <<'NVLINK'
#!/bin/sh
# Stand-in nvlink (scripts/setup-nvptx-toolchain.sh): copies the single cubin it is given to -o.
# Linking several cubins is beyond it; it says so rather than drop one.
out= cubin= count=0
while [ $# -gt 0 ]; do
    case $1 in
        -o) out=$2; shift 2 ;;
        -arch | --arch | -L) shift 2 ;;
        -*) shift ;;
        *) # cubins are ELF files; other inputs (library paths) are not for us
           if [ -f "$1" ] && [ "$(head -c 4 "$1" | tail -c 3)" = ELF ]; then
               cubin=$1; count=$((count + 1))
           fi
           shift ;;
    esac
done
if [ "$count" -ne 1 ] || [ -z "$out" ]; then
    echo "nvlink (stand-in): needs exactly one cubin and -o, got $count cubin(s)" >&2
    exit 1
fi
cp "$cubin" "$out"
# A whole-program cubin from the stand-in ptxas, labelled relocatable: label it executable again.
if [ "$(od -An -tu2 -j 56 -N 2 "$out" | tr -d ' ')" != 0 ]; then
    printf '\002' | dd of="$out" bs=1 seek=16 count=1 conv=notrunc 2>/dev/null
fi
NVLINK
# Last, as bin/ptxas is what marks the folder done.
cat >"$dest/bin/ptxas" <<'PTXAS'
#!/bin/sh
# Whole-program ptxas (scripts/setup-nvptx-toolchain.sh): runs the real one without -c, so the
# single LTO-linked module becomes an executable cubin rather than an object for nvlink; labels
# it ET_REL when -c was asked for (clang's nvlink wrapper wants that; the stand-in nvlink undoes it).
n=$# relocatable= out= prev=
for arg in "$@"; do
    case $arg in
        -c | --compile-only) relocatable=1 ;;
        *) [ "$prev" = --output-file ] || [ "$prev" = -o ] && out=$arg
           set -- "$@" "$arg" ;;
    esac
    prev=$arg
done
shift "$n"
"$(dirname "$0")/ptxas.real" "$@" || exit
if [ -n "$relocatable" ] && [ -n "$out" ]; then
    printf '\001' | dd of="$out" bs=1 seek=16 count=1 conv=notrunc 2>/dev/null
fi
PTXAS

chmod 755 "$dest/bin/ptxas" "$dest/bin/nvlink"
echo "NVPTX toolchain in $dest ($(cat "$dest/version.txt"))"
