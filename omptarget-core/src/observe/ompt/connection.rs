//! The connection with libomp's OMPT: the tool registers its callbacks with libomp
//! (`ompt_set_callback`); this runtime asks libomp for them once, at start-up, through
//! `ompt_libomp_connect`, as LLVM's runtime does.

use super::abi::*;
use once_cell::sync::OnceCell;
use std::ffi::{c_int, CStr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, Once, OnceLock};

/// The callbacks a tool registered, bound once. A tool registering target callbacks after
/// the runtime started is not seen (as with LLVM).
#[derive(Default)]
pub(crate) struct Tool {
    pub target: Option<TargetCb>,
    pub target_emi: Option<TargetEmiCb>,
    pub data_op: Option<DataOpCb>,
    pub data_op_emi: Option<DataOpEmiCb>,
    pub submit: Option<SubmitCb>,
    pub submit_emi: Option<SubmitEmiCb>,
    pub device_initialize: Option<DeviceInitializeCb>,
    pub device_finalize: Option<DeviceFinalizeCb>,
    pub device_load: Option<DeviceLoadCb>,
    pub device_unload: Option<DeviceUnloadCb>,
    pub get_task_data: Option<GetDataFn>,
    pub get_target_task_data: Option<GetDataFn>,
    /// libomp's lookup, handed on to `device_initialize` and to connecting plugins.
    pub lookup: Option<LookupFn>,
}

static TOOL: OnceCell<Tool> = OnceCell::new();
/// True from a successful connection until libomp finalizes the tool: the one check every
/// event makes when no tool is attached.
static ACTIVE: AtomicBool = AtomicBool::new(false);

/// The host's device number (`omp_get_initial_device`), from the runtime that connected: it
/// grows as devices are found, so it is asked at each event.
static HOST_DEVICE: OnceLock<fn() -> i32> = OnceLock::new();

/// What libomp handed to `initialize`, picked up by `connect` when the call returns.
static HANDED: Mutex<Option<(LookupFn, Option<GetCallbackFn>)>> = Mutex::new(None);
/// Finalizers of plugins that connected through `ompt_libomptarget_connect`.
static PLUGIN_FINALIZERS: Mutex<Vec<FinalizeFn>> = Mutex::new(Vec::new());

/// The attached tool, if any (None also once it was finalized).
#[inline]
pub(crate) fn tool() -> Option<&'static Tool> {
    if !ACTIVE.load(Ordering::Acquire) {
        return None;
    }
    TOOL.get()
}

/// Connects with libomp once. Without a tool (libomp's OMPT disabled, or no libomp with OMPT)
/// nothing is bound and every event stays a single atomic load. `host_device` gives the host's
/// device number, which events report for host memory.
pub(crate) fn connect(host_device: fn() -> i32) {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = HOST_DEVICE.set(host_device);
        let Some(libomp_connect) = find_libomp_connect() else {
            log::debug!("OMPT: libomp has no ompt_libomp_connect; no tool support");
            return;
        };
        // libomp keeps a pointer to this result and calls its finalizer at shutdown.
        static RESULT: StartToolResult = StartToolResult {
            initialize: Some(initialize),
            finalize: Some(finalize),
            tool_data: 0,
        };
        // SAFETY: libomp's connect function takes an `ompt_start_tool_result_t*`; it calls
        // `initialize` synchronously when a tool is active and keeps the pointer ('static).
        unsafe { libomp_connect(&RESULT as *const StartToolResult as *mut StartToolResult) };
        let Some((lookup, get_callback)) = HANDED.lock().unwrap().take() else {
            log::debug!("OMPT: no tool attached");
            return;
        };
        let tool = bind(lookup, get_callback);
        let _ = TOOL.set(tool);
        ACTIVE.store(true, Ordering::Release);
        log::debug!("OMPT: connected with libomp; target callbacks bound");
    });
}

/// The host's device number; events happen only once a tool is connected, so `connect` gave it.
pub(crate) fn host_device() -> i32 {
    HOST_DEVICE.get().map_or(0, |number| number())
}

type LibompConnectFn = unsafe extern "C" fn(result: *mut StartToolResult);

/// libomp's `ompt_libomp_connect`, looked up in the libraries the program already loaded
/// (LLVM opens `libomp.so` by name, which fails where only `libomp.so.5` is installed).
fn find_libomp_connect() -> Option<LibompConnectFn> {
    let program = libloading::os::unix::Library::this();
    // SAFETY: the symbol, when present, is libomp's `void ompt_libomp_connect(ompt_start_tool_result_t*)`.
    let symbol = unsafe { program.get::<LibompConnectFn>(b"ompt_libomp_connect\0") };
    let found = symbol.ok().map(|s| *s);
    // The program's handle on itself stays open: libomp cannot be unloaded under us anyway.
    std::mem::forget(program);
    found
}

