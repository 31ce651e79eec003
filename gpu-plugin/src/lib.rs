//! The GPU plugin layer, outside the ABI: what LLVM's generic plugin layer
//! (`plugins-nextgen/common`: `GenericDeviceTy`, `GenericKernelTy`, the pinned-memory map) does
//! the same way for every GPU. The CUDA and AMDGPU plugins keep only their driver code and use
//! this; a vendor's GPU plugin may too.
//!
//! - [`launch_rules`]: how many teams and threads a kernel launch gets.
//! - [`device_runtime`]: the structs LLVM's device runtime reads from the host.
//! - [`launch_buffers`]: launch environments and reduction buffers reused across launches.
//! - [`settings`]: the `LIBOMPTARGET_*` and `OMP_*` variables every GPU plugin honours.
//! - [`pinning`]: the host ranges a plugin has page-locked, counted per pin.
//! - [`handles`]: the ABI's opaque queue, event, image and kernel handles, checked.
//! - [`images`]: the life of an image on a device, over the vendor's driver primitives.
//! - [`device_slots`]: a plugin's devices, each started once.
//! - [`fill`]: a fill from any address split into the aligned words GPU drivers fill.
//! - [`launch_traces`]: the kernels a device launched last, for the report of a fault.
//! - [`allocation_traces`]: where a device's memory came from, for reports of bad frees and
//!   faults.
//! - [`host_stacks`]: the host stacks those reports show.
//! - [`rpc`]: the server of device code's calls to the host (`printf`, files, `malloc`).
//! - [`zero_copy`]: whether a device's maps use host memory in place (APUs, coherent nodes).

pub mod allocation_traces;
pub mod device_runtime;
pub mod device_slots;
pub mod fill;
pub mod handles;
pub mod host_stacks;
pub mod images;
pub mod launch_buffers;
pub mod launch_rules;
pub mod launch_traces;
pub mod pinning;
pub mod rpc;
pub mod settings;
pub mod zero_copy;

pub use device_runtime::{
    device_environment_for, indirect_call_table, DeviceEnvironment, KernelLaunchEnvironment,
    NO_LAUNCH_ENVIRONMENT,
};
pub use handles::HandleTable;
pub use launch_rules::{
    ExecMode, GridValues, KernelEnvironment, KernelLimits, KERNEL_ENVIRONMENT_SIZE,
};
pub use settings::Settings;
