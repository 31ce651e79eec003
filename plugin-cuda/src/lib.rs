//! `libomptarget.rtl.cuda.so`: the NVIDIA GPU plugin of omptarget-rs.
//!
//! Layers, bottom up: `driver` (the CUDA driver API, loaded from `libcuda.so.1` on first use,
//! and the owners that give back the contexts, modules, streams and events it makes),
//! `image` (cubin and PTX images read without the driver), `launch` (launch decisions made
//! without the driver), `resources` (stream and event pools), `handles` (the queue and event handles given to the core, checked before they reach the driver), `work_timing` (the device's timing of queued work, for
//! profiles), `device` (one GPU), `plugin` (the plugin ABI). LLVM's rules for grid and block
//! sizes, the layouts its device runtime reads and the pool of launch environments and
//! reduction buffers are shared with the other GPU plugins in `gpu_plugin`, the pinned
//! host ranges in `gpu_plugin::pinning`. Without a
//! driver or a GPU the plugin loads and reports zero devices with the reason.

pub mod device;
pub mod driver;
pub mod image;
pub mod launch;
pub mod plugin;
pub mod resources;
pub mod work_timing;

pub use plugin::CudaPlugin;

plugin_api::export_plugin!(CudaPlugin);
