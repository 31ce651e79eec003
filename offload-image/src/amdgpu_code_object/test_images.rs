//! Real code objects for tests, built once per test run with clang-19 from a small OpenMP
//! program (and an OpenCL kernel) for several targets, with llvm-readelf-19's reading of each.
//! Used by this crate's tests and, through the `test-images` feature, by the AMDGPU plugin's.

use super::{CodeObject, KernelMetadata};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

pub const INSTALL_HINT: &str = "run .ci/install-deps.sh (clang-19, clang-tools-19, libomp-19-dev, \
                            llvm-19 and rocm-device-libs)";

/// The OpenMP program: a kernel with several arguments, `declare target` globals (an int
/// and an array), two target regions.
pub const OPENMP_SOURCE: &str = r#"
#include <stdint.h>
#pragma omp declare target
int counter = 7;
double table[100];
#pragma omp end declare target

void saxpy(int n, float a, float *x, float *y, int64_t k, char c) {
#pragma omp target teams distribute parallel for map(to: x[0:n]) map(tofrom: y[0:n])
  for (int i = 0; i < n; i++)
    y[i] = a * x[i] + y[i] + (float)k + c + counter;
}

int main(void) {
  float x[16], y[16];
  for (int i = 0; i < 16; i++) { x[i] = i; y[i] = 0; }
  saxpy(16, 2.0f, x, y, 3, 1);
#pragma omp target map(tofrom: counter)
  { counter += 1; table[3] = counter; }
  return (int)y[0];
}
"#;

/// An OpenCL kernel, built without the device libraries for a generic processor with code
/// object v6: argument names in the metadata, no hidden arguments.
pub const OPENCL_SOURCE: &str = r#"
__constant int lut[4] = {1, 2, 3, 4};
__kernel void scale(__global float *out, __global const float *in, float factor, int n) {
  int i = __builtin_amdgcn_workitem_id_x() + __builtin_amdgcn_workgroup_id_x() * 64;
  if (i < n) out[i] = in[i] * factor + lut[i & 3];
}
"#;

/// Images by label: the `--offload-arch` of the OpenMP ones, `v4:gfx90a:sramecc+:xnack-`
/// for the code object v4 build, `ocl:gfx10-3-generic` (v6) and `rel` (an unlinked
/// object), and `host` (the host executable of the first build).
pub struct Images {
    pub images: HashMap<String, Vec<u8>>,
    /// llvm-readelf-19 `--notes --dyn-syms` output per label.
    pub readelf: HashMap<String, String>,
}

impl Images {
    pub fn get(&self, label: &str) -> &[u8] {
        self.images
            .get(label)
            .unwrap_or_else(|| panic!("no image {label} was built"))
    }
    pub fn code_object(&self, label: &str) -> CodeObject {
        CodeObject::parse(self.get(label))
            .unwrap_or_else(|e| panic!("image {label} does not parse: {e}"))
    }
}

/// The OpenMP images and how they were built.
pub const OPENMP_LABELS: &[&str] = &[
    "gfx90a",
    "gfx908",
    "gfx1030",
    "gfx90a:xnack+",
    "gfx942",
    "gfx1100",
    "v4:gfx90a:sramecc+:xnack-",
];

/// The images, built on first use (shared with other modules' tests).
pub fn images() -> &'static Images {
    static IMAGES: OnceLock<Result<Images, String>> = OnceLock::new();
    match IMAGES.get_or_init(build_images) {
        Ok(images) => images,
        Err(e) => panic!("{e}"),
    }
}

pub fn tool(name: &str) -> Result<(), String> {
    match Command::new(name).arg("--version").output() {
        Ok(out) if out.status.success() => Ok(()),
        Ok(out) => Err(format!(
            "{name} --version failed ({}): {INSTALL_HINT}",
            out.status
        )),
        Err(e) => Err(format!("{name} is not installed ({e}): {INSTALL_HINT}")),
    }
}

