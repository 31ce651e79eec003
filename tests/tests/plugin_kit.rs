//! The vendor plugin kit: the conformance checker on our plugins, and ABI compatibility with a
//! plugin built against the frozen ABI 1.0 interface (tests/abi-v1).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;
use tests::*;

fn plugin_check(args: &[&Path]) -> Output {
    let mut cmd = Command::new(dist().join("bin/omptarget-plugin-check"));
    cmd.args(args).env_remove("LIBOMPTARGET_DEBUG");
    cmd.output().expect("cannot run omptarget-plugin-check")
}

/// The checker's verdict: its exit status is success, no line fails, the summary is printed.
fn assert_passes(out: &Output) -> String {
    let stdout = text(&out.stdout);
    assert!(
        out.status.success() && !stdout.contains("\nFAIL ") && stdout.contains(" 0 failed"),
        "checker failed ({}):\n{stdout}\n{}",
        out.status,
        text(&out.stderr)
    );
    stdout
}

const CHECK_PROGRAM: &str = "../../plugin-check/check_program.c";

#[test]
fn checker_passes_on_the_host_plugin_with_a_kernel() {
    let image = compile(Compiler::Clang19, &[CHECK_PROGRAM], &[]);
    // The program itself is correct on our runtime.
    let run_out = run(&image, &[("OMP_TARGET_OFFLOAD", "mandatory")]);
    assert_eq!(
        text(&run_out.stdout).trim(),
        "PASS",
        "{}",
        text(&run_out.stderr)
    );

    let plugin = lib_dir().join("libomptarget.rtl.host.so");
    let stdout = assert_passes(&plugin_check(&[&plugin, Path::new("--image"), &image]));
    for line in [
        "PASS  image compatibility",
        "PASS  device 0: alloc shared (managed)",
        "PASS  device 0: copy host to device to host",
        "PASS  device 3: copy to device 0",
        "PASS  device 0: event orders two queues",
        "PASS  device 0: find global",
        "PASS  device 0: launch kernel (on a queue)",
        "PASS  error: invalid device",
        "PASS  error: invalid pointer",
        "PASS  error: foreign image",
        "PASS  error: unknown names and handles",
        "PASS  error: bogus queue and event handles",
        "PASS  device 0: concurrent use",
    ] {
        assert!(stdout.contains(line), "missing '{line}' in:\n{stdout}");
    }
    assert!(stdout.contains("a kernel launch, all correct"), "{stdout}");
}

#[test]
fn checker_reports_zero_cuda_devices_as_passing() {
    let image = compile_nvptx(CHECK_PROGRAM, "sm_90");
    let plugin = lib_dir().join("libomptarget.rtl.cuda.so");
    let out = plugin_check(&[&plugin, Path::new("--image"), &image]);
    let stdout = text(&out.stdout);
    if stdout.contains("PASS  device count                           0 devices") {
        assert_passes(&out);
        assert!(stdout.contains("SKIP  device checks"), "{stdout}");
        assert!(stdout.contains("PASS  error: foreign image"), "{stdout}");
    } else {
        // A machine with an NVIDIA GPU and driver: everything must pass, the kernel included.
        let stdout = assert_passes(&out);
        assert!(
            stdout.contains("PASS  device 0: launch kernel (on a queue)"),
            "{stdout}"
        );
    }
}

#[test]
fn checker_reports_zero_amdgpu_devices_as_passing() {
    let image = compile_amdgpu(CHECK_PROGRAM, "gfx90a");
    let plugin = lib_dir().join("libomptarget.rtl.amdgpu.so");
    let out = plugin_check(&[&plugin, Path::new("--image"), &image]);
    let stdout = assert_passes(&out);
    // No AMD GPU anywhere here: HSA fails to start or is missing, the plugin has no devices.
    assert!(
        stdout.contains("PASS  device count                           0 devices"),
        "{stdout}"
    );
    assert!(stdout.contains("SKIP  device checks"), "{stdout}");
    assert!(stdout.contains("PASS  error: foreign image"), "{stdout}");
}

#[test]
fn checker_fails_on_libraries_that_are_not_usable_plugins() {
    let not_a_plugin = lib_dir().join("libomptarget.so.22.1");
    let out = plugin_check(&[&not_a_plugin]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("FAIL  load"), "{stdout}");
    assert!(stdout.contains("not an omptarget plugin"), "{stdout}");
    assert!(stdout.contains("1 checks: 0 passed, 1 failed"), "{stdout}");

    let missing = build_dir().join("libomptarget.rtl.missing.so");
    let out = plugin_check(&[&missing]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stdout).contains("cannot be opened"));

    let usage = plugin_check(&[]);
    assert_eq!(usage.status.code(), Some(2));
    assert!(text(&usage.stderr).contains("usage: omptarget-plugin-check"));
}

