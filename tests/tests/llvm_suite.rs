//! LLVM's own offload tests that LLVM's runtime passes on the x86_64 host target
//! (tests/llvm-offload-suite/<release>/expected-pass.txt) must pass on ours too: LLVM 19's
//! suite built by clang-19, and LLVM 22's built by clang-22. Likewise both suites on the
//! emulated GPUs (tests/llvm-offload-suite/<release>/<target>/), built for gfx90a and sm_90 with
//! their x86-64 twins. LLVM 22's Fortran tests run on the host devices, built by flang-22 with
//! our host device runtime in their images (tests/llvm-offload-suite/22/host-fortran/), and on
//! the emulated gfx90a with twins (tests/llvm-offload-suite/22/amdgcn-emu-fortran/). The tests
//! themselves are fetched, not kept here: scripts/fetch-llvm-offload-tests.sh.

use std::path::{Path, PathBuf};
use std::process::Command;
use tests::llvm_suite::{self, Config, Outcome, Release, Runtime, Target};
use tests::{build_dir, lib_dir, llvm22_lib_dir, outputs, retry_while_busy, text, workspace_root};

#[test]
fn llvm19_offload_suite_passes_on_our_runtime() {
    suite_passes_on_our_runtime(Release::Llvm19);
}

#[test]
fn llvm22_offload_suite_passes_on_our_runtime() {
    suite_passes_on_our_runtime(Release::Llvm22);
}

/// LLVM 22's suite on the emulated gfx90a (`--target amdgcn-emu`), each GPU image with LLVM 22's
/// GPU libc as lit links it (`libc` holds): the tests LLVM 22's runtime passes on the same
/// emulator and binaries, and those of beyond-llvm.txt, pass on ours.
#[test]
fn llvm22_suite_passes_on_emulated_amdgpu() {
    llvm_suite::emulated_lists_pass(Release::Llvm22, Target::AmdgcnEmu);
}

/// The same on the emulated sm_90 (`--target nvptx-emu`).
#[test]
fn llvm22_suite_passes_on_emulated_cuda() {
    llvm_suite::emulated_lists_pass(Release::Llvm22, Target::NvptxEmu);
}

/// LLVM 19's suite on the emulated gfx90a, built by clang-19 with x86-64 twins (LLVM 19's
/// GPU libc and device runtime, `libcgpu-amdgpu.a` and `libomptarget.devicertl.a`, as lit links
/// them; `libc` holds): the tests LLVM 19's runtime passes on the same emulator and binaries,
/// and those of beyond-llvm.txt, pass on ours.
#[test]
fn llvm19_suite_passes_on_emulated_amdgpu() {
    llvm_suite::emulated_lists_pass(Release::Llvm19, Target::AmdgcnEmu);
}

/// The same on the emulated sm_90.
#[test]
fn llvm19_suite_passes_on_emulated_cuda() {
    llvm_suite::emulated_lists_pass(Release::Llvm19, Target::NvptxEmu);
}

/// LLVM 22's `offloading/fortran` on the host devices (`--target host-fortran`): the tests LLVM
/// 22's runtime passes with our host device runtime in the images (expected-pass.txt) and those
/// only ours passes (beyond-llvm.txt) must pass; those of expected-fail.txt and
/// not-compilable.txt must still fail; and every test the target runs is in one of those lists.
#[test]
fn llvm22_fortran_tests_pass_on_host_devices() {
    fortran_lists_hold(Target::HostFortran, "host devices");
}

/// LLVM 22's `offloading/fortran` on the emulated gfx90a (`--target amdgcn-emu-fortran`), built
/// by flang-22 for the GPU with x86-64 twins: the lists of tests/llvm-offload-suite/22/
/// amdgcn-emu-fortran/ hold as on the host devices, LLVM 22's runtime on the same emulator and
/// binaries being the judge.
#[test]
fn llvm22_fortran_tests_pass_on_emulated_amdgpu() {
    fortran_lists_hold(Target::AmdgcnEmuFortran, "the emulated gfx90a");
}

