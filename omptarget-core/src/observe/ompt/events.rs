//! The events this runtime reports to an attached tool, at the points LLVM's runtime reports
//! them. Each begins with one atomic check (`tool()`), so they cost nothing without a tool.
//!
//! The state of the current target construct is per host thread, as in LLVM: a construct
//! runs on one thread from its begin to its end event, and its data operations and kernel
//! submission happen on that thread.

use super::abi::*;
use super::connection::{host_device, tool, Tool};
use super::return_address;
use std::cell::Cell;
use std::ffi::{c_int, c_void, CString};
use std::sync::atomic::{AtomicU64, Ordering};

/// Target and host-operation ids come from one counter, from 1 (as LLVM).
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

fn new_id() -> OmptId {
    NEXT_ID.fetch_add(1, Ordering::Relaxed)
}

struct ConstructState {
    task_data: Cell<*mut OmptData>,
    target_task_data: Cell<*mut OmptData>,
    /// The construct's `target_data` (its id for non-EMI tools). Tools get its address.
    target_data: Cell<OmptData>,
    /// The current operation's id. EMI tools get its address and may set it.
    host_op_id: Cell<OmptId>,
    /// The program's call site of the construct (0 outside one).
    codeptr: Cell<usize>,
}

thread_local! {
    static CONSTRUCT: ConstructState = const {
        ConstructState {
            task_data: Cell::new(std::ptr::null_mut()),
            target_task_data: Cell::new(std::ptr::null_mut()),
            target_data: Cell::new(0),
            host_op_id: Cell::new(0),
            codeptr: Cell::new(0),
        }
    };
}

/// The call site reported with an event: the construct's, else found now.
fn current_codeptr() -> *const c_void {
    let known = CONSTRUCT.with(|c| c.codeptr.get());
    let address = if known != 0 {
        known
    } else {
        return_address::caller_address()
    };
    address as *const c_void
}

fn task_data(getter: Option<GetDataFn>) -> *mut OmptData {
    match getter {
        // SAFETY: libomp's `ompt_get_task_data` / `ompt_get_target_task_data` take no arguments.
        Some(get) => unsafe { get() },
        None => std::ptr::null_mut(),
    }
}

/// A target construct (`target`, `target data`, `enter/exit data`, `update`) as the tool sees
/// it: the begin event now, the end event when dropped (whether or not it succeeded).
pub(crate) struct ConstructScope {
    kind: TargetKind,
    device_num: i32,
    tool: Option<&'static Tool>,
}

impl ConstructScope {
    #[inline]
    pub(crate) fn begin(kind: TargetKind, device_num: i32) -> ConstructScope {
        let scope = ConstructScope {
            kind,
            device_num,
            tool: tool(),
        };
        match scope.tool {
            Some(tool) => scope.reported(tool),
            None => scope,
        }
    }

    /// The begin event, for a construct a tool listens to.
    #[cold]
    fn reported(self, tool: &'static Tool) -> ConstructScope {
        let codeptr = return_address::caller_address();
        CONSTRUCT.with(|c| {
            c.task_data.set(task_data(tool.get_task_data));
            c.target_task_data.set(task_data(tool.get_target_task_data));
            // Every construct gets its own id for non-EMI tools (LLVM leaves `enter data` at 0);
            // EMI tools set their own.
            let id = if tool.target_emi.is_none() && tool.target.is_some() {
                new_id()
            } else {
                0
            };
            c.target_data.set(id);
            c.codeptr.set(codeptr);
        });
        self.emit(tool, SCOPE_BEGIN);
        self
    }

    /// The end event, and the construct's state cleared.
    #[cold]
    fn end(&self, tool: &Tool) {
        self.emit(tool, SCOPE_END);
        CONSTRUCT.with(|c| {
            c.task_data.set(std::ptr::null_mut());
            c.target_task_data.set(std::ptr::null_mut());
            c.target_data.set(0);
            c.codeptr.set(0);
        });
    }

