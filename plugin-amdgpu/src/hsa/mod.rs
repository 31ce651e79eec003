//! The safe layer over `hsa-sys`: what the device logic calls to open the ROCm runtime, list
//! agents and their memory pools, load code objects, and (through [`HsaQueue`]) publish AQL
//! packets. Every failed call comes back as an [`HsaError`] naming the call and the status.
//!
//! * [`runtime`]: [`HsaRuntime`], the opened and initialised runtime.
//! * [`agents`], [`pools`]: what each agent is and which memory it offers.
//! * [`executable`]: code objects loaded for an agent, and their kernels and variables.
//! * [`memory_fault`]: the fatal report of a GPU memory fault.
//! * [`packets`]: AQL packets built as plain values; [`queue`]: the few lines that put them in
//!   a queue's ring.
//! * [`signals`]: signal handlers and wait timeouts.
//!
//! Nothing here has run on an AMD GPU: the machines this is developed on have none. What runs
//! without one (the packet bits, the messages, the failure of `hsa_init` without `/dev/kfd`)
//! is tested; the rest follows LLVM's AMDGPU plugin call for call.

pub mod agents;
mod attributes;
mod error;
pub mod executable;
mod iterate;
pub mod memory_fault;
pub mod packets;
pub mod pools;
pub mod queue;
pub mod runtime;
pub mod signals;

pub use crate::hsa_interface::{Agent, HsaError, HsaResult, MemoryPool, Queue, Signal};
pub use agents::AgentInfo;
pub use error::{check, hsa_error};
pub use executable::{Executable, KernelSymbol};
pub use pools::{MemoryInfo, PoolInfo, PoolSegment};
pub use queue::HsaQueue;
pub use runtime::HsaRuntime;

/// The raw bindings, for the few places that need a C type.
pub use hsa_sys as sys;
