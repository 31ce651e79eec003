#!/usr/bin/env bash
# The real-GPU run of the CUDA plugin, in two halves (docs/gpu-validation.md):
#
#   here, with clang-19 and no GPU:   scripts/gpu-run.sh bundle [DIR]   (default DIR: target/gpu-bundle)
#   on the GPU machine:               bash DIR/run.sh
#
# The bundle holds everything the GPU machine lacks (it has the CUDA driver, bash and coreutils,
# no toolkit, no clang): our dist/ (runtime, plugins, omptarget-info), LLVM 19's libomp.so.5,
# the conformance programs and bench/gpu/ built for sm_90, and run.sh. With the device tool,
# from the repository root (the bundle is under target/, which git ignores, hence the carry):
#
#   scripts/gpu-run.sh bundle target/gpu-bundle
#   run: command "bash target/gpu-bundle/run.sh", carry ["target/gpu-bundle"]
#
# run.sh prints the machine, PASS/FAIL for each conformance program against our runtime with
# LIBOMPTARGET_PLUGINS_TO_LOAD=cuda and OMP_TARGET_OFFLOAD=mandatory, then the benchmark table
# (ours against the raw driver, beside the targets). Its report goes to $OUT/gpu-results.txt
# (the device tool brings $OUT back), or DIR/results/ without $OUT.
#
# bundle's environment:
#   DIST      install tree to ship; when unset, <repo>/dist, (re)built by scripts/build-dist.sh
#             if missing, older than the sources, or lacking the CUDA plugin
#   CUDA_MIN  NVPTX toolchain folder (default <repo>/target/nvptx-toolchain, made when missing
#             by scripts/setup-nvptx-toolchain.sh, from /opt/cuda-min's ptxas when there is one)
#   JOBS      parallel compiles (default: nproc)
#   LLVM19=1  also pack LLVM 19's runtime (its libomptarget.so.19.1, CUDA plugin built in, and the
#             libraries it needs; about 43 MiB), so that run.sh runs every program we fail and
#             the benchmarks under it too, on the same GPU: the judge of our failures
#   COMPILER  clang19 (default) or clang22: which compiler builds the conformance programs (the
#             benchmarks are clang-19's either way); clang-22 links LLVM 22's device runtime
#             (scripts/build-llvm22-device-runtime.sh) and our libomptarget.so.22.1
#   LLVM22=1  pack LLVM 22's runtime (libomptarget.so.22.1 and libLLVMOffload.so.22.1 from
#             /opt/llvm22-omp, with the libraries they need; about 45 MiB), the judge of a
#             clang-22 bundle's failures. With LLVM19=1 too the bundle is over the device
#             tool's 64 MiB.
# run.sh's environment: TIMEOUT (seconds per program, default 30), CONFORMANCE_BUDGET (seconds
#   for all programs, default 420, then the rest are skipped so the benchmarks still run within
#   the device tool's 600 s), ONLY (run only programs whose name contains it), SKIP_CONFORMANCE=1,
#   SKIP_BENCH=1, STEPS (the steps in order, default "rules conformance rpc bench", where `rules`
#   sets the CUDA driver's answers to bench/gpu/driver_rules.c beside the emulated driver's; also
#   "placement": where the waiting thread runs against launch latency, and "host_bench": the host
#   benchmark suite (bench/, issue 19) on this machine, ours beside LLVM 19's runtime from the
#   bundle, then bench/diagnostics/machine_costs.c, then slow_episodes.c and first_rounds.c on
#   each;
#   HOST_RUNS, default 9: the machine runs in slow stretches, and at 5 runs the two runtimes'
#   medians could fall one inside, one outside).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
llvm_lib=/usr/lib/llvm-19/lib

