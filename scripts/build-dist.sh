#!/usr/bin/env bash
# Builds the workspace and lays out the install tree a distribution would ship:
#   dist/lib/libomptarget.so.22.1          the runtime (soname libomptarget.so.22.1)
#   dist/lib/libomptarget.so.19.1          the name clang-19 programs ask for: a stub needing .22.1
#   dist/lib/libomptarget.so       -> .22.1  for linking (clang-22 links -lomptarget)
#   dist/lib/libomptarget.rtl.host.so      the host plugin, a separate library
#   dist/lib/libomptarget-host-device.a    the host device runtime, linked into x86-64 device
#                                          images of GPU-style kernels (flang's; host-device-runtime/)
#   dist/lib/libomptarget.rtl.cuda.so      the CUDA plugin (opens libcuda.so.1 at run time)
#   dist/lib/libomptarget.rtl.amdgpu.so    the AMDGPU plugin (opens libhsa-runtime64.so.1 at run time)
#   dist/emu/libcuda.so.1 (and libcuda.so)  the emulated CUDA driver, for tests and CI without GPUs
#   dist/emu/libhsa-runtime64.so.1 (and .so) the emulated HSA runtime, likewise for AMDGPU
#   dist/bin/omptarget-info                the device and plugin inventory
#   dist/lib/libomptarget.rtl.mpi.so       the MPI plugin (opens libmpi.so.40 when started under mpirun)
#   dist/lib/openmpi-components/           a link to the MPI plugin, as an Open MPI hook component
#   dist/bin/omptarget-mpi-device          the device process of the MPI plugin
#   dist/bin/omptarget-plugin-check        the plugin conformance checker, with the program
#   dist/share/omptarget-rs/check_program.c  it takes as --image
# Usage: scripts/build-dist.sh [DIST_DIR]   (default: ./dist)
#   OMPTARGET_DIST_SYMBOLS=1 keeps the symbol tables (stripped by default, as packages are).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
final=${1:-$root/dist}
cd "$root"

cargo build --release --workspace --quiet
target=${CARGO_TARGET_DIR:-$root/target}/release

# The tree is laid out aside and each file renamed into place at the end: programs and tests
# running from the old tree meanwhile never load a half-written library (a linker or install
# writes its output in place).
mkdir -p "$final"
final=$(cd "$final" && pwd)
dist=$(mktemp -d "$final.part.XXXXXX")
trap 'rm -rf "$dist"' EXIT

mkdir -p "$dist/lib" "$dist/bin"
map=$root/omptarget-core/exports.map
# Rust emits a staticlib; linking it ourselves lets the exported symbols carry the VERS1.0
# version tag (rustc's own cdylib version script is anonymous and cannot be combined with it).
# -u pulls each entry point's object out of the archive; the version script hides the rest.
undefined=$(sed -n 's/^ *\([A-Za-z_][A-Za-z_0-9]*\);$/-Wl,-u,\1/p' "$map")
cc -shared -o "$dist/lib/libomptarget.so.22.1" \
   -Wl,-soname,libomptarget.so.22.1 -Wl,--version-script="$map" $undefined \
   -Wl,--gc-sections -Wl,--strip-debug -Wl,-z,relro -Wl,-z,now \
   "$target/libomptarget_core.a" -lgcc_s -lpthread -ldl -lm -lc
# clang-19 programs need libomptarget.so.19.1 with version VERS1.0. A symlink serves
# LD_LIBRARY_PATH, but ldconfig caches libraries by soname, so for the loader's cache (the
# omptarget-rs-default package) .19.1 must be a library of that soname: a stub that defines
# VERS1.0 and needs .22.1, from which the program's symbols are then bound. One runtime is
# loaded whichever name a program asks for.
stub=$(mktemp -d)
echo 'VERS1.0 { global: omptarget_rs_soname_alias; local: *; };' >"$stub/stub.map"
echo 'const char omptarget_rs_soname_alias[] = "libomptarget.so.19.1 -> libomptarget.so.22.1";' >"$stub/stub.c"
rm -f "$dist/lib/libomptarget.so.19.1"
cc -shared -fPIC -o "$dist/lib/libomptarget.so.19.1" "$stub/stub.c" \
   -Wl,-soname,libomptarget.so.19.1 -Wl,--version-script="$stub/stub.map" -Wl,--no-as-needed \
   -Wl,-z,relro -Wl,-z,now -Wl,-rpath,'$ORIGIN' -L"$dist/lib" -l:libomptarget.so.22.1
