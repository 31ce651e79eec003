//! The conformance suite: small OpenMP programs under `tests/conformance/<rule group>/`, each
//! pinning down one mapping or API rule. A program states what it checks in comment directives:
//!
//! ```text
//! // RULE: what the program pins down (required, one line)
//! // EXPECT: an exact line of stdout
//! // EXPECT-STDERR: a substring of stderr (the runtime's messages)
//! // REJECT-STDERR: a substring that must not appear in stderr
//! // EXIT: fail              the program must exit non-zero (a fatal error, say)
//! // ENV: NAME=value         set for the run
//! // FLAGS: -flag ...        extra compiler flags
//! // COMPILERS: clang19      only with these compilers (default: every compiler)
//! // LLVM-DIFFERS: why       our behaviour deliberately differs; skip the LLVM 19 reference run
//! // NOT-ON-EMULATOR: why    not run on the emulated GPU drivers (a host device's own behaviour,
//! //                         or driver calls of the program's own that the emulators lack);
//! //                         `NOT-ON-EMULATOR: cuda: why` (or `amdgpu: why`) for one of them
//! // NEEDS: 4 devices        for scripts/gpu-run.sh on a real GPU: left out where the machine
//! //                         has fewer devices (here the host plugin always has four)
//! // NEEDS: pageable memory access   for scripts/gpu-run.sh: where device 0 has none, the
//! //                         program is only checked for the runtime's message saying so
//! // NOT-ON-GPU: why         for scripts/gpu-run.sh: a host device's own behaviour
//! // NEEDS: nvlink           for scripts/gpu-run.sh: left out when the bundle was built with the
//! //                         stand-in NVPTX toolchain, which cannot link function pointers
//! //                         held in device globals (indirect calls)
//! ```
//!
//! The `NEEDS` and `NOT-ON-GPU` lines go last in a file, so that they move no line that a
//! message names (`dump_table.c:15:7`).
//!
//! Every program also checks its own results and exits non-zero when they are wrong. The same
//! clang-19 binaries run against LLVM 19's `libomptarget.so.19.1` too, so each expectation is
//! known to be LLVM's behaviour, not a guess.

use crate::{text, workspace_root, Compiler};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Which offload runtime a program runs against.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Runtime {
    Ours,
    /// LLVM 19's own runtime from libomp-19-dev (clang-19 binaries only).
    Llvm19,
    /// Our runtime with only the plugin of `gpu`, on its emulated driver (dist/emu), with
    /// `OMPTARGET_EMU_DELAY_US` set to `delay_us` when it is not 0. The programs are built for
    /// the GPU with an x86-64 twin (clang-19).
    OursOnEmulator {
        gpu: EmulatedGpu,
        delay_us: u32,
    },
    /// LLVM 19's runtime on the emulated driver of `gpu`, its first GPU made the default.
    Llvm19OnEmulator {
        gpu: EmulatedGpu,
    },
    /// Our runtime with only the MPI plugin, under `mpirun`, with [`MPI_DEVICE_PROCESSES`]
    /// device processes (`dist/bin/omptarget-mpi-device`), each offering
    /// [`MPI_HOST_DEVICES_EACH`] devices: host devices, or with `gpu` GPUs of that plugin on
    /// its emulated driver (the programs then built with an x86-64 twin, clang-19).
    OursOverMpi {
        gpu: Option<EmulatedGpu>,
    },
}

/// Device processes of an MPI run, and host devices each offers: the four devices programs
/// written for the host plugin expect, two per process, so copies between devices 1 and 2
/// cross processes.
pub const MPI_DEVICE_PROCESSES: u32 = 2;
pub const MPI_HOST_DEVICES_EACH: u32 = 2;

/// The launcher command running `program` (with its arguments) as the program of an MPI job
/// with `device_processes` device processes. Open MPI refuses root unless told, and this
/// machine has fewer cores than processes: both allowed.
pub fn mpirun(program: &[&std::ffi::OsStr], device_processes: u32) -> Command {
    let mut cmd = mpirun_command();
    cmd.args(["-np", "1"])
        .args(program)
        .arg(":")
        .args(["-np", &device_processes.to_string()])
        .arg(crate::dist().join("bin/omptarget-mpi-device"));
    cmd
}