# One conformance program: compile it for sm_90 into $dir/conformance, or say why not in a
# .fail/.skip note. Runs under xargs -P, so it never fails itself.
compile_one() {
    local src=$1 name bin spec flags=() cc=clang-${compiler#clang} compilers
    name=${src#"$root/tests/conformance/"}
    bin=${name//[\/.]/_}
    # The directives, in the form tests/src/conformance.rs reads: "// KEY: value", trimmed.
    spec=$(sed -n 's/^[[:space:]]*\(\/\/ [A-Z-]*: .*\)/\1/p' "$src" | sed 's/[[:space:]]*$//')
    compilers=$(sed -n 's/^\/\/ COMPILERS: //p' <<<"$spec")
    if [ -n "$compilers" ] && ! grep -qw "$compiler" <<<"$compilers"; then
        echo "$name: not for $cc (COMPILERS: $compilers)" >"$dir/conformance/$bin.skip"
        return 0
    fi
    read -ra flags <<<"$(sed -n 's/^\/\/ FLAGS: //p' <<<"$spec" | tr '\n' ' ')"
    [[ $src == *.cpp ]] && cc=clang++-${compiler#clang}
    if PATH=$cuda_min/bin:$PATH $cc "${programs_recipe[@]}" "${flags[@]}" "$src" \
        -o "$dir/conformance/$bin" 2>"$dir/conformance/$bin.log"; then
        printf '%s\n' "$spec" >"$dir/conformance/$bin.spec"
        echo "$name $bin" >"$dir/conformance/$bin.ok"
        # The soak's programs, as tests/src/conformance.rs picks them (soak_programs).
        if [[ $name == async/* || $name == threads/* ]] || grep -q nowait "$src"; then
            echo "$name $bin" >"$dir/conformance/$bin.soak"
        fi
    else
        # The first errors say why (host-only feature, two translation units, ...).
        { printf '%s: ' "$name"
          { grep -m 4 -iE 'error|undefined|cubin' "$dir/conformance/$bin.log" || tail -n 3 "$dir/conformance/$bin.log"; } |
              tr '\n' ' '
          echo; } >"$dir/conformance/$bin.fail"
    fi
    rm -f "$dir/conformance/$bin.log"
}

# -foffload-lto: the program's device code and LLVM's device runtime become one cubin, which is
# all the stand-in nvlink can handle (see setup-nvptx-toolchain.sh).
cuda_min=${CUDA_MIN:-$root/target/nvptx-toolchain}
recipe=(-O2 -foffload-lto -fopenmp --offload-arch=sm_90 "--cuda-path=$cuda_min")
compiler=${COMPILER:-clang19}
case $compiler in
    clang19) programs_recipe=("${recipe[@]}") ;;
    clang22)
        # As tests/src/lib.rs builds clang-22 programs, without the x86-64 twin: Debian ships no
        # LLVM 22 device runtime, so the image links the one built from LLVM 22's sources.
        llvm22_root=${LLVM22_OMP_ROOT:-/opt/llvm22-omp}
        nvptx=nvptx64-nvidia-cuda
        programs_recipe=(-O2 -fopenmp -nogpulib -Wno-unused-command-line-argument
            "-fopenmp-targets=$nvptx" "-Xopenmp-target=$nvptx" -march=sm_90
            "-Xoffload-linker-$nvptx" "$root/target/llvm22-device-runtime/libomptarget-nvptx.bc"
            -foffload-lto "--cuda-path=$cuda_min"
            "-I$llvm22_root/usr/lib/llvm-22/lib/clang/22/include" "-L${DIST:-$root/dist}/lib"
            -L/usr/lib/llvm-19/lib) ;;
    *) echo "gpu-run.sh: COMPILER is clang19 or clang22, not '$compiler'" >&2; exit 2 ;;
esac

if [ "${1:-}" = __compile ]; then # internal: one program, for xargs
    dir=$2
    compile_one "$3"
    exit 0
fi
[ "${1:-}" = bundle ] || { sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 2; }

dir=${2:-$root/target/gpu-bundle}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
# Start clean, but never wipe a folder that is not a bundle of ours.
if [ -n "$(ls -A "$dir")" ] && [ ! -e "$dir/.gpu-bundle" ]; then
    echo "gpu-run.sh: $dir is not empty and not a bundle; refusing to replace it" >&2
    exit 1
fi
rm -rf "${dir:?}"/* "$dir/.gpu-bundle"
touch "$dir/.gpu-bundle"

[ "$compiler" = clang22 ] && "$root/scripts/build-llvm22-device-runtime.sh" >/dev/null
for tool in clang-19 clang++-19 "clang-${compiler#clang}" "clang++-${compiler#clang}"; do
    command -v $tool >/dev/null || { echo "gpu-run.sh: $tool not found" >&2; exit 1; }
done
[ -e "$llvm_lib/libomp.so.5" ] || { echo "gpu-run.sh: no $llvm_lib/libomp.so.5 (libomp-19-dev)" >&2; exit 1; }

# The install tree. A given DIST is used as is; the default one is kept current, since a GPU
# run on a stale runtime or one without the CUDA plugin would be wasted.
if [ -n "${DIST:-}" ]; then
    dist=$(cd "$DIST" && pwd)
else
    dist=$root/dist
    stale=
    if [ ! -e "$dist/lib/libomptarget.so.22.1" ]; then
        stale="missing"
    elif [ -d "$root/plugin-cuda" ] && [ ! -e "$dist/lib/libomptarget.rtl.cuda.so" ]; then
        stale="no CUDA plugin"
    elif [ -n "$(find "$root"/Cargo.toml "$root"/Cargo.lock "$root"/omptarget-core "$root"/plugin-* \
        -newer "$dist/lib/libomptarget.so.22.1" -type f -print -quit 2>/dev/null)" ]; then
        stale="older than the sources"
    fi
    if [ -n "$stale" ]; then
        echo "dist: $stale; building it"
        "$root/scripts/build-dist.sh" "$dist"
    fi
fi
[ -e "$dist/lib/libomptarget.rtl.cuda.so" ] ||
    echo "gpu-run.sh: WARNING: $dist has no libomptarget.rtl.cuda.so; run.sh will stop at once" >&2

# Our recipe's toolchain: whole-program cubins (ET_EXEC, as nvlink makes), not the relocatable
# ones a plain ptxas behind a copying nvlink gives (as an /opt/cuda-min made otherwise may).
if [ ! -e "$cuda_min/bin/ptxas" ] && [ -x /opt/cuda-min/bin/ptxas ]; then
    NVPTX_FROM=/opt/cuda-min "$root/scripts/setup-nvptx-toolchain.sh" "$cuda_min"
else
    "$root/scripts/setup-nvptx-toolchain.sh" "$cuda_min"
fi
# run.sh leaves out programs that need a real nvlink (`// NEEDS: nvlink`) when the bundle's
# toolchain is the stand-in.
if grep -q 'Whole-program ptxas' "$cuda_min/bin/ptxas"; then toolchain=stand-in; else toolchain=other; fi
[ "$toolchain" = stand-in ] ||
    echo "gpu-run.sh: WARNING: $cuda_min makes relocatable cubins (not scripts/setup-nvptx-toolchain.sh's)" >&2

mkdir -p "$dir/lib" "$dir/bin" "$dir/bench" "$dir/conformance"
cp -a "$dist/lib/." "$dir/lib/"
cp -L "$llvm_lib/libomp.so.5" "$dir/lib/"
cp "$dist/bin/omptarget-info" "$dir/bin/"

echo "building bench/gpu"
clang-19 -O2 -o "$dir/bench/raw_driver" "$root/bench/gpu/raw_driver.c" -ldl
# The emulated CUDA driver's answers to bench/gpu/driver_rules.c's questions, which run.sh's
# `rules` step sets beside the real driver's. The emulator reads cubins only: the kernel is
# assembled here by the toolchain's ptxas.
clang-19 -O2 -o "$dir/bench/driver_rules" "$root/bench/gpu/driver_rules.c" -ldl -lpthread
rules_tmp=$(mktemp -d)
"$dir/bench/driver_rules" --ptx >"$rules_tmp/empty.ptx" &&
    "$cuda_min/bin/ptxas" -arch=sm_90 "$rules_tmp/empty.ptx" -o "$rules_tmp/empty.cubin" &&
    LD_LIBRARY_PATH=$dist/emu "$dir/bench/driver_rules" "$rules_tmp/empty.cubin" \
        >"$dir/bench/driver_rules.emulated.txt" 2>"$rules_tmp/err" ||
    { cat "$rules_tmp/err" >&2; echo "gpu-run.sh: the emulated driver did not answer driver_rules" >&2; exit 1; }
rm -rf "$rules_tmp"
PATH=$cuda_min/bin:$PATH clang-19 "${recipe[@]}" -o "$dir/bench/omp_gpu" "$root/bench/gpu/omp_gpu.c"
# The per-construct loop, and the host benchmarks' program for issue 19's small regions beside a
# thread moving 256 MiB, for their figures on a GPU.
PATH=$cuda_min/bin:$PATH clang-19 "${recipe[@]}" -o "$dir/bench/per_construct" "$root/bench/gpu/per_construct.c"
PATH=$cuda_min/bin:$PATH clang-19 "${recipe[@]}" -I "$root/bench/programs" -o "$dir/bench/large_maps" \
    "$root/bench/programs/large_maps.c" -lpthread

# A kernel calling a host function through our RPC server (__llvm_omp_host_call of LLVM 22's
# device runtime; tests/programs/rpc_host_call.cpp), with clang-22, when LLVM 22's device
# runtime and sources are here.
llvm22_src=$root/target/llvm-offload-suite/llvm-toolchain-22_22.1.8
if command -v clang++-22 >/dev/null && [ -e "$root/target/llvm22-device-runtime/libomptarget-nvptx.bc" ] &&
    [ -d "$llvm22_src/libc/shared" ]; then
    echo "building rpc_host_call for sm_90 (clang-22)"
    PATH=$cuda_min/bin:$PATH clang++-22 -O2 -fopenmp -Wno-openmp-target -nogpulib \
        -fopenmp-targets=nvptx64-nvidia-cuda -Xopenmp-target=nvptx64-nvidia-cuda -march=sm_90 \
        -Xoffload-linker-nvptx64-nvidia-cuda "$root/target/llvm22-device-runtime/libomptarget-nvptx.bc" \
        -foffload-lto --cuda-path="$cuda_min" \
        -I "${LLVM22_OMP_ROOT:-/opt/llvm22-omp}/usr/lib/llvm-22/lib/clang/22/include" \
        -I "$llvm22_src/libc/shared" -I "$llvm22_src/offload/include" -L "$dist/lib" \
        -L "$llvm_lib" -o "$dir/bench/rpc_host_call" "$root/tests/programs/rpc_host_call.cpp" ||
        echo "gpu-run.sh: WARNING: rpc_host_call did not build; run.sh's rpc step will say so" >&2
    # printf, files and exit through LLVM 22's GPU libc (tests/programs/rpc_gpu_libc.c), built
    # here from LLVM 22's sources by scripts/build-llvm22-gpu-libc.sh.
    echo "building rpc_gpu_libc for sm_90 (clang-22, LLVM 22's GPU libc)"
    libc=$("$root/scripts/build-llvm22-gpu-libc.sh")/nvptx64-nvidia-cuda &&
    PATH=$cuda_min/bin:$PATH clang-22 -O2 -fopenmp -nogpulib --offload-arch=sm_90 -foffload-lto \
        --cuda-path="$cuda_min" -Xoffload-linker "$libc/libomptarget-nvptx.bc" -Xoffload-linker "$libc/libc.a" \
        -I "${LLVM22_OMP_ROOT:-/opt/llvm22-omp}/usr/lib/llvm-22/lib/clang/22/include" -L "$dist/lib" \
        -L "$llvm_lib" -o "$dir/bench/rpc_gpu_libc" "$root/tests/programs/rpc_gpu_libc.c" ||
        echo "gpu-run.sh: WARNING: rpc_gpu_libc did not build; run.sh's rpc step will say so" >&2
fi

# A kernel calling the host in LLVM 19's protocol (tests/programs/rpc_libc_19.cpp: LLVM 19's
# client from its libc's rpc.h, compiled into the GPU image), with clang-19, when LLVM 19's
# sources are here.
llvm19_src=$root/target/llvm-offload-suite/llvm-toolchain-19_19.1.7
if [ -d "$llvm19_src/libc/src/__support/RPC" ]; then
    echo "building rpc_libc_19 for sm_90 (clang-19, LLVM 19's protocol)"
    PATH=$cuda_min/bin:$PATH clang++-19 "${recipe[@]}" -Wno-openmp-target -I "$llvm19_src/libc" \
        -DLIBC_NAMESPACE=__llvm_libc_19_1_7 -o "$dir/bench/rpc_libc_19" "$root/tests/programs/rpc_libc_19.cpp" ||
        echo "gpu-run.sh: WARNING: rpc_libc_19 did not build; run.sh's rpc step will say so" >&2
    # printf, files and malloc through LLVM 19's GPU libc (tests/programs/rpc_gpu_libc.c), built
    # here from LLVM 19's sources by scripts/build-llvm19-gpu-libc.sh, on the link line as
    # clang-19's users put libcgpu-nvptx.a.
    echo "building rpc_gpu_libc_19 for sm_90 (clang-19, LLVM 19's GPU libc)"
    libc19=$("$root/scripts/build-llvm19-gpu-libc.sh")/libcgpu-nvptx.a &&
    PATH=$cuda_min/bin:$PATH clang-19 "${recipe[@]}" -o "$dir/bench/rpc_gpu_libc_19" \
        "$root/tests/programs/rpc_gpu_libc.c" "$libc19" ||
        echo "gpu-run.sh: WARNING: rpc_gpu_libc_19 did not build; run.sh's rpc step will say so" >&2
fi

# The host benchmark suite's runner and its programs, built here (the GPU machine has no clang).
echo "building the host benchmarks"
(cd "$root" && cargo build --quiet --release -p omptarget-bench)
mkdir -p "$dir/hostbench"
cp "$root/target/release/bench" "$dir/hostbench/"
"$dir/hostbench/bench" --build-programs "$dir/hostbench/programs"
# The machine's slow stretches and each runtime's steady cost, apart from the suite's phases.
clang-19 -O2 -fopenmp -fopenmp-targets=x86_64-pc-linux-gnu -I "$root/bench/programs" \
    -o "$dir/hostbench/slow_episodes" "$root/bench/diagnostics/slow_episodes.c"
# An enter's first round against later ones: what fresh memory costs each runtime there.
clang-19 -O2 -fopenmp -fopenmp-targets=x86_64-pc-linux-gnu -I "$root/bench/programs" \
    -o "$dir/hostbench/first_rounds" "$root/bench/diagnostics/first_rounds.c"
# What the machine charges for a cycle, a locked add, a load and a fresh page: the figures to
# read two machines' ratios against.
cc -O2 -I "$root/bench/programs" -o "$dir/hostbench/machine_costs" \
    "$root/bench/diagnostics/machine_costs.c" -lpthread

# Packs an LLVM runtime as NAME.tar.xz: the given libraries and what they need beyond the C and
# C++ runtimes, which the GPU machine has (newer).
pack_runtime() {
    local name=$1 pack lib
    shift
    echo "packing $name's runtime"
    pack=$(mktemp -d)
    mkdir "$pack/$name"
    cp -L "$@" "$pack/$name/"
    for lib in "$@"; do ldd "$lib"; done | awk '$3 ~ /^\// {print $3}' | sort -u | while read -r lib; do
        case ${lib##*/} in libc.so.* | libm.so.* | libstdc++.so.* | libgcc_s.so.* | ld-linux*) ;;
            *) [ -e "$pack/$name/${lib##*/}" ] || cp -L "$lib" "$pack/$name/" ;; esac
    done
    # A library the bundle's lib/ already holds (LLVM 19's libomp.so.5) travels once: the pack
    # names it, and run.sh links it in from lib/ as it unpacks.
    for lib in "$pack/$name"/*; do
        if cmp -s "$lib" "$dir/lib/${lib##*/}"; then
            rm "$lib" && echo "${lib##*/}" >>"$pack/$name/from-bundle-lib.txt"
        fi
    done
    # -9e packs LLVM 22's runtime over a MiB smaller than -6: that bundle is close to the 64 MiB
    # the device tool carries.
    tar -C "$pack" -cf - "$name" | xz -T0 -9e >"$dir/$name.tar.xz"
    rm -rf "$pack"
}
[ -z "${LLVM19:-}" ] || pack_runtime llvm19 "$llvm_lib/libomptarget.so.19.1" "$llvm_lib/libomp.so.5"
if [ -n "${LLVM22:-}" ]; then
    llvm22_lib=${LLVM22_OMP_ROOT:-/opt/llvm22-omp}/usr/lib/llvm-22/lib
    pack_runtime llvm22 "$llvm22_lib/libomptarget.so.22.1" "$llvm22_lib/libLLVMOffload.so.22.1" \
        "$llvm_lib/libomp.so.5"
fi
echo "$compiler" >"$dir/COMPILER"
echo "$toolchain" >"$dir/TOOLCHAIN"

jobs=${JOBS:-$(nproc)}
echo "building the conformance programs for sm_90 with $compiler ($jobs at a time)"
export CUDA_MIN=$cuda_min COMPILER=$compiler
find "$root/tests/conformance" -type f \( -name '*.c' -o -name '*.cpp' \) | sort |
    xargs -P "$jobs" -I{} bash "$0" __compile "$dir" {}
( cd "$dir/conformance"
  shopt -s nullglob
  notes() { local files=(*."$1"); [ ${#files[@]} -eq 0 ] || cat -- "${files[@]}"; }
  notes ok | sort >programs.txt
  notes soak | sort >soak.txt
  notes fail | sort >../compile-failures.txt
  notes skip | sort >../skipped.txt
  rm -f -- *.ok *.fail *.skip *.soak )

{ echo "bundle made $(date -u '+%Y-%m-%d %H:%M:%S UTC') on $(uname -n)"
  echo "source: $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?')" \
       "($(git -C "$root" status --porcelain 2>/dev/null | wc -l) files changed since)"
  echo "compiler: $("clang-${compiler#clang}" --version | head -n 1); ptxas $(sed 's/CUDA Version //' "$cuda_min/version.txt")"
  echo "dist: $dist"
  (cd "$dir/lib" && ls -l --time-style=+%F.%R -- * | awk '{$1 = $2 = $3 = $4 = ""; print " " $0}')
} >"$dir/BUILD-INFO"

write_run_sh() {
cat <<'RUN'
#!/usr/bin/env bash
# The GPU half of scripts/gpu-run.sh (made by `scripts/gpu-run.sh bundle`; docs/gpu-validation.md).
# Runs every conformance program against our runtime on the CUDA plugin, then the benchmarks.
# Env: TIMEOUT (seconds per program, default 30), CONFORMANCE_BUDGET (seconds in all, default 420),
# ONLY (names containing it), SKIP_CONFORMANCE=1, SKIP_BENCH=1, STEPS (default "rules conformance
# rpc bench"; also placement, host_bench, soak), HOST_RUNS (host_bench's --runs, default 9),
# SOAK_RUNS (runs of each soak program, default 100) and SOAK_JOBS (at a time, default 8).
# Report: $OUT/gpu-results.txt when $OUT is set, else <bundle>/results/ (written as it goes, so a
# run cut short still leaves what it had). With llvm19.tar.xz in the bundle (LLVM19=1), each
# program we fail runs again under LLVM 19's runtime, and so do the benchmarks.
set -uo pipefail # no -e: one failing program must not end the run
here=$(cd "$(dirname "$0")" && pwd)
results=${OUT:-$here/results}
mkdir -p "$results/logs"
timeout_s=${TIMEOUT:-30} budget_s=${CONFORMANCE_BUDGET:-420}
# The suffix of check()'s logs: none for ours, .llvm19 or .llvm22 under LLVM's runtime.
log_suffix=
# LLVM's runtimes from the bundle, once unpacked; the judge of failures is the one of the
# compiler that built the conformance programs.
llvm19_lib= llvm22_lib=
compiler=$(cat "$here/COMPILER" 2>/dev/null || echo clang19)
judge=llvm${compiler#clang}

# Our runtime and LLVM's libomp from the bundle; only the CUDA plugin; and a region that cannot
# run on the GPU is an error, never a silent host fallback.
export LD_LIBRARY_PATH=$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export LIBOMPTARGET_PLUGINS_TO_LOAD=cuda OMP_TARGET_OFFLOAD=mandatory
unset LIBOMPTARGET_DEBUG LIBOMPTARGET_INFO LIBOMPTARGET_PLUGIN_PATH

with_timeout() {
    if command -v timeout >/dev/null; then timeout -k 10 "$@"; else shift; "$@"; fi
}

machine() {
    echo "== machine ($(date -u '+%Y-%m-%d %H:%M:%S UTC'))"
    uname -srm; echo "cpus: $(nproc)"
    # The CPU model and caches: the host benchmarks' figures are read against other machines'.
    grep -m1 '^model name' /proc/cpuinfo
    command -v lscpu >/dev/null && lscpu | grep -E '^(L1d|L1i|L2|L3)'
    echo "kernel command line: $(cat /proc/cmdline 2>/dev/null)"
    if command -v nvidia-smi >/dev/null; then
        with_timeout 30 nvidia-smi -L
        with_timeout 30 nvidia-smi --query-gpu=name,driver_version,memory.total,pcie.link.gen.max,pcie.link.width.max \
            --format=csv,noheader
    else
        echo "nvidia-smi: not present"
    fi
    echo "libcuda.so.1: $( (/sbin/ldconfig -p 2>/dev/null || ldconfig -p 2>/dev/null) |
        awk '/libcuda\.so\.1 /{print $NF; found = 1; exit} END {if (!found) print "not in the loader cache"}')"
    echo "== bundle"; cat "$here/BUILD-INFO"
    echo "== omptarget-info"; "$here/bin/omptarget-info" 2>&1
}

# An LLVM runtime from the bundle (llvm19 or llvm22), unpacked, with the name of the driver its
# plugin opens; sets llvm19_lib or llvm22_lib.
unpack_runtime() {
    local name=$1 to=${TMPDIR:-/tmp}/omptarget-gpu-$1 cuda
    [ -e "$here/$name.tar.xz" ] || return 0
    rm -rf "$to" && mkdir -p "$to" && tar -C "$to" -xJf "$here/$name.tar.xz" ||
        { echo "$name.tar.xz: could not unpack; no $name runs"; return 0; }
    cuda=$( (/sbin/ldconfig -p 2>/dev/null || ldconfig -p) | awk '/libcuda\.so\.1 /{print $NF; exit}')
    [ -n "$cuda" ] && ln -sf "$cuda" "$to/$name/libcuda.so"
    local shared
    [ ! -e "$to/$name/from-bundle-lib.txt" ] ||
        while read -r shared; do ln -sf "$here/lib/$shared" "$to/$name/$shared"; done <"$to/$name/from-bundle-lib.txt"
    printf -v "${name}_lib" '%s' "$to/$name"
    echo "== $name's runtime: $to/$name (libcuda.so -> ${cuda:-none})"
}

# The unpacked directory of runtime $1 (llvm19, llvm22), or nothing.
runtime_lib() {
    case $1 in llvm19) echo "$llvm19_lib" ;; llvm22) echo "$llvm22_lib" ;; esac
}

# Runs the rest of the command line (a program or a function) under LLVM runtime $1 alone.
under_llvm() {
    local lib
    lib=$(runtime_lib "$1")
    (unset LIBOMPTARGET_PLUGINS_TO_LOAD; export LD_LIBRARY_PATH=$lib; log_suffix=.$1; shift; "$@")
}

# Runs the command line after the runtime's name (ours, llvm19, llvm22) under that runtime.
on_runtime() {
    local runtime=$1
    shift
    if [ "$runtime" = ours ]; then "$@"; else under_llvm "$runtime" "$@"; fi
}

# One program, checked as tests/src/conformance.rs checks it: exit status (EXIT: fail inverts
# it), each EXPECT line in stdout, each EXPECT-STDERR in stderr, no REJECT-STDERR.
check() {
    local name=$1 bin=$2 key value status problems=() env=() should_fail=0
    local out=$results/logs/$bin$log_suffix.out err=$results/logs/$bin$log_suffix.err
    local spec=$here/conformance/$bin.spec
    while IFS= read -r line; do
        key=${line#// }; key=${key%%: *}; value=${line#*: }
        case $key in
            ENV) env+=("$value") ;;
            EXIT) should_fail=1 ;;
        esac
    done <"$spec"
    (cd "$results/logs" && with_timeout "$timeout_s" env "${env[@]}" "$here/conformance/$bin") \
        >"$out" 2>"$err" </dev/null
    status=$?
    if [ $status -eq 124 ] || [ $status -eq 137 ]; then
        problems+=("timed out after ${timeout_s}s")
    elif [ $should_fail = 1 ] && [ $status -eq 0 ]; then
        problems+=("exited 0 but the program is expected to fail")
    elif [ $should_fail = 0 ] && [ $status -ne 0 ]; then
        problems+=("exited with $status$([ $status -gt 128 ] && echo " (signal $((status - 128)))")")
    fi
    while IFS= read -r line; do
        key=${line#// }; key=${key%%: *}; value=${line#*: }
        case $key in
            EXPECT) grep -qxF -- "$value" "$out" || problems+=("stdout lacks the line '$value'") ;;
            EXPECT-STDERR) grep -qF -- "$value" "$err" || problems+=("stderr lacks '$value'") ;;
            REJECT-STDERR) grep -qF -- "$value" "$err" && problems+=("stderr has '$value'") ;;
        esac
    done <"$spec"
    if [ ${#problems[@]} -eq 0 ]; then
        echo "PASS $name"
        rm -f "$out" "$err"
        return 0
    fi
    printf 'FAIL %s: %s' "$name" "${problems[0]}"
    for line in "${problems[@]:1}"; do printf '; %s' "$line"; done
    echo
    tail -n 4 "$err" | sed 's/^/       | /'
    return 1
}

# What a program needs that this machine lacks, from its directives (`// NEEDS: N devices`,
# `// NOT-ON-GPU: why`): the reason to leave it out, or nothing.
lacks() {
    local line need
    while IFS= read -r line; do
        case $line in
            "// NOT-ON-GPU: "*) echo "${line#// NOT-ON-GPU: }"; return ;;
            "// NEEDS: "*" devices")
                need=${line#// NEEDS: }; need=${need%% *}
                [ "$devices" -ge "$need" ] || { echo "needs $need devices, this machine has $devices"; return; } ;;
            "// NEEDS: nvlink")
                # Without nvlink, a function's address stored in a device global stays an offset
                # in its section (no relocation for the driver to resolve): calls through it
                # fault, under LLVM's runtime too.
                [ "$(cat "$here/TOOLCHAIN" 2>/dev/null)" != stand-in ] ||
                    { echo "needs nvlink: the stand-in toolchain cannot link function pointers in device globals"; return; } ;;
        esac
    done <"$here/conformance/$1.spec"
}

# A program that needs pageable memory access (`// NEEDS: pageable memory access`) on a device
# without it: it cannot run as written, but the runtime must say why as the device starts
# (under LIBOMPTARGET_INFO bit 128, which asks for what devices reach of host memory).
announces_no_pageable_access() {
    local err=$results/logs/$2.err
    (cd "$results/logs" && LIBOMPTARGET_INFO=128 with_timeout "$timeout_s" "$here/conformance/$2") >/dev/null 2>"$err" </dev/null
    if grep -qF "cannot access pageable host memory" "$err"; then
        echo "PASS $1 (device 0 has no pageable memory access: the runtime says so)"
        rm -f "$err"
    else
        echo "FAIL $1: needs pageable memory access, which device 0 lacks, and the runtime did not say so"
        tail -n 4 "$err" | sed 's/^/       | /'
        return 1
    fi
}

conformance() {
    local name bin pass=0 fail=0 skip=0 failed=() start=$SECONDS judged=0 llvm_passes=() why
    local lacking=0 devices pageable
    devices=$("$here/bin/omptarget-info" 2>/dev/null | awk '/^Devices: /{print $2; exit}')
    pageable=$("$here/bin/omptarget-info" 2>/dev/null | awk -F': *' '$1 ~ /pageable memory access/{print $2; exit}')
    echo "== conformance ($compiler, sm_90, LIBOMPTARGET_PLUGINS_TO_LOAD=cuda, OMP_TARGET_OFFLOAD=mandatory, timeout ${timeout_s}s;" \
        "${devices:=0} devices, pageable memory access ${pageable:=unknown})"
    while read -r name bin; do
        [[ $name == *"${ONLY:-}"* ]] || continue
        if [ $((SECONDS - start)) -gt "$budget_s" ]; then
            echo "SKIP $name (the ${budget_s}s conformance budget is spent)"
            skip=$((skip + 1))
        elif why=$(lacks "$bin") && [ -n "$why" ]; then
            echo "LEFT OUT $name ($why)"
            lacking=$((lacking + 1))
        elif [ "$pageable" = 0 ] && grep -qx '// NEEDS: pageable memory access' "$here/conformance/$bin.spec"; then
            if announces_no_pageable_access "$name" "$bin"; then pass=$((pass + 1)); else
                fail=$((fail + 1)); failed+=("$name"); fi
        elif check "$name" "$bin"; then pass=$((pass + 1)); else
            fail=$((fail + 1)); failed+=("$name")
            if [ -n "$(runtime_lib "$judge")" ]; then
                # The same program and checks under LLVM's runtime of the same release.
                judged=$((judged + 1))
                under_llvm "$judge" check "$name" "$bin" >"$results/logs/judge" && llvm_passes+=("$name")
                sed "s/^/   LLVM ${judge#llvm}: /" "$results/logs/judge"
            fi
        fi
    done <"$here/conformance/programs.txt"
    echo "-- conformance: $pass passed, $fail failed, $lacking left out for what this machine lacks," \
        "$skip skipped for time ($((SECONDS - start))s);" \
        "$(wc -l <"$here/compile-failures.txt") did not compile for sm_90 (compile-failures.txt)," \
        "$(wc -l <"$here/skipped.txt") not for $compiler"
    [ $fail -eq 0 ] || echo "   failed: ${failed[*]}"
    [ $judged -eq 0 ] || echo "   LLVM ${judge#llvm}'s runtime passes ${#llvm_passes[@]} of those $judged: ${llvm_passes[*]:-none}"
    sed 's/^/   no sm_90 build: /' "$here/compile-failures.txt"
    [ $fail -eq 0 ] && [ $skip -eq 0 ]
}

# The soak: the programs whose failures depend on timing (async/, threads/, every nowait
# program: conformance/soak.txt) run SOAK_RUNS times each, SOAK_JOBS at a time, each checked as
# the conformance step checks it; prints each program's counts and the failures' first lines.
soak_one() {
    log_suffix=.soak$3
    check "$1" "$2"
}
soak() {
    local runs=${SOAK_RUNS:-100} jobs=${SOAK_JOBS:-8} start=$SECONDS devices why
    devices=$("$here/bin/omptarget-info" 2>/dev/null | awk '/^Devices: /{print $2; exit}')
    echo "== soak (${runs} runs of each of $(wc -l <"$here/conformance/soak.txt") programs, $jobs at a time, timeout ${timeout_s}s)"
    export here results timeout_s
    export -f check soak_one with_timeout
    while read -r name bin; do
        if why=$(devices=${devices:-0} lacks "$bin") && [ -n "$why" ]; then
            echo "LEFT OUT $name ($why)" >&2
            continue
        fi
        for ((i = 1; i <= runs; i++)); do echo "$name $bin $i"; done
    done <"$here/conformance/soak.txt" |
        xargs -P "$jobs" -L 1 bash -c 'soak_one "$@"' soak >"$results/soak-lines.txt"
    awk '/^(PASS|FAIL) / { verdict = $1; name = $2; sub(":$", "", name); runs[name]++; if (verdict == "PASS") passed[name]++;
           if ($0 ~ /timed out/) hung[name]++ }
         END { for (n in runs) { printf "%s %s: %d of %d runs passed, %d hung\n",
               (passed[n] == runs[n] ? "PASS" : "FAIL"), n, passed[n], runs[n], hung[n];
               t += runs[n]; p += passed[n]; h += hung[n] }
               printf "-- soak: %d runs, %d passed, %d failed, %d hung\n", t, p, t - p, h }' \
        "$results/soak-lines.txt" | sort -k2
    grep -m 10 '^FAIL' "$results/soak-lines.txt"
    echo "   ($((SECONDS - start))s)"
    ! grep -q '^FAIL' "$results/soak-lines.txt"
}

# The raw driver and our runtime, the same figures; the table divides ours by the raw ones.
bench() {
    local ok=0 figures=$results/bench.txt
    echo "== benchmarks (256 MiB copies; medians)"
    with_timeout 120 "$here/bench/raw_driver" "$here/bench/omp_gpu" >"$figures" 2>"$results/logs/raw_driver.err" ||
        { ok=1; echo "raw_driver failed:"; cat "$results/logs/raw_driver.err"; }
    with_timeout 120 "$here/bench/omp_gpu" >>"$figures" 2>"$results/logs/omp_gpu.err" ||
        { ok=1; echo "omp_gpu failed:"; tail -n 20 "$results/logs/omp_gpu.err"; }
    if [ -n "$llvm19_lib" ]; then
        under_llvm llvm19 with_timeout 120 "$here/bench/omp_gpu" 2>"$results/logs/omp_gpu.llvm19.err" |
            sed 's/^omp /llvm19 /' >>"$figures" ||
            { ok=1; echo "omp_gpu under LLVM 19 failed:"; tail -n 20 "$results/logs/omp_gpu.llvm19.err"; }
    fi
    cat "$figures"
    echo
    awk '
        { v[$1 " " $2] = $3 }
        function row(label, raw, omp, kind, target,   r, o, ratio, verdict) {
            r = v["raw " raw]; o = v["omp " omp]
            if (r == "" || o == "" || r + 0 == 0) { ratio = "-"; verdict = "no data" }
            else {
                ratio = sprintf("%.2f", o / r)
                if (target == "") verdict = "-"
                else if (kind == "lat") verdict = (o / r <= target) ? "met" : "MISSED"
                else verdict = (o / r >= target) ? "met" : "MISSED"
                if (verdict == "met") met++
            }
            if (target != "") { targets++; target = (kind == "lat" ? "<= " : ">= ") target }
            printf "%-36s %10s %10s %8s  %-8s %s\n", label, (r == "" ? "-" : r), (o == "" ? "-" : o), ratio, target, verdict
        }
        END {
            printf "%-36s %10s %10s %8s  %-8s %s\n", "figure", "raw", "omp", "omp/raw", "target", ""
            row("launch latency (us)",            "launch_us",        "launch_us",             "lat", "1.5")
            row("launch + scalar tofrom (us)",    "launch_copy_us",   "launch_map_us",         "lat", "")
            row("H2D pageable, mapped (GB/s)",    "h2d_pageable_gbs", "h2d_pageable_gbs",      "bw",  "")
            row("D2H pageable, mapped (GB/s)",    "d2h_pageable_gbs", "d2h_pageable_gbs",      "bw",  "")
            row("H2D pinned, mapped (GB/s)",      "h2d_pinned_gbs",   "h2d_pinned_gbs",        "bw",  "0.90")
            row("D2H pinned, mapped (GB/s)",      "d2h_pinned_gbs",   "d2h_pinned_gbs",        "bw",  "0.90")
            row("H2D pinned, omp_target_memcpy",  "h2d_pinned_gbs",   "h2d_pinned_memcpy_gbs", "bw",  "0.90")
            row("D2H pinned, omp_target_memcpy",  "d2h_pinned_gbs",   "d2h_pinned_memcpy_gbs", "bw",  "0.90")
            printf "-- targets met: %d of %d\n", met, targets
            if (("llvm19 launch_us") in v) {
                printf "\n%-36s %10s %10s %10s\n", "figure", "ours", "LLVM 19", "ours/LLVM"
                n = split("launch_us launch_map_us h2d_pageable_gbs d2h_pageable_gbs h2d_pinned_gbs d2h_pinned_gbs h2d_pinned_memcpy_gbs d2h_pinned_memcpy_gbs", k, " ")
                for (i = 1; i <= n; i++) {
                    o = v["omp " k[i]]; l = v["llvm19 " k[i]]
                    printf "%-36s %10s %10s %10s\n", k[i], o, l, (o != "" && l + 0 != 0) ? sprintf("%.2f", o / l) : "-"
                }
            }
        }' "$figures"
    launch_rounds
    per_construct_and_contention
    return $ok
}

# One process's launch median depends on where its waits wake up (on the VM seen here, 18 to
# 60 us for the same program): ROUNDS (default 5) rounds of the raw driver, ours and LLVM 19's,
# launches only, taking turns; the median of each one's medians.
launch_rounds() {
    local rounds=${ROUNDS:-5} r i line names=(raw ours) file=$results/launch-rounds.txt
    [ -n "$llvm19_lib" ] && names+=(llvm19)
    : >"$file"
    for ((i = 1; i <= rounds; i++)); do
        for r in "${names[@]}"; do
            case $r in
                raw) GPU_BENCH_LAUNCHES_ONLY=1 with_timeout 60 "$here/bench/raw_driver" ;;
                *) GPU_BENCH_LAUNCHES_ONLY=1 on_runtime "$r" with_timeout 60 "$here/bench/omp_gpu" ;;
            esac 2>/dev/null | awk -v r="$r" '$2 ~ /^launch/ {print r, $2, $3}' >>"$file"
        done
    done
    echo "== launch latency, $rounds alternating rounds (us: each round's median, then their median)"
    awk '
        { k = $1 " " ($2 == "launch_copy_us" ? "launch_map_us" : $2); v[k] = v[k] " " $3; n[k]++; x[k, n[k]] = $3 }
        END {
            split("raw launch_us|ours launch_us|llvm19 launch_us|raw launch_p10_us|ours launch_p10_us|llvm19 launch_p10_us|raw launch_p90_us|ours launch_p90_us|llvm19 launch_p90_us|raw launch_map_us|ours launch_map_us|llvm19 launch_map_us", order, "|")
            for (o = 1; o <= 12; o++) {
                k = order[o]; if (!(k in n)) continue
                m = n[k]
                for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (x[k, j] < x[k, i]) { t = x[k, i]; x[k, i] = x[k, j]; x[k, j] = t }
                med[k] = m % 2 ? x[k, (m + 1) / 2] : (x[k, m / 2] + x[k, m / 2 + 1]) / 2
                printf "%-22s median %8.3f  rounds:%s\n", k, med[k], v[k]
            }
            if (("raw launch_us") in med && ("ours launch_us") in med)
                printf "ours/raw launch %.2f (target <= 1.5)\n", med["ours launch_us"] / med["raw launch_us"]
            if (("llvm19 launch_us") in med)
                printf "ours/LLVM 19: launch %.2f, launch with map(tofrom) %.2f\n", med["ours launch_us"] / med["llvm19 launch_us"], med["ours launch_map_us"] / med["llvm19 launch_map_us"]
        }' "$file"
}

