//! CI runs the benchmark suite in its quick mode only to prove it still builds and runs against
//! both runtimes; no timing is asserted (that would make a test of a noisy machine).

use std::process::Command;

#[test]
fn quick_mode_runs_every_benchmark_on_both_runtimes() {
    let out = Command::new(env!("CARGO_BIN_EXE_bench"))
        .arg("--quick")
        .output()
        .expect("bench runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "bench --quick failed:\n{stdout}\n{stderr}"
    );
    for metric in [
        "startup_wall",
        "startup_peak_rss",
        "empty_region",
        "enter_data_1000",
        "present_lookup_1000",
        "exit_data_1000",
        "host_steps_1000",
        "mapped_bandwidth",
        "threads_scaling",
        "install tree",
    ] {
        let row = stdout
            .lines()
            .find(|l| l.starts_with(&format!("| {metric}")))
            .unwrap_or_else(|| panic!("no row for {metric}:\n{stdout}"));
        // Both runtimes produced a value (no "-" in the median columns).
        assert!(!row.contains("| - ("), "missing measurement in: {row}");
    }
}
