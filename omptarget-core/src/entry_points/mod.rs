//! Every C entry point of `libomptarget.so`, one module per API family. Each one catches panics
//! (none may unwind into C) and converts raw pointers through the `abi` module.

pub mod data;
pub mod device_api;
pub mod queries;
pub mod registration;
pub mod target;

use std::panic::{catch_unwind, AssertUnwindSafe};

/// `OFFLOAD_SUCCESS` / `OFFLOAD_FAIL` of LLVM's `omptarget.h`.
pub const OFFLOAD_SUCCESS: i32 = 0;
pub const OFFLOAD_FAIL: i32 = !0;

/// Runs an entry point's body; a panic is reported and turned into `fallback`.
pub(crate) fn guard<T>(entry_point: &str, fallback: T, body: impl FnOnce() -> T) -> T {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(value) => value,
        Err(payload) => {
            let what = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            crate::logging::failure_message(&format!("internal error in {entry_point}: {what}"));
            fallback
        }
    }
}
