//! The crates' modules form layers: no module imports one that imports it back, directly or
//! through others (`scripts/module-cycles.py` reads every crate's sources).

use std::process::Command;

#[test]
fn no_crate_has_an_import_cycle_between_its_modules() {
    let script = tests::workspace_root().join("scripts/module-cycles.py");
    let out = Command::new("python3")
        .arg(&script)
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "cannot run {}: {e} (.ci/install-deps.sh installs python3)",
                script.display()
            )
        });
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "import cycles between modules:\n{}{}",
        stdout
            .lines()
            .filter(|l| l.contains("cycle of"))
            .collect::<Vec<_>>()
            .join("\n"),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("omptarget-core: no cycles"), "{stdout}");
}
