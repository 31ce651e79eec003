//! Fortran programs (tests/conformance/fortran) built by flang-22 for the host devices and run
//! against the install tree. flang compiles every target region GPU-style, so the x86-64 device
//! image links omptarget-rs's host device runtime (`libomptarget-host-device.a`,
//! host-device-runtime/), and the host plugin runs the kernels through it on teams of real
//! threads. Each program checks its own results and exits non-zero when they are wrong; its
//! `! EXPECT:` lines must appear in its output. A kernel whose image lacks the runtime fails
//! with a message saying how to link it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use tests::{build_dir, dist, lib_dir, outputs, retry_while_busy, text, workspace_root};

/// flang-22's flags for a program offloading to the host devices, with the runtime linked into
/// the device image. libomp comes from LLVM 19's tree (libomp-22-dev conflicts with it).
fn flang_flags() -> Vec<String> {
    vec![
        "-O1".into(),
        "-fopenmp".into(),
        "-fopenmp-targets=x86_64-pc-linux-gnu".into(),
        format!("-L{}", lib_dir().display()),
        "-L/usr/lib/llvm-19/lib".into(),
        "-Xoffload-linker".into(),
        "-lomptarget-host-device".into(),
    ]
}

fn programs() -> Vec<PathBuf> {
    let dir = workspace_root().join("tests/conformance/fortran");
    let mut found: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "f90"))
        .collect();
    found.sort();
    found
}

/// Builds `source` with flang-22 and `extra` flags into `<build>/fortran/<stem><tag>`; the
/// executable appears under its name only once complete (tests run in parallel), and module
/// files go to a directory of this process's own.
fn build(source: &Path, tag: &str, extra: &[String]) -> Result<PathBuf, String> {
    assert!(
        dist().join("lib/libomptarget-host-device.a").exists(),
        "no libomptarget-host-device.a in the install tree: run scripts/build-dist.sh"
    );
    let dir = build_dir().join("fortran");
    let stem = source.file_stem().unwrap().to_str().unwrap();
    let modules = dir.join(format!("modules-{}-{stem}{tag}", std::process::id()));
    std::fs::create_dir_all(&modules).unwrap();
    let out = dir.join(format!("{stem}{tag}"));
    let mut cmd = Command::new("flang-22");
    cmd.args(flang_flags())
        .args(extra)
        .arg("-J")
        .arg(&modules)
        .arg(source);
    let output = outputs::build(cmd, &out);
    let _ = std::fs::remove_dir_all(&modules);
    match output {
        Err(e) => panic!("cannot run flang-22: {e} (install it: .ci/install-deps.sh)"),
        Ok(o) if o.status.success() => Ok(out),
        Ok(o) => Err(format!(
            "compiling {} failed:\n{}",
            source.display(),
            text(&o.stderr)
        )),
    }
}

/// Runs a program against the install tree; offloading is mandatory, so that a program that
/// silently ran its regions on the host would fail.
fn run(exe: &Path) -> Output {
    let mut cmd = Command::new(exe);
    cmd.env("LD_LIBRARY_PATH", lib_dir())
        .env("OMP_TARGET_OFFLOAD", "mandatory");
    for var in [
        "LIBOMPTARGET_PLUGIN_PATH",
        "LIBOMPTARGET_PLUGINS_TO_LOAD",
        "LIBOMPTARGET_DEBUG",
        "LIBOMPTARGET_INFO",
        "LIBOMPTARGET_HOST_NUM_DEVICES",
        "OMP_NUM_THREADS",
    ] {
        cmd.env_remove(var);
    }
    retry_while_busy(|| cmd.output())
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", exe.display()))
}

/// The OpenMP versions the programs are built for: flang's default, and 5.2 (where the host code
/// passes more of the clauses in the kernel arguments).
const VERSIONS: [(&str, &[&str]); 2] = [("", &[]), ("-omp52", &["-fopenmp-version=52"])];