/// A Fortran target's lists hold on ours (see [`llvm22_fortran_tests_pass_on_host_devices`]).
fn fortran_lists_hold(target: Target, on: &str) {
    let config = Config::with_target(Release::Llvm22, Runtime::Ours, target)
        .unwrap_or_else(|e| panic!("{e}"));
    let expected = llvm_suite::read_names(&config.expected_pass_file()).unwrap();
    assert!(!expected.is_empty(), "expected-pass.txt lists no test");
    let beyond = llvm_suite::read_names(&config.beyond_llvm_file()).unwrap_or_default();
    let failing = llvm_suite::read_listed(&config.expected_fail_file()).unwrap();
    let not_compilable = llvm_suite::read_listed(&config.not_compilable_file()).unwrap();
    every_test_is_listed_once(&config, &[&expected, &beyond], &[&failing, &not_compilable]);
    eprintln!(
        "LLVM 22 Fortran tests on {on}: {} expected to pass ({} of them beyond LLVM's \
         runtime), {} expected to fail, {} not compilable by flang-22",
        expected.len() + beyond.len(),
        beyond.len(),
        failing.len(),
        not_compilable.len()
    );
    llvm_suite::lists_pass(&config, &expected);
    listed_failures_still_fail(&config, &failing, false);
    listed_failures_still_fail(&config, &not_compilable, true);
}

/// Every test of the target's folders that the runner does not skip is in exactly one list
/// (passing lists by name; failing lists with their reasons), and every listed test exists.
fn every_test_is_listed_once(
    config: &Config,
    passing: &[&Vec<String>],
    failing: &[&Vec<(String, String)>],
) {
    let mut listed: Vec<&str> = passing
        .iter()
        .flat_map(|l| l.iter().map(String::as_str))
        .collect();
    listed.extend(
        failing
            .iter()
            .flat_map(|l| l.iter().map(|(n, _)| n.as_str())),
    );
    let discovered = config.discover();
    let mut problems = Vec::new();
    for name in &discovered {
        let count = listed.iter().filter(|n| **n == name).count();
        match config.plan(name) {
            Err(Outcome::Skip(why)) if count > 0 => {
                problems.push(format!("{name}: listed, but the runner skips it ({why})"))
            }
            Err(Outcome::Skip(_)) => {}
            _ if count == 1 => {}
            _ => problems.push(format!("{name}: in {count} lists, not 1")),
        }
    }
    for name in &listed {
        if !discovered.iter().any(|d| d == name) {
            problems.push(format!("{name}: listed, but no such test"));
        }
    }
    assert!(
        problems.is_empty(),
        "the lists of {} do not account for each test once:\n{}",
        config.list_dir().display(),
        problems.join("\n")
    );
}

/// Each listed test must still fail; a test flang cannot compile must fail with the listed
/// message in its output.
fn listed_failures_still_fail(config: &Config, listed: &[(String, String)], compile: bool) {
    let names: Vec<String> = listed.iter().map(|(n, _)| n.clone()).collect();
    let results = config.run_tests(&names, llvm_suite::default_jobs(), |r| {
        eprintln!("(listed to fail) {}", r.line())
    });
    let wrong: Vec<String> = results
        .iter()
        .zip(listed)
        .filter(|(r, (_, why))| {
            let log = r.log.as_ref().and_then(|l| std::fs::read(l).ok());
            let log = String::from_utf8_lossy(log.as_deref().unwrap_or_default());
            !matches!(r.outcome, Outcome::Fail(_)) || (compile && !log.contains(why.as_str()))
        })
        .map(|(r, (_, why))| format!("{}\n  listed: {why}\n{}", r.line(), r.output_tail(10)))
        .collect();
    assert!(
        wrong.is_empty(),
        "listed tests that no longer fail as listed; update the lists:\n{}",
        wrong.join("\n")
    );
}

