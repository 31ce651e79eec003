//! LLVM 22's kernel-language (CUDA/HIP `-foffload-via-llvm`) launch path: the call
//! configuration per thread and a launch through `llvmLaunchKernel`, on the host plugin and on
//! both emulated GPUs. The kernel is an OpenMP target region's, launched as clang's CUDA code
//! generation launches a kernel: a CUDA source built by clang-22 with `-foffload-via-llvm`
//! carries its kernels for the GPU only, without the x86-64 twins the emulators run (and for
//! sm_90 clang-22 asks for a PTX version Debian's toolchain lacks), so a C program drives the
//! entry points itself.

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