# Wall time per construct of each kind of bench/gpu/per_construct.c (20001 runs less 1, over
# 20000), and large_maps (small regions beside a thread mapping 256 MiB), ours then LLVM 19's.
per_construct_and_contention() {
    local k t0 t1 t2 runtimes=(ours) r
    [ -n "$llvm19_lib" ] && runtimes+=(llvm19)
    echo "== per construct (wall ns: (20001 runs - 1 run) / 20000)"
    printf '%-12s' kind; printf ' %10s' "${runtimes[@]}"; echo
    for k in empty map_to map_tofrom enter_exit update nowait; do
        printf '%-12s' "$k"
        for r in "${runtimes[@]}"; do
            t0=$(date +%s%N); on_runtime "$r" with_timeout 60 "$here/bench/per_construct" "$k" 1 >/dev/null 2>&1
            t1=$(date +%s%N); on_runtime "$r" with_timeout 60 "$here/bench/per_construct" "$k" 20001 >/dev/null 2>&1 ||
                { printf ' %10s' failed; continue; }
            t2=$(date +%s%N)
            printf ' %10d' $(( ((t2 - t1) - (t1 - t0)) / 20000 ))
        done
        echo
    done
    echo "== small regions beside a thread mapping 256 MiB (bench/programs/large_maps.c 256 400 3)"
    for r in "${runtimes[@]}"; do
        on_runtime "$r" with_timeout 120 "$here/bench/large_maps" 256 400 3 2>&1 | sed "s/^/$r: /"
    done
}

