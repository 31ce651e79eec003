//! Each runtime call goes through [`call`]: fault injection (`OMPTARGET_EMU_FAIL`), panics kept
//! inside, and one trace line (`OMPTARGET_EMU_TRACE`) with the call's details and result.
//! Calls that return a value rather than a status (signal loads and stores, queue indices) go
//! through [`value_call`]: traced, never failed.

use crate::config;
use crate::status::{self, Error, Result, Status};
use hsa_sys::*;
pub use omptarget_emu_support::calls::Call;
use omptarget_emu_support::calls::{Calls, Codes};
use std::sync::OnceLock;

pub fn calls() -> &'static Calls {
    static CALLS: OnceLock<Calls> = OnceLock::new();
    CALLS.get_or_init(|| Calls::new("omptarget-emu (HSA)", config::get()))
}

/// The error an injected failure returns: what the runtime says when it runs out.
fn injected_error(function: &str) -> Status {
    if function.contains("allocate") || function.contains("create") || function.contains("lock") {
        HSA_STATUS_ERROR_OUT_OF_RESOURCES
    } else {
        HSA_STATUS_ERROR
    }
}

const CODES: Codes<Status> = Codes {
    success: HSA_STATUS_SUCCESS,
    internal: HSA_STATUS_ERROR,
    injected: injected_error,
    describe: status::describe,
};

/// Runs the body of runtime entry point `function`.
pub fn call(function: &'static str, body: impl FnOnce(&mut Call) -> Result<()>) -> Status {
    calls().run(function, CODES, |c| body(c).map_err(|Error(code)| code))
}

/// Runs an entry point that returns a value, not a status: traced, never failed on purpose;
/// `fallback` is returned if it panics.
pub fn value_call<T: Copy + std::fmt::Debug>(
    function: &'static str,
    fallback: T,
    body: impl FnOnce(&mut Call) -> T,
) -> T {
    calls().run_value(function, fallback, body)
}
