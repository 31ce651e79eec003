#!/usr/bin/env bash
# Installs the Debian packages on this machine and checks them as a user would: a clang-19
# program runs on the installed runtime with no environment set, omptarget-info lists the
# installed plugins, the plugin checker passes, the program runs on a remote device through the
# MPI plugin package under mpirun, removing the CUDA plugin package leaves a
# working runtime, and purging leaves nothing behind and Debian's LLVM files untouched.
# Needs root (or sudo) and dpkg. Purges the packages even when a check fails.
# Usage: scripts/test-packages.sh [DEB_DIR]   (default: builds them into target/debs)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo
debs=${1:-}
if [ -z "$debs" ]; then
    debs=$root/target/debs
    scripts/build-debs.sh "$debs" >/dev/null
fi
multiarch=$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
prefix=/usr/lib/$multiarch/omptarget-rs
packages=(omptarget-rs-plugin-dev omptarget-rs-default $(cd "$debs" && ls omptarget-rs-plugin-*.deb |
    sed 's/_.*//' | grep -v -- -dev) omptarget-rs)
work=$(mktemp -d)
purge() { $SUDO dpkg --purge "${packages[@]}" >/dev/null 2>&1 || true; rm -rf "$work"; }
trap purge EXIT

fail() { echo "test-packages: FAIL: $*" >&2; exit 1; }
step() { echo "test-packages: $*"; }
# Runs a command with no environment beyond a minimal PATH, as from a fresh login.
bare() { env -i PATH=/usr/bin:/bin HOME="$work" "$@"; }

for file in /etc/ld.so.conf.d/omptarget-rs.conf "$prefix"; do
    [ ! -e "$file" ] || fail "$file exists before installing: purge old packages first"
done
llvm_before=$(dpkg -V libomp5-19 2>&1 || true)

step "installing ${packages[*]}"
$SUDO dpkg -i "$debs"/omptarget-rs*.deb >"$work/dpkg.log" 2>&1 || { cat "$work/dpkg.log"; fail "dpkg -i"; }
ldconfig -p | grep -q "libomptarget.so.19.1 .*=> $prefix/lib/libomptarget.so.19.1" ||
    fail "the loader's cache does not list $prefix/lib/libomptarget.so.19.1"

step "a clang-19 program with no environment set"
clang-19 -fopenmp -fopenmp-targets=x86_64-pc-linux-gnu examples/saxpy.c -o "$work/saxpy"
out=$(bare "$work/saxpy" 2>&1) || fail "saxpy failed: $out"
[ "$out" = "saxpy on an offload device (device 0 of 4): correct" ] || fail "saxpy printed: $out"
bare ldd "$work/saxpy" | grep -q "libomptarget.so.19.1 => $prefix/lib/" || fail "saxpy did not load our runtime"

step "a flang-22 program with no environment set"
flang-22 -fopenmp -fopenmp-targets=x86_64-pc-linux-gnu -L"$prefix/lib" -L/usr/lib/llvm-19/lib \
    -Xoffload-linker -lomptarget-host-device examples/saxpy.f90 -o "$work/fsaxpy"
out=$(bare "$work/fsaxpy" 2>&1) || fail "saxpy.f90 failed: $out"
[ "$out" = "saxpy on an offload device (device 0 of 4): correct" ] || fail "saxpy.f90 printed: $out"

step "omptarget-info lists the installed plugins"
info=$(bare omptarget-info) || fail "omptarget-info failed"
for want in "  1. $prefix/lib" "host [loaded]" "cuda [loaded]" "amdgpu [loaded]" "mpi [loaded]" \
    "file:    $prefix/lib/libomptarget.rtl.host.so (runtime directory)" "Devices: 4"; do
    grep -qF -- "$want" <<<"$info" || fail "omptarget-info lacks '$want':"$'\n'"$info"
done

step "omptarget-plugin-check on the installed plugins"
clang-19 -fopenmp -fopenmp-targets=x86_64-pc-linux-gnu /usr/share/omptarget-rs/plugin-kit/check_program.c \
    -o "$work/check-x86_64"
for plugin in "$prefix"/lib/libomptarget.rtl.*.so; do
    bare omptarget-plugin-check "$plugin" --image "$work/check-x86_64" >"$work/check.log" ||
        { cat "$work/check.log"; fail "omptarget-plugin-check $plugin"; }
    tail -n 1 "$work/check.log"
done

step "the program on a remote device: the MPI plugin and omptarget-mpi-device from the packages"
out=$(bare env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    OMPI_MCA_rmaps_base_oversubscribe=1 LIBOMPTARGET_PLUGINS_TO_LOAD=mpi OMP_TARGET_OFFLOAD=mandatory \
    timeout 120 mpirun -np 1 "$work/saxpy" : -np 1 omptarget-mpi-device 2>&1) ||
    fail "saxpy under mpirun failed: $out"
grep -qx "saxpy on an offload device (device 0 of 4): correct" <<<"$out" || fail "saxpy under mpirun printed: $out"

step "removing the CUDA plugin package"
$SUDO dpkg -r omptarget-rs-plugin-cuda >/dev/null
[ ! -e "$prefix/lib/libomptarget.rtl.cuda.so" ] || fail "the CUDA plugin is still installed"
info=$(bare omptarget-info) || fail "omptarget-info failed without the CUDA plugin"
grep -q "cuda \[skipped\]" <<<"$info" || fail "omptarget-info does not show cuda skipped:"$'\n'"$info"
grep -q "host \[loaded\]" <<<"$info" || fail "the host plugin is gone too"
out=$(bare "$work/saxpy" 2>&1) || fail "saxpy failed without the CUDA plugin: $out"
[ "$out" = "saxpy on an offload device (device 0 of 4): correct" ] || fail "saxpy printed: $out"

step "purging"
$SUDO dpkg --purge "${packages[@]}" >/dev/null 2>&1 || fail "dpkg --purge"
for file in /etc/ld.so.conf.d/omptarget-rs.conf "$prefix" /usr/bin/omptarget-info \
    /usr/bin/omptarget-plugin-check /usr/bin/omptarget-mpi-device /usr/share/omptarget-rs; do
    [ ! -e "$file" ] || fail "$file is left after purging"
done
! ldconfig -p | grep -q "$prefix" || fail "the loader's cache still lists $prefix"
[ "$(dpkg -V libomp5-19 2>&1 || true)" = "$llvm_before" ] || fail "Debian's LLVM runtime files changed"
step "all package checks passed"