# The command that runs the rest of its command line pinned to the CPU it is given first:
# taskset, or Python's sched_setaffinity where util-linux is missing.
if command -v taskset >/dev/null; then pin_to=(taskset -c); else
    pin_to=(python3 -c 'import os, sys; os.sched_setaffinity(0, {int(sys.argv[1])}); os.execvp(sys.argv[2], sys.argv[2:])')
fi

# One launches-only process of the raw driver or of omp_gpu under a runtime (the first argument),
# pinned to the CPU given second if any: "launch_us p10 p90".
launch_figures() {
    local runtime=$1 pin=()
    [ -n "${2:-}" ] && pin=("${pin_to[@]}" "$2")
    case $runtime in
        raw) GPU_BENCH_LAUNCHES_ONLY=1 with_timeout 60 "${pin[@]}" "$here/bench/raw_driver" ;;
        *) GPU_BENCH_LAUNCHES_ONLY=1 on_runtime "$runtime" with_timeout 60 "${pin[@]}" "$here/bench/omp_gpu" ;;
    esac 2>/dev/null | awk '$2 == "launch_us" {m = $3} $2 == "launch_p10_us" {a = $3} $2 == "launch_p90_us" {b = $3}
        END {print (m == "" ? "failed" : m " " a " " b)}'
}

