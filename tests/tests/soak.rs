//! The soak: the conformance programs whose failures depend on timing (`async`, `threads` and
//! every `nowait` program, [`conformance::soak_programs`]) run many times on every plugin, each
//! run under a time limit; a run past it is reported with the stacks of all its threads.
//!
//! `OMPTARGET_SOAK_RUNS` runs of each program (default 5: CI's short soak);
//! `OMPTARGET_SOAK_LIMIT_S` seconds a run (default 60). The long soak is the same with
//! `OMPTARGET_SOAK_RUNS=200` (README, "Soak runs").

use std::time::Duration;
use tests::conformance::{self, EmulatedGpu, Runtime};
use tests::Compiler;

fn setting(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn soak_on(runtime: Runtime) {
    let programs = conformance::soak_programs();
    assert!(programs.len() >= 15, "only {} programs", programs.len());
    let runs = setting("OMPTARGET_SOAK_RUNS", 5) as usize;
    let limit = Duration::from_secs(setting("OMPTARGET_SOAK_LIMIT_S", 60));
    let soaked = conformance::soak(&programs, Compiler::Clang19, runtime, runs, 1, limit);
    let total: usize = soaked.iter().map(|s| s.runs).sum();
    let hung: usize = soaked.iter().map(|s| s.hung).sum();
    eprintln!(
        "soak on {runtime:?}: {} programs, {total} runs, {} passed, {hung} hung",
        soaked.len(),
        soaked.iter().map(|s| s.passed).sum::<usize>()
    );
    if let Some(report) = conformance::soak_failures(&soaked) {
        panic!("{report}");
    }
}

#[test]
fn soak_on_the_host_plugin() {
    soak_on(Runtime::Ours);
}

#[test]
fn soak_on_the_emulated_cuda_driver() {
    soak_on(Runtime::OursOnEmulator {
        gpu: EmulatedGpu::Cuda,
        delay_us: 0,
    });
    soak_on(Runtime::OursOnEmulator {
        gpu: EmulatedGpu::Cuda,
        delay_us: 200,
    });
}

#[test]
fn soak_on_the_emulated_hsa_runtime() {
    soak_on(Runtime::OursOnEmulator {
        gpu: EmulatedGpu::Amdgpu,
        delay_us: 0,
    });
    soak_on(Runtime::OursOnEmulator {
        gpu: EmulatedGpu::Amdgpu,
        delay_us: 200,
    });
}

#[test]
fn soak_through_the_mpi_plugin() {
    soak_on(Runtime::OursOverMpi { gpu: None });
}
