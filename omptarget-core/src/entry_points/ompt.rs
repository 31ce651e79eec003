//! OMPT: the entry point through which plugins built on LLVM's OMPT connector reach the tool.

use super::guard;
use crate::observe::ompt::abi::StartToolResult;

/// A plugin asks for the attached tool's callbacks: its initializer is called with libomp's
/// lookup function and its finalizer when the tool is finalized. Nothing happens without a tool.
#[no_mangle]
pub extern "C" fn ompt_libomptarget_connect(result: *mut StartToolResult) {
    guard("ompt_libomptarget_connect", (), || {
        // SAFETY: null or the plugin's own `ompt_start_tool_result_t`.
        if let Some(result) = unsafe { result.as_ref() } {
            crate::observe::ompt::connection::connect_plugin(result)
        }
    })
}
