//! Plugins start only when a registered image may run on them, and devices get their numbers
//! as LLVM 19 gives them: image by image, each plugin in turn, each of its devices that can run
//! the image. Judged with every bundled plugin installed and the emulated CUDA driver present,
//! against LLVM 19's runtime on the same binaries.

use std::path::Path;
use std::process::Command;
use tests::{conformance, Compiler};

/// Runs `exe` on ours (every plugin) or LLVM 19, with two emulated CUDA devices; returns its
/// output and the driver calls it made (empty when the driver was never started).
fn run(exe: &Path, llvm: bool) -> (String, String) {
    let trace = std::env::temp_dir().join(format!(
        "plugin-start-{}-{}-{llvm}",
        std::process::id(),
        exe.file_name().unwrap().to_string_lossy()
    ));
    let _ = std::fs::remove_file(&trace);
    let libraries = if llvm {
        conformance::LLVM19_LIB_DIR.to_string()
    } else {
        tests::lib_dir().display().to_string()
    };
    let output = Command::new(exe)
        .env(
            "LD_LIBRARY_PATH",
            format!("{}:{libraries}", tests::dist().join("emu").display()),
        )
        .env_remove("LIBOMPTARGET_PLUGINS_TO_LOAD")
        .env_remove("OMP_TARGET_OFFLOAD")
        .env_remove("OMP_DEFAULT_DEVICE")
        .env("OMPTARGET_EMU_DEVICES", "2")
        .env("OMPTARGET_EMU_TRACE", &trace)
        .output()
        .expect("run the program");
    let stdout = tests::text(&output.stdout);
    assert!(
        output.status.success(),
        "{} on {}: {stdout}{}",
        exe.display(),
        if llvm { "LLVM 19" } else { "ours" },
        tests::text(&output.stderr)
    );
    let calls = std::fs::read_to_string(&trace).unwrap_or_default();
    let _ = std::fs::remove_file(&trace);
    (stdout, calls)
}

/// A host-offload program on a machine with a CUDA driver: the CUDA plugin is never started
/// (no `cuInit`, whose 0.1-0.5 s a GPU machine would charge every such program), and the
/// program sees only the host devices, as with LLVM 19.
#[test]
fn a_host_program_never_starts_the_cuda_driver_and_sees_llvm_19s_devices() {
    let exe = tests::compile(Compiler::Clang19, &["device_numbering.c"], &[]);
    let (ours, ours_calls) = run(&exe, false);
    let (llvm, llvm_calls) = run(&exe, true);
    assert!(!ours_calls.contains("cuInit"), "{ours_calls}");
    assert!(!llvm_calls.contains("cuInit"), "{llvm_calls}");
    assert!(ours.starts_with("devices=4 initial=4\n"), "{ours}");
    assert_eq!(ours, llvm);
}

/// A program with an sm_90 image and its x86-64 twin: LLVM 19 numbers the host devices first
/// (clang lists the x86-64 image first, whatever the order of -fopenmp-targets), then the CUDA
/// devices; ours gives the same numbers.
#[test]
fn device_numbers_of_a_program_with_gpu_and_host_images_are_llvm_19s() {
    let exe = tests::compile_cuda_twin("device_numbering.c");
    let (ours, ours_calls) = run(&exe, false);
    let (llvm, _) = run(&exe, true);
    assert!(ours_calls.contains("cuInit"), "{ours_calls}");
    assert_eq!(
        ours,
        "devices=6 initial=6\n0:host\n1:host\n2:host\n3:host\n4:cuda\n5:cuda\n"
    );
    assert_eq!(ours, llvm);
}

/// A program with a GPU image only: only the CUDA devices are numbered, and the host plugin is
/// not started.
#[test]
fn a_gpu_only_program_sees_only_the_gpus() {
    let exe = tests::compile_nvptx("device_numbering.c", "sm_90");
    let (ours, _) = run(&exe, false);
    let (llvm, _) = run(&exe, true);
    assert_eq!(ours, "devices=2 initial=2\n0:cuda\n1:cuda\n");
    assert_eq!(ours, llvm);
}