/// The plugin built against the frozen ABI 1.0 copy of the interface, under its plugin name.
fn frozen_v1_plugin() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let root = workspace_root();
            let target = root.join("target/abi-v1");
            let status = Command::new(env!("CARGO"))
                .args(["build", "--release", "--quiet", "--manifest-path"])
                .arg(root.join("tests/abi-v1/Cargo.toml"))
                .arg("--target-dir")
                .arg(&target)
                .status()
                .expect("cannot run cargo");
            assert!(status.success(), "building tests/abi-v1 failed");
            let installed = build_dir().join("abi-v1/libomptarget.rtl.frozenv1.so");
            std::fs::create_dir_all(installed.parent().unwrap()).unwrap();
            outputs::copy(
                &target.join("release/libomptarget_rtl_frozen_v1.so"),
                &installed,
            )
            .unwrap();
            installed
        })
        .clone()
}

/// FNV-1a of the frozen interface's sources, so an edit to them cannot pass unnoticed.
fn fingerprint(dir: &Path) -> u64 {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    let mut hash = 0xcbf29ce484222325u64;
    for file in files {
        for byte in std::fs::read(&file).unwrap() {
            hash = (hash ^ byte as u64).wrapping_mul(0x100000001b3);
        }
    }
    hash
}

#[test]
fn the_frozen_v1_interface_is_unchanged_and_older_than_the_current_one() {
    let frozen = workspace_root().join("tests/abi-v1/plugin-api/src");
    assert_eq!(
        fingerprint(&frozen),
        FROZEN_V1_FINGERPRINT,
        "tests/abi-v1/plugin-api is the released ABI 1.0 interface and must never change"
    );
    let version = std::fs::read_to_string(frozen.join("version.rs")).unwrap();
    assert!(
        version.contains("AbiVersion { major: 1, minor: 0 }"),
        "{version}"
    );
    // The runtime under test implements a later minor version, so loading the frozen plugin
    // below really is a newer runtime loading an older plugin.
    assert!(plugin_api_minor() > 0);
}

const FROZEN_V1_FINGERPRINT: u64 = 2254565288298003511;

fn plugin_api_minor() -> u32 {
    let version =
        std::fs::read_to_string(workspace_root().join("plugin-api/src/version.rs")).unwrap();
    let key = "AbiVersion { major: 1, minor: ";
    let at = version
        .find(key)
        .expect("ABI_VERSION in plugin-api/src/version.rs");
    let rest = &version[at + key.len()..];
    rest[..rest.find(' ').unwrap()].parse().unwrap()
}

#[test]
fn a_plugin_built_against_frozen_abi_1_0_is_loaded_and_used() {
    let plugin = frozen_v1_plugin();
    let path = plugin.display().to_string();
    let env = [
        ("LIBOMPTARGET_PLUGIN_PATH", path.as_str()),
        ("LIBOMPTARGET_PLUGINS_TO_LOAD", "frozenv1"),
    ];
    let listing = text(&info(&[], &env).stdout);
    assert!(listing.contains("frozenv1 [loaded]"), "{listing}");
    assert!(listing.contains("ABI:     1.0"), "{listing}");
    // The ABI 1.1 call it lacks is simply absent, while plugins of 1.1 answer it.
    assert!(!listing.contains("memory free:"), "{listing}");
    let current = text(&info(&[], &[]).stdout);
    assert!(current.contains("memory free:"), "{current}");
    assert!(
        listing.contains("built against the frozen plugin ABI 1.0"),
        "{listing}"
    );

    // A real program moves data through the plugin's device with the device-memory API.
    let exe = compile(Compiler::Clang19, &["device_memory_api.c"], &[]);
    let out = run(&exe, &env);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout).trim(),
        "devices 1 copies ok filled ok associated 1 present 1",
        "{}",
        text(&out.stderr)
    );

    // Interop objects on it carry no foreign runtime and no vendor (ABI 1.2's interop_info is
    // absent), but exist, wait and are destroyed like any other.
    let exe = compile(Compiler::Clang19, &["interop.c"], &[]);
    let out = run(&exe, &env);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("interop ok"), "{stdout}");
    assert!(stdout.contains("fr none\nvendor unknown"), "{stdout}");

    // And every call of the ABI answers as the checker expects.
    let stdout = assert_passes(&plugin_check(&[&plugin]));
    for line in [
        "PASS  device 0: event orders two queues",
        "PASS  error: bogus queue and event handles",
    ] {
        assert!(stdout.contains(line), "missing '{line}' in:\n{stdout}");
    }
    assert!(
        stdout.contains("SKIP  device 0: pin and unpin host memory"),
        "{stdout}"
    );
    assert!(
        stdout.contains("the plugin is built for ABI 1.0, which lacks the call"),
        "{stdout}"
    );
}

