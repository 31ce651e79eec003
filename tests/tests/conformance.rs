//! The conformance suite (tests/conformance): every program with clang-19 and clang-22 against
//! our runtime, and the clang-19 binaries against LLVM 19's runtime, the reference.

use tests::conformance::{self, Runtime};

const JOBS: usize = 2;

#[test]
fn conformance_suite_passes_on_our_runtime() {
    let programs = conformance::programs();
    assert!(programs.len() >= 100, "only {} programs", programs.len());
    let outcomes = conformance::check_all(&programs, &tests::COMPILERS, Runtime::Ours, JOBS);
    if let Some(report) = conformance::failures(&outcomes) {
        panic!("{report}");
    }
}

/// The expectations are LLVM's behaviour: the same binaries pass against LLVM 19's runtime,
/// except where a program says why we deliberately differ.
#[test]
fn conformance_expectations_hold_on_llvm_19() {
    assert!(
        std::path::Path::new(conformance::LLVM19_LIB_DIR)
            .join("libomptarget.so.19.1")
            .exists(),
        "LLVM 19's runtime (libomp-19-dev) is the reference"
    );
    let programs = conformance::programs();
    let outcomes = conformance::check_all(
        &programs,
        &[tests::Compiler::Clang19],
        Runtime::Llvm19,
        JOBS,
    );
    if let Some(report) = conformance::failures(&outcomes) {
        panic!("{report}");
    }
}
