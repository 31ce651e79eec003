//! `libomptarget.rtl.amdgpu.so`: the AMD GPU plugin of omptarget-rs, on HSA.
//!
//! Layers, bottom up:
//! - `hsa-sys` (its own crate): the subset of `hsa.h`/`hsa_ext_amd.h` we call, resolved at run
//!   time from `libhsa-runtime64.so.1` (or `$HSA_RUNTIME_LIB`).
//! - `hsa`: a thin safe layer over it: the runtime, agents and pools, executables.
//! - `hsa_interface`: the seam under the stream logic (signals, queue packets, asynchronous
//!   copies), implemented over libhsa by `hsa_real` and on the CPU by the test double
//!   `test_double` (tests only).
//! - `stream`: LLVM's NextGen design: streams as chains of slots ordered by signals, HSA queues
//!   shared by streams (an idle or the least-used one for a stream that gets work), two-step
//!   copies through pinned staging buffers, events.
//! - `code_object`: device images read without the driver: target IDs, compatibility, the
//!   metadata note, kernels and globals.
//! - `kernel_args`, `kernarg_pool`: kernel argument segments and their reusable buffers.
//! - `device` (one GPU agent) and `plugin` (the plugin ABI).
//!
//! Without the runtime library, without GPUs or when `hsa_init` fails, the plugin loads and
//! reports zero devices with the reason.

pub mod code_object;
pub mod device;
pub mod hsa;
pub mod hsa_interface;
pub mod hsa_real;
pub mod kernarg_pool;
pub mod kernel_args;
pub mod plugin;
pub mod settings;
pub mod stream;
#[cfg(test)]
mod test_double;

pub use plugin::AmdgpuPlugin;

plugin_api::export_plugin!(AmdgpuPlugin);