# Whether the slow launch mode (one process's median 20-25 us or 45-60 us on the H100 VM) is
# where the waiting thread runs: the raw driver pinned to each CPU in turn; then the raw driver,
# ours and LLVM 19's pinned together to the fastest and to the slowest CPU of that sweep; then all
# three unpinned with spinning waits (RAW_DRIVER_SCHED=spin, OMP_GPU_SCHED=spin). Figures: median,
# 10th and 90th percentile of one process's 20,000 launches (us).
placement() {
    local cpu n fast slow best= worst= f r i names=(raw ours) file=$results/placement.txt
    [ -n "$llvm19_lib" ] && names+=(llvm19)
    n=$(nproc)
    echo "== launch latency and where the waiting thread runs ($n CPUs; median p10 p90, us)"
    grep -i nvidia /proc/interrupts | awk '{printf "irq %s", $1; for (i = 2; i <= NF; i++) if ($i ~ /^[0-9]+$/ && $i > 0) printf " cpu%d:%s", i - 2, $i; print ""}'
    : >"$file"
    for ((cpu = 0; cpu < n; cpu++)); do
        f=$(launch_figures raw "$cpu")
        echo "raw pinned cpu $cpu: $f" | tee -a "$file"
        [ "$f" = failed ] && continue
        if [ -z "$best" ] || awk -v a="${f%% *}" -v b="$best" 'BEGIN {exit !(a < b)}'; then best=${f%% *}; fast=$cpu; fi
        if [ -z "$worst" ] || awk -v a="${f%% *}" -v b="$worst" 'BEGIN {exit !(a > b)}'; then worst=${f%% *}; slow=$cpu; fi
    done
    grep -i nvidia /proc/interrupts | awk '{printf "irq %s", $1; for (i = 2; i <= NF; i++) if ($i ~ /^[0-9]+$/ && $i > 0) printf " cpu%d:%s", i - 2, $i; print ""}'
    [ -n "$best" ] || { echo "placement: the raw driver failed on every CPU"; return 1; }
    for cpu in "$fast" "$slow"; do
        for ((i = 1; i <= 3; i++)); do
            for r in "${names[@]}"; do
                echo "$r pinned cpu $cpu round $i: $(launch_figures "$r" "$cpu")" | tee -a "$file"
            done
        done
    done
    for ((i = 1; i <= 3; i++)); do
        for r in "${names[@]}"; do
            echo "$r spinning round $i: $(RAW_DRIVER_SCHED=spin OMP_GPU_SCHED=spin launch_figures "$r")" | tee -a "$file"
        done
    done
}

