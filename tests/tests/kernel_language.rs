//! LLVM 22's kernel-language (CUDA/HIP `-foffload-via-llvm`) launch path on the host plugin:
//! the call configuration per thread and a launch through `llvmLaunchKernel`. Real CUDA code
//! needs an NVIDIA GPU (the CUDA plugin's `launch_kernel_params`); none is lent here.

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
