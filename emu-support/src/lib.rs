//! What the driver emulators share: their settings (`OMPTARGET_EMU_*`, read once) and the
//! wrapper every emulated entry point runs in ([`calls::run`]: fault injection, panics kept
//! inside, one trace line per call), the worker threads that run device work ([`workers`]),
//! the catcher that turns a kernel's fault into the driver's error ([`kernel_faults`]), and
//! freed memory kept faulting for a while ([`retired_memory`]), and the process's own
//! mappings ([`process_memory`]).
//! Twins and kernel calls are shared with the host plugin and live in
//! `offload_image::{twin, native_code}`.

pub mod calls;
pub mod config;
pub mod process_memory;
pub use host_os::kernel_faults;
pub mod retired_memory;
pub mod workers;