# The CUDA driver's answers to the questions the emulated driver answers by a rule of its own
# (bench/gpu/driver_rules.c: calls from a thread that never made a context current), beside the
# emulator's, recorded when the bundle was made.
rules() {
    local emulated=$here/bench/driver_rules.emulated.txt real=$results/driver_rules.txt
    [ -x "$here/bench/driver_rules" ] && [ -e "$emulated" ] ||
        { echo "rules: the bundle has no driver_rules"; return 1; }
    echo "== rules: the CUDA driver's answers (and the emulated driver's)"
    with_timeout 60 "$here/bench/driver_rules" >"$real" || { cat "$real"; echo "rules: driver_rules failed"; return 1; }
    # A kernel without an x86-64 twin cannot run on the emulator: its own `launch_current` differs.
    join -a1 -a2 -e none -o 0,1.2,2.2 <(sed 's/^rule //' "$real" | sort) \
        <(sed 's/^rule //' "$emulated" | sort) |
        awk '{ same = ($2 == $3) || $1 ~ /_current$/; if (!same) differs = 1
               print $1, $2, "(emulated: " $3 ")", same ? "" : "DIFFERS: the emulator needs mending" }
             END { exit differs }'
}

# The host benchmark suite (bench/, issue 19's figures) on this machine's CPUs: the same
# clang-19 programs on ours and on LLVM 19's runtime, alternating, as `target/release/bench`.
# A kernel calling the host through the RPC server (tests/programs/rpc_host_call.cpp): the host
# call's answer, then 1000 timed round trips and the waiting and idle threads' CPU time, ours
# then LLVM 22's when the bundle has it; then a kernel using LLVM 22's GPU libc
# (tests/programs/rpc_gpu_libc.c); then one speaking LLVM 19's protocol
# (tests/programs/rpc_libc_19.cpp), and the first with LLVM 19's GPU libc.
rpc() {
    local exe=$here/bench/rpc_host_call status=0
    [ -x "$exe" ] || { echo "rpc: the bundle has no rpc_host_call (built with clang-22)"; return 1; }
    echo "== rpc: ours"
    for calls in "" 1000; do
        LD_LIBRARY_PATH=$here/lib LIBOMPTARGET_PLUGINS_TO_LOAD=cuda OMP_TARGET_OFFLOAD=mandatory \
            timeout "${TIMEOUT:-30}" "$exe" $calls || status=1
    done
    if [ -n "$llvm22_lib" ]; then
        echo "== rpc: LLVM 22"
        for calls in "" 1000; do
            LD_LIBRARY_PATH=$llvm22_lib:$here/lib OMP_TARGET_OFFLOAD=mandatory \
                timeout "${TIMEOUT:-30}" "$exe" $calls || echo "(LLVM 22 failed)"
        done
    fi
    # LLVM 22's GPU libc in the kernel: it prints PASS when the device's printf count, file and
    # allocation were right; its printf lines come from our server.
    exe=$here/bench/rpc_gpu_libc
    if [ -x "$exe" ]; then
        echo "== rpc: GPU libc, ours"
        LD_LIBRARY_PATH=$here/lib LIBOMPTARGET_PLUGINS_TO_LOAD=cuda OMP_TARGET_OFFLOAD=mandatory \
            timeout "${TIMEOUT:-30}" "$exe" "${TMPDIR:-/tmp}/rpc_gpu_libc.txt" || status=1
        if [ -n "$llvm22_lib" ]; then
            echo "== rpc: GPU libc, LLVM 22"
            LD_LIBRARY_PATH=$llvm22_lib:$here/lib OMP_TARGET_OFFLOAD=mandatory \
                timeout "${TIMEOUT:-30}" "$exe" "${TMPDIR:-/tmp}/rpc_gpu_libc.txt" || echo "(LLVM 22 failed)"
        fi
    else
        echo "rpc: the bundle has no rpc_gpu_libc (built with clang-22 and LLVM 22's GPU libc)"
        status=1
    fi
    # LLVM 19's protocol: a host call, puts, printf, a file, malloc and free from one thread,
    # then host calls and allocations from 8 threads of a warp at once; exit 0 when all were
    # right. LLVM 19's runtime runs it too when the bundle has it (LLVM19=1).
    exe=$here/bench/rpc_libc_19
    if [ -x "$exe" ]; then
        echo "== rpc: LLVM 19's protocol, ours"
        timeout "${TIMEOUT:-30}" "$exe" "${TMPDIR:-/tmp}/rpc_libc_19.txt" &&
            cat "${TMPDIR:-/tmp}/rpc_libc_19.txt" || status=1
        if [ -n "$llvm19_lib" ]; then
            echo "== rpc: LLVM 19's protocol, LLVM 19"
            under_llvm llvm19 timeout "${TIMEOUT:-30}" "$exe" "${TMPDIR:-/tmp}/rpc_libc_19.txt" ||
                echo "(LLVM 19 failed)"
        fi
    else
        echo "rpc: the bundle has no rpc_libc_19 (built with clang-19 from LLVM 19's libc sources)"
        status=1
    fi
    # LLVM 19's GPU libc in the kernel, as with LLVM 22's above.
    exe=$here/bench/rpc_gpu_libc_19
    if [ -x "$exe" ]; then
        echo "== rpc: LLVM 19's GPU libc, ours"
        timeout "${TIMEOUT:-30}" "$exe" "${TMPDIR:-/tmp}/rpc_gpu_libc_19.txt" || status=1
        if [ -n "$llvm19_lib" ]; then
            echo "== rpc: LLVM 19's GPU libc, LLVM 19"
            under_llvm llvm19 timeout "${TIMEOUT:-30}" "$exe" "${TMPDIR:-/tmp}/rpc_gpu_libc_19.txt" ||
                echo "(LLVM 19 failed)"
        fi
    else
        echo "rpc: the bundle has no rpc_gpu_libc_19 (built with clang-19 and LLVM 19's GPU libc)"
        status=1
    fi
    return $status
}