/// `mpirun`, allowed to run as root and to place more processes than this machine has cores,
/// with a session directory of its own: Open MPI 4.1 creates the shared one
/// (`/tmp/ompi.<host>.<uid>`) racily, and jobs started at the same moment by parallel tests
/// failed with "mkdir /tmp/ompi.vm.0: File exists".
pub fn mpirun_command() -> Command {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let base = std::env::temp_dir().join(format!(
        "omptarget-mpirun-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::create_dir_all(&base);
    let mut cmd = Command::new("mpirun");
    cmd.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("OMPI_MCA_rmaps_base_oversubscribe", "1")
        .env("OMPI_MCA_orte_tmpdir_base", base);
    cmd
}

/// The GPUs whose drivers dist/emu emulates.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum EmulatedGpu {
    /// sm_90 on the emulated CUDA driver (libcuda.so.1).
    Cuda,
    /// gfx90a on the emulated HSA runtime (libhsa-runtime64.so.1).
    Amdgpu,
}

impl EmulatedGpu {
    /// The plugin's name for `LIBOMPTARGET_PLUGINS_TO_LOAD`.
    pub fn plugin(self) -> &'static str {
        match self {
            EmulatedGpu::Cuda => "cuda",
            EmulatedGpu::Amdgpu => "amdgpu",
        }
    }

    /// The name of the build flavour: the GPU image's architecture.
    pub fn arch(self) -> &'static str {
        match self {
            EmulatedGpu::Cuda => "sm_90",
            EmulatedGpu::Amdgpu => "gfx90a",
        }
    }
}

impl Runtime {
    /// The emulated GPU the runtime runs on, if any.
    pub fn emulator(self) -> Option<EmulatedGpu> {
        match self {
            Runtime::OursOnEmulator { gpu, .. } | Runtime::Llvm19OnEmulator { gpu } => Some(gpu),
            Runtime::OursOverMpi { gpu } => gpu,
            Runtime::Ours | Runtime::Llvm19 => None,
        }
    }

    fn is_llvm(self) -> bool {
        matches!(self, Runtime::Llvm19 | Runtime::Llvm19OnEmulator { .. })
    }
}

/// As many emulated GPUs as the host plugin has devices, so that programs written for the
/// host devices' numbers run unchanged.
pub const EMULATED_DEVICES: u32 = 4;

/// LLVM 19 numbers its four host devices before the GPUs (CUDA's and AMDGPU's alike).
pub const LLVM19_FIRST_GPU_DEVICE: u32 = 4;

pub const LLVM19_LIB_DIR: &str = "/usr/lib/llvm-19/lib";

#[derive(Clone, Debug, Default)]
pub struct Spec {
    pub path: PathBuf,
    pub rule: String,
    pub expect: Vec<String>,
    pub expect_stderr: Vec<String>,
    pub reject_stderr: Vec<String>,
    pub should_fail: bool,
    pub env: Vec<(String, String)>,
    pub flags: Vec<String>,
    pub compilers: Option<Vec<String>>,
    pub llvm_differs: Option<String>,
    /// Why the program is not run on the emulated GPU drivers: for one of them (the plugin's
    /// name), or for all (`None`).
    pub emulator_skips: Vec<(Option<String>, String)>,
    /// Why the program is not run through the MPI plugin.
    pub mpi_skip: Option<String>,
}

