//! `codeptr_ra` for tools: the return address in the program of the call into this runtime.
//! LLVM takes `__builtin_return_address(0)` in each entry point; Rust has no such builtin, so
//! the stack is walked (with the unwind tables Rust always emits) up to the first frame outside
//! this library. It runs only while a tool is attached, once per construct.

use host_os::object_base;
use std::ffi::{c_int, c_void};

type TraceFn = extern "C" fn(context: *mut c_void, arg: *mut c_void) -> c_int;

extern "C" {
    // libgcc_s's unwinder (Itanium ABI), which std already links.
    fn _Unwind_Backtrace(trace: TraceFn, arg: *mut c_void) -> c_int;
    fn _Unwind_GetIP(context: *mut c_void) -> usize;
}

struct Walk {
    own_base: usize,
    found: usize,
}

extern "C" fn visit(context: *mut c_void, arg: *mut c_void) -> c_int {
    // SAFETY: `arg` is the `Walk` that `caller_address` passed to _Unwind_Backtrace.
    let walk = unsafe { &mut *(arg as *mut Walk) };
    // SAFETY: `context` is the unwinder's context for the frame being visited.
    let ip = unsafe { _Unwind_GetIP(context) };
    if ip == 0 {
        return 5; // _URC_END_OF_STACK
    }
    match object_base(ip) {
        Some(base) if base == walk.own_base => 0, // _URC_NO_REASON: keep walking
        _ => {
            walk.found = ip;
            4 // _URC_NORMAL_STOP
        }
    }
}

/// The address in the program that called into this runtime; 0 when it cannot be found.
pub(crate) fn caller_address() -> usize {
    static OWN_BASE: once_cell::sync::OnceCell<Option<usize>> = once_cell::sync::OnceCell::new();
    let Some(own_base) =
        *OWN_BASE.get_or_init(|| object_base(caller_address as *const () as usize))
    else {
        return 0;
    };
    let mut walk = Walk { own_base, found: 0 };
    // SAFETY: `visit` matches the unwinder's callback type and only touches `walk`, which
    // outlives the call.
    unsafe { _Unwind_Backtrace(visit, &mut walk as *mut Walk as *mut c_void) };
    walk.found
}