rm -rf "$stub"
ln -sf libomptarget.so.22.1 "$dist/lib/libomptarget.so"

for plugin in "$target"/libomptarget_rtl_*.so; do
    name=$(basename "$plugin" .so); name=${name#libomptarget_rtl_}
    install -m 755 "$plugin" "$dist/lib/libomptarget.rtl.$name.so"
done
# The host device runtime: C, one object (so that an image pulling in any entry point gets its
# omp_get_device_num and kin too, ahead of libomp's), archived aside and renamed into place.
hdr=$(mktemp -d)
${HOST_DEVICE_CC:-cc} -fPIC -O2 -Wall -c host-device-runtime/host_device_runtime.c -o "$hdr/host_device_runtime.o"
ar rcs "$hdr/libomptarget-host-device.a" "$hdr/host_device_runtime.o"
install -m 644 "$hdr/libomptarget-host-device.a" "$dist/lib/libomptarget-host-device.a"
rm -rf "$hdr"
# Open MPI loads the MPI plugin as a hook component from here, so that a program initialising
# MPI in main has the plugin join inside its MPI_Init (plugin-mpi/src/init_hook.rs).
mkdir -p "$dist/lib/openmpi-components"
ln -sf ../libomptarget.rtl.mpi.so "$dist/lib/openmpi-components/mca_hook_omptarget.so"
# The emulated drivers (not part of any package): dist/emu/libcuda.so.1, found by programs run
# with dist/emu on LD_LIBRARY_PATH; libcuda.so is the name LLVM's CUDA plugin opens.
install -D -m 755 "$target/libomptarget_emu_cuda.so" "$dist/emu/libcuda.so.1"
ln -sf libcuda.so.1 "$dist/emu/libcuda.so"
# libhsa-runtime64.so is the name LLVM's AMDGPU plugin opens; ours opens .so.1 or HSA_RUNTIME_LIB.
install -D -m 755 "$target/libomptarget_emu_hsa.so" "$dist/emu/libhsa-runtime64.so.1"
ln -sf libhsa-runtime64.so.1 "$dist/emu/libhsa-runtime64.so"
install -m 755 "$target/omptarget-info" "$dist/bin/omptarget-info"
install -m 755 "$target/omptarget-plugin-check" "$dist/bin/omptarget-plugin-check"
install -m 755 "$target/omptarget-mpi-device" "$dist/bin/omptarget-mpi-device"
install -D -m 644 plugin-check/check_program.c "$dist/share/omptarget-rs/check_program.c"
# As a distribution ships them: without symbol tables (a quarter of their size; the exported
# dynamic symbols stay). OMPTARGET_DIST_SYMBOLS=1 keeps them, for profilers' function names.
if [ -z "${OMPTARGET_DIST_SYMBOLS:-}" ]; then
    strip --strip-unneeded "$dist/lib/libomptarget.so.22.1" "$dist"/lib/libomptarget.rtl.*.so \
        "$dist"/emu/*.so.1 "$dist"/bin/omptarget-*
fi
(cd "$dist" && find . -mindepth 1 -type d -printf '%P\n') | while read -r d; do mkdir -p "$final/$d"; done
(cd "$dist" && find . \( -type f -o -type l \) -printf '%P\n') | while read -r f; do
    mv -f -T "$dist/$f" "$final/$f"
done
echo "install tree: $final"
