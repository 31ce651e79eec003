//! Plugin discovery and checking, through omptarget-info and real programs.

use std::process::Command;
use tests::*;

/// A directory with the host plugin and three libraries that are not usable plugins.
fn plugin_dir() -> std::path::PathBuf {
    let dir = build_dir().join("plugin-dir");
    std::fs::create_dir_all(&dir).unwrap();
    outputs::copy(
        &lib_dir().join("libomptarget.rtl.host.so"),
        &dir.join("libomptarget.rtl.host.so"),
    )
    .unwrap();
    outputs::write(
        &dir.join("libomptarget.rtl.garbage.so"),
        b"this is not a shared library\n",
        0o644,
    )
    .unwrap();
    let source = program("fake_plugins.c");
    for (name, flags) in [("nosymbol", vec![]), ("future", vec!["-DOTHER_MAJOR"])] {
        let out = dir.join(format!("libomptarget.rtl.{name}.so"));
        let mut cc = Command::new("cc");
        cc.args(["-shared", "-fPIC"]).arg(&source).args(flags);
        assert!(outputs::build(cc, &out).unwrap().status.success());
    }
    dir
}

#[test]
fn info_lists_path_plugins_and_devices() {
    let out = info(&[], &[]);
    let stdout = text(&out.stdout);
    assert!(out.status.success());
    assert!(stdout.contains("Plugin search path:"), "{stdout}");
    assert!(
        stdout.contains(&lib_dir().display().to_string()),
        "{stdout}"
    );
    assert!(stdout.contains("host [loaded]"), "{stdout}");
    assert!(
        stdout.contains("libomptarget.rtl.host.so (runtime directory)"),
        "{stdout}"
    );
    assert!(stdout.contains("ABI:     1.7"), "{stdout}");
    assert!(stdout.contains("Devices: 4"), "{stdout}");
    assert!(
        stdout.contains("Device 3 (host plugin, device 3)"),
        "{stdout}"
    );
    // The GPU plugins load without a GPU or driver (zero devices).
    assert!(stdout.contains("cuda [loaded]"), "{stdout}");
    assert!(stdout.contains("amdgpu [loaded]"), "{stdout}");

    let json = text(&info(&["--json"], &[]).stdout);
    assert!(json.starts_with("{\"runtime_version\":"), "{json}");
    assert!(json.contains("\"name\":\"host\""), "{json}");
    assert!(json.contains("\"status\":\"loaded\""), "{json}");
    assert_eq!(json.matches("\"plugin\":\"host\"").count(), 4, "{json}");
}

#[test]
fn bad_plugins_are_skipped_with_reasons() {
    let dir = plugin_dir();
    let path = dir.display().to_string();
    let out = info(&[], &[("LIBOMPTARGET_PLUGIN_PATH", &path)]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(stdout.contains("garbage [skipped]"), "{stdout}");
    assert!(stdout.contains("cannot be opened"), "{stdout}");
    assert!(
        stdout.contains("not an omptarget plugin (no 'omptarget_plugin_abi_version' symbol)"),
        "{stdout}"
    );
    assert!(
        stdout
            .contains("plugin ABI version 2.0 is incompatible with this runtime's ABI version 1.7"),
        "{stdout}"
    );
    assert!(stdout.contains("host [loaded]"), "{stdout}");

    // A real program still runs on the good plugin among the bad ones.
    let exe = compile(Compiler::Clang19, &["policy.c"], &[]);
    let run_out = run(&exe, &[("LIBOMPTARGET_PLUGIN_PATH", &path)]);
    assert!(run_out.status.success(), "{}", text(&run_out.stderr));
    assert_eq!(text(&run_out.stdout).trim(), "devices 4 ran_on_host 0");
    assert!(text(&run_out.stderr).contains("incompatible with this runtime's ABI version 1.7"));
}

#[test]
fn plugins_to_load_selects() {
    let out = info(&[], &[("LIBOMPTARGET_PLUGINS_TO_LOAD", "cuda")]);
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("not listed in LIBOMPTARGET_PLUGINS_TO_LOAD"),
        "{stdout}"
    );
    assert!(stdout.contains("Devices: 0"), "{stdout}");
    // A single plugin file may also be named directly.
    let file = lib_dir()
        .join("libomptarget.rtl.host.so")
        .display()
        .to_string();
    let out = info(&[], &[("LIBOMPTARGET_PLUGIN_PATH", &file)]);
    assert!(
        text(&out.stdout).contains("Devices: 4"),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn relative_plugin_paths_are_ignored() {
    let out = info(&[], &[("LIBOMPTARGET_PLUGIN_PATH", "lib")]);
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("is not an absolute path; ignored"),
        "{stderr}"
    );
}
