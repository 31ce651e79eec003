//! A host device's kernel that faults: the host plugin names the kernel launched last and what
//! happened, then the process dies of the signal, as it does under LLVM's runtime (which says
//! nothing). The held-out programs are the emulators' (`emu_fault_*.c`), built for the host.

use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Output};
use tests::*;

fn run_on(exe: &std::path::Path, lib: &std::path::Path) -> Output {
    Command::new("timeout")
        .arg("60")
        .arg(exe)
        .env("LD_LIBRARY_PATH", lib)
        .env("OMP_TARGET_OFFLOAD", "mandatory")
        .env_remove("LIBOMPTARGET_PLUGINS_TO_LOAD")
        .output()
        .expect("run the program")
}

fn check(program: &str, signal: i32, lines: &[&str]) {
    let exe = compile(Compiler::Clang19, &[program], &[]);
    let ours = run_on(&exe, &lib_dir());
    let stderr = text(&ours.stderr);
    assert_eq!(ours.status.signal(), Some(signal), "{stderr}");
    assert!(text(&ours.stdout).contains("before=1"), "{stderr}");
    for line in lines {
        assert!(
            stderr.lines().any(|l| l.starts_with(line)),
            "missing '{line}':\n{stderr}"
        );
    }
    // LLVM 19's runtime: the same end, without a word.
    let llvm = run_on(&exe, std::path::Path::new(conformance::LLVM19_LIB_DIR));
    assert_eq!(llvm.status.signal(), Some(signal), "{}", text(&llvm.stderr));
}

#[test]
fn a_null_write_in_a_host_kernel_is_reported_then_the_process_dies_of_it() {
    check(
        "emu_fault_null_write.c",
        11,
        &[
            "OFFLOAD ERROR: a kernel on a host device faulted; the kernel launched last:",
            "OFFLOAD ERROR: Kernel 'omp target in main @ 16 (__omp_offloading_",
            "OFFLOAD ERROR: SIGSEGV writing address 0x0",
        ],
    );
}

#[test]
fn a_trap_in_a_host_kernel_is_reported_then_the_process_dies_of_it() {
    check(
        "emu_fault_trap.c",
        4,
        &[
            "OFFLOAD ERROR: Kernel 'omp target in main @ 14 (__omp_offloading_",
            "OFFLOAD ERROR: execution interrupted by hardware trap instruction",
        ],
    );
}
