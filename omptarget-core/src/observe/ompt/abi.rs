//! The OMPT types this runtime exchanges with libomp and tools (`omp-tools.h`, OpenMP 5.1
//! chapter 19). Only what the target callbacks need.

use std::ffi::{c_char, c_int, c_uint, c_void};

/// `ompt_data_t`: a union of a 64-bit value and a pointer, both 8 bytes on our targets.
pub(crate) type OmptData = u64;
pub(crate) type OmptId = u64;

/// `ompt_scope_endpoint_t`.
pub(crate) const SCOPE_BEGIN: c_int = 1;
pub(crate) const SCOPE_END: c_int = 2;

/// `ompt_target_t`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[repr(i32)]
pub(crate) enum TargetKind {
    Target = 1,
    EnterData = 2,
    ExitData = 3,
    Update = 4,
}

/// `ompt_target_data_op_t` (the synchronous operations: this runtime reports each at the
/// moment it is issued).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[repr(i32)]
pub(crate) enum DataOpKind {
    Alloc = 1,
    TransferToDevice = 2,
    TransferFromDevice = 3,
    Delete = 4,
    Associate = 5,
    Disassociate = 6,
}

/// `ompt_callbacks_t` codes of the target and device callbacks.
pub(crate) mod code {
    pub(crate) const TARGET: i32 = 8;
    pub(crate) const TARGET_DATA_OP: i32 = 9;
    pub(crate) const TARGET_SUBMIT: i32 = 10;
    pub(crate) const DEVICE_INITIALIZE: i32 = 12;
    pub(crate) const DEVICE_FINALIZE: i32 = 13;
    pub(crate) const DEVICE_LOAD: i32 = 14;
    pub(crate) const DEVICE_UNLOAD: i32 = 15;
    pub(crate) const TARGET_EMI: i32 = 33;
    pub(crate) const TARGET_DATA_OP_EMI: i32 = 34;
    pub(crate) const TARGET_SUBMIT_EMI: i32 = 35;
}

/// `ompt_interface_fn_t` / `ompt_callback_t`: some function, cast to its real type by code.
pub(crate) type AnyFn = unsafe extern "C" fn();
/// `ompt_function_lookup_t`.
pub(crate) type LookupFn = unsafe extern "C" fn(name: *const c_char) -> Option<AnyFn>;
/// `ompt_initialize_t`.
pub(crate) type InitializeFn = unsafe extern "C" fn(
    lookup: LookupFn,
    initial_device_num: c_int,
    tool_data: *mut OmptData,
) -> c_int;
/// `ompt_finalize_t`.
pub(crate) type FinalizeFn = unsafe extern "C" fn(tool_data: *mut OmptData);
/// `ompt_get_callback_t`.
pub(crate) type GetCallbackFn =
    unsafe extern "C" fn(which: c_int, callback: *mut Option<AnyFn>) -> c_int;
/// libomp's `ompt_get_task_data` / `ompt_get_target_task_data`.
pub(crate) type GetDataFn = unsafe extern "C" fn() -> *mut OmptData;

/// `ompt_start_tool_result_t`.
#[repr(C)]
pub(crate) struct StartToolResult {
    pub initialize: Option<InitializeFn>,
    pub finalize: Option<FinalizeFn>,
    pub tool_data: OmptData,
}

pub(crate) type TargetCb = unsafe extern "C" fn(
    kind: c_int,
    endpoint: c_int,
    device_num: c_int,
    task_data: *mut OmptData,
    target_id: OmptId,
    codeptr_ra: *const c_void,
);
pub(crate) type TargetEmiCb = unsafe extern "C" fn(
    kind: c_int,
    endpoint: c_int,
    device_num: c_int,
    task_data: *mut OmptData,
    target_task_data: *mut OmptData,
    target_data: *mut OmptData,
    codeptr_ra: *const c_void,
);
pub(crate) type DataOpCb = unsafe extern "C" fn(
    target_id: OmptId,
    host_op_id: OmptId,
    optype: c_int,
    src_addr: *mut c_void,
    src_device_num: c_int,
    dest_addr: *mut c_void,
    dest_device_num: c_int,
    bytes: usize,
    codeptr_ra: *const c_void,
);
pub(crate) type DataOpEmiCb = unsafe extern "C" fn(
    endpoint: c_int,
    target_task_data: *mut OmptData,
    target_data: *mut OmptData,
    host_op_id: *mut OmptId,
    optype: c_int,
    src_addr: *mut c_void,
    src_device_num: c_int,
    dest_addr: *mut c_void,
    dest_device_num: c_int,
    bytes: usize,
    codeptr_ra: *const c_void,
);
pub(crate) type SubmitCb =
    unsafe extern "C" fn(target_id: OmptId, host_op_id: OmptId, requested_num_teams: c_uint);
pub(crate) type SubmitEmiCb = unsafe extern "C" fn(
    endpoint: c_int,
    target_data: *mut OmptData,
    host_op_id: *mut OmptId,
    requested_num_teams: c_uint,
);
pub(crate) type DeviceInitializeCb = unsafe extern "C" fn(
    device_num: c_int,
    kind: *const c_char,
    device: *mut c_void,
    lookup: Option<LookupFn>,
    documentation: *const c_char,
);
pub(crate) type DeviceFinalizeCb = unsafe extern "C" fn(device_num: c_int);
pub(crate) type DeviceLoadCb = unsafe extern "C" fn(
    device_num: c_int,
    filename: *const c_char,
    offset_in_file: i64,
    vma_in_file: *mut c_void,
    bytes: usize,
    host_addr: *mut c_void,
    device_addr: *mut c_void,
    module_id: u64,
);
pub(crate) type DeviceUnloadCb = unsafe extern "C" fn(device_num: c_int, module_id: u64);
