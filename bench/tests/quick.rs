//! CI runs the benchmark suite in its quick mode only to prove it still builds and runs against
//! both runtimes; no timing is asserted (that would make a test of a noisy machine).

use std::path::{Path, PathBuf};
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

/// The repository this crate is part of.
fn repository_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The install tree the programs run against: `$OMPTARGET_DIST`, else the repository's dist/.
fn install_tree() -> PathBuf {
    std::env::var_os("OMPTARGET_DIST")
        .map(PathBuf::from)
        .unwrap_or_else(|| repository_root().join("dist"))
}

/// The diagnostics in bench/diagnostics are not part of the suite, but scripts/gpu-run.sh
/// builds and runs them on the GPU machine, where a broken one would cost a device run: each
/// is built here as that script builds it and run briefly, on both runtimes where it offloads.
#[test]
fn diagnostics_build_and_print_their_figures() {
    let (root, dist) = (repository_root(), install_tree());
    assert!(
        dist.join("lib/libomptarget.so.19.1").exists(),
        "no install tree at {} (scripts/build-dist.sh)",
        dist.display()
    );
    let out = std::env::temp_dir().join(format!("omptarget-diagnostics-{}", std::process::id()));
    std::fs::create_dir_all(&out).unwrap();
    let include = root.join("bench/programs");
    let build = |compiler: &str, offload: bool, name: &str| {
        let mut c = Command::new(compiler);
        c.arg("-O2");
        if offload {
            c.args(["-fopenmp", "-fopenmp-targets=x86_64-pc-linux-gnu"]);
        }
        let status = c
            .arg("-I")
            .arg(&include)
            .arg(root.join(format!("bench/diagnostics/{name}.c")))
            .arg("-o")
            .arg(out.join(name))
            .arg("-lpthread")
            .status()
            .unwrap_or_else(|e| panic!("cannot run {compiler}: {e}"));
        assert!(status.success(), "{compiler} failed on {name}.c");
    };
    let run = |name: &str, args: &[&str], lib: Option<&Path>| {
        let mut c = Command::new(out.join(name));
        c.args(args);
        if let Some(lib) = lib {
            c.env("LD_LIBRARY_PATH", lib);
        }
        let o = c.output().expect("diagnostic runs");
        let stdout = String::from_utf8_lossy(&o.stdout).into_owned();
        assert!(
            o.status.success(),
            "{name} failed:\n{stdout}\n{}",
            String::from_utf8_lossy(&o.stderr)
        );
        stdout
    };
    build("cc", false, "machine_costs");
    let costs = run("machine_costs", &[], None);
    for figure in ["dependent add", "load, random over", "fresh 4 KiB page"] {
        assert!(costs.contains(figure), "no '{figure}' in:\n{costs}");
    }
    build("clang-19", true, "slow_episodes");
    build("clang-19", true, "first_rounds");
    let llvm = PathBuf::from("/usr/lib/llvm-19/lib");
    for lib in [dist.join("lib"), llvm] {
        let episodes = run("slow_episodes", &["200", "1"], Some(&lib));
        assert!(
            episodes.contains("fastest tenth") && episodes.contains("slow rounds"),
            "slow_episodes on {}:\n{episodes}",
            lib.display()
        );
        let rounds = run("first_rounds", &["1000", "2"], Some(&lib));
        assert!(
            rounds.contains("round 0: enter") && rounds.contains("round 1: enter"),
            "first_rounds on {}:\n{rounds}",
            lib.display()
        );
    }
    let _ = std::fs::remove_dir_all(&out);
}

/// bench/gpu/driver_rules.c asks the real CUDA driver, in scripts/gpu-run.sh's `rules` step, the
/// questions the emulated driver answers by a rule of its own. Built and run here as that script
/// builds and runs it against the emulator (its kernel assembled by ptxas), it must get the
/// emulator's rules: no launch, copy or host function from a thread without a current context,
/// while waits on the stream need none.
#[test]
fn driver_rules_get_the_emulated_drivers_answers() {
    let (root, dist) = (repository_root(), install_tree());
    let emulator = dist.join("emu");
    assert!(
        emulator.join("libcuda.so.1").exists(),
        "no emulated CUDA driver in {} (scripts/build-dist.sh)",
        emulator.display()
    );
    let ptxas = std::env::var_os("NVPTX_CUDA_PATH")
        .map(PathBuf::from)
        .unwrap_or_else(|| "/opt/cuda-min".into())
        .join("bin/ptxas");
    assert!(
        ptxas.exists(),
        "no ptxas at {} (.ci/install-deps.sh)",
        ptxas.display()
    );
    let out = std::env::temp_dir().join(format!("omptarget-driver-rules-{}", std::process::id()));
    std::fs::create_dir_all(&out).unwrap();
    let program = out.join("driver_rules");
    let status = Command::new("cc")
        .arg("-O2")
        .arg(root.join("bench/gpu/driver_rules.c"))
        .arg("-o")
        .arg(&program)
        .args(["-ldl", "-lpthread"])
        .status()
        .expect("cc runs");
    assert!(status.success(), "cc failed on driver_rules.c");
    let ptx = Command::new(&program).arg("--ptx").output().unwrap();
    assert!(ptx.status.success());
    std::fs::write(out.join("empty.ptx"), &ptx.stdout).unwrap();
    let status = Command::new(&ptxas)
        .args(["-arch=sm_90"])
        .arg(out.join("empty.ptx"))
        .arg("-o")
        .arg(out.join("empty.cubin"))
        .status()
        .expect("ptxas runs");
    assert!(status.success(), "ptxas failed on driver_rules --ptx");
    let run = Command::new(&program)
        .arg(out.join("empty.cubin"))
        .env("LD_LIBRARY_PATH", &emulator)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(
        run.status.success(),
        "driver_rules failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    for line in [
        "rule launch_no_context CUDA_ERROR_INVALID_CONTEXT",
        "rule copy_to_device_no_context CUDA_ERROR_INVALID_CONTEXT",
        "rule host_function_no_context CUDA_ERROR_INVALID_CONTEXT",
        "rule stream_synchronize_no_context CUDA_SUCCESS",
        "rule stream_query_no_context CUDA_SUCCESS",
        "rule copy_to_device_current CUDA_SUCCESS",
        "rule host_function_current CUDA_SUCCESS",
        "rule stream_synchronize_current CUDA_SUCCESS",
    ] {
        assert!(
            stdout.lines().any(|l| l == line),
            "no '{line}' in:\n{stdout}"
        );
    }
    let _ = std::fs::remove_dir_all(&out);
}
