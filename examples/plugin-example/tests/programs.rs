//! End to end: real OpenMP programs compiled by clang-19 run on the example plugin through the
//! omptarget-rs runtime of an install tree (`$OMPTARGET_DIST`, default `../../dist`, made by
//! `scripts/build-dist.sh` at the repository root).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The install tree; a missing one fails the test rather than skipping it.
fn dist() -> PathBuf {
    let dir = std::env::var_os("OMPTARGET_DIST")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../dist"));
    assert!(
        dir.join("lib/libomptarget.so.19.1").exists(),
        "no omptarget-rs install tree at {}: run scripts/build-dist.sh at the repository root \
         (or set OMPTARGET_DIST)",
        dir.display()
    );
    dir.canonicalize().expect("canonical dist path")
}

/// The plugin cargo built with this test. `cargo test` writes the cdylib next to the test
/// executable in `target/<profile>/deps/` and does not refresh the copy in `target/<profile>/`
/// (only `cargo build` does), so `deps/` is looked at first.
fn built_plugin() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable path");
    let deps = exe.parent().expect("deps directory");
    let found = [Some(deps), deps.parent()]
        .into_iter()
        .flatten()
        .map(|dir| dir.join("libomptarget_rtl_example.so"))
        .find(|p| p.exists());
    found.unwrap_or_else(|| {
        panic!(
            "libomptarget_rtl_example.so not found near {}",
            exe.display()
        )
    })
}

/// A scratch directory holding the plugin under its installed name; removed when dropped.
struct Scratch {
    dir: PathBuf,
    plugin: PathBuf,
}

impl Scratch {
    fn new(tag: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!(
            "omptarget-rtl-example-{tag}-{}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let plugin = dir.join("libomptarget.rtl.example.so");
        std::fs::copy(built_plugin(), &plugin).expect("copy the plugin");
        Scratch { dir, plugin }
    }

    /// A command run against the install tree with only the example plugin.
    fn command(&self, program: &Path, devices: u32) -> Command {
        let mut cmd = Command::new(program);
        cmd.env("LD_LIBRARY_PATH", dist().join("lib"))
            .env("LIBOMPTARGET_PLUGIN_PATH", &self.plugin)
            // Without this the shipped plugins found through LD_LIBRARY_PATH come first.
            .env("LIBOMPTARGET_PLUGINS_TO_LOAD", "example")
            .env("OMP_TARGET_OFFLOAD", "mandatory")
            .env("LIBOMPTARGET_EXAMPLE_NUM_DEVICES", devices.to_string())
            .env_remove("LIBOMPTARGET_INFO")
            .env_remove("LIBOMPTARGET_DEBUG");
        cmd
    }

    fn compile(&self, source: &str) -> PathBuf {
        let out = self.dir.join(source.trim_end_matches(".c"));
        let src = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/programs")
            .join(source);
        let result = Command::new("clang-19")
            .args(["-O1", "-fopenmp", "-fopenmp-targets=x86_64-pc-linux-gnu"])
            .arg(&src)
            .arg("-o")
            .arg(&out)
            .output()
            .expect("cannot run clang-19 (install clang-19 and libomp-19-dev)");
        assert!(
            result.status.success(),
            "clang-19 failed:\n{}",
            text(&result.stderr)
        );
        out
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn run(mut cmd: Command) -> (Output, String, String) {
    let output = cmd.output().expect("run the program");
    let (out, err) = (text(&output.stdout), text(&output.stderr));
    (output, out, err)
}

#[test]
fn openmp_program_runs_on_the_example_device() {
    let scratch = Scratch::new("program");
    let program = scratch.compile("offload.c");
    for devices in [1, 2] {
        let mut cmd = scratch.command(&program, devices);
        cmd.env("LIBOMPTARGET_INFO", "16"); // plugin kernel lines (LLVM reads it as decimal)
        let (output, out, err) = run(cmd);
        let context = format!("with {devices} device(s)\nstdout:\n{out}\nstderr:\n{err}");
        assert!(
            output.status.success(),
            "exit status {:?} {context}",
            output.status
        );
        for expected in [
            "saxpy: ok",
            "enter/exit data: ok",
            "declare target: counter=30 host-before-update=0",
            "many arguments: sum=385",
            "omp_target_alloc/memcpy: ok",
            &format!("nowait on {devices} devices: ok"),
            "failures: 0",
        ] {
            assert!(
                out.lines().any(|l| l == expected),
                "missing '{expected}' {context}"
            );
        }
        // The kernels really went through this plugin, on every device.
        for d in 0..devices {
            let line = format!("on example device {d} ");
            assert!(err.contains(&line), "no kernel launched {line}{context}");
        }
    }
}

#[test]
fn omptarget_info_lists_the_example_plugin() {
    let scratch = Scratch::new("info");
    let info = dist().join("bin/omptarget-info");
    let (output, out, err) = run(scratch.command(&info, 3));
    assert!(
        output.status.success(),
        "omptarget-info failed:\n{out}\n{err}"
    );
    assert!(out.contains("example [loaded]"), "{out}");
    assert!(out.contains(&scratch.plugin.display().to_string()), "{out}");
    assert_eq!(
        out.matches("Example simulated accelerator").count(),
        3,
        "{out}"
    );
    assert!(out.contains("compute unit kind: generic-64bit"), "{out}");
}
