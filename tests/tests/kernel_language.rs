//! LLVM 22's kernel-language (CUDA/HIP `-foffload-via-llvm`) launch path: the call
//! configuration per thread and a launch through `llvmLaunchKernel`, on the host plugin and on
//! both emulated GPUs. A C program drives the entry points itself with an OpenMP target
//! region's kernel, launched as clang's CUDA code generation launches a kernel; on the emulated
//! HSA runtime a real CUDA source runs too: clang-22 builds it with `-foffload-via-llvm` for
//! gfx90a and, through `-fopenmp-targets=amdgcn-amd-amdhsa,x86_64-pc-linux-gnu`, with the x86-64
//! twins the emulator runs. (For sm_90 clang-22 asks for a PTX version Debian's toolchain lacks.)

use std::path::{Path, PathBuf};
use std::process::Command;
use tests::conformance::EmulatedGpu;
use tests::*;

#[test]
fn push_pop_and_launch_a_kernel_through_llvm_launch_kernel() {
    let exe = compile(Compiler::Clang22, &["kernel_language.c"], &[]);
    run_and_check(&exe, "kernel_language.c", &[]);
    let stderr = text(&run(&exe, &[]).stderr);
    assert!(
        stderr.contains("is not a target region registered with the runtime"),
        "{stderr}"
    );
    assert!(
        stderr.contains("a 12-byte parameter buffer is not a whole number of them"),
        "{stderr}"
    );
}

/// The same program built by clang-22 for an emulated GPU (with x86-64 twins): the GPU plugin
/// launches the kernel with the parameter buffer as its explicit arguments and exactly the
/// grid and block asked for. AMDGPU copies the buffer into the kernel's argument segment ahead
/// of the hidden arguments, CUDA hands it to the driver; a buffer of the wrong size is refused.
fn launch_on(gpu: tests::conformance::EmulatedGpu, exe: &std::path::Path, refusal: &str) {
    let env = [("OMP_TARGET_OFFLOAD", "mandatory".to_string())];
    let (code, stdout, stderr) = tests::emulated::run(gpu, exe, &[], &env);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    for line in ["configuration ok", "launch ok", "errors ok"] {
        assert!(
            stdout.contains(line),
            "{gpu:?}: no '{line}' in\n{stdout}{stderr}"
        );
    }
    assert!(stderr.contains(refusal), "{gpu:?}: {stderr}");
}

#[test]
fn llvm_launch_kernel_runs_a_kernel_on_the_emulated_hsa_runtime() {
    let exe = tests::compile_amdgpu_twin_clang22("kernel_language.c");
    launch_on(
        tests::conformance::EmulatedGpu::Amdgpu,
        &exe,
        "takes 16 bytes of explicit arguments, the launch passes a 12-byte parameter buffer",
    );
}

#[test]
fn llvm_launch_kernel_runs_a_kernel_on_the_emulated_cuda_driver() {
    let exe = tests::compile_cuda_twin_clang22("kernel_language.c");
    launch_on(
        tests::conformance::EmulatedGpu::Cuda,
        &exe,
        "cuLaunchKernel failed: CUDA_ERROR_INVALID_VALUE",
    );
}

/// Builds a CUDA source under tests/programs with clang-22 `-foffload-via-llvm` for gfx90a with
/// an x86-64 twin (the kernels of a CUDA source are compiled for every offload target).
fn compile_cuda_for_gfx90a(source: &str) -> PathBuf {
    let stem = Path::new(source).file_stem().unwrap().to_str().unwrap();
    let out = build_dir().join(format!("{stem}-gfx90a-twin-clang22"));
    let mut cmd = Command::new("clang++-22");
    cmd.args(["-x", "cuda", "-foffload-via-llvm", "-O2"])
        .args(clang22_twin_flags(EmulatedGpu::Amdgpu))
        .arg(format!("-L{}", lib_dir().display()))
        .arg(program(source))
        .env("PATH", clang22_twin_path(EmulatedGpu::Amdgpu));
    let output = tests::outputs::build(cmd, &out).expect("run clang++-22");
    assert!(
        output.status.success(),
        "compiling {source} failed:\n{}",
        text(&output.stderr)
    );
    out
}

/// A CUDA kernel `<<<dims(3, 2, 1), dims(8, 4, 1), 256>>>` through the AMDGPU plugin: clang's
/// parameter buffer is the kernel's explicit arguments (the results show each at its place),
/// the dispatch has exactly the grid and block asked for and the dynamic shared memory, the
/// `LIBOMPTARGET_INFO` line is the one every launch prints (LLVM 22 calls a kernel without a
/// kernel environment bare), and buffers of the wrong size are refused, naming both sizes.
#[test]
fn a_cuda_kernel_runs_through_the_amdgpu_plugin_on_the_emulated_hsa_runtime() {
    let exe = compile_cuda_for_gfx90a("kernel_language_amdgpu.cu");
    let (code, stdout, stderr, trace) = emulated::run_traced(
        EmulatedGpu::Amdgpu,
        &exe,
        "kernel-language-cuda",
        &[("LIBOMPTARGET_INFO", "16")],
    );
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    for line in ["launch ok", "errors ok"] {
        assert!(stdout.contains(line), "no '{line}' in\n{stdout}{stderr}");
    }
    let dispatches: Vec<&str> = trace
        .lines()
        .filter(|l| l.starts_with("packet ") && l.contains(" type=dispatch "))
        .collect();
    assert_eq!(dispatches.len(), 1, "{trace}");
    assert!(
        dispatches[0].contains("grid=24x8x1 group=8x4x1 group_memory=256"),
        "{}",
        dispatches[0]
    );
    assert!(
        stderr.contains(
            "Launching kernel _Z6affinePllll with [3,2,1] blocks and [8,4,1] threads in BARE mode"
        ),
        "{stderr}"
    );
    for wrong in [24, 40] {
        let refusal = format!(
            "kernel '_Z6affinePllll' takes 32 bytes of explicit arguments, the launch passes a \
             {wrong}-byte parameter buffer"
        );
        assert!(stderr.contains(&refusal), "{stderr}");
    }
}

/// clang's parameter buffer of `(long *, int)` holds the struct's tail padding (16 bytes for
/// 12 of arguments): the plugin takes it and queues the kernel. The emulator then refuses to
/// call the twin with a 4-byte argument, which shows the dispatch got past the plugin.
#[test]
fn a_parameter_buffer_with_tail_padding_is_taken() {
    let exe = compile_cuda_for_gfx90a("kernel_language_padded.cu");
    let (code, stdout, stderr, trace) =
        emulated::run_traced(EmulatedGpu::Amdgpu, &exe, "kernel-language-padded", &[]);
    assert!(code.is_some() && code != Some(124), "{stdout}{stderr}");
    assert!(stdout.contains("launched"), "{stdout}{stderr}");
    assert!(!stderr.contains("bytes of explicit arguments"), "{stderr}");
    assert!(
        stderr.contains("kernel _Z4fillPli.kd has arguments that are not 8-byte values"),
        "{stderr}"
    );
    assert!(
        trace
            .lines()
            .any(|l| l.starts_with("packet ") && l.contains(" type=dispatch ")),
        "{trace}"
    );
}
