//! The AMDGPU plugin without an AMD GPU: it loads, reports zero devices with the reason when
//! there is no HSA runtime, when Debian's runtime fails to start (no /dev/kfd), or when it is
//! not started at all for want of /dev/kfd, and programs
//! with gfx code objects fall back or fail as OMP_TARGET_OFFLOAD says. Reading code objects is
//! tested in the plugin's own unit tests, on images built with clang-19.

use std::path::Path;
use tests::*;

/// Debian's HSA runtime (libhsa-runtime64-1), which .ci/install-deps.sh installs.
const DEBIAN_HSA: &str = "/usr/lib/x86_64-linux-gnu/libhsa-runtime64.so.1";

/// The amdgpu plugin's entry in omptarget-info's listing (its line and the indented ones).
fn amdgpu_note(out: &std::process::Output) -> String {
    let stdout = text(&out.stdout);
    let mut lines = stdout.lines().skip_while(|l| !l.starts_with("  amdgpu ["));
    let first = lines
        .next()
        .unwrap_or_else(|| panic!("no amdgpu plugin in:\n{stdout}"));
    let rest = lines.take_while(|l| l.starts_with("    "));
    std::iter::once(first)
        .chain(rest)
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn without_the_hsa_runtime_the_plugin_loads_with_zero_devices_and_says_why() {
    let missing = build_dir().join("no-such-dir/libhsa-runtime64.so.1");
    let missing = missing.display().to_string();
    let out = info(&[], &[("HSA_RUNTIME_LIB", missing.as_str())]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let amdgpu = amdgpu_note(&out);
    assert!(amdgpu.contains("amdgpu [loaded]"), "{amdgpu}");
    assert!(amdgpu.contains("devices: 0"), "{amdgpu}");
    assert!(amdgpu.contains(&missing), "{amdgpu}");
}

#[test]
fn debians_hsa_runtime_fails_to_start_here_and_the_plugin_says_so() {
    assert!(
        Path::new(DEBIAN_HSA).exists(),
        "{DEBIAN_HSA} is missing: install libhsa-runtime64-1 (.ci/install-deps.sh does)"
    );
    assert!(
        !Path::new("/dev/kfd").exists(),
        "this machine has /dev/kfd (an AMD GPU driver): this test expects none"
    );
    let out = info(&[], &[("HSA_RUNTIME_LIB", DEBIAN_HSA)]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let amdgpu = amdgpu_note(&out);
    assert!(amdgpu.contains("amdgpu [loaded]"), "{amdgpu}");
    assert!(amdgpu.contains("devices: 0"), "{amdgpu}");
    assert!(
        amdgpu.contains("hsa_init failed: HSA_STATUS_ERROR_OUT_OF_RESOURCES"),
        "{amdgpu}"
    );
}

#[test]
fn without_dev_kfd_the_runtime_is_not_started_unless_named() {
    assert!(
        !Path::new("/dev/kfd").exists(),
        "this machine has /dev/kfd (an AMD GPU driver): this test expects none"
    );
    // Nothing named: hsa_init could not succeed, so the library is not even loaded (it would
    // cost every program's start-up); the reason says so and how to start it anyway.
    let out = info(&[], &[]);
    let amdgpu = amdgpu_note(&out);
    assert!(amdgpu.contains("amdgpu [loaded]"), "{amdgpu}");
    assert!(amdgpu.contains("devices: 0"), "{amdgpu}");
    assert!(
        amdgpu.contains("no /dev/kfd") && amdgpu.contains("set HSA_RUNTIME_LIB"),
        "{amdgpu}"
    );
    // An empty HSA_RUNTIME_LIB names nothing.
    let amdgpu = amdgpu_note(&info(&[], &[("HSA_RUNTIME_LIB", "")]));
    assert!(amdgpu.contains("is not started"), "{amdgpu}");
}

#[test]
fn gfx_programs_fall_back_or_fail_as_the_offload_policy_says() {
    let exe = compile_amdgpu("amdgpu_offload.c", "gfx90a,gfx1030");
    // Default policy: no device runs the images, the regions run on the host.
    let out = run(&exe, &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), "x=6 sum=4950");
    // LIBOMPTARGET_DEBUG says why the AMDGPU plugin has no devices.
    let out = run(&exe, &[("LIBOMPTARGET_DEBUG", "1")]);
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("amdgpu plugin: 0 devices: no /dev/kfd"),
        "{stderr}"
    );
    let out = run(
        &exe,
        &[("LIBOMPTARGET_DEBUG", "1"), ("HSA_RUNTIME_LIB", DEBIAN_HSA)],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("amdgpu plugin: 0 devices: hsa_init failed"),
        "{stderr}"
    );
    // Mandatory: LLVM's messages, naming the images' architectures.
    for plugins in ["amdgpu", "amdgpu,host"] {
        let out = run(
            &exe,
            &[
                ("OMP_TARGET_OFFLOAD", "mandatory"),
                ("LIBOMPTARGET_PLUGINS_TO_LOAD", plugins),
            ],
        );
        assert!(!out.status.success());
        let stderr = text(&out.stderr);
        let found = "omptarget error: No images found compatible with the installed hardware. Found 2 image(s): (";
        assert!(stderr.contains(found), "{stderr}");
        assert!(
            stderr.contains("gfx90a") && stderr.contains("gfx1030"),
            "{stderr}"
        );
        let fatal =
            "omptarget fatal error 1: failure of target construct while offloading is mandatory";
        assert!(stderr.contains(fatal), "{stderr}");
    }
}
