#!/usr/bin/env bash
# Builds the Debian packages from the install tree (scripts/build-dist.sh), one per part a
# distribution ships separately:
#   omptarget-rs                  the runtime, the host plugin and omptarget-info
#   omptarget-rs-default          /etc/ld.so.conf.d entry: programs use this runtime by default
#   omptarget-rs-plugin-<name>    each other plugin in dist/lib (cuda, amdgpu, mpi: with its
#                                 device process omptarget-mpi-device)
#   omptarget-rs-plugin-dev       the vendor plugin kit: omptarget-plugin-check, plugin-api's
#                                 sources, the example plugin, the ABI guide
# Everything lives under /usr/lib/<multiarch>/omptarget-rs/{lib,bin}, the same shape as dist/,
# so the runtime finds whichever plugin packages are installed in its own directory. Nothing
# is installed where Debian's LLVM packages put files (/usr/lib/llvm-*).
# Usage: scripts/build-debs.sh [OUT_DIR]   (default: target/debs; uses dist/ as it is when
# OMPTARGET_DIST is set, else builds it first)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$(mkdir -p "${1:-$root/target/debs}" && cd "${1:-$root/target/debs}" && pwd)
cd "$root"

if [ -n "${OMPTARGET_DIST:-}" ]; then
    dist=$OMPTARGET_DIST
else
    dist=$root/dist
    scripts/build-dist.sh "$dist" >/dev/null
fi

version=$(sed -n '/^\[workspace.package\]/,/^\[/s/^version *= *"\(.*\)"/\1/p' Cargo.toml)
arch=$(dpkg --print-architecture)
multiarch=$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
prefix=usr/lib/$multiarch/omptarget-rs
abi_major=$(sed -n 's/.*ABI_VERSION: AbiVersion = AbiVersion { major: \([0-9]*\),.*/\1/p' \
    plugin-api/src/version.rs)
maintainer="omptarget-rs developers <omptarget-rs@localhost>"
staging=$(mktemp -d)
trap 'rm -rf "$staging"' EXIT
rm -f "$out"/omptarget-rs*.deb

# new_package NAME: an empty staging tree with the copyright file every package carries.
new_package() {
    local dir=$staging/$1
    mkdir -p "$dir/DEBIAN" "$dir/usr/share/doc/$1"
    cat >"$dir/usr/share/doc/$1/copyright" <<EOF
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: omptarget-rs
Files: *
License: Apache-2.0 WITH LLVM-exception
EOF
    echo "$dir"
}

# finish_package NAME DESCRIPTION [control lines...]: writes DEBIAN/control and builds the .deb.
finish_package() {
    local name=$1 summary=$2 dir=$staging/$1
    shift 2
    (cd "$dir" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' |
        xargs -0 -r md5sum >DEBIAN/md5sums)
    {
        echo "Package: $name"
        echo "Version: $version"
        echo "Architecture: $arch"
        echo "Maintainer: $maintainer"
        echo "Section: libs"
        echo "Priority: optional"
        echo "Installed-Size: $(du -sk --exclude=DEBIAN "$dir" | cut -f1)"
        printf '%s\n' "$@"
        echo "Description: $summary"
    } >"$dir/DEBIAN/control"
    dpkg-deb --root-owner-group -Zxz --build "$dir" "$out/${name}_${version}_${arch}.deb" >/dev/null
    echo "$out/${name}_${version}_${arch}.deb"
}

# The runtime: libomptarget under both sonames clang programs ask for, the host plugin, the
# x86-64 device runtime flang programs link into their host device images, the inventory tool
# (with a /usr/bin link).
core=$(new_package omptarget-rs)
mkdir -p "$core/$prefix/lib" "$core/$prefix/bin" "$core/usr/bin"
cp -a "$dist"/lib/libomptarget.so* "$dist/lib/libomptarget.rtl.host.so" \
    "$dist/lib/libomptarget-host-device.a" "$core/$prefix/lib/"
cp -a "$dist/bin/omptarget-info" "$core/$prefix/bin/"
ln -s "../lib/$multiarch/omptarget-rs/bin/omptarget-info" "$core/usr/bin/omptarget-info"
# Once omptarget-rs-default puts this directory in the loader's cache, a changed library here
# needs ldconfig to run.
echo "activate-noawait ldconfig" >"$core/DEBIAN/triggers"
finish_package omptarget-rs "LLVM's OpenMP offloading runtime (libomptarget) in Rust
 A drop-in libomptarget.so.19.1 / .22.1 for programs built with clang -fopenmp
 -fopenmp-targets=..., with the host plugin (the CPU as offload devices),
 the device runtime flang programs link for host devices
 (-Xoffload-linker -lomptarget-host-device) and omptarget-info. Installed in /$prefix, beside Debian's LLVM runtime and
 without replacing it: install omptarget-rs-default to make programs use it, or
 set LD_LIBRARY_PATH=/$prefix/lib. Device plugins come as their own packages." \
    "Provides: omptarget-plugin-abi-$abi_major" \
    "Depends: libc6, libgcc-s1"