impl Spec {
    pub fn parse(path: &Path) -> Result<Spec, String> {
        let source = std::fs::read_to_string(path).map_err(|e| format!("{e}"))?;
        let mut spec = Spec {
            path: path.to_path_buf(),
            ..Spec::default()
        };
        for line in source.lines() {
            let Some(rest) = line.trim().strip_prefix("// ") else {
                continue;
            };
            let Some((key, value)) = rest.split_once(": ") else {
                continue;
            };
            let value = value.to_string();
            match key {
                "RULE" => spec.rule = value,
                "EXPECT" => spec.expect.push(value),
                "EXPECT-STDERR" => spec.expect_stderr.push(value),
                "REJECT-STDERR" => spec.reject_stderr.push(value),
                "EXIT" if value.trim() == "fail" => spec.should_fail = true,
                "EXIT" => return Err(format!("unknown EXIT value '{value}'")),
                "ENV" => {
                    let (k, v) = value
                        .split_once('=')
                        .ok_or_else(|| format!("ENV needs NAME=value: '{value}'"))?;
                    spec.env.push((k.trim().to_string(), v.to_string()));
                }
                "FLAGS" => spec
                    .flags
                    .extend(value.split_whitespace().map(str::to_string)),
                "COMPILERS" => {
                    spec.compilers = Some(value.split_whitespace().map(str::to_string).collect())
                }
                "LLVM-DIFFERS" => spec.llvm_differs = Some(value),
                "NOT-ON-MPI" => spec.mpi_skip = Some(value),
                "NOT-ON-EMULATOR" => spec.emulator_skips.push(
                    match value.split_once(": ").filter(|(gpu, _)| {
                        [EmulatedGpu::Cuda, EmulatedGpu::Amdgpu]
                            .iter()
                            .any(|g| g.plugin() == *gpu)
                    }) {
                        Some((gpu, why)) => (Some(gpu.to_string()), why.to_string()),
                        None => (None, value),
                    },
                ),
                _ => {}
            }
        }
        if spec.rule.is_empty() {
            return Err("no '// RULE:' line saying what the program checks".into());
        }
        Ok(spec)
    }

    /// Group and file name, e.g. `map_types/always_to.c`.
    pub fn name(&self) -> String {
        let root = suite_dir();
        self.path
            .strip_prefix(&root)
            .unwrap_or(&self.path)
            .display()
            .to_string()
    }

    /// Whether the program runs on the emulated driver of `gpu`.
    pub fn runs_on_emulator(&self, gpu: EmulatedGpu) -> bool {
        !self
            .emulator_skips
            .iter()
            .any(|(only, _)| only.as_deref().is_none_or(|g| g == gpu.plugin()))
    }

    /// Whether the program is checked with `compiler` against `runtime`: not where it names
    /// other compilers, a deliberate LLVM difference, or a skip for the emulator or MPI.
    pub fn applies(&self, compiler: Compiler, runtime: Runtime) -> bool {
        if !self.runs_with(compiler) || (runtime.is_llvm() && self.llvm_differs.is_some()) {
            return false;
        }
        if let Some(gpu) = runtime.emulator() {
            // LLVM 19's runtime runs clang-19's programs only.
            if (runtime.is_llvm() && compiler != Compiler::Clang19) || !self.runs_on_emulator(gpu) {
                return false;
            }
        }
        !(matches!(runtime, Runtime::OursOverMpi { .. }) && self.mpi_skip.is_some())
    }

    pub fn runs_with(&self, compiler: Compiler) -> bool {
        self.compilers
            .as_ref()
            .is_none_or(|c| c.iter().any(|c| c == compiler.tag()))
    }
}

pub fn suite_dir() -> PathBuf {
    workspace_root().join("tests/conformance")
}

