//! What LLVM 22's kernel-language (CUDA/HIP through `-foffload-via-llvm`) entry points
//! receive: `dim3` and the parameter block clang builds for `llvmLaunchKernel`
//! (`KernelLaunchParamsTy` of LLVM's `Shared/APITypes.h`).

use std::ffi::c_void;

/// CUDA's `dim3`, passed by value.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Dim3 {
    pub x: u32,
    pub y: u32,
    pub z: u32,
}

impl Dim3 {
    pub(crate) fn to_array(self) -> [u32; 3] {
        [self.x, self.y, self.z]
    }
}

/// `KernelLaunchParamsTy`: the kernel's parameters laid out in one buffer (`data`, `size`
/// bytes), and a pointer to each of them (`ptrs`, which only LLVM's host plugin uses).
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub(crate) struct KernelLaunchParams {
    pub size: usize,
    pub data: *const c_void,
    pub ptrs: *const *const c_void,
}