pub fn run(command: &mut Command) -> Result<(), String> {
    let out = command
        .output()
        .map_err(|e| format!("cannot run {command:?}: {e}; {INSTALL_HINT}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{command:?} failed ({}):\n{}{}\n(if something is missing: {INSTALL_HINT})",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

pub fn build_images() -> Result<Images, String> {
    for name in ["clang-19", "clang-offload-packager-19", "llvm-readelf-19"] {
        tool(name)?;
    }
    let libs = PathBuf::from(
        std::env::var_os("ROCM_DEVICE_LIB_PATH")
            .unwrap_or_else(|| "/usr/lib/x86_64-linux-gnu/amdgcn/bitcode".into()),
    );
    for lib in [
        "ocml.bc",
        "ockl.bc",
        "oclc_isa_version_90a.bc",
        "oclc_isa_version_1030.bc",
    ] {
        if !libs.join(lib).exists() {
            return Err(format!(
                "the ROCm device libraries are missing ({} not found; set \
                 ROCM_DEVICE_LIB_PATH for another place): {INSTALL_HINT}",
                libs.join(lib).display()
            ));
        }
    }
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let dir = std::env::temp_dir().join(format!(
        "omptarget-code-object-tests-{}-{stamp}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let result = build_in(&dir, &libs);
    let _ = std::fs::remove_dir_all(&dir);
    result
}

pub fn build_in(dir: &Path, libs: &Path) -> Result<Images, String> {
    let write = |name: &str, text: &str| {
        std::fs::write(dir.join(name), text).map_err(|e| format!("{name}: {e}"))
    };
    write("prog.c", OPENMP_SOURCE)?;
    write("kernel.cl", OPENCL_SOURCE)?;
    let clang = |args: &[&str]| {
        let mut c = Command::new("clang-19");
        c.current_dir(dir).args(args);
        run(&mut c)
    };
    let lib_flag = format!("--rocm-device-lib-path={}", libs.display());
    // With the ROCm device libraries (Debian's rocm-device-libs 5.2 has these processors).
    clang(&[
        "-fopenmp",
        "--offload-arch=gfx90a,gfx908,gfx1030",
        &lib_flag,
        "prog.c",
        "-o",
        "prog_a",
    ])?;
    // Processors those libraries lack, and gfx90a:xnack+ (clang wants one xnack setting per
    // processor and build): without the device libraries, with the OpenMP device runtime.
    let no_libs = ["-nogpulib", "-lomptarget.devicertl"];
    clang(
        &[
            &["-fopenmp", "--offload-arch=gfx90a:xnack+,gfx942,gfx1100"][..],
            &no_libs,
            &["prog.c", "-o", "prog_b"],
        ]
        .concat(),
    )?;
    // Code object v4.
    clang(
        &[
            &["-fopenmp", "--offload-arch=gfx90a:sramecc+:xnack-"][..],
            &no_libs,
            &[
                "-Xopenmp-target=amdgcn-amd-amdhsa",
                "-mcode-object-version=4",
                "prog.c",
                "-o",
                "prog_v4",
            ],
        ]
        .concat(),
    )?;
    // OpenCL for a generic processor, code object v6; and the same, unlinked.
    let ocl = [
        "--target=amdgcn-amd-amdhsa",
        "-mcpu=gfx10-3-generic",
        "-mcode-object-version=6",
        "-nogpulib",
        "-cl-std=CL2.0",
        "-cl-kernel-arg-info",
        "-Wno-unused-command-line-argument",
        "kernel.cl",
    ];
    clang(&[&ocl[..], &["-o", "ocl.so"]].concat())?;
    clang(&[&ocl[..], &["-c", "-o", "ocl.o"]].concat())?;

    let extract = |binary: &str, archs: &[&str], prefix: &str| {
        let mut c = Command::new("clang-offload-packager-19");
        c.current_dir(dir).arg(binary);
        for arch in archs {
            c.arg(format!(
                "--image=file={prefix}{}.o,arch={arch}",
                file_name(arch)
            ));
        }
        run(&mut c)
    };
    extract("prog_a", &["gfx90a", "gfx908", "gfx1030"], "")?;
    extract("prog_b", &["gfx90a:xnack+", "gfx942", "gfx1100"], "")?;
    extract("prog_v4", &["gfx90a:sramecc+:xnack-"], "v4_")?;

    let mut files: Vec<(String, PathBuf)> = OPENMP_LABELS
        .iter()
        .map(|label| match label.strip_prefix("v4:") {
            Some(arch) => (
                label.to_string(),
                dir.join(format!("v4_{}.o", file_name(arch))),
            ),
            None => (
                label.to_string(),
                dir.join(format!("{}.o", file_name(label))),
            ),
        })
        .collect();
    files.push(("ocl:gfx10-3-generic".into(), dir.join("ocl.so")));
    files.push(("rel".into(), dir.join("ocl.o")));
    files.push(("host".into(), dir.join("prog_a")));
    let mut images = HashMap::new();
    let mut readelf = HashMap::new();
    for (label, path) in files {
        let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        if label != "host" && label != "rel" {
            let out = Command::new("llvm-readelf-19")
                .args(["--notes", "--dyn-syms", "--wide"])
                .arg(&path)
                .output()
                .map_err(|e| format!("llvm-readelf-19: {e}; {INSTALL_HINT}"))?;
            if !out.status.success() {
                return Err(format!(
                    "llvm-readelf-19 {}: {}",
                    path.display(),
                    String::from_utf8_lossy(&out.stderr)
                ));
            }
            readelf.insert(
                label.clone(),
                String::from_utf8_lossy(&out.stdout).into_owned(),
            );
        }
        images.insert(label, bytes);
    }
    Ok(Images { images, readelf })
}

pub fn file_name(arch: &str) -> String {
    arch.replace([':', '+'], "_").replace('-', "m")
}

/// The kernel of `co` whose name contains `part` (OpenMP kernel names carry file IDs).
pub fn kernel_named<'a>(co: &'a CodeObject, part: &str) -> &'a KernelMetadata {
    co.kernels()
        .iter()
        .find(|k| k.name.contains(part))
        .unwrap_or_else(|| {
            panic!(
                "no kernel {part} in {:?}",
                co.kernels().iter().map(|k| &k.name).collect::<Vec<_>>()
            )
        })
}
