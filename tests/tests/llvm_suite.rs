//! LLVM's own offload tests that LLVM's runtime passes on the x86_64 host target
//! (tests/llvm-offload-suite/<release>/expected-pass.txt) must pass on ours too: LLVM 19's
//! suite built by clang-19, and LLVM 22's built by clang-22. The tests themselves are fetched,
//! not kept here: scripts/fetch-llvm-offload-tests.sh.

use tests::llvm_suite::{self, Config, Outcome, Release, Runtime};

#[test]
fn llvm19_offload_suite_passes_on_our_runtime() {
    suite_passes_on_our_runtime(Release::Llvm19);
}

#[test]
fn llvm22_offload_suite_passes_on_our_runtime() {
    suite_passes_on_our_runtime(Release::Llvm22);
}

fn suite_passes_on_our_runtime(release: Release) {
    let config = Config::new(release, Runtime::Ours).unwrap_or_else(|e| panic!("{e}"));
    let expected = llvm_suite::read_names(&release.expected_pass_file()).unwrap();
    assert!(!expected.is_empty(), "expected-pass.txt lists no test");
    let gaps = known_gaps(release);
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
        "{} of {} LLVM {} offload tests that pass on LLVM's runtime fail on ours:\n\n{}",
        failures.len(),
        names.len(),
        release.major(),
        failures.join("\n")
    );
    // Tests LLVM's runtime fails here and ours passes stay passing.
    let beyond = llvm_suite::read_names(&release.beyond_llvm_file()).unwrap_or_default();
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

/// `tests/llvm-offload-suite/<release>/known-gaps.txt`: (test, reason) pairs.
fn known_gaps(release: Release) -> Vec<(String, String)> {
    let path = release.known_gaps_file();
    let text = std::fs::read_to_string(&path).unwrap_or_default();
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| match l.split_once(char::is_whitespace) {
            Some((name, why)) => (name.to_string(), why.trim().to_string()),
            None => (l.to_string(), String::new()),
        })
        .collect()
}