host_bench() {
    local ours=${TMPDIR:-/tmp}/omptarget-host-dist
    [ -x "$here/hostbench/bench" ] || { echo "host_bench: the bundle has no hostbench/"; return 1; }
    [ -n "$llvm19_lib" ] || { echo "host_bench: no LLVM 19 runtime in the bundle (LLVM19=1)"; return 1; }
    # Our install tree without LLVM's libomp, which the programs find in the loader's path.
    rm -rf "$ours" && mkdir -p "$ours/lib" && cp -a "$here/lib/." "$ours/lib/" && rm -f "$ours/lib/libomp.so.5"
    # The GPU machine has no libomp: the programs find the bundle's in the loader's path there.
    if ! (/sbin/ldconfig -p 2>/dev/null || ldconfig -p 2>/dev/null) | grep -q 'libomp\.so\.5 '; then
        cp "$here/lib/libomp.so.5" /usr/local/lib/ 2>/dev/null && ldconfig 2>/dev/null
    fi
    local runs=${HOST_RUNS:-9}
    echo "== host benchmarks (bench --runs $runs; $(nproc) CPUs)"
    # As on a machine without a GPU: every plugin, the programs' default offload policy, and
    # no library path of ours (the footprint check asks ldd what our files need).
    # About 30 s a run on the 2-CPU VM; the runs so far are in host-bench.err if it is cut short.
    with_timeout $((60 + 50 * runs)) env -u LIBOMPTARGET_PLUGINS_TO_LOAD -u OMP_TARGET_OFFLOAD -u LD_LIBRARY_PATH \
        "$here/hostbench/bench" --runs "$runs" --dist "$ours" --llvm "$llvm19_lib" \
        --programs "$here/hostbench/programs" --out "$results/host-bench.md" 2>"$results/logs/host-bench.err"
    local status=$?
    [ $status -eq 0 ] || tail -n 5 "$results/logs/host-bench.err"
    local lib i
    runtime_of() { [ "$1" = "$ours/lib" ] && echo ours || echo 'LLVM 19'; }
    if [ -x "$here/hostbench/machine_costs" ]; then
        echo "== machine costs (bench/diagnostics/machine_costs.c)"
        with_timeout 60 "$here/hostbench/machine_costs"
    fi
    # Slow stretches of this machine, and the two runtimes' steady costs (fastest tenth of
    # rounds of enter and exit in one process): bench/diagnostics/slow_episodes.c.
    if [ -x "$here/hostbench/slow_episodes" ]; then
        for lib in "$ours/lib" "$llvm19_lib"; do
            echo "== slow stretches, $(runtime_of "$lib")"
            with_timeout 60 env -u LIBOMPTARGET_PLUGINS_TO_LOAD -u OMP_TARGET_OFFLOAD \
                LD_LIBRARY_PATH="$lib" "$here/hostbench/slow_episodes" 2000 5
        done
    fi
    if [ -x "$here/hostbench/first_rounds" ]; then
        for i in 1 2 3; do
            for lib in "$ours/lib" "$llvm19_lib"; do
                echo "== first rounds at 10 thousand mappings, $(runtime_of "$lib"), process $i"
                with_timeout 60 env -u LIBOMPTARGET_PLUGINS_TO_LOAD -u OMP_TARGET_OFFLOAD \
                    LD_LIBRARY_PATH="$lib" "$here/hostbench/first_rounds" 10000 3
            done
        done
    fi
    return $status
}