# The switch that makes clang-built programs find this runtime without any environment.
default=$(new_package omptarget-rs-default)
mkdir -p "$default/etc/ld.so.conf.d"
echo "/$prefix/lib" >"$default/etc/ld.so.conf.d/omptarget-rs.conf"
echo "activate-noawait ldconfig" >"$default/DEBIAN/triggers"
finish_package omptarget-rs-default "make omptarget-rs the system's libomptarget
 Adds /$prefix/lib to the dynamic loader's search path, so programs built with
 clang -fopenmp -fopenmp-targets=... load omptarget-rs's libomptarget.so.19.1
 (or .22.1) without LD_LIBRARY_PATH. Remove this package to switch back; for
 one run, LD_LIBRARY_PATH=/usr/lib/llvm-19/lib selects LLVM's runtime." \
    "Depends: omptarget-rs (= $version)"

# One package per device plugin besides the host one, depending only on a runtime of the same
# plugin ABI major version (a newer runtime keeps loading it).
for plugin in "$dist"/lib/libomptarget.rtl.*.so; do
    name=$(basename "$plugin" .so)
    name=${name#libomptarget.rtl.}
    [ "$name" = host ] && continue
    # The driver is opened at run time, so it is only suggested: the plugin installs and loads
    # (with zero devices) where the vendor's driver is absent.
    suggests=()
    depends="Depends: omptarget-plugin-abi-$abi_major"
    extra=()
    case $name in
    cuda) about="NVIDIA GPUs through the CUDA driver (libcuda.so.1, opened at run time)"
          suggests=("Suggests: libcuda1") ;;
    amdgpu) about="AMD GPUs through ROCm's HSA runtime (libhsa-runtime64.so.1, opened at run time)"
          suggests=("Suggests: libhsa-runtime64-1") ;;
    # The device processes link nothing of MPI either, but a job cannot start without it:
    # Open MPI's library is a dependency, its launcher (openmpi-bin) a recommendation.
    mpi) about="other nodes' devices over MPI (Open MPI's libmpi.so.40, opened at run time)"
          depends="$depends, libopenmpi3"
          suggests=("Recommends: openmpi-bin")
          extra=("$dist/bin/omptarget-mpi-device") ;;
    *) about="the $name devices" ;;
    esac
    dir=$(new_package "omptarget-rs-plugin-$name")
    mkdir -p "$dir/$prefix/lib"
    cp -a "$plugin" "$dir/$prefix/lib/"
    [ "$name" = mpi ] && cp -a "$dist/lib/openmpi-components" "$dir/$prefix/lib/"
    for program in "${extra[@]}"; do
        mkdir -p "$dir/$prefix/bin" "$dir/usr/bin"
        cp -a "$program" "$dir/$prefix/bin/"
        ln -s "../lib/$multiarch/omptarget-rs/bin/$(basename "$program")" "$dir/usr/bin/$(basename "$program")"
    done
    finish_package "omptarget-rs-plugin-$name" "omptarget-rs plugin for $about
 The $name plugin of omptarget-rs, found by the runtime in its own directory.
 Without the vendor's driver it reports zero devices. Removing this package
 leaves the runtime working with its other plugins." \
        "$depends" "${suggests[@]}"
done

# The vendor kit: the checker, plugin-api's sources as a standalone crate, the example plugin
# (pointing at that crate), the checker's program and the ABI guide.
kit=$(new_package omptarget-rs-plugin-dev)
share=$kit/usr/share/omptarget-rs/plugin-kit
mkdir -p "$kit/$prefix/bin" "$kit/usr/bin" "$share/plugin-api"
cp -a "$dist/bin/omptarget-plugin-check" "$kit/$prefix/bin/"
ln -s "../lib/$multiarch/omptarget-rs/bin/omptarget-plugin-check" "$kit/usr/bin/omptarget-plugin-check"
cp -a plugin-api/src "$share/plugin-api/"
# Workspace-inherited fields replaced by their values and the workspace lints dropped, so the
# crate builds on its own.
edition=$(sed -n '/^\[workspace.package\]/,/^\[/s/^edition *= *"\(.*\)"/\1/p' Cargo.toml)
sed -e "s/^edition.workspace = true/edition = \"$edition\"/" \
    -e 's/^license.workspace = true/license = "Apache-2.0 WITH LLVM-exception"/' \
    -e "s/^abi_stable.workspace = true/abi_stable = { version = \"0.11\", default-features = false }/" \
    -e 's/^log.workspace = true/log = { version = "0.4", features = ["std"] }/' \
    -e '/^\[lints\]$/,/^workspace = true$/d' \
    plugin-api/Cargo.toml >"$share/plugin-api/Cargo.toml"
if grep -q 'workspace = true' "$share/plugin-api/Cargo.toml"; then
    echo "build-debs: plugin-api/Cargo.toml inherits a field this script does not resolve" >&2
    exit 1
fi
if [ -d examples/plugin-example ]; then
    mkdir -p "$share/plugin-example"
    (cd examples/plugin-example && find . -path ./target -prune -o -type f -print0 |
        xargs -0 -r cp --parents -t "$share/plugin-example")
    sed -i 's#path = "../../plugin-api"#path = "../plugin-api"#' "$share/plugin-example/Cargo.toml"
fi
cp plugin-check/check_program.c "$share/"
[ -f docs/plugin-abi.md ] && cp docs/plugin-abi.md "$share/"
finish_package omptarget-rs-plugin-dev "kit for writing omptarget-rs device plugins
 omptarget-plugin-check, which loads a plugin through the runtime's own loader
 and exercises every call of the plugin ABI; the plugin-api crate's sources;
 an example plugin to copy; the program the checker launches kernels from; and
 the guide to the plugin ABI, in /usr/share/omptarget-rs/plugin-kit." \
    "Depends: omptarget-rs (= $version)" \
    "Suggests: clang-19, cargo"
