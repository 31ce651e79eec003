//! Fortran programs (tests/conformance/fortran) built by flang-22 for the host devices and run
//! against the install tree. flang compiles every target region GPU-style, so the x86-64 device
//! image links omptarget-rs's host device runtime (`libomptarget-host-device.a`,
//! host-device-runtime/), and the host plugin runs the kernels through it on teams of real
//! threads. Each program checks its own results and exits non-zero when they are wrong; its
//! `! EXPECT:` lines must appear in its output. A kernel whose image lacks the runtime fails
//! with a message saying how to link it.
//!
//! The same programs built for the emulated GPUs (gfx90a, sm_90) with x86-64 twins run through
//! our AMDGPU and CUDA plugins on the emulated HSA runtime and CUDA driver, whose twin kernels
//! run through the twin's host device runtime on a team of threads per work-group or block;
//! for gfx90a, LLVM 22's runtime runs the same binaries on the emulated HSA runtime as the
//! judge. The programs that cannot run on an emulated GPU are listed with the reason
//! ([`NOT_ON_EMULATED_GPUS`]), and their builds must still fail for it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use tests::conformance::EmulatedGpu;
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
    let failed = (!out.status.success()).then(|| out.status.to_string());
    judge(&name, source, failed, &stdout, &stderr)
}

