//! Helpers for GPU plugins, outside the ABI: what LLVM's generic plugin layer
//! (`GenericDeviceTy`, `GenericKernelTy`) does the same way for every GPU. The CUDA and AMDGPU
//! plugins use them, and a vendor's GPU plugin may.
//!
//! - [`launch_rules`]: how many teams and threads a kernel launch gets.
//! - [`device_runtime`]: the structs LLVM's device runtime reads from the host.
//! - [`cuda_image`]: what a CUDA image is (cubin SM, PTX target) and its symbols.
//! - [`amdgpu_processors`]: the AMDGCN processors of the ELF `EF_AMDGPU_MACH` field.
//! - [`settings`]: the `LIBOMPTARGET_*` and `OMP_*` variables every GPU plugin honours.

pub mod amdgpu_code_object;
pub mod amdgpu_processors;
pub mod cuda_image;
pub mod device_runtime;
pub mod launch_buffers;
pub mod launch_rules;
pub mod settings;

pub use device_runtime::{
    indirect_call_table, place_indirect_call_table, DeviceEnvironment, KernelLaunchEnvironment,
    NO_LAUNCH_ENVIRONMENT,
};
pub use launch_rules::{
    ExecMode, GridValues, KernelEnvironment, KernelLimits, KERNEL_ENVIRONMENT_SIZE,
};
pub use settings::Settings;
