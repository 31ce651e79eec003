//! OpenMP 6.0 device identifiers: the same clang-22 binary gives the same UIDs with our runtime
//! and LLVM 22's (both are `libomptarget.so.22.1`).

use tests::*;

const LLVM22_LIB: &str = "/opt/llvm22-omp/usr/lib/llvm-22/lib";

#[test]
fn uids_round_trip_and_match_llvm_22() {
    let exe = compile(Compiler::Clang22, &["device_uid.c"], &[]);
    run_and_check(&exe, "device_uid.c", &[]);
    let ours = run(&exe, &[]);
    let theirs = std::process::Command::new(&exe)
        .env(
            "LD_LIBRARY_PATH",
            format!("{LLVM22_LIB}:/usr/lib/llvm-19/lib"),
        )
        .output()
        .unwrap();
    assert!(theirs.status.success(), "LLVM 22: {}", text(&theirs.stderr));
    assert_eq!(text(&ours.stdout), text(&theirs.stdout));
    assert!(text(&ours.stdout).contains("device 0 uid x86_64-0"));

    // A number that is no device: reported and answered with NULL (LLVM 22 aborts).
    let out = run(&exe, &[]);
    let bad = std::process::Command::new(&exe)
        .arg("bad")
        .env("LD_LIBRARY_PATH", lib_dir())
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(bad.status.success(), "{}", text(&bad.stdout));
    assert!(text(&bad.stderr).contains("omp_get_uid_from_device: Device number"));
}
