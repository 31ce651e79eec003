//! LLVM 19's own offload tests that LLVM 19's runtime passes on the x86_64 host target
//! (tests/llvm-offload-suite/expected-pass.txt) must pass on ours too. The tests themselves are
//! fetched, not kept here: scripts/fetch-llvm-offload-tests.sh.

use tests::llvm_suite::{self, Config, Outcome, Runtime};

#[test]
fn llvm_offload_suite_passes_on_our_runtime() {
    let config = Config::new(Runtime::Ours).unwrap_or_else(|e| panic!("{e}"));
    let names = llvm_suite::read_names(&llvm_suite::expected_pass_file()).unwrap();
    assert!(!names.is_empty(), "expected-pass.txt lists no test");
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
        "{} of {} LLVM offload tests that pass on LLVM 19's runtime fail on ours:\n\n{}",
        failures.len(),
        names.len(),
        failures.join("\n")
    );
}
