//! omptarget-emu, HSA: a CPU emulation of the ROCm HSA runtime, strict where the runtime is,
//! installed as `dist/emu/libhsa-runtime64.so.1`. It runs real OpenMP programs through the
//! real AMDGPU plugins (ours and LLVM 19's): one CPU agent and MI210-like GPU agents with
//! their memory pools and access rules, signals, AQL queues with a packet processor each, copy
//! engines, code objects, and kernels run through their x86-64 twins
//! (`offload_image::twin`), whose faults stop their queues as GPU faults do (see `faults`). See
//! the README's section on the emulated drivers.

pub mod agents;
mod code;
pub mod config;
mod copies;
mod dispatch;
mod entry;
mod fault_owner;
mod faults;
mod host;
pub mod memory;
mod placement;
mod queues;
mod runtime;
pub mod signals;
pub mod status;
mod svm;
mod svm_ranges;
mod trace;

pub use entry::*;