    fn emit(&self, tool: &Tool, endpoint: c_int) {
        CONSTRUCT.with(|c| {
            let codeptr = c.codeptr.get() as *const c_void;
            if let Some(cb) = tool.target_emi {
                // SAFETY: the tool's callback, with the arguments the specification defines;
                // the data pointers are this thread's construct state, live for the construct.
                unsafe {
                    cb(
                        self.kind as c_int,
                        endpoint,
                        self.device_num,
                        c.task_data.get(),
                        c.target_task_data.get(),
                        c.target_data.as_ptr(),
                        codeptr,
                    )
                };
            } else if let Some(cb) = tool.target {
                // SAFETY: as above.
                unsafe {
                    cb(
                        self.kind as c_int,
                        endpoint,
                        self.device_num,
                        c.task_data.get(),
                        c.target_data.get(),
                        codeptr,
                    )
                };
            }
        });
    }
}

impl Drop for ConstructScope {
    #[inline]
    fn drop(&mut self) {
        if let Some(tool) = self.tool {
            self.end(tool);
        }
    }
}

/// Stands for the host (`omp_get_initial_device()`) in a data operation's device numbers.
pub(crate) const HOST: i32 = i32::MIN;

/// One data operation: the begin event now (the only one for non-EMI tools), the EMI end
/// event when dropped. Without a tool listening for data operations it is empty: nothing is
/// built, moved or dropped but a tag, on the path of every transfer and allocation.
pub(crate) struct DataOp(Option<ReportedDataOp>);

/// A data operation a tool is told about.
struct ReportedDataOp {
    kind: DataOpKind,
    src: usize,
    src_device: i32,
    dst: usize,
    dst_device: i32,
    bytes: usize,
    codeptr: *const c_void,
    tool: &'static Tool,
}

impl DataOp {
    #[inline]
    pub(crate) fn begin(
        kind: DataOpKind,
        src: (usize, i32),
        dst: (usize, i32),
        bytes: u64,
    ) -> DataOp {
        match tool() {
            Some(tool) if tool.data_op_emi.is_some() || tool.data_op.is_some() => {
                DataOp(Some(ReportedDataOp::begin(tool, kind, src, dst, bytes)))
            }
            _ => DataOp(None),
        }
    }

    /// An allocation of `bytes` on `device` for host data at `host` (0 for none); the device
    /// address is reported at the end, once known (`allocated`).
    #[inline]
    pub(crate) fn alloc(device: i32, host: usize, bytes: u64) -> DataOp {
        DataOp::begin(DataOpKind::Alloc, (host, HOST), (0, device), bytes)
    }

    #[inline]
    pub(crate) fn allocated(&mut self, device_address: usize) {
        if let Some(op) = &mut self.0 {
            op.dst = device_address;
        }
    }

    /// Freeing device memory: reported with the device address as the source, as LLVM.
    #[inline]
    pub(crate) fn delete(device: i32, device_address: usize) -> DataOp {
        DataOp::begin(DataOpKind::Delete, (device_address, device), (0, -1), 0)
    }
}

impl Drop for DataOp {
    #[inline]
    fn drop(&mut self) {
        if let Some(op) = &self.0 {
            op.emit(SCOPE_END);
        }
    }
}

impl ReportedDataOp {
    #[cold]
    fn begin(
        tool: &'static Tool,
        kind: DataOpKind,
        (src, src_device): (usize, i32),
        (dst, dst_device): (usize, i32),
        bytes: u64,
    ) -> ReportedDataOp {
        let mut op = ReportedDataOp {
            kind,
            src,
            src_device,
            dst,
            dst_device,
            bytes: bytes as usize,
            codeptr: current_codeptr(),
            tool,
        };
        for device in [&mut op.src_device, &mut op.dst_device] {
            if *device == HOST {
                *device = host_device();
            }
        }
        op.emit(SCOPE_BEGIN);
        op
    }