/// Every program of the suite, sorted by group and name.
pub fn programs() -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut dirs = vec![suite_dir()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if matches!(path.extension().and_then(|e| e.to_str()), Some("c" | "cpp")) {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

fn exe_path(spec: &Spec, compiler: Compiler, twin: Option<EmulatedGpu>) -> PathBuf {
    let flavour = match twin {
        Some(gpu) => format!("{}-{}-twin", compiler.tag(), gpu.arch()),
        None => compiler.tag().to_string(),
    };
    let dir = workspace_root().join("target/conformance").join(flavour);
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(spec.name().replace(['/', '.'], "_"))
}

/// Compiles one program (again only when the source is newer than the executable).
pub fn compile(spec: &Spec, compiler: Compiler) -> Result<PathBuf, String> {
    compile_for(spec, compiler, None)
}

/// As [`compile`]; with `twin`, for that GPU with an x86-64 twin of the GPU image, which the
/// emulated driver runs the kernels through.
pub fn compile_for(
    spec: &Spec,
    compiler: Compiler,
    twin: Option<EmulatedGpu>,
) -> Result<PathBuf, String> {
    let out = exe_path(spec, compiler, twin);
    // A machine without compilers (the GPU machine's soak) runs the programs built here, as
    // they are: a copied tree's times say nothing about which is newer.
    if std::env::var_os("OMPTARGET_CONFORMANCE_PREBUILT").is_some() {
        return if out.exists() {
            Ok(out)
        } else {
            Err(format!(
                "OMPTARGET_CONFORMANCE_PREBUILT: no {}",
                out.display()
            ))
        };
    }
    let fresh = |p: &Path| p.metadata().and_then(|m| m.modified()).ok();
    if let (Some(built), Some(written)) = (fresh(&out), fresh(&spec.path)) {
        if built > written {
            return Ok(out);
        }
    }
    let cpp = spec.path.extension().is_some_and(|e| e == "cpp");
    let mut cmd = compiler.command(cpp);
    match twin {
        Some(gpu) if compiler == Compiler::Clang22 => {
            cmd.env("PATH", crate::clang22_twin_path(gpu))
                .args(crate::clang22_twin_flags(gpu));
        }
        Some(EmulatedGpu::Cuda) => {
            let cuda = crate::nvptx_cuda_path();
            cmd.env("PATH", crate::path_with_ptxas())
                .args(crate::CUDA_TWIN_FLAGS)
                .arg(format!("--cuda-path={}", cuda.display()));
        }
        Some(EmulatedGpu::Amdgpu) => {
            cmd.args(crate::AMDGPU_TWIN_FLAGS);
        }
        None => {}
    }
    cmd.arg(&spec.path).args(&spec.flags);
    let program = cmd.get_program().to_owned();
    // Other tests may build or run the same program meanwhile (ours and LLVM 19's runs of the
    // suite share their binaries): never in place.
    let output =
        crate::outputs::build(cmd, &out).map_err(|e| format!("cannot run {program:?}: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "{} failed to compile:\n{}",
            compiler.tag(),
            text(&output.stderr)
        ));
    }
    Ok(out)
}

/// Runs a compiled program and checks it against its directives. `Err` says what went wrong.
pub fn run(spec: &Spec, exe: &Path, runtime: Runtime) -> Result<(), String> {
    run_under(spec, exe, runtime, &[])
}

/// As [`run`], with the program started by a wrapper command (valgrind, say).
pub fn run_under(
    spec: &Spec,
    exe: &Path,
    runtime: Runtime,
    wrapper: &[&str],
) -> Result<(), String> {
    run_limited(spec, exe, runtime, wrapper, RUN_LIMIT)
}

/// How long one run of a program may take before it counts as hung.
pub const RUN_LIMIT: Duration = Duration::from_secs(300);

/// As [`run_under`], a run that outlasts `limit` counting as hung (its report holds the
/// stacks of every thread).
pub fn run_limited(
    spec: &Spec,
    exe: &Path,
    runtime: Runtime,
    wrapper: &[&str],
    limit: Duration,
) -> Result<(), String> {
    let emulators = crate::dist().join("emu");
    let lib_dir = match runtime {
        Runtime::Ours | Runtime::OursOverMpi { gpu: None } => {
            crate::lib_dir().display().to_string()
        }
        Runtime::OursOverMpi { gpu: Some(_) } => {
            format!("{}:{}", emulators.display(), crate::lib_dir().display())
        }
        Runtime::Llvm19 => LLVM19_LIB_DIR.to_string(),
        Runtime::OursOnEmulator { .. } => {
            format!("{}:{}", emulators.display(), crate::lib_dir().display())
        }
        Runtime::Llvm19OnEmulator { .. } => format!("{}:{LLVM19_LIB_DIR}", emulators.display()),
    };
    let mut cmd = match (wrapper.split_first(), runtime) {
        (_, Runtime::OursOverMpi { .. }) => {
            let mut program: Vec<&std::ffi::OsStr> = wrapper.iter().map(|w| w.as_ref()).collect();
            program.push(exe.as_os_str());
            mpirun(&program, MPI_DEVICE_PROCESSES)
        }
        (Some((program, args)), _) => {
            let mut c = Command::new(program);
            c.args(args).arg(exe);
            c
        }
        (None, _) => Command::new(exe),
    };
    cmd.env("LD_LIBRARY_PATH", lib_dir);
    for var in [
        "OMP_TARGET_OFFLOAD",
        "LIBOMPTARGET_PLUGIN_PATH",
        "LIBOMPTARGET_PLUGINS_TO_LOAD",
        "LIBOMPTARGET_DEBUG",
        "LIBOMPTARGET_INFO",
        "OMP_DEFAULT_DEVICE",
        "OMPTARGET_EMU_DELAY_US",
        "OMPTARGET_EMU_TRACE",
        "OMPTARGET_EMU_FAIL",
        "OMPTARGET_EMU_DEVICES",
        "HSA_RUNTIME_LIB",
        "LIBOMPTARGET_TREAT_ATTACH_AUTO_AS_ALWAYS",
    ] {
        cmd.env_remove(var);
    }
    match runtime {
        Runtime::OursOnEmulator { gpu, delay_us } => {
            cmd.env("OMPTARGET_EMU_DEVICES", EMULATED_DEVICES.to_string())
                .env("LIBOMPTARGET_PLUGINS_TO_LOAD", gpu.plugin())
                .env("OMP_TARGET_OFFLOAD", "mandatory");
            if gpu == EmulatedGpu::Amdgpu {
                cmd.env("HSA_RUNTIME_LIB", emulators.join("libhsa-runtime64.so.1"));
            }
            if delay_us > 0 {
                cmd.env("OMPTARGET_EMU_DELAY_US", delay_us.to_string());
            }
        }
        Runtime::Llvm19OnEmulator { .. } => {
            cmd.env("OMPTARGET_EMU_DEVICES", EMULATED_DEVICES.to_string())
                .env("OMP_TARGET_OFFLOAD", "mandatory")
                .env("OMP_DEFAULT_DEVICE", LLVM19_FIRST_GPU_DEVICE.to_string());
        }
        Runtime::OursOverMpi { gpu } => {
            cmd.env("LIBOMPTARGET_PLUGINS_TO_LOAD", "mpi")
                .env("OMP_TARGET_OFFLOAD", "mandatory")
                .env(
                    "LIBOMPTARGET_HOST_NUM_DEVICES",
                    MPI_HOST_DEVICES_EACH.to_string(),
                );
            if let Some(gpu) = gpu {
                // The device processes load the GPU plugin; the emulated driver finds the
                // kernels' twins in the program's file (the device process is not the program).
                cmd.env("OMPTARGET_MPI_DEVICE_PLUGINS", gpu.plugin())
                    .env("OMPTARGET_EMU_DEVICES", MPI_HOST_DEVICES_EACH.to_string())
                    .env("OMPTARGET_EMU_TWINS", exe);
                if gpu == EmulatedGpu::Amdgpu {
                    cmd.env("HSA_RUNTIME_LIB", emulators.join("libhsa-runtime64.so.1"));
                }
            }
        }
        Runtime::Ours | Runtime::Llvm19 => {}
    }
    for (k, v) in &spec.env {
        cmd.env(k, v);
    }
    let (status, stdout, stderr) = run_with_timeout(cmd, limit)?;
    let mut problems = Vec::new();
    if spec.should_fail && status == Some(0) {
        problems.push("exited 0 but the program is expected to fail".to_string());
    }
    if !spec.should_fail && status != Some(0) {
        problems.push(format!("exited with {status:?}"));
    }
    for line in &spec.expect {
        if !stdout.lines().any(|l| l == line) {
            problems.push(format!("stdout lacks the line '{line}'"));
        }
    }
    for part in &spec.expect_stderr {
        if !stderr.contains(part.as_str()) {
            problems.push(format!("stderr lacks '{part}'"));
        }
    }
    for part in &spec.reject_stderr {
        if stderr.contains(part.as_str()) {
            problems.push(format!("stderr has '{part}'"));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{}\n--- stdout:\n{}--- stderr:\n{}",
            problems.join("\n"),
            tail(&stdout),
            tail(&stderr)
        ))
    }
}

