//! `libomptarget.rtl.host.so`: the CPU exposed as offload devices.
//!
//! Device images are x86-64 ELF shared objects produced by clang for
//! `-fopenmp-targets=x86_64-pc-linux-gnu`. Each device loads its own copy of an image (so
//! `declare target` globals are per device, as on a GPU) and runs kernels on the calling thread
//! (a `nowait` region's kernel launched on one of libomp's hidden helper threads on a partner
//! thread instead: `helper_threads`); the OpenMP parallelism inside a kernel comes from libomp,
//! which the image calls into. Kernels compiled GPU-style (flang's) run through the host device
//! runtime linked into their image instead, on a league of teams of threads (`device_runtime`).
//! All work completes before a call returns, so queues and events are trivially ordered.

mod device;
mod device_runtime;
pub mod elf_check;
mod helper_threads;
mod kernel_fault;
mod plugin;
mod sys;

pub use plugin::HostPlugin;

plugin_api::export_plugin!(HostPlugin);