    fn emit(&self, endpoint: c_int) {
        let tool = self.tool;
        CONSTRUCT.with(|c| {
            if let Some(cb) = tool.data_op_emi {
                // SAFETY: the tool's callback with the specification's arguments; the data and
                // id pointers are this thread's construct state.
                unsafe {
                    cb(
                        endpoint,
                        c.target_task_data.get(),
                        c.target_data.as_ptr(),
                        c.host_op_id.as_ptr(),
                        self.kind as c_int,
                        self.src as *mut c_void,
                        self.src_device,
                        self.dst as *mut c_void,
                        self.dst_device,
                        self.bytes,
                        self.codeptr,
                    )
                };
            } else if let (Some(cb), SCOPE_BEGIN) = (tool.data_op, endpoint) {
                c.host_op_id.set(new_id());
                // SAFETY: as above.
                unsafe {
                    cb(
                        c.target_data.get(),
                        c.host_op_id.get(),
                        self.kind as c_int,
                        self.src as *mut c_void,
                        self.src_device,
                        self.dst as *mut c_void,
                        self.dst_device,
                        self.bytes,
                        self.codeptr,
                    )
                };
            }
        });
    }
}

/// A kernel launch: the begin event now, the EMI end event when dropped.
pub(crate) struct Submit {
    requested_teams: u32,
    tool: Option<&'static Tool>,
}

impl Submit {
    pub(crate) fn begin(requested_teams: u32) -> Submit {
        let mut submit = Submit {
            requested_teams,
            tool: None,
        };
        let Some(tool) = tool() else { return submit };
        submit.tool = Some(tool);
        CONSTRUCT.with(|c| {
            if let Some(cb) = tool.submit_emi {
                // SAFETY: the tool's callback; pointers into this thread's construct state.
                unsafe {
                    cb(
                        SCOPE_BEGIN,
                        c.target_data.as_ptr(),
                        c.host_op_id.as_ptr(),
                        requested_teams,
                    )
                };
            } else if let Some(cb) = tool.submit {
                c.host_op_id.set(new_id());
                // SAFETY: the tool's callback.
                unsafe { cb(c.target_data.get(), c.host_op_id.get(), requested_teams) };
            }
        });
        submit
    }
}

impl Drop for Submit {
    fn drop(&mut self) {
        let Some(cb) = self.tool.and_then(|t| t.submit_emi) else {
            return;
        };
        CONSTRUCT.with(|c| {
            // SAFETY: as in `begin`.
            unsafe {
                cb(
                    SCOPE_END,
                    c.target_data.as_ptr(),
                    c.host_op_id.as_ptr(),
                    self.requested_teams,
                )
            };
        });
    }
}

/// A device became ready. `kind` names its compute unit as LLVM's plugins do
/// (`generic-64bit` for the host, `sm_90`, `gfx90a`); `handle` identifies it to the tool.
pub(crate) fn device_initialized(device_num: i32, kind: &str, handle: *const c_void) {
    let Some(tool) = tool() else { return };
    let Some(cb) = tool.device_initialize else {
        return;
    };
    let kind = CString::new(kind).unwrap_or_default();
    // SAFETY: the tool's callback; `kind` lives across the call.
    unsafe {
        cb(
            device_num,
            kind.as_ptr(),
            handle as *mut c_void,
            tool.lookup,
            std::ptr::null(),
        )
    };
}

pub(crate) fn device_finalized(device_num: i32) {
    if let Some(cb) = tool().and_then(|t| t.device_finalize) {
        // SAFETY: the tool's callback.
        unsafe { cb(device_num) };
    }
}

/// A device image was loaded. The image lives in the program's memory at `image`; the
/// runtime has no file name for it (as LLVM).
pub(crate) fn image_loaded(device_num: i32, image: &[u8], module_id: u64) {
    if let Some(cb) = tool().and_then(|t| t.device_load) {
        // SAFETY: the tool's callback; the image stays registered while the tool may look.
        unsafe {
            cb(
                device_num,
                std::ptr::null(),
                0,
                std::ptr::null_mut(),
                image.len(),
                image.as_ptr() as *mut c_void,
                std::ptr::null_mut(),
                module_id,
            )
        };
    }
}

pub(crate) fn image_unloaded(device_num: i32, module_id: u64) {
    if let Some(cb) = tool().and_then(|t| t.device_unload) {
        // SAFETY: the tool's callback.
        unsafe { cb(device_num, module_id) };
    }
}