/// `ompt_initialize_t` given to libomp: receives libomp's lookup function.
unsafe extern "C" fn initialize(lookup: LookupFn, _device: c_int, _data: *mut OmptData) -> c_int {
    // SAFETY: `lookup` is libomp's and takes a NUL-terminated name.
    let get_callback = unsafe { lookup(c"ompt_get_callback".as_ptr()) }
        // SAFETY: libomp returns `ompt_get_callback` under that name.
        .map(|f| unsafe { std::mem::transmute::<AnyFn, GetCallbackFn>(f) });
    *HANDED.lock().unwrap_or_else(|e| e.into_inner()) = Some((lookup, get_callback));
    0
}

/// `ompt_finalize_t` given to libomp: the tool is being finalized, so no event may reach it
/// any more. Connected plugins are finalized first.
unsafe extern "C" fn finalize(_data: *mut OmptData) {
    ACTIVE.store(false, Ordering::Release);
    let finalizers =
        std::mem::take(&mut *PLUGIN_FINALIZERS.lock().unwrap_or_else(|e| e.into_inner()));
    for f in finalizers {
        // SAFETY: a plugin's own `ompt_finalize_t`, registered through ompt_libomptarget_connect.
        unsafe { f(std::ptr::null_mut()) };
    }
}

fn bind(lookup: LookupFn, get_callback: Option<GetCallbackFn>) -> Tool {
    let callback = |code: i32| -> Option<AnyFn> {
        let get = get_callback?;
        let mut f: Option<AnyFn> = None;
        // SAFETY: libomp's `ompt_get_callback(code, &fn)` writes the registered callback.
        let found = unsafe { get(code, &mut f) };
        if found == 1 {
            f
        } else {
            None
        }
    };
    let data_fn = |name: &CStr| -> Option<GetDataFn> {
        // SAFETY: libomp's lookup takes a NUL-terminated name.
        let f = unsafe { lookup(name.as_ptr()) }?;
        // SAFETY: libomp provides both task-data getters with this signature.
        Some(unsafe { std::mem::transmute::<AnyFn, GetDataFn>(f) })
    };
    // SAFETY: (each cast below) libomp stored the callback the tool registered under that
    // code, and the OpenMP specification fixes each code's signature.
    unsafe {
        Tool {
            target: callback(code::TARGET).map(|f| std::mem::transmute::<AnyFn, TargetCb>(f)),
            target_emi: callback(code::TARGET_EMI)
                .map(|f| std::mem::transmute::<AnyFn, TargetEmiCb>(f)),
            data_op: callback(code::TARGET_DATA_OP)
                .map(|f| std::mem::transmute::<AnyFn, DataOpCb>(f)),
            data_op_emi: callback(code::TARGET_DATA_OP_EMI)
                .map(|f| std::mem::transmute::<AnyFn, DataOpEmiCb>(f)),
            submit: callback(code::TARGET_SUBMIT)
                .map(|f| std::mem::transmute::<AnyFn, SubmitCb>(f)),
            submit_emi: callback(code::TARGET_SUBMIT_EMI)
                .map(|f| std::mem::transmute::<AnyFn, SubmitEmiCb>(f)),
            device_initialize: callback(code::DEVICE_INITIALIZE)
                .map(|f| std::mem::transmute::<AnyFn, DeviceInitializeCb>(f)),
            device_finalize: callback(code::DEVICE_FINALIZE)
                .map(|f| std::mem::transmute::<AnyFn, DeviceFinalizeCb>(f)),
            device_load: callback(code::DEVICE_LOAD)
                .map(|f| std::mem::transmute::<AnyFn, DeviceLoadCb>(f)),
            device_unload: callback(code::DEVICE_UNLOAD)
                .map(|f| std::mem::transmute::<AnyFn, DeviceUnloadCb>(f)),
            get_task_data: data_fn(c"ompt_get_task_data"),
            get_target_task_data: data_fn(c"ompt_get_target_task_data"),
            lookup: Some(lookup),
        }
    }
}

/// `ompt_libomptarget_connect`: a plugin built on LLVM's OMPT connector asks for the tool's
/// callbacks. As LLVM: its initializer gets libomp's lookup, its finalizer runs at shutdown.
pub(crate) fn connect_plugin(result: &StartToolResult) {
    let Some(tool) = tool() else { return };
    if let Some(f) = result.finalize {
        PLUGIN_FINALIZERS.lock().unwrap().push(f);
    }
    if let (Some(init), Some(lookup)) = (result.initialize, tool.lookup) {
        // SAFETY: the plugin's own initializer, called as LLVM's runtime calls it.
        unsafe { init(lookup, 0, std::ptr::null_mut()) };
    }
}
