//! What the driver emulators share: their settings (`OMPTARGET_EMU_*`, read once) and the
//! wrapper every emulated entry point runs in ([`calls::run`]: fault injection, panics kept
//! inside, one trace line per call), and the worker threads that run device work ([`workers`]). Twins and kernel calls are shared with the host plugin
//! and live in `offload_image::{twin, native_code}`.

pub mod calls;
pub mod config;
pub mod workers;
