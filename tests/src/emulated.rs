//! Running programs on the emulated GPU drivers (dist/emu), for the tests of each emulator:
//! our runtime with only the GPU's plugin, LLVM 19's runtime as the judge, traces, the
//! conformance suite with LLVM's explained failures, and the fault sweep.

use crate::conformance::{self, EmulatedGpu, Runtime};
use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::process::Command;

/// Our runtime with only `gpu`'s plugin on its emulator, under `timeout 60`: exit code (124
/// when it hung), stdout, stderr.
pub fn run(
    gpu: EmulatedGpu,
    exe: &Path,
    args: &[&str],
    env: &[(&str, String)],
) -> (Option<i32>, String, String) {
    let mut cmd = Command::new("timeout");
    cmd.arg("60").arg(exe).args(args);
    cmd.env(
        "LD_LIBRARY_PATH",
        format!(
            "{}:{}",
            crate::dist().join("emu").display(),
            crate::lib_dir().display()
        ),
    )
    .env("LIBOMPTARGET_PLUGINS_TO_LOAD", gpu.plugin())
    .env_remove("OMP_TARGET_OFFLOAD")
    .env_remove("LIBOMPTARGET_INFO")
    .env_remove("HSA_RUNTIME_LIB");
    if gpu == EmulatedGpu::Amdgpu {
        cmd.env(
            "HSA_RUNTIME_LIB",
            crate::dist().join("emu/libhsa-runtime64.so.1"),
        );
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let output = cmd.output().expect("run the program");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// `omptarget-plugin-check` on `gpu`'s plugin over its emulator, with `image` as the checker's
/// program image, the kernels' x86-64 twins from the program `twins` and more environment
/// variables, under `timeout 300`: it passed (every check, none skipped), its stdout and stderr.
pub fn plugin_check(
    gpu: EmulatedGpu,
    image: &Path,
    twins: &Path,
    env: &[(&str, String)],
) -> (bool, String, String) {
    let mut cmd = Command::new("timeout");
    cmd.arg("300")
        .arg(crate::dist().join("bin/omptarget-plugin-check"))
        .arg(crate::lib_dir().join(format!("libomptarget.rtl.{}.so", gpu.plugin())))
        .arg("--image")
        .arg(image)
        .env("LD_LIBRARY_PATH", crate::dist().join("emu"))
        .env("OMPTARGET_EMU_TWINS", twins)
        .env_remove("HSA_RUNTIME_LIB");
    for (k, v) in env {
        cmd.env(k, v);
    }
    if gpu == EmulatedGpu::Amdgpu {
        cmd.env(
            "HSA_RUNTIME_LIB",
            crate::dist().join("emu/libhsa-runtime64.so.1"),
        );
    }
    let output = cmd.output().expect("run omptarget-plugin-check");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let passed = output.status.success() && stdout.contains(" 0 failed, 0 skipped");
    (
        passed,
        stdout,
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// A command running `exe` through LLVM 22's runtime, whose plugins dlopen the emulated drivers
/// from the library path, with the twins in `twins`, offloading mandatory, under
/// `timeout seconds`; the variables that pick our plugins or our emulated HSA library are unset.
pub fn llvm_22_command(exe: &Path, twins: &Path, seconds: u32) -> Command {
    let runtime = format!(
        "{}:{}",
        crate::llvm22_lib_dir().display(),
        conformance::LLVM19_LIB_DIR
    );
    llvm_command(&runtime, exe, twins, seconds)
}

/// As [`llvm_22_command`], through LLVM 19's runtime, for a program built by clang-19 (whose
/// plugins are in its `libomptarget.so.19.1`).
pub fn llvm_19_command(exe: &Path, twins: &Path, seconds: u32) -> Command {
    llvm_command(conformance::LLVM19_LIB_DIR, exe, twins, seconds)
}

fn llvm_command(runtime: &str, exe: &Path, twins: &Path, seconds: u32) -> Command {
    let mut cmd = Command::new("timeout");
    cmd.arg(seconds.to_string())
        .arg(exe)
        .env(
            "LD_LIBRARY_PATH",
            format!("{}:{runtime}", crate::dist().join("emu").display()),
        )
        .env("OMPTARGET_EMU_TWINS", twins)
        .env("OMP_TARGET_OFFLOAD", "mandatory")
        .env_remove("LIBOMPTARGET_PLUGINS_TO_LOAD")
        .env_remove("HSA_RUNTIME_LIB");
    cmd
}

/// Runs a program on our runtime with offloading mandatory, tracing the driver calls, with
/// more environment variables: exit code, stdout, stderr and the trace ("" when none was
/// written).
pub fn run_traced(
    gpu: EmulatedGpu,
    exe: &Path,
    name: &str,
    env: &[(&str, &str)],
) -> (Option<i32>, String, String, String) {
    let trace = std::env::temp_dir().join(format!(
        "emu-{}-{name}-{}",
        gpu.plugin(),
        std::process::id()
    ));
    let _ = std::fs::remove_file(&trace);
    let mut all = vec![
        ("OMPTARGET_EMU_TRACE", trace.display().to_string()),
        ("OMP_TARGET_OFFLOAD", "mandatory".into()),
    ];
    all.extend(env.iter().map(|&(k, v)| (k, v.to_string())));
    let (code, stdout, stderr) = run(gpu, exe, &[], &all);
    let text = std::fs::read_to_string(&trace).unwrap_or_default();
    let _ = std::fs::remove_file(&trace);
    (code, stdout, stderr, text)
}

/// Runs `exe` with `args` through LLVM 19's runtime on the emulators with a trace into
/// `trace`, and asserts that it succeeds. The judge gets three tries, each failure reported:
/// LLVM's runs crashed at exit while the CUDA emulator unloaded twin images (fixed, see
/// docs/emulated-drivers.md), and its CUDA launch without a current context depends on timing.
pub fn run_under_llvm_19(
    exe: &Path,
    args: &[&str],
    trace: &Path,
    env: &[(&str, &str)],
) -> std::process::Output {
    let under_llvm = || {
        let _ = std::fs::remove_file(trace);
        Command::new(exe)
            .args(args)
            .envs(env.iter().copied())
            .env(
                "LD_LIBRARY_PATH",
                format!(
                    "{}:{}",
                    crate::dist().join("emu").display(),
                    conformance::LLVM19_LIB_DIR
                ),
            )
            .env("OMP_TARGET_OFFLOAD", "mandatory")
            .env(
                "OMP_DEFAULT_DEVICE",
                conformance::LLVM19_FIRST_GPU_DEVICE.to_string(),
            )
            .env("OMPTARGET_EMU_TRACE", trace)
            .env_remove("LIBOMPTARGET_PLUGINS_TO_LOAD")
            .env_remove("HSA_RUNTIME_LIB")
            .output()
            .expect("run under LLVM 19")
    };
    let mut status = under_llvm();
    for _ in 0..2 {
        if status.status.success() {
            break;
        }
        eprintln!("LLVM 19's run failed, tried again: {status:?}");
        status = under_llvm();
    }
    assert!(status.status.success(), "{status:?}");
    status
}

/// Runs `exe` through LLVM 19's runtime on the emulators, with the extra `env`, and asserts
/// that it printed `expected`: LLVM's plugin judging a program's result on the emulation.
pub fn assert_llvm_19_prints(exe: &Path, expected: &str, env: &[(&str, &str)]) {
    let trace = std::env::temp_dir().join(format!(
        "emu-llvm-{}-{}",
        exe.file_name().unwrap().to_string_lossy(),
        std::process::id()
    ));
    let output = run_under_llvm_19(exe, &[], &trace, env);
    let _ = std::fs::remove_file(&trace);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains(expected), "{stdout}");
}

/// One program run on ours (offloading mandatory; it must succeed) and on LLVM 19's plugin,
/// both traced.
pub struct TracedRuns {
    pub stdout: String,
    pub stderr: String,
    pub trace: String,
    pub llvm_stdout: String,
    pub llvm_trace: String,
}

/// Runs `exe` with `args` and the extra `env` on ours, then on LLVM 19, each with its own
/// trace file.
pub fn run_both_traced(
    gpu: EmulatedGpu,
    exe: &Path,
    args: &[&str],
    env: &[(&str, &str)],
) -> TracedRuns {
    static RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let run_id = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let trace_file = |who: &str| {
        std::env::temp_dir().join(format!(
            "emu-{}-{who}-{}-{run_id}",
            exe.file_name().unwrap().to_string_lossy(),
            std::process::id()
        ))
    };
    let (ours, llvm) = (trace_file("ours"), trace_file("llvm"));
    let mut ours_env: Vec<(&str, String)> = vec![
        ("OMPTARGET_EMU_TRACE", ours.display().to_string()),
        ("OMP_TARGET_OFFLOAD", "mandatory".into()),
    ];
    ours_env.extend(env.iter().map(|&(k, v)| (k, v.to_string())));
    let _ = std::fs::remove_file(&ours);
    let (code, stdout, stderr) = run(gpu, exe, args, &ours_env);
    assert_eq!(code, Some(0), "{args:?}: {stdout}{stderr}");
    let llvm_output = run_under_llvm_19(exe, args, &llvm, env);
    let read = |p: &Path| std::fs::read_to_string(p).expect("a trace");
    let runs = TracedRuns {
        stdout,
        stderr,
        trace: read(&ours),
        llvm_stdout: String::from_utf8_lossy(&llvm_output.stdout).into_owned(),
        llvm_trace: read(&llvm),
    };
    let _ = (std::fs::remove_file(&ours), std::fs::remove_file(&llvm));
    runs
}

/// Driver calls per construct: see [`calls_per_construct`].
#[derive(Debug, Default)]
pub struct PerConstruct {
    /// By trace line kind: the first word, a function or `packet`.
    pub calls: HashMap<String, f64>,
    /// The calls traced with a wait state, by function and state (`<function> state=<state>`):
    /// how often a wait sleeps after its busy-wait is timing, for either plugin.
    pub by_state: HashMap<String, f64>,
}

impl PerConstruct {
    fn of_trace(trace: &str) -> Self {
        let mut counted = PerConstruct::default();
        for line in trace.lines() {
            let mut fields = line.split_whitespace();
            let function = fields.next().unwrap_or_default();
            *counted.calls.entry(function.to_string()).or_default() += 1.0;
            if let Some(state) = fields.find(|f| f.starts_with("state=")) {
                *counted
                    .by_state
                    .entry(format!("{function} {state}"))
                    .or_default() += 1.0;
            }
        }
        counted
    }
}

/// Driver calls per construct of `kind` (bench/gpu/per_construct.c) on ours and on LLVM 19:
/// the trace lines of `constructs` constructs less those of 1, over `constructs - 1` (one-off
/// work that varies with timing weighs less the more constructs run).
pub fn calls_per_construct(
    gpu: EmulatedGpu,
    exe: &Path,
    kind: &str,
    constructs: u32,
) -> [PerConstruct; 2] {
    let count = constructs.to_string();
    let (one, many) = (
        run_both_traced(gpu, exe, &[kind, "1"], &[]),
        run_both_traced(gpu, exe, &[kind, &count], &[]),
    );
    let runs = f64::from(constructs - 1);
    let less = |many: HashMap<String, f64>, one: &HashMap<String, f64>| {
        many.into_iter()
            .map(|(f, n)| {
                let extra = n - one.get(&f).copied().unwrap_or(0.0);
                (f, extra / runs)
            })
            .collect()
    };
    let per_construct = |one: &str, many: &str| {
        let (one, many) = (PerConstruct::of_trace(one), PerConstruct::of_trace(many));
        PerConstruct {
            calls: less(many.calls, &one.calls),
            by_state: less(many.by_state, &one.by_state),
        }
    };
    [
        per_construct(&one.trace, &many.trace),
        per_construct(&one.llvm_trace, &many.llvm_trace),
    ]
}

/// The conformance suite (clang-19 builds) on `runtime`, two programs at a time.
fn suite(runtime: Runtime) -> Vec<conformance::Outcome> {
    conformance::check_all(
        &conformance::programs(),
        &[crate::Compiler::Clang19],
        runtime,
        2,
    )
}

fn passed(outcomes: &[conformance::Outcome]) -> BTreeSet<String> {
    outcomes
        .iter()
        .filter(|o| o.result.is_ok())
        .map(|o| o.name.clone())
        .collect()
}

/// The conformance suite on `gpu`'s emulator: our plugin passes every program (with and
/// without a delay of 200 us per queued operation); LLVM 19's plugin on the same emulator and
/// binaries is the judge of the emulation: what it passes, ours passes, and each of its
/// failures is explained in docs/emulated-drivers.md, or by `also_explained`. Prints the
/// counts, naming the emulator `what`.
pub fn suite_passes_and_llvm_19_judges(
    gpu: EmulatedGpu,
    what: &str,
    also_explained: impl Fn(&conformance::Outcome) -> bool,
) {
    let ours = suite(Runtime::OursOnEmulator { gpu, delay_us: 0 });
    assert!(ours.len() >= 150, "only {} programs ran", ours.len());
    if let Some(report) = conformance::failures(&ours) {
        panic!("{report}");
    }
    let delayed = suite(Runtime::OursOnEmulator { gpu, delay_us: 200 });
    if let Some(report) = conformance::failures(&delayed) {
        panic!("with OMPTARGET_EMU_DELAY_US=200: {report}");
    }
    let llvm = suite(Runtime::Llvm19OnEmulator { gpu });
    let (llvm_passed, ours_passed) = (passed(&llvm), passed(&ours));
    let only_llvm: Vec<&String> = llvm_passed.difference(&ours_passed).collect();
    assert!(
        only_llvm.is_empty(),
        "LLVM 19 passes, ours fails: {only_llvm:?}"
    );
    let known = known_llvm_failures(gpu);
    let unexplained: Vec<&String> = llvm
        .iter()
        .filter(|o| o.result.is_err() && !known.contains(&o.name) && !also_explained(o))
        .map(|o| &o.name)
        .collect();
    assert!(
        unexplained.is_empty(),
        "LLVM 19 fails on the emulator where docs/emulated-drivers.md does not say why: \
         {unexplained:?}\n{}",
        conformance::failures(&llvm).unwrap_or_default()
    );
    eprintln!(
        "on the {what}: ours passes {} of {}, LLVM 19 passes {} of {}",
        ours_passed.len(),
        ours.len(),
        llvm_passed.len(),
        llvm.len()
    );
}

/// The conformance suite built by clang-22, with LLVM 22's device runtime (built from LLVM
/// 22's sources, [`crate::llvm22_device_runtime`]), on `gpu`'s emulator: our plugin passes
/// every program. (LLVM 22's own plugins are not judged here: LLVM 19's are the emulators'
/// judge.) Prints the count, naming the emulator `what`.
pub fn clang_22_suite_passes(gpu: EmulatedGpu, what: &str) {
    let ours = conformance::check_all(
        &conformance::programs(),
        &[crate::Compiler::Clang22],
        Runtime::OursOnEmulator { gpu, delay_us: 0 },
        2,
    );
    assert!(ours.len() >= 150, "only {} programs ran", ours.len());
    if let Some(report) = conformance::failures(&ours) {
        panic!("clang-22 builds: {report}");
    }
    eprintln!(
        "on the {what}: ours passes {} of {} clang-22 programs",
        passed(&ours).len(),
        ours.len()
    );
}

/// The programs LLVM 19 fails on `gpu`'s emulator, from the table in
/// docs/emulated-drivers.md between the markers `<!-- llvm19-<plugin>-failures -->` (first
/// column; a cell may name several programs).
fn known_llvm_failures(gpu: EmulatedGpu) -> Vec<String> {
    let doc = std::fs::read_to_string(crate::workspace_root().join("docs/emulated-drivers.md"))
        .expect("docs/emulated-drivers.md");
    let marker = format!("<!-- llvm19-{}-failures -->", gpu.plugin());
    let table = doc
        .split(&marker)
        .nth(1)
        .expect("the LLVM 19 failures table");
    table
        .lines()
        .filter_map(|l| l.strip_prefix("| "))
        .filter_map(|l| l.split(" |").next())
        .flat_map(|cell| cell.split(", "))
        .filter_map(|name| name.strip_prefix('`')?.strip_suffix('`'))
        .map(str::to_owned)
        .collect()
}

/// The driver functions a clean run calls, from its OMPTARGET_EMU_TRACE (lines that start
/// with `prefix`, the API's function prefix; the result follows ` -> `).
pub fn functions_called(gpu: EmulatedGpu, exe: &Path, prefix: &str) -> BTreeSet<String> {
    let (code, stdout, stderr, text) = run_traced(gpu, exe, "trace", &[]);
    assert_eq!(code, Some(0), "clean run failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains(" ok"), "{stdout}");
    assert!(!text.is_empty(), "a trace");
    text.lines()
        .filter(|l| l.starts_with(prefix))
        .inspect(|l| assert!(l.contains(" -> "), "trace line without a result: {l}"))
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_owned)
        .collect()
}

/// Each of `functions` fails once, at its first call and at its second: every run ends with
/// the right result (the region falls back to the host where OMP_TARGET_OFFLOAD allows) or
/// with a clear error, never with a crash, a hang or a wrong result reported as success.
/// Returns (right results, clear errors).
pub fn fault_sweep(gpu: EmulatedGpu, exe: &Path, functions: &BTreeSet<String>) -> (usize, usize) {
    let (mut right, mut clear_error) = (0, 0);
    for function in functions {
        for nth in [1, 2] {
            let (code, stdout, stderr) = run(
                gpu,
                exe,
                &[],
                &[("OMPTARGET_EMU_FAIL", format!("{function}:{nth}"))],
            );
            let case = format!("{function}:{nth}");
            assert_ne!(code, Some(124), "{case}: hung\n{stderr}");
            assert!(
                !stdout.contains("WRONG"),
                "{case}: wrong result\n{stdout}\n{stderr}"
            );
            if code == Some(0) {
                assert!(stdout.contains(" ok"), "{case}: {stdout}");
                right += 1;
            } else {
                // `timeout` reports a signal as 128 + its number. A fatal offload error ends
                // with abort(), as LLVM's does; any other signal is a crash.
                let crashed = matches!(code, Some(132 | 135 | 136 | 139))
                    || (code == Some(134) && !stderr.contains("fatal error"));
                assert!(
                    !crashed && stderr.contains("omptarget"),
                    "{case}: ended with {code:?} without a clear error\n{stdout}\n{stderr}"
                );
                clear_error += 1;
            }
        }
    }
    (right, clear_error)
}

/// Little-endian 64-bit words of a trace's `bytes=` hex.
pub fn le_words(hex: &str) -> Vec<u64> {
    (0..hex.len() / 16)
        .map(|i| {
            let word = u64::from_str_radix(&hex[i * 16..i * 16 + 16], 16).expect("hex bytes");
            word.swap_bytes() // little-endian bytes, read as written
        })
        .collect()
}

/// Host function address printed by the program (`name=0x...`).
pub fn printed_address(stdout: &str, name: &str) -> u64 {
    let text = field(stdout, &format!("{name}=0x")).expect("the program printed its addresses");
    u64::from_str_radix(text, 16).expect("an address")
}

/// The indirect-call table of `tests/programs/emu_indirect_calls.c`, as a trace showed it
/// (`{host, device}` pairs), holds its two functions' host addresses (printed by the program),
/// sorted, each with a device address of its own.
pub fn check_indirect_call_table(who: &str, table: &[(u64, u64)], stdout: &str) {
    let mut hosts = vec![
        printed_address(stdout, "twice"),
        printed_address(stdout, "thrice"),
    ];
    hosts.sort();
    let table_hosts: Vec<u64> = table.iter().map(|(h, _)| *h).collect();
    assert_eq!(table_hosts, hosts, "{who}: {table:x?}");
    let devices: BTreeSet<u64> = table.iter().map(|(_, d)| *d).collect();
    assert_eq!(devices.len(), 2, "{who}: {table:x?}");
    assert!(
        table.iter().all(|(h, d)| *d != 0 && d != h),
        "{who}: {table:x?}"
    );
}

/// A trace line's `key=` value.
pub fn field<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    line.split_whitespace().find_map(|w| w.strip_prefix(key))
}

/// Where a trace's lines start with `prefix` (a driver function's calls), in order.
pub fn calls_at(lines: &[&str], prefix: &str) -> Vec<usize> {
    (0..lines.len())
        .filter(|&i| lines[i].starts_with(prefix))
        .collect()
}

/// The lines of a trace in which `lock` and `unlock` (a driver's page-locking calls) were
/// each called once, the unlock successfully (its line ends with `success`), and where.
pub fn locked_once<'t>(
    trace: &'t str,
    lock: &str,
    unlock: &str,
    success: &str,
) -> (Vec<&'t str>, usize, usize) {
    let lines: Vec<&str> = trace.lines().collect();
    let (locks, unlocks) = (calls_at(&lines, lock), calls_at(&lines, unlock));
    assert_eq!((locks.len(), unlocks.len()), (1, 1), "{trace}");
    assert!(lines[unlocks[0]].ends_with(success), "{trace}");
    let (locked, unlocked) = (locks[0], unlocks[0]);
    (lines, locked, unlocked)
}

/// Runs a program of `nowait` constructs (built for `gpu` with a twin) with a delay per queued
/// operation long enough that its constructs are still running when their tasks end, and with
/// the runtime's debug output; checks that the program printed `expected` and returns how many
/// constructs were left to their task's `__tgt_target_nowait_query` polls, and the driver
/// trace.
pub fn nowait_constructs_left_to_their_tasks(
    gpu: EmulatedGpu,
    exe: &Path,
    expected: &str,
) -> (usize, String) {
    // A trace of its own per program: tests of two programs may run at once.
    let name = format!(
        "nowait-query-{}",
        exe.file_name().unwrap().to_string_lossy()
    );
    let (code, stdout, stderr, trace) = run_traced(
        gpu,
        exe,
        &name,
        &[
            ("OMPTARGET_EMU_DELAY_US", "3000"),
            ("LIBOMPTARGET_DEBUG", "1"),
        ],
    );
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert!(stdout.contains(expected), "{stdout}");
    let deferred = stderr
        .matches("a nowait construct's work is still running")
        .count();
    assert!(
        deferred >= 1,
        "no construct was left to its task's queries:\n{stderr}"
    );
    (deferred, trace)
}

/// The first device image of a program whose target triple starts with `triple`.
pub fn device_image(exe: &Path, triple: &str) -> Vec<u8> {
    use object::{Object, ObjectSection};
    let bytes = std::fs::read(exe).unwrap();
    let file = object::File::parse(&*bytes).unwrap();
    let data = file
        .section_by_name(".llvm.offloading")
        .unwrap()
        .data()
        .unwrap();
    offload_image::offload_binary::containers(data)
        .into_iter()
        .map(|c| offload_image::offload_binary::unwrap(c).unwrap())
        .find(|u| u.triple.starts_with(triple))
        .unwrap_or_else(|| panic!("no {triple} image in {}", exe.display()))
        .bytes
        .to_vec()
}

/// The sm_90 cubin of a program built with a twin, and the name of one of its kernels.
pub fn cuda_image_and_kernel(exe: &Path) -> (Vec<u8>, String) {
    let image = device_image(exe, "nvptx64");
    let symbols = offload_image::cuda_image::SymbolTable::read(&image).unwrap();
    let kernel = symbols
        .functions()
        .map(|f| f.name.clone())
        .find(|n| n.starts_with("__omp_offloading_"))
        .expect("a kernel");
    (image, kernel)
}

/// For in-process emulator tests whose kernels need a program's x86-64 twins: in the test
/// process, re-runs the test `test` alone in a child process (marked by the variable `child`),
/// with `OMPTARGET_EMU_TWINS=twins` and `env`, asserts that it passed, and answers `false`; in
/// the child, answers `true`, and the test goes on there.
pub fn in_child_with_twins(test: &str, child: &str, twins: &Path, env: &[(&str, String)]) -> bool {
    if std::env::var_os(child).is_some() {
        return true;
    }
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", test, "--nocapture"])
        .env(child, "1")
        // The kernels' x86-64 twins are in the program's file, not in this process.
        .env("OMPTARGET_EMU_TWINS", twins)
        .env(
            "LD_LIBRARY_PATH",
            format!("{}:/usr/lib/llvm-19/lib", crate::lib_dir().display()),
        )
        .envs(env.iter().map(|(k, v)| (k, v)))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}\n{}",
        crate::text(&out.stdout),
        crate::text(&out.stderr)
    );
    false
}

/// A program that requires unified_shared_memory on `gpu`'s emulator, whose device reports no
/// pageable memory access: the runtime says so as the device starts, under `LIBOMPTARGET_INFO`
/// bit 128 (and nothing without it, as LLVM). The program still completes, since the default
/// profiles run kernels on the CPU, where host memory is in reach.
pub fn unified_shared_memory_is_announced(gpu: EmulatedGpu, exe: &Path) {
    let (code, _, quiet) = run(gpu, exe, &[], &[]);
    assert_eq!(code, Some(0), "{quiet}");
    assert!(!quiet.contains("omptarget"), "{quiet}");
    let (code, out, err) = run(gpu, exe, &[], &[("LIBOMPTARGET_INFO", "128".into())]);
    let device = format!(
        "requires unified_shared_memory, but device 0 ({} device 0",
        gpu.plugin()
    );
    assert!(
        err.contains(&device) && err.contains("cannot access pageable host memory"),
        "{err}"
    );
    assert_eq!(code, Some(0), "{out}{err}");
}