/// What is wrong with one program's build or run for one OpenMP version, if anything.
fn check(source: &Path, (tag, flags): (&str, &[&str])) -> Option<String> {
    let flags: Vec<String> = flags.iter().map(|f| f.to_string()).collect();
    let exe = match build(source, tag, &flags) {
        Ok(exe) => exe,
        Err(e) => return Some(e),
    };
    let out = run(&exe);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    let name = format!(
        "{} ({flags:?})",
        source.file_name().unwrap().to_string_lossy()
    );
    if !out.status.success() {
        return Some(format!("{name} failed ({}):\n{stdout}{stderr}", out.status));
    }
    let program = std::fs::read_to_string(source).unwrap();
    let expected: Vec<&str> = program
        .lines()
        .filter_map(|l| l.trim().strip_prefix("! EXPECT: "))
        .collect();
    if expected.is_empty() {
        return Some(format!("{name} has no '! EXPECT:' line"));
    }
    for line in expected {
        if !stdout.lines().any(|l| l.trim_end() == line) {
            return Some(format!("{name}: no line '{line}' in:\n{stdout}{stderr}"));
        }
    }
    None
}

#[test]
fn fortran_programs_run_on_the_host_devices() {
    let programs = programs();
    assert!(programs.len() >= 10, "only {} programs", programs.len());
    let failures: Vec<String> = programs
        .iter()
        .flat_map(|p| VERSIONS.map(|version| check(p, version)))
        .flatten()
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} Fortran builds failed:\n\n{}",
        failures.len(),
        programs.len() * VERSIONS.len(),
        failures.join("\n\n")
    );
}

/// A GPU-style kernel in an image without the runtime (here the two entry points its code
/// calls, from a stand-in object) is not called: its launch fails, naming the way to link.
#[test]
fn a_gpu_style_kernel_without_the_runtime_fails_saying_how_to_link_it() {
    let dir = build_dir().join("fortran");
    std::fs::create_dir_all(&dir).unwrap();
    let stubs = dir.join("no_runtime_stubs.c");
    outputs::write(
        &stubs,
        "int __kmpc_target_init(void *kernel_environment, void *launch_environment) {\n\
         \x20   (void)kernel_environment; (void)launch_environment; return -1;\n}\n\
         void __kmpc_target_deinit(void) {}\n",
        0o644,
    )
    .unwrap();
    let object = dir.join("no_runtime_stubs.o");
    let mut cc = Command::new("cc");
    cc.args(["-fPIC", "-c"]).arg(&stubs);
    let compiled = outputs::build(cc, &object).expect("cc");
    assert!(compiled.status.success(), "{}", text(&compiled.stderr));
    let source = dir.join("no_runtime.f90");
    outputs::write(
        &source,
        "program no_runtime\n  integer :: x\n  x = 1\n  !$omp target map(tofrom: x)\n  \
         x = x + 1\n  !$omp end target\n  print *, x\nend program\n",
        0o644,
    )
    .unwrap();
    // Instead of the runtime: flang's own flags, and the stand-in object in the device image.
    let mut cmd = Command::new("flang-22");
    cmd.args(["-O1", "-fopenmp", "-fopenmp-targets=x86_64-pc-linux-gnu"])
        .arg(format!("-L{}", lib_dir().display()))
        .args(["-L/usr/lib/llvm-19/lib", "-Xoffload-linker"])
        .arg(&object)
        .arg("-J")
        .arg(&dir)
        .arg(&source);
    let exe = dir.join("no_runtime");
    let built = outputs::build(cmd, &exe).expect("flang-22");
    assert!(built.status.success(), "{}", text(&built.stderr));
    let out = run(&exe);
    let stderr = text(&out.stderr);
    assert!(!out.status.success(), "the region ran:\n{stderr}");
    assert!(
        stderr.contains("was compiled GPU-style")
            && stderr.contains("-Xoffload-linker -lomptarget-host-device"),
        "{stderr}"
    );
}