main() {
    local status=0
    machine
    unpack_runtime llvm19
    unpack_runtime llvm22
    # Carried copies may lose symlinks; the programs ask for libomptarget.so.19.1.
    for link in libomptarget.so.19.1 libomptarget.so; do
        [ -e "$here/lib/$link" ] || ln -sf libomptarget.so.22.1 "$here/lib/$link"
    done
    if [ ! -e "$here/lib/libomptarget.rtl.cuda.so" ]; then
        echo "FATAL: the bundle has no libomptarget.rtl.cuda.so; rebuild it with the CUDA plugin"
        return 1
    fi
    if ldd "$here/bench/omp_gpu" | grep 'not found'; then
        echo "FATAL: libraries missing (above)"
        return 1
    fi
    for step in ${STEPS:-rules conformance rpc bench}; do
        case $step in
            conformance) [ -n "${SKIP_CONFORMANCE:-}" ] || conformance || status=1 ;;
            bench) [ -n "${SKIP_BENCH:-}" ] || bench || status=1 ;;
            placement | host_bench | soak | rpc | rules) $step || status=1 ;;
            *) echo "run.sh: no step '$step'"; status=1 ;;
        esac
    done
    echo "== done: $([ $status -eq 0 ] && echo 'all ran clean' || echo 'failures above'); report in $results"
    return $status
}

main 2>&1 | tee "$results/gpu-results.txt"
exit "${PIPESTATUS[0]}"
RUN
}
write_run_sh >"$dir/run.sh"
chmod 755 "$dir/run.sh"

size=$(du -sb "$dir" | cut -f1)
echo "bundle: $dir ($((size >> 20)) MiB): $(wc -l <"$dir/conformance/programs.txt") programs built," \
     "$(wc -l <"$dir/compile-failures.txt") failed to compile (compile-failures.txt)," \
     "$(wc -l <"$dir/skipped.txt") not for $compiler"
# The device tool sends the bundle with the working tree (the files git tracks, and those it
# neither tracks nor ignores), 64 MiB in all; a call over that is refused before it starts.
tree=$(cd "$root" && git ls-files -z --cached --others --exclude-standard 2>/dev/null |
    xargs -0 -r stat -c %s -- 2>/dev/null | awk '{s += $1} END {print s + 0}')
travels=$((size + tree))
echo "with the working tree, $((travels >> 20)) MiB travel to the GPU machine (the device tool takes 64 MiB)"
[ "$travels" -le $((64 << 20)) ] ||
    echo "gpu-run.sh: WARNING: over the device tool's 64 MiB; build it without LLVM19=1 or LLVM22=1" >&2
