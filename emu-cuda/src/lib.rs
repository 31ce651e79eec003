//! omptarget-emu, CUDA: a CPU emulation of the CUDA driver API, strict where the driver is,
//! installed as `dist/emu/libcuda.so.1`. It runs real OpenMP programs through the real CUDA
//! plugins (ours and LLVM's): memory in an address range of its own, streams with a worker
//! each, events, cubin and PTX modules with their globals, virtual memory management (see
//! `vmm`), and kernels run through their x86-64 twins (see `twin`), whose faults become the
//! context's sticky error (see `faults`). See the README's section on the emulated drivers.

mod config;
mod driver;
mod entry;
mod faults;
pub mod image;
mod launch;
mod load;
mod memory;
mod pageable;
mod profile;
mod status;
mod streams;
mod trace;
mod vmm;

pub use entry::*;
pub use vmm::*;
