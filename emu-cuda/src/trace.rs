//! Each driver call goes through [`call`]: fault injection (`OMPTARGET_EMU_FAIL`), panics kept
//! inside, and one trace line (`OMPTARGET_EMU_TRACE`) with the call's details and result.

use crate::config;
use crate::status::{self, CuResult, Error, Result};
pub use omptarget_emu_support::calls::Call;
use omptarget_emu_support::calls::{Calls, Codes};
use std::sync::OnceLock;

pub fn calls() -> &'static Calls {
    static CALLS: OnceLock<Calls> = OnceLock::new();
    CALLS.get_or_init(|| Calls::new("omptarget-emu (CUDA)", config::get()))
}

/// The error an injected failure returns: what the driver says when it runs out.
fn injected_error(function: &str) -> CuResult {
    if function.contains("Alloc")
        || function.contains("Register")
        || function == "cuMemCreate"
        || function == "cuMemAddressReserve"
    {
        status::OUT_OF_MEMORY.0
    } else if function == "cuLaunchKernel" {
        status::LAUNCH_FAILED.0
    } else {
        status::UNKNOWN.0
    }
}

const CODES: Codes<CuResult> = Codes {
    success: status::SUCCESS,
    internal: status::UNKNOWN.0,
    injected: injected_error,
    describe: |code| status::describe(code).to_string(),
};

/// Runs the body of driver entry point `function`.
pub fn call(function: &'static str, body: impl FnOnce(&mut Call) -> Result<()>) -> CuResult {
    calls().run(function, CODES, |c| {
        if crate::driver::torn_down() {
            return Err(status::DEINITIALIZED.0);
        }
        body(c).map_err(|Error(code)| code)
    })
}
