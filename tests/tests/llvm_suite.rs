//! LLVM's own offload tests that LLVM's runtime passes on the x86_64 host target
//! (tests/llvm-offload-suite/<release>/expected-pass.txt) must pass on ours too: LLVM 19's
//! suite built by clang-19, and LLVM 22's built by clang-22. Likewise LLVM 22's tests on the
//! emulated GPUs (tests/llvm-offload-suite/22/<target>/), built for gfx90a and sm_90 with their
//! x86-64 twins. The tests themselves are fetched, not kept here:
//! scripts/fetch-llvm-offload-tests.sh.

use tests::llvm_suite::{self, Config, Outcome, Release, Runtime, Target};

#[test]
fn llvm19_offload_suite_passes_on_our_runtime() {
    suite_passes_on_our_runtime(Release::Llvm19);
}

#[test]
fn llvm22_offload_suite_passes_on_our_runtime() {
    suite_passes_on_our_runtime(Release::Llvm22);
}

#[test]
fn llvm22_sanitizer_tests_pass_on_emulated_amdgpu() {
    emulated_suite_passes_on_our_runtime(Target::AmdgcnEmu);
}

#[test]
fn llvm22_sanitizer_tests_pass_on_emulated_cuda() {
    emulated_suite_passes_on_our_runtime(Target::NvptxEmu);
}

fn suite_passes_on_our_runtime(release: Release) {
    let config = Config::new(release, Runtime::Ours).unwrap_or_else(|e| panic!("{e}"));
    let expected = llvm_suite::read_names(&config.expected_pass_file()).unwrap();
    assert!(!expected.is_empty(), "expected-pass.txt lists no test");
    lists_pass(&config, &expected);
}

/// An emulated GPU's expected-pass.txt may be empty (LLVM's runtime may pass none of the tests
/// there), but then beyond-llvm.txt must name some: a run of nothing proves nothing.
fn emulated_suite_passes_on_our_runtime(target: Target) {
    let config = Config::with_target(Release::Llvm22, Runtime::Ours, target)
        .unwrap_or_else(|e| panic!("{e}"));
    let expected = llvm_suite::read_names(&config.expected_pass_file()).unwrap();
    let beyond = llvm_suite::read_names(&config.beyond_llvm_file()).unwrap_or_default();
    assert!(
        !expected.is_empty() || !beyond.is_empty(),
        "neither expected-pass.txt nor beyond-llvm.txt of {} lists a test",
        config.list_dir().display()
    );
    lists_pass(&config, &expected);
}

/// The tests of expected-pass.txt but known gaps, then those of beyond-llvm.txt, must pass on
/// ours; each known gap must still fail.
fn lists_pass(config: &Config, expected: &[String]) {
    let gaps = known_gaps(config);
    let names: Vec<String> = expected
        .iter()
        .filter(|n| !gaps.iter().any(|(g, _)| g == *n))
        .cloned()
        .collect();
    for (name, why) in &gaps {
        eprintln!("KNOWN GAP {name}: {why}");
    }
    let results = config.run_tests(&names, llvm_suite::default_jobs(), |r| {
        eprintln!("{}", r.line())
    });
    // A skip counts as a failure too: these tests all ran and passed against LLVM's runtime.
    let failures: Vec<String> = results
        .iter()
        .filter(|r| r.outcome != Outcome::Pass)
        .map(|r| {
            let tail = r.output_tail(25);
            let log = r.log.as_ref().map(|l| l.display().to_string());
            format!("{}\n  log: {}\n{tail}\n", r.line(), log.unwrap_or_default())
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} LLVM {} offload tests ({}) that pass on LLVM's runtime fail on ours:\n\n{}",
        failures.len(),
        names.len(),
        config.release.major(),
        config.target.name(),
        failures.join("\n")
    );
    // Tests LLVM's runtime fails here and ours passes stay passing.
    let beyond = llvm_suite::read_names(&config.beyond_llvm_file()).unwrap_or_default();
    let regressions: Vec<String> = config
        .run_tests(&beyond, llvm_suite::default_jobs(), |r| {
            eprintln!("(beyond LLVM) {}", r.line())
        })
        .iter()
        .filter(|r| r.outcome != Outcome::Pass)
        .map(|r| format!("{}\n{}", r.line(), r.output_tail(25)))
        .collect();
    assert!(
        regressions.is_empty(),
        "tests of beyond-llvm.txt fail on our runtime:\n{}",
        regressions.join("\n")
    );
    // A known gap that passes now must leave the list.
    let gap_names: Vec<String> = gaps.iter().map(|(n, _)| n.clone()).collect();
    let fixed: Vec<String> = config
        .run_tests(&gap_names, llvm_suite::default_jobs(), |_| {})
        .iter()
        .filter(|r| r.outcome == Outcome::Pass)
        .map(|r| r.line())
        .collect();
    assert!(
        fixed.is_empty(),
        "known gaps that pass now; remove them from known-gaps.txt: {fixed:?}"
    );
}

/// The run's known-gaps.txt: (test, reason) pairs.
fn known_gaps(config: &Config) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(config.known_gaps_file()).unwrap_or_default();
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| match l.split_once(char::is_whitespace) {
            Some((name, why)) => (name.to_string(), why.trim().to_string()),
            None => (l.to_string(), String::new()),
        })
        .collect()
}
