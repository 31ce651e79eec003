//! OMP_TARGET_OFFLOAD, and bad input: each gets a clear message and the documented outcome.

use std::path::Path;
use tests::*;

fn expect_fatal(output: &std::process::Output, needles: &[&str]) {
    let stderr = text(&output.stderr);
    assert!(
        !output.status.success(),
        "expected failure, got success:\n{}",
        text(&output.stdout)
    );
    for needle in needles {
        assert!(
            stderr.contains(needle),
            "missing '{needle}' in stderr:\n{stderr}"
        );
    }
}

#[test]
fn offload_disabled_runs_on_the_host() {
    for compiler in COMPILERS {
        let exe = compile(compiler, &["policy.c"], &[]);
        let out = run(&exe, &[("OMP_TARGET_OFFLOAD", "disabled")]);
        assert!(out.status.success());
        assert_eq!(text(&out.stdout).trim(), "devices 0 ran_on_host 1");
        let out = run(&exe, &[("OMP_TARGET_OFFLOAD", "mandatory")]);
        assert_eq!(text(&out.stdout).trim(), "devices 4 ran_on_host 0");
    }
}

#[test]
fn without_devices_default_falls_back_and_mandatory_is_fatal() {
    let exe = compile(Compiler::Clang19, &["policy.c"], &[]);
    // Only the (absent) CUDA plugin is allowed: there are no devices at all.
    let out = run(&exe, &[("LIBOMPTARGET_PLUGINS_TO_LOAD", "cuda")]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), "devices 0 ran_on_host 1");
    let out = run(
        &exe,
        &[
            ("LIBOMPTARGET_PLUGINS_TO_LOAD", "cuda"),
            ("OMP_TARGET_OFFLOAD", "mandatory"),
        ],
    );
    expect_fatal(
        &out,
        &[
            "omptarget error: No images found compatible with the installed hardware",
            "omptarget fatal error 1: failure of target construct while offloading is mandatory",
        ],
    );
}

#[test]
fn present_on_unmapped_data_uses_llvm_wording() {
    let exe = compile(Compiler::Clang19, &["present_missing.c"], &[]);
    let out = run(&exe, &[]);
    expect_fatal(
        &out,
        &[
            "omptarget message: device mapping required by 'present' map type modifier does not exist for host address",
            "(16 bytes)",
            "omptarget fatal error 1: failure of target construct while offloading is mandatory",
        ],
    );
}

#[test]
fn invalid_device_ids() {
    let exe = compile(Compiler::Clang19, &["bad_device.c"], &[]);
    let out = run(&exe, &[]);
    let stdout = text(&out.stdout);
    assert!(stdout.contains("alloc on device 99: NULL"), "{stdout}");
    assert!(stdout.contains("memcpy to device 99: -1"), "{stdout}");
    expect_fatal(
        &out,
        &[
            "omp_target_alloc: Device number '99' out of range, only 4 devices available",
            "omptarget fatal error 99: Device number '99' out of range, only 4 devices available",
        ],
    );
}

#[test]
fn unregistered_host_pointer_is_refused() {
    // A program with no target regions: nothing could run on a device, so the failure is
    // reported and the caller told to fall back (-1); under 'mandatory' it is fatal.
    // Built without offload targets, so no image is registered; linked to our runtime directly.
    let exe = build_dir().join("unregistered_kernel");
    let mut clang = std::process::Command::new("clang-19");
    clang
        .arg("-fopenmp")
        .arg(program("unregistered_kernel.c"))
        .arg(format!("-L{}", lib_dir().display()))
        .arg("-lomptarget");
    assert!(outputs::build(clang, &exe).unwrap().status.success());
    let out = run(&exe, &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "rc -1\nnull args rc -1\n");
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("is not a target region registered with the runtime"),
        "{stderr}"
    );
    assert!(stderr.contains("null kernel arguments"), "{stderr}");
    let out = run(&exe, &[("OMP_TARGET_OFFLOAD", "mandatory")]);
    expect_fatal(
        &out,
        &["failure of target construct while offloading is mandatory"],
    );
}

/// Copies a compiled program and patches its embedded x86-64 device image.
fn patched_copy(exe: &Path, suffix: &str, patch: impl Fn(&mut [u8])) -> std::path::PathBuf {
    let mut bytes = std::fs::read(exe).unwrap();
    let container = bytes
        .windows(4)
        .position(|w| w == [0x10, 0xFF, 0x10, 0xAD])
        .expect("no offload binary");
    let elf = container
        + bytes[container..]
            .windows(4)
            .position(|w| w == b"\x7fELF")
            .expect("no device ELF");
    patch(&mut bytes[elf..]);
    let out = build_dir().join(format!(
        "{}-{suffix}",
        exe.file_name().unwrap().to_str().unwrap()
    ));
    outputs::write(&out, bytes, 0o755).unwrap();
    out
}

#[test]
fn corrupt_and_foreign_images_are_refused_with_reasons() {
    let exe = compile(Compiler::Clang19, &["policy.c"], &[]);
    let corrupt = patched_copy(&exe, "corrupt", |elf| elf[..4].copy_from_slice(b"JUNK"));
    let foreign = patched_copy(&exe, "aarch64", |elf| {
        elf[18..20].copy_from_slice(&183u16.to_le_bytes())
    });
    for (program, reason) in [
        (&corrupt, "not an ELF file"),
        (&foreign, "does not run aarch64-unknown-linux-gnu images"),
    ] {
        // Default policy: no device can run the program, so it runs on the host, after a
        // warning. No device has a number either, as with LLVM: devices are numbered for the
        // images they can run.
        let out = run(program, &[]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        assert_eq!(text(&out.stdout).trim(), "devices 0 ran_on_host 1");
        let stderr = text(&out.stderr);
        assert!(stderr.contains(reason), "missing '{reason}' in:\n{stderr}");
        // Mandatory: fatal, naming the reason.
        let out = run(program, &[("OMP_TARGET_OFFLOAD", "mandatory")]);
        expect_fatal(
            &out,
            &[
                reason,
                "failure of target construct while offloading is mandatory",
            ],
        );
    }
}