/// What is wrong with a run of the program `source` (`name` in messages) that `failed` (how,
/// where it did) and printed `stdout` and `stderr`, if anything: a failure, or a missing
/// `! EXPECT:` line.
fn judge(
    name: &str,
    source: &Path,
    failed: Option<String>,
    stdout: &str,
    stderr: &str,
) -> Option<String> {
    if let Some(how) = failed {
        return Some(format!("{name} failed ({how}):\n{stdout}{stderr}"));
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

/// flang-19 (Debian's flang-new-19) takes no `-Xoffload-linker`, so its programs are compiled
/// by it and linked by clang-19, which passes the runtime to the device link; its Fortran
/// runtime comes from LLVM 19's tree. flang-19 compiles less of OpenMP than flang-22 (no
/// `device` clause on `target`, no composite `distribute parallel do`: "not yet implemented"),
/// so one program of what it compiles stands for it.
#[test]
fn a_flang_19_program_runs_on_the_host_devices() {
    let source = workspace_root().join("tests/programs/flang19_target.f90");
    let dir = build_dir().join("fortran");
    std::fs::create_dir_all(&dir).unwrap();
    let object = dir.join(format!("flang19_target-{}.o", std::process::id()));
    let mut compile = Command::new("flang-new-19");
    compile
        .args([
            "-O1",
            "-fopenmp",
            "-fopenmp-targets=x86_64-pc-linux-gnu",
            "-c",
        ])
        .arg(&source);
    let output = outputs::build(compile, &object).unwrap_or_else(|e| {
        panic!("cannot run flang-new-19: {e} (install flang-19: .ci/install-deps.sh)")
    });
    assert!(output.status.success(), "{}", text(&output.stderr));
    let exe = dir.join("flang19_target");
    let mut link = Command::new("clang-19");
    link.args(["-fopenmp", "-fopenmp-targets=x86_64-pc-linux-gnu"])
        .arg(&object)
        .arg(format!("-L{}", lib_dir().display()))
        .args([
            "-L/usr/lib/llvm-19/lib",
            "-Xoffload-linker",
            "-lomptarget-host-device",
        ])
        .args(["-lFortranRuntime", "-lFortranDecimal", "-lm"]);
    let output = outputs::build(link, &exe).expect("run clang-19");
    let _ = std::fs::remove_file(&object);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let ran = run(&exe);
    let stdout = text(&ran.stdout);
    assert!(
        ran.status.success()
            && stdout.contains("flang-19: a(1000)=2000 threads=4 distinct=4 initial=F"),
        "{stdout}{}",
        text(&ran.stderr)
    );
}

/// Through the MPI plugin, the kernels run in the device processes on their host devices (two
/// processes of two devices each), through the same runtime in the images they load there.
#[test]
fn fortran_programs_run_on_remote_host_devices_over_mpi() {
    for name in ["parallel_threads", "collapse_devices", "reductions"] {
        let source = workspace_root()
            .join("tests/conformance/fortran")
            .join(format!("{name}.f90"));
        let exe = build(&source, "-mpi", &[]).unwrap_or_else(|e| panic!("{e}"));
        let mut cmd = tests::conformance::mpirun(
            &[exe.as_os_str()],
            tests::conformance::MPI_DEVICE_PROCESSES,
        );
        cmd.env("LD_LIBRARY_PATH", lib_dir())
            .env("LIBOMPTARGET_PLUGINS_TO_LOAD", "mpi")
            .env("OMP_TARGET_OFFLOAD", "mandatory")
            .env(
                "LIBOMPTARGET_HOST_NUM_DEVICES",
                tests::conformance::MPI_HOST_DEVICES_EACH.to_string(),
            )
            .env_remove("LIBOMPTARGET_INFO");
        let out = retry_while_busy(|| cmd.output()).expect("run mpirun");
        let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
        let failed = (!out.status.success()).then(|| out.status.to_string());
        if let Some(problem) = judge(
            &format!("{name} over MPI"),
            &source,
            failed,
            &stdout,
            &stderr,
        ) {
            panic!("{problem}");
        }
    }
}

/// A program whose one kernel is GPU-style, and an object standing in for the runtime in its
/// image: the two entry points the kernel's code calls, without the launcher.
fn no_runtime_program() -> (PathBuf, PathBuf) {
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
    (source, object)
}

/// A GPU-style kernel in an image without the runtime (here the two entry points its code
/// calls, from a stand-in object) is not called: its launch fails, naming the way to link.
#[test]
fn a_gpu_style_kernel_without_the_runtime_fails_saying_how_to_link_it() {
    let (source, object) = no_runtime_program();
    let dir = build_dir().join("fortran");
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

// ---- The emulated GPUs ----------------------------------------------------------------------

/// Programs that cannot run on an emulated GPU: (program, GPU, why, words of the failed build's
/// output that show it). Each build must still fail so: one that builds belongs in the runs.
const NOT_ON_EMULATED_GPUS: &[(&str, EmulatedGpu, &str, &str)] = &[
    (
        "constructs.f90",
        EmulatedGpu::Amdgpu,
        "flang-22 crashes (a segmentation fault in OpenMPIRBuilder::finalize) compiling its \
         `task` inside a target region for amdgcn; past that, it would fail as on sm_90",
        "Segmentation fault",
    ),
    (
        "constructs.f90",
        EmulatedGpu::Cuda,
        "its target region's `print` and `allocate` call the Fortran runtime, which has no GPU \
         build here (LLVM's flang-rt for nvptx and amdgcn is not packaged)",
        "Unresolved extern function '_FortranA",
    ),
    (
        "device_api.f90",
        EmulatedGpu::Cuda,
        "LLVM 22's NVPTX back end keeps the name of the `critical` construct's lock, \
         `.gomp_critical_user_.var` (a common symbol, which it renames only when local), and \
         ptxas cannot parse it",
        ".gomp_critical_user_",
    ),
];

/// The emulated GPUs' devices in each run: the programs use devices 0 to 2.
const EMULATED_DEVICES: &str = "3";

/// Where LLVM 22's tools are that flang-22's driver runs but Debian puts on no PATH.
const LLVM22_BIN: &str = "/usr/lib/llvm-22/bin";

/// Runs a compiler or tool into `out` with `PATH` and, for its temporary files (and a crashing
/// compiler's reproducer), `TMPDIR`; `Err` with its output when it fails.
fn step(mut cmd: Command, out: &Path, (path, tmp): (&str, &Path)) -> Result<(), String> {
    cmd.env("PATH", path).env("TMPDIR", tmp);
    let program = cmd.get_program().to_string_lossy().into_owned();
    match outputs::build(cmd, out) {
        Err(e) => panic!("cannot run {program}: {e} (install it: .ci/install-deps.sh)"),
        Ok(o) if o.status.success() => Ok(()),
        Ok(o) => Err(format!(
            "{program} (for {}) failed:\n{}{}",
            out.display(),
            text(&o.stdout),
            text(&o.stderr)
        )),
    }
}

/// Builds `source` with flang-22 for `gpu` and the OpenMP `version` into
/// `<build>/fortran/<stem>-<arch><tag>`, the GPU image alone (so that device 0 is the GPU under
/// every runtime), and `.twin` beside it, the GPU image with its x86-64 twin (the emulators'
/// `OMPTARGET_EMU_TWINS`). flang-22 has neither clang's per-target `-Xopenmp-target` (its
/// `--offload-arch` applies to every target, x86-64 too) nor `-foffload-lto` (without which the
/// GPU image is no bitcode, which the NVPTX link needs: ptxas and the one-cubin nvlink link one
/// whole program), so the GPU image is built apart:
/// 1. the device code alone, as LLVM bitcode: `--offload-arch=<arch> --offload-device-only
///    -emit-llvm -c` (with ptxas on the PATH, flang finds /opt/cuda-min and its PTX version);
/// 2. packed into an offload binary (llvm-offload-binary) and embedded into an object of its
///    own (clang-22 `-fembed-offload-object`), as the driver embeds device images;
/// 3. linked with the program, compiled for the host with the x86-64 target (the twin) or no
///    device code (`--offload-arch=<arch> --offload-host-only`): the linker wrapper links the GPU
///    image's bitcode with LLVM 22's device runtime (`-Xoffload-linker-<triple>`) and the twin
///    with omptarget-rs's host device runtime (`-Xoffload-linker-x86_64-pc-linux-gnu
///    -lomptarget-host-device`).
fn build_for_gpu(
    source: &Path,
    gpu: EmulatedGpu,
    version: (&str, &[&str]),
) -> Result<PathBuf, String> {
    let runtime = [
        "-Xoffload-linker-x86_64-pc-linux-gnu",
        "-lomptarget-host-device",
    ];
    build_for_gpu_with(source, gpu, version, &runtime.map(String::from))
}

/// As [`build_for_gpu`], with `twin_runtime` instead of the flags that link the host device
/// runtime into the twin.
fn build_for_gpu_with(
    source: &Path,
    gpu: EmulatedGpu,
    (tag, version): (&str, &[&str]),
    twin_runtime: &[String],
) -> Result<PathBuf, String> {
    assert!(
        dist().join("lib/libomptarget-host-device.a").exists(),
        "no libomptarget-host-device.a in the install tree: run scripts/build-dist.sh"
    );
    let (triple, runtime) = match gpu {
        EmulatedGpu::Cuda => ("nvptx64-nvidia-cuda", "nvptx"),
        EmulatedGpu::Amdgpu => ("amdgcn-amd-amdhsa", "amdgpu"),
    };
    let device_runtime = tests::llvm22_device_runtime(runtime);
    let arch = gpu.arch();
    let stem = source.file_stem().unwrap().to_str().unwrap();
    let dir = build_dir().join("fortran");
    let work = dir.join(format!("{stem}-{arch}{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&work).unwrap();
    let path = tests::clang22_twin_path(gpu);
    let flang = |extra: &[&str]| {
        let mut cmd = Command::new("flang-22");
        cmd.args(["-O1", "-fopenmp", "-nogpulib"])
            .args(version)
            .args(extra)
            .arg("-J")
            .arg(&work)
            .arg(source);
        cmd
    };
    let link_flags = |cmd: &mut Command| {
        cmd.arg(work.join("gpu-image.o"))
            .arg(format!("-Xoffload-linker-{triple}"))
            .arg(&device_runtime)
            .arg(format!("-L{}", lib_dir().display()))
            .arg("-L/usr/lib/llvm-19/lib");
    };
    let out = dir.join(format!("{stem}-{arch}{tag}"));
    let twin = out.with_extension("twin");
    let built = (|| {
        let device_code = work.join("device.bc");
        let offload_arch = format!("--offload-arch={arch}");
        let device = flang(&[&offload_arch, "--offload-device-only", "-emit-llvm", "-c"]);
        step(device, &device_code, (&path, &work))?;
        let mut pack = Command::new(Path::new(LLVM22_BIN).join("llvm-offload-binary"));
        pack.arg(format!(
            "--image=file={},triple={triple},arch={arch},kind=openmp",
            device_code.display()
        ));
        let packed = work.join("gpu-image.offload");
        step(pack, &packed, (&path, &work))?;
        let mut embed = Command::new("clang-22");
        embed
            .args(["-c", "-x", "c", "/dev/null", "-Xclang"])
            .arg(format!("-fembed-offload-object={}", packed.display()));
        step(embed, &work.join("gpu-image.o"), (&path, &work))?;
        let mut with_twin = flang(&["-fopenmp-targets=x86_64-pc-linux-gnu"]);
        link_flags(&mut with_twin);
        with_twin.args(twin_runtime);
        step(with_twin, &twin, (&path, &work))?;
        let mut gpu_only = flang(&[&offload_arch, "--offload-host-only"]);
        link_flags(&mut gpu_only);
        step(gpu_only, &out, (&path, &work))
    })();
    let _ = std::fs::remove_dir_all(&work);
    built.map(|()| out)
}

/// LLVM 22's runtime (LLVM 22's AMDGPU plugin) runs `exe` on the emulated HSA runtime with its
/// twins from `twin`, under `timeout 60`.
fn run_under_llvm_22(exe: &Path, twin: &Path) -> Output {
    tests::emulated::llvm_22_command(exe, twin, 60)
        .env("OMPTARGET_EMU_DEVICES", EMULATED_DEVICES)
        .env_remove("OMP_NUM_THREADS")
        .output()
        .expect("run under LLVM 22")
}

/// Every program on `gpu`, for each OpenMP version: built with its twin, run through our plugin
/// on the emulator, and for gfx90a through LLVM 22's as the judge; the excluded ones must still
/// fail to build for their stated reason.
fn check_on_emulated_gpu(gpu: EmulatedGpu) {
    let programs = programs();
    let mut failures = Vec::new();
    let mut passed = 0;
    for source in &programs {
        let file = source.file_name().unwrap().to_string_lossy().into_owned();
        let excluded = NOT_ON_EMULATED_GPUS
            .iter()
            .find(|&&(name, on, ..)| name == file && on == gpu);
        for version in VERSIONS {
            let name = format!("{file} ({} {:?})", gpu.arch(), version.1);
            let built = build_for_gpu(source, gpu, version);
            match (excluded, built) {
                (Some((_, _, why, _)), Ok(_)) => failures.push(format!(
                    "{name} builds now, though listed as unable to ({why}): run it"
                )),
                (Some((_, _, why, shows)), Err(e)) if !e.contains(shows) => failures.push(format!(
                    "{name} failed to build, but not as listed ({why}):\n{e}"
                )),
                (Some(_), Err(_)) => {}
                (None, Err(e)) => failures.push(format!("{name}: {e}")),
                (None, Ok(exe)) => {
                    let twin = exe.with_extension("twin");
                    let env = [
                        ("OMPTARGET_EMU_TWINS", twin.display().to_string()),
                        ("OMPTARGET_EMU_DEVICES", EMULATED_DEVICES.to_string()),
                        ("OMP_TARGET_OFFLOAD", "mandatory".to_string()),
                    ];
                    let (code, stdout, stderr) = tests::emulated::run(gpu, &exe, &[], &env);
                    let failed = (code != Some(0)).then(|| format!("exit code {code:?}"));
                    let ours = judge(&format!("ours: {name}"), source, failed, &stdout, &stderr);
                    let judge_says = (gpu == EmulatedGpu::Amdgpu).then(|| {
                        let llvm = run_under_llvm_22(&exe, &twin);
                        let failed = (!llvm.status.success()).then(|| llvm.status.to_string());
                        let (stdout, stderr) = (text(&llvm.stdout), text(&llvm.stderr));
                        judge(
                            &format!("LLVM 22: {name}"),
                            source,
                            failed,
                            &stdout,
                            &stderr,
                        )
                    });
                    passed += usize::from(ours.is_none());
                    failures.extend(ours);
                    failures.extend(judge_says.flatten());
                    let _ = std::fs::remove_file(&exe);
                    let _ = std::fs::remove_file(&twin);
                }
            }
        }
    }
    let expected = (programs.len()
        - NOT_ON_EMULATED_GPUS
            .iter()
            .filter(|&&(_, on, ..)| on == gpu)
            .count())
        * VERSIONS.len();
    assert!(
        failures.is_empty() && passed == expected,
        "{} of {expected} Fortran runs on {} passed:\n\n{}",
        passed,
        gpu.arch(),
        failures.join("\n\n")
    );
}

#[test]
fn fortran_programs_run_on_the_emulated_hsa_runtime_through_our_plugin_and_llvm_22s() {
    check_on_emulated_gpu(EmulatedGpu::Amdgpu);
}

#[test]
fn fortran_programs_run_on_the_emulated_cuda_driver_through_our_plugin() {
    check_on_emulated_gpu(EmulatedGpu::Cuda);
}

/// A twin whose GPU-style kernel lacks the runtime (an object standing in for it) is not
/// called: the launch fails on both emulators, saying how to link the twin.
#[test]
fn a_twin_kernel_without_the_runtime_fails_on_the_emulators_saying_how_to_link_it() {
    let (source, object) = no_runtime_program();
    for gpu in [EmulatedGpu::Amdgpu, EmulatedGpu::Cuda] {
        let stand_in = [
            "-Xoffload-linker-x86_64-pc-linux-gnu".to_string(),
            object.display().to_string(),
        ];
        let exe = build_for_gpu_with(&source, gpu, ("-stand-in", &[]), &stand_in)
            .unwrap_or_else(|e| panic!("{e}"));
        let twin = exe.with_extension("twin");
        let env = [
            ("OMPTARGET_EMU_TWINS", twin.display().to_string()),
            ("OMP_TARGET_OFFLOAD", "mandatory".to_string()),
        ];
        let (code, stdout, stderr) = tests::emulated::run(gpu, &exe, &[], &env);
        assert!(
            code != Some(0) && code != Some(124),
            "{gpu:?}: the region ran ({code:?}):\n{stdout}{stderr}"
        );
        assert!(
            stderr.contains("was compiled GPU-style")
                && stderr.contains("-Xoffload-linker-x86_64-pc-linux-gnu -lomptarget-host-device"),
            "{gpu:?}: {stderr}"
        );
        let _ = std::fs::remove_file(&exe);
        let _ = std::fs::remove_file(&twin);
    }
}
