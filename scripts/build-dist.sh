#!/usr/bin/env bash
# Builds the workspace and lays out the install tree a distribution would ship:
#   dist/lib/libomptarget.so.22.1          the runtime (soname libomptarget.so.22.1)
#   dist/lib/libomptarget.so.19.1 -> .22.1  the name clang-19 programs ask for
#   dist/lib/libomptarget.so       -> .22.1  for linking (clang-22 links -lomptarget)
#   dist/lib/libomptarget.rtl.host.so      the host plugin, a separate library
#   dist/lib/libomptarget.rtl.cuda.so      the CUDA plugin (opens libcuda.so.1 at run time)
#   dist/bin/omptarget-info                the device and plugin inventory
#   dist/bin/omptarget-plugin-check        the plugin conformance checker, with the program
#   dist/share/omptarget-rs/check_program.c  it takes as --image
# Usage: scripts/build-dist.sh [DIST_DIR]   (default: ./dist)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dist=${1:-$root/dist}
cd "$root"

cargo build --release --workspace --quiet
target=${CARGO_TARGET_DIR:-$root/target}/release

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
ln -sf libomptarget.so.22.1 "$dist/lib/libomptarget.so.19.1"
ln -sf libomptarget.so.22.1 "$dist/lib/libomptarget.so"

for plugin in "$target"/libomptarget_rtl_*.so; do
    name=$(basename "$plugin" .so); name=${name#libomptarget_rtl_}
    install -m 755 "$plugin" "$dist/lib/libomptarget.rtl.$name.so"
done
install -m 755 "$target/omptarget-info" "$dist/bin/omptarget-info"
install -m 755 "$target/omptarget-plugin-check" "$dist/bin/omptarget-plugin-check"
install -D -m 644 plugin-check/check_program.c "$dist/share/omptarget-rs/check_program.c"
echo "install tree: $dist"