/// The example plugin vendors copy, built as a vendor would (its own workspace), installed under
/// its plugin file name. Once per test run: copying over the file while another test's program
/// has it loaded would crash that program.
fn example_plugin() -> PathBuf {
    static PLUGIN: OnceLock<PathBuf> = OnceLock::new();
    PLUGIN.get_or_init(build_example_plugin).clone()
}

fn build_example_plugin() -> PathBuf {
    let manifest = workspace_root().join("examples/plugin-example/Cargo.toml");
    let status = Command::new(env!("CARGO"))
        .args(["build", "--release", "--quiet", "--manifest-path"])
        .arg(&manifest)
        .status()
        .expect("cannot run cargo");
    assert!(status.success(), "building examples/plugin-example failed");
    let built =
        workspace_root().join("examples/plugin-example/target/release/libomptarget_rtl_example.so");
    let installed = build_dir().join("example-plugin/libomptarget.rtl.example.so");
    std::fs::create_dir_all(installed.parent().unwrap()).unwrap();
    outputs::copy(&built, &installed).unwrap();
    installed
}

#[test]
fn the_example_plugin_passes_the_checker() {
    let plugin = example_plugin();
    let image = compile(Compiler::Clang19, &[CHECK_PROGRAM], &[]);
    let mut cmd = Command::new(dist().join("bin/omptarget-plugin-check"));
    cmd.arg(&plugin).arg("--image").arg(&image);
    cmd.env("LIBOMPTARGET_EXAMPLE_NUM_DEVICES", "2");
    let stdout = assert_passes(&cmd.output().unwrap());
    for line in [
        "PASS  device 1: copy to device 0",
        "PASS  device 0: event orders two queues",
        "PASS  device 1: launch kernel (on a queue)",
        "PASS  device 0: concurrent use",
        "PASS  error: invalid pointer",
        "PASS  error: bogus queue and event handles",
    ] {
        assert!(stdout.contains(line), "missing '{line}' in:\n{stdout}");
    }
}

#[test]
fn plugin_order_decides_device_numbers() {
    let frozen = frozen_v1_plugin();
    let path = format!(
        "{}:{}",
        frozen.display(),
        lib_dir().join("libomptarget.rtl.host.so").display()
    );
    for (order, frozen_numbers, host_numbers) in [
        (
            "frozenv1,host",
            "devices: 1 (device number 0)",
            "devices: 4 (device numbers 1 to 4)",
        ),
        (
            "host,frozenv1",
            "devices: 1 (device number 4)",
            "devices: 4 (device numbers 0 to 3)",
        ),
    ] {
        let env = [
            ("LIBOMPTARGET_PLUGIN_PATH", path.as_str()),
            ("LIBOMPTARGET_PLUGINS_TO_LOAD", order),
        ];
        let listing = text(&info(&[], &env).stdout);
        let first = order.split(',').next().unwrap();
        let plugins = listing.split("Plugins (in load order").nth(1).unwrap();
        assert!(
            plugins
                .trim_start_matches(|c| c != '\n')
                .trim_start()
                .starts_with(&format!("{first} [loaded]")),
            "{listing}"
        );
        assert!(listing.contains(frozen_numbers), "{order}: {listing}");
        assert!(listing.contains(host_numbers), "{order}: {listing}");
        // Plugins not asked for come last, with the reason.
        assert!(listing.contains("cuda [skipped]"), "{listing}");
        assert!(
            listing.contains("not listed in LIBOMPTARGET_PLUGINS_TO_LOAD"),
            "{listing}"
        );
    }
}

/// A construct that finds data another construct is still sending on its own queue waits for
/// that copy (per-mapping events), on the example plugin, whose queues are worker threads.
#[test]
fn constructs_on_other_queues_wait_for_a_mapping_s_transfer() {
    let plugin = example_plugin();
    let path = plugin.display().to_string();
    let exe = compile(Compiler::Clang19, &["mapping_events.c"], &[]);
    let env = [
        ("LIBOMPTARGET_PLUGIN_PATH", path.as_str()),
        ("LIBOMPTARGET_PLUGINS_TO_LOAD", "example"),
        ("OMP_TARGET_OFFLOAD", "mandatory"),
    ];
    let out = run(&exe, &env);
    assert!(
        out.status.success(),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    assert_eq!(text(&out.stdout).trim(), "stale reads: 0 of 10");
    // Without the events the same program reads stale data: the test can tell.
    let mut unordered = env.to_vec();
    unordered.push(("LIBOMPTARGET_MAP_FORCE_ATOMIC", "false"));
    let out = run(&exe, &unordered);
    assert!(
        !out.status.success() && text(&out.stdout).contains("stale reads"),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
}
