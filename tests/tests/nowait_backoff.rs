//! `OMPTARGET_QUERY_COUNT_MAX`, `_THRESHOLD` and `_BACKOFF_FACTOR`: how a thread polling
//! `nowait` constructs backs off into waiting for them (LLVM's `__tgt_target_nowait_query`).
//! Constructs are left for their tasks to poll only on devices whose queues run
//! asynchronously, so the programs run on the emulated HSA runtime with a delay per operation.

use tests::conformance::{self, EmulatedGpu, Runtime, Spec};
use tests::Compiler;

const PROGRAM: &str = "async/nowait_rounds_two_chains.c";

const SLOW_GPU: Runtime = Runtime::OursOnEmulator {
    gpu: EmulatedGpu::Amdgpu,
    delay_us: 200,
};

fn run_with(env: &[(&str, &str)], expect_stderr: &[&str]) {
    let mut spec = Spec::parse(&conformance::suite_dir().join(PROGRAM)).unwrap();
    let exe = conformance::compile_for(&spec, Compiler::Clang19, Some(EmulatedGpu::Amdgpu))
        .unwrap_or_else(|e| panic!("{e}"));
    spec.env
        .extend(env.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    spec.expect_stderr
        .extend(expect_stderr.iter().map(|s| s.to_string()));
    if let Err(e) = conformance::run(&spec, &exe, SLOW_GPU) {
        panic!("{PROGRAM} with {env:?}: {e}");
    }
}

#[test]
fn the_settings_are_read_and_reported() {
    run_with(
        &[
            ("LIBOMPTARGET_DEBUG", "1"),
            ("OMPTARGET_QUERY_COUNT_MAX", "3"),
            ("OMPTARGET_QUERY_COUNT_THRESHOLD", "1"),
            ("OMPTARGET_QUERY_COUNT_BACKOFF_FACTOR", "0.25"),
        ],
        &["nowait queries back off as QueryBackoff { most: 3, threshold: 1, factor: 0.25 }"],
    );
}

#[test]
fn waiting_at_once_and_polling_forever_give_the_same_results() {
    // Threshold 0: once a poll found work running, the thread's queries wait for the work.
    run_with(
        &[
            ("OMPTARGET_QUERY_COUNT_THRESHOLD", "0"),
            ("OMPTARGET_QUERY_COUNT_BACKOFF_FACTOR", "0"),
        ],
        &[],
    );
    // A count that never rises (most 0): every query polls until the work is done.
    run_with(&[("OMPTARGET_QUERY_COUNT_MAX", "0")], &[]);
}

#[test]
fn values_out_of_range_keep_llvms_defaults() {
    run_with(
        &[
            ("LIBOMPTARGET_DEBUG", "1"),
            ("OMPTARGET_QUERY_COUNT_MAX", "-1"),
            ("OMPTARGET_QUERY_COUNT_BACKOFF_FACTOR", "2"),
        ],
        &[
            "OMPTARGET_QUERY_COUNT_MAX=\"-1\" is not a count of 0 or more; using 10",
            "nowait queries back off as QueryBackoff { most: 10, threshold: 5, factor: 0.5 }",
        ],
    );
}