fn tail(s: &str) -> String {
    let lines: Vec<&str> = s.lines().collect();
    let start = lines.len().saturating_sub(40);
    lines[start..].iter().map(|l| format!("{l}\n")).collect()
}

/// Runs a command, killing it after `limit`; returns exit code (None: killed by a signal).
fn run_with_timeout(
    mut cmd: Command,
    limit: Duration,
) -> Result<(Option<i32>, String, String), String> {
    let dir = tempdir();
    let (out_path, err_path) = (dir.join("stdout"), dir.join("stderr"));
    let files = |p: &Path| std::fs::File::create(p).map_err(|e| e.to_string());
    cmd.stdout(Stdio::from(files(&out_path)?))
        .stderr(Stdio::from(files(&err_path)?))
        .stdin(Stdio::null());
    let mut child = crate::retry_while_busy(|| cmd.spawn())
        .map_err(|e| format!("cannot run {:?}: {e}", cmd.get_program()))?;
    let start = Instant::now();
    // Past the limit, a run that still uses CPU is given more time, up to four limits (a
    // loaded machine slows every run; emulated driver delays slow some a lot): a hang is a
    // run that used no CPU time for a while, or one still busy at the last limit (spinning).
    let (grace, hard_limit) = (Duration::from_secs(3), limit * 4);
    let mut deadline = limit;
    let mut ticks_at_deadline = None;
    let status = loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            break status;
        }
        let elapsed = start.elapsed();
        if elapsed > deadline {
            let ticks = crate::hang_report::cpu_ticks(child.id());
            let working = match ticks_at_deadline {
                None => true,
                Some(before) => ticks > before + 1,
            };
            if working && elapsed < hard_limit {
                ticks_at_deadline = Some(ticks);
                deadline = elapsed + grace;
                continue;
            }
            let why = if working {
                format!("still running after {elapsed:.0?} (four times the limit of {limit:?}), using CPU: spinning, or far too slow")
            } else {
                format!("hung: past the limit of {limit:?}, and no CPU time used in the last {grace:?} ({elapsed:.0?} in all)")
            };
            // Where every thread waits, before the kill ends them.
            let stacks = crate::hang_report::stacks(child.id());
            let _ = child.kill();
            let _ = child.wait();
            let read = |p: &Path| text(&std::fs::read(p).unwrap_or_default());
            let (stdout, stderr) = (read(&out_path), read(&err_path));
            let _ = std::fs::remove_dir_all(&dir);
            return Err(format!(
                "timed out: {why}\n--- stdout:\n{}--- stderr:\n{}--- stacks:\n{stacks}",
                tail(&stdout),
                tail(&stderr)
            ));
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let read = |p: &Path| text(&std::fs::read(p).unwrap_or_default());
    let result = (status.code(), read(&out_path), read(&err_path));
    let _ = std::fs::remove_dir_all(&dir);
    Ok(result)
}

