//! `#pragma omp interop` and LLVM 22's interop entry points, in real programs run against our
//! install tree (the host plugin: no foreign runtime, vendor llvm). The ABI 1.0 plugin case is
//! in plugin_kit.rs; the CUDA and AMDGPU handles need their hardware.

use tests::*;

#[test]
fn interop_construct_with_both_compilers() {
    for compiler in COMPILERS {
        let exe = compile(compiler, &["interop.c"], &[]);
        run_and_check(&exe, "interop.c", &[]);
        let stdout = text(&run(&exe, &[]).stdout);
        assert!(stdout.contains("fr none\nvendor llvm"), "{stdout}");

        // No offloading, no interop objects (as LLVM 22).
        let disabled = run(&exe, &[("OMP_TARGET_OFFLOAD", "disabled")]);
        assert!(!disabled.status.success());
        assert!(
            text(&disabled.stdout).contains("no interop objects"),
            "{}",
            text(&disabled.stdout)
        );
    }
}

#[test]
fn llvm22_interop_get_use60_release_and_target_sync() {
    let exe = compile(Compiler::Clang22, &["interop_llvm22.c"], &[]);
    run_and_check(&exe, "interop_llvm22.c", &[]);
    // The misuse the program tries is reported, not ignored.
    let stderr = text(&run(&exe, &[]).stderr);
    assert!(
        stderr.contains("is not an interop object of this runtime"),
        "{stderr}"
    );
    assert!(stderr.contains("unknown interop type 7"), "{stderr}");
}