/// The host device runtime under LLVM 22's host plugin as under ours, in the same programs
/// (host-device-runtime/tests/): LLVM's calls a kernel itself, once, so it runs as one team of
/// one thread (ours gives the league and the threads asked for); and a clang-compiled kernel
/// sharing an image with the runtime gets libomp's team answers from it, under either plugin.
#[test]
fn host_device_runtime_runs_under_both_host_plugins() {
    let src = workspace_root().join("host-device-runtime/tests");
    let dir = build_dir().join("host-device-runtime");
    std::fs::create_dir_all(&dir).unwrap();
    let one_team = dir.join("one_team");
    let mut cmd = Command::new("flang-22");
    cmd.args(offload_flags()).arg(src.join("one_team.f90"));
    compile(cmd, &one_team);
    let fortran_object = dir.join("mixed_queries_f90.o");
    let mut cmd = Command::new("flang-22");
    cmd.args(offload_flags())
        .arg("-c")
        .arg(src.join("mixed_queries.f90"));
    compile(cmd, &fortran_object);
    let mixed = dir.join("mixed_queries");
    let mut cmd = Command::new("clang-22");
    cmd.args(offload_flags())
        .arg(format!("-I{}", tests::clang22_include().display()))
        .arg(src.join("mixed_queries.c"))
        .arg(&fortran_object);
    compile(cmd, &mixed);

    let ours = run_under(&one_team, &lib_dir());
    let llvm = run_under(&one_team, &llvm22_lib_dir());
    assert!(
        ours.starts_with("teams 3 threads 2 limit ") && ours.contains("sum 500500 last 1000"),
        "ours:\n{ours}"
    );
    assert!(
        llvm.starts_with("teams 1 threads 1 limit 1 max_threads 1 devices ")
            && llvm.contains("sum 500500 last 1000"),
        "LLVM 22's:\n{llvm}"
    );
    for runtime in [lib_dir(), llvm22_lib_dir()] {
        let out = run_under(&mixed, &runtime);
        let teams = out
            .strip_prefix("x 2 teams ")
            .and_then(|rest| rest.trim_end().strip_suffix(" team 0"))
            .and_then(|n| n.parse::<u32>().ok());
        // libomp forms at most the 2 teams asked for, fewer where the machine has fewer cores.
        assert!(
            teams.is_some_and(|n| (1..=2).contains(&n)),
            "{}:\n{out}",
            runtime.display()
        );
    }
}

/// flang-22's and clang-22's flags for host devices with the host device runtime in the device
/// image, as a user builds (README): against our `libomptarget.so`, whose soname LLVM 22's has.
fn offload_flags() -> Vec<String> {
    vec![
        "-fopenmp".into(),
        "-fopenmp-targets=x86_64-pc-linux-gnu".into(),
        format!("-L{}", lib_dir().display()),
        "-L/usr/lib/llvm-19/lib".into(),
        "-Xoffload-linker".into(),
        "-lomptarget-host-device".into(),
    ]
}

fn compile(mut cmd: Command, out: &Path) {
    cmd.current_dir(out.parent().unwrap());
    let output = outputs::build(cmd, out).unwrap_or_else(|e| panic!("cannot compile: {e}"));
    assert!(
        output.status.success(),
        "building {} failed:\n{}",
        out.display(),
        text(&output.stderr)
    );
}

/// Runs `program` against the runtime in `lib` (and LLVM 19's libomp), at most 60 s: its stdout,
/// once it exited 0.
fn run_under(program: &PathBuf, lib: &Path) -> String {
    let mut cmd = Command::new("timeout");
    cmd.arg("60")
        .arg(program)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env(
            "LD_LIBRARY_PATH",
            format!("{}:/usr/lib/llvm-19/lib", lib.display()),
        );
    let output = retry_while_busy(|| cmd.output()).unwrap();
    let stdout = text(&output.stdout);
    assert!(
        output.status.success(),
        "{} under {} failed ({}):\n{stdout}\n{}",
        program.display(),
        lib.display(),
        output.status,
        text(&output.stderr)
    );
    stdout
}

fn suite_passes_on_our_runtime(release: Release) {
    let config = Config::new(release, Runtime::Ours).unwrap_or_else(|e| panic!("{e}"));
    let expected = llvm_suite::read_names(&config.expected_pass_file()).unwrap();
    assert!(!expected.is_empty(), "expected-pass.txt lists no test");
    llvm_suite::lists_pass(&config, &expected);
}