fn tempdir() -> PathBuf {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let dir = std::env::temp_dir().join(format!(
        "omptarget-conformance-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// One program checked with one compiler against one runtime.
#[derive(Debug)]
pub struct Outcome {
    pub name: String,
    pub compiler: Compiler,
    pub runtime: Runtime,
    pub result: Result<(), String>,
}

/// Checks each program with each compiler against `runtime`, on `jobs` threads.
pub fn check_all(
    paths: &[PathBuf],
    compilers: &[Compiler],
    runtime: Runtime,
    jobs: usize,
) -> Vec<Outcome> {
    let mut work = Vec::new();
    for path in paths {
        for &compiler in compilers {
            work.push((path.clone(), compiler));
        }
    }
    let work = std::sync::Mutex::new(work.into_iter());
    let outcomes = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..jobs.max(1) {
            s.spawn(|| loop {
                let Some((path, compiler)) = work.lock().unwrap().next() else {
                    break;
                };
                if let Some(outcome) = check_one(&path, compiler, runtime) {
                    outcomes.lock().unwrap().push(outcome);
                }
            });
        }
    });
    let mut outcomes = outcomes.into_inner().unwrap();
    outcomes.sort_by(|a, b| (&a.name, a.compiler.tag()).cmp(&(&b.name, b.compiler.tag())));
    outcomes
}

/// `None` when the program does not apply (other compiler, or a deliberate LLVM difference).
fn check_one(path: &Path, compiler: Compiler, runtime: Runtime) -> Option<Outcome> {
    let spec = match Spec::parse(path) {
        Ok(spec) => spec,
        Err(e) => {
            return Some(Outcome {
                name: path.display().to_string(),
                compiler,
                runtime,
                result: Err(e),
            })
        }
    };
    if !spec.applies(compiler, runtime) {
        return None;
    }
    let result =
        compile_for(&spec, compiler, runtime.emulator()).and_then(|exe| run(&spec, &exe, runtime));
    Some(Outcome {
        name: spec.name(),
        compiler,
        runtime,
        result,
    })
}

/// A report of the failures, or `None` when everything passed.
pub fn failures(outcomes: &[Outcome]) -> Option<String> {
    let failed: Vec<String> = outcomes
        .iter()
        .filter_map(|o| {
            o.result.as_ref().err().map(|e| {
                format!(
                    "FAIL {} [{} / {:?}]\n{e}",
                    o.name,
                    o.compiler.tag(),
                    o.runtime
                )
            })
        })
        .collect();
    (!failed.is_empty()).then(|| {
        format!(
            "{} of {} checks failed:\n\n{}",
            failed.len(),
            outcomes.len(),
            failed.join("\n\n")
        )
    })
}

/// The programs whose failures depend on timing, which the soak runs many times: the `async`
/// and `threads` groups and every program with a `nowait` construct.
pub fn soak_programs() -> Vec<PathBuf> {
    programs()
        .into_iter()
        .filter(|p| {
            let group = p
                .parent()
                .and_then(|d| d.file_name())
                .and_then(|n| n.to_str());
            matches!(group, Some("async" | "threads"))
                || std::fs::read_to_string(p).is_ok_and(|s| s.contains("nowait"))
        })
        .collect()
}

/// One program's soak: how its runs ended.
#[derive(Debug)]
pub struct Soaked {
    pub name: String,
    pub compiler: Compiler,
    pub runtime: Runtime,
    pub runs: usize,
    pub passed: usize,
    pub hung: usize,
    /// The first failures' reports (a hang's with every thread's stack), at most three.
    pub failures: Vec<String>,
}

impl Soaked {
    /// A program that could not be read or built: no runs, the reason as its failure.
    fn not_run(name: String, compiler: Compiler, runtime: Runtime, why: String) -> Soaked {
        Soaked {
            name,
            compiler,
            runtime,
            runs: 0,
            passed: 0,
            hung: 0,
            failures: vec![why],
        }
    }
}

/// Runs each of `paths` that applies, built by `compiler`, `runs` times against `runtime` on
/// `jobs` threads, each run limited to `limit` (a run past it is a hang: its report holds the
/// stacks of every thread of every process of the run).
pub fn soak(
    paths: &[PathBuf],
    compiler: Compiler,
    runtime: Runtime,
    runs: usize,
    jobs: usize,
    limit: Duration,
) -> Vec<Soaked> {
    let mut built = Vec::new();
    let mut results = Vec::new();
    for path in paths {
        let spec = match Spec::parse(path) {
            Ok(spec) => spec,
            Err(e) => {
                results.push(Soaked::not_run(
                    path.display().to_string(),
                    compiler,
                    runtime,
                    e,
                ));
                continue;
            }
        };
        if !spec.applies(compiler, runtime) {
            continue;
        }
        match compile_for(&spec, compiler, runtime.emulator()) {
            Ok(exe) => built.push((spec, exe)),
            Err(e) => results.push(Soaked::not_run(spec.name(), compiler, runtime, e)),
        }
    }
    let tallies: Vec<std::sync::Mutex<(usize, usize, Vec<String>)>> =
        built.iter().map(|_| Default::default()).collect();
    // Runs interleaved across programs, so that a slow stretch of the machine is not spent on
    // one program alone.
    let work = std::sync::Mutex::new((0..runs).flat_map(|_| 0..built.len()));
    // A line on stderr per round of every program, so that a long soak cut short still says
    // how far it got and how it went.
    let progress = std::sync::Mutex::new((0usize, 0usize, 0usize));
    std::thread::scope(|s| {
        for _ in 0..jobs.max(1) {
            s.spawn(|| loop {
                let Some(i) = work.lock().unwrap().next() else {
                    break;
                };
                let (spec, exe) = &built[i];
                let result = run_limited(spec, exe, runtime, &[], limit);
                let (failed, hung) = match &result {
                    Ok(()) => (0, 0),
                    Err(e) => (1, usize::from(e.starts_with("timed out"))),
                };
                let mut tally = tallies[i].lock().unwrap();
                match result {
                    Ok(()) => tally.0 += 1,
                    Err(e) => {
                        tally.1 += hung;
                        if tally.2.len() < 3 {
                            tally.2.push(e);
                        }
                    }
                }
                drop(tally);
                let mut p = progress.lock().unwrap();
                *p = (p.0 + 1, p.1 + failed, p.2 + hung);
                if p.0.checked_rem(built.len()) == Some(0) {
                    eprintln!(
                        "soak: {} of {} runs done ({} rounds), {} failed, {} hung",
                        p.0,
                        runs * built.len(),
                        p.0 / built.len(),
                        p.1,
                        p.2
                    );
                }
            });
        }
    });
    for ((spec, _), tally) in built.iter().zip(tallies) {
        let (passed, hung, failures) = tally.into_inner().unwrap();
        results.push(Soaked {
            name: spec.name(),
            compiler,
            runtime,
            runs,
            passed,
            hung,
            failures,
        });
    }
    results
}

/// A report of the soaked programs with failed or hung runs, or `None` when every run passed.
pub fn soak_failures(soaked: &[Soaked]) -> Option<String> {
    let failed: Vec<String> = soaked
        .iter()
        .filter(|s| s.passed < s.runs || s.runs == 0)
        .map(|s| {
            format!(
                "SOAK {} [{} / {:?}]: {} of {} runs passed, {} hung\n{}",
                s.name,
                s.compiler.tag(),
                s.runtime,
                s.passed,
                s.runs,
                s.hung,
                s.failures.join("\n\n")
            )
        })
        .collect();
    (!failed.is_empty()).then(|| failed.join("\n\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shell(script: &str) -> Command {
        let mut cmd = Command::new("sh");
        cmd.arg("-c").arg(script);
        cmd
    }

    #[test]
    fn a_run_that_sleeps_past_its_limit_is_reported_as_hung() {
        let start = Instant::now();
        let e = run_with_timeout(shell("sleep 60"), Duration::from_secs(1)).unwrap_err();
        assert!(e.starts_with("timed out: hung"), "{e}");
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "{:?}",
            start.elapsed()
        );
    }

    #[test]
    fn a_run_that_spins_is_reported_at_four_limits() {
        let start = Instant::now();
        let e = run_with_timeout(shell("while :; do :; done"), Duration::from_secs(1)).unwrap_err();
        assert!(e.starts_with("timed out: still running"), "{e}");
        assert!(
            start.elapsed() >= Duration::from_secs(4),
            "{:?}",
            start.elapsed()
        );
    }

    #[test]
    fn a_run_still_working_past_its_limit_may_finish() {
        // Busy for two to three seconds, with a limit of one: it uses CPU throughout, so it
        // finishes.
        let script =
            "end=$(( $(date +%s) + 3 )); while [ $(date +%s) -lt $end ]; do :; done; echo done";
        let (status, stdout, _) = run_with_timeout(shell(script), Duration::from_secs(1)).unwrap();
        assert_eq!((status, stdout.trim()), (Some(0), "done"));
    }
}
