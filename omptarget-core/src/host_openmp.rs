//! Values owned by the host OpenMP runtime (libomp), looked up at run time so that our library
//! does not link against it.

use once_cell::sync::OnceCell;
use std::ffi::{c_char, c_int, c_void};

extern "C" {
    fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
}

/// `RTLD_DEFAULT`: search the global scope.
const RTLD_DEFAULT: *mut c_void = std::ptr::null_mut();

fn lookup(name: &std::ffi::CStr) -> Option<extern "C" fn() -> c_int> {
    // SAFETY: dlsym with RTLD_DEFAULT and a NUL-terminated name has no preconditions.
    let address = unsafe { dlsym(RTLD_DEFAULT, name.as_ptr()) };
    if address.is_null() {
        return None;
    }
    // SAFETY: libomp's omp_get_default_device has the signature `int (void)`.
    Some(unsafe { std::mem::transmute::<*mut c_void, extern "C" fn() -> c_int>(address) })
}

/// `omp_get_default_device()` of libomp (OMP_DEFAULT_DEVICE, `omp_set_default_device`); 0 when
/// no host OpenMP runtime is loaded.
pub fn default_device() -> i32 {
    static FUNCTION: OnceCell<Option<extern "C" fn() -> c_int>> = OnceCell::new();
    FUNCTION
        .get_or_init(|| lookup(c"omp_get_default_device"))
        .map_or(0, |f| f())
}

/// libomp's task interface, for the `_async` device-memory routines: each becomes a hidden
/// helper task with the caller's dependences, as in LLVM.
mod tasks {
    use super::*;

    /// The head of libomp's `kmp_task_t`; libomp allocates the whole structure.
    #[repr(C)]
    pub struct KmpTask {
        pub shareds: *mut c_void,
        pub routine: TaskRoutine,
        pub part_id: i32,
    }

    pub type TaskRoutine = extern "C" fn(gtid: i32, task: *mut KmpTask) -> i32;
    /// `kmp_task_t` is 40 bytes on 64-bit targets: shareds, routine, part_id, data1, data2.
    pub const KMP_TASK_SIZE: usize = 40;
    /// `kmp_tasking_flags_t::hidden_helper`.
    pub const HIDDEN_HELPER: i32 = 1 << 7;

    pub type GlobalThreadNum = unsafe extern "C" fn(loc: *const c_void) -> i32;
    pub type TargetTaskAlloc = unsafe extern "C" fn(
        loc: *const c_void,
        gtid: i32,
        flags: i32,
        sizeof_task: usize,
        sizeof_shareds: usize,
        routine: TaskRoutine,
        device_id: i64,
    ) -> *mut KmpTask;
    pub type TaskWithDeps = unsafe extern "C" fn(
        loc: *const c_void,
        gtid: i32,
        task: *mut KmpTask,
        ndeps: i32,
        deps: *const DependInfo,
        ndeps_noalias: i32,
        noalias: *const DependInfo,
    ) -> i32;

    /// libomp's `kmp_depend_info_t`: what an `omp_depend_t` points to.
    #[repr(C)]
    #[derive(Copy, Clone)]
    pub struct DependInfo {
        pub base_addr: isize,
        pub len: usize,
        pub flags: u8,
    }

    pub struct Api {
        pub global_thread_num: GlobalThreadNum,
        pub task_alloc: TargetTaskAlloc,
        pub task_with_deps: TaskWithDeps,
    }

    pub(super) fn symbol(name: &std::ffi::CStr) -> Option<usize> {
        // SAFETY: dlsym with RTLD_DEFAULT and a NUL-terminated name has no preconditions.
        let address = unsafe { dlsym(RTLD_DEFAULT, name.as_ptr()) };
        (!address.is_null()).then_some(address as usize)
    }

    pub fn api() -> Option<&'static Api> {
        static API: OnceCell<Option<Api>> = OnceCell::new();
        API.get_or_init(|| {
            let (a, b, c) = (
                symbol(c"__kmpc_global_thread_num")?,
                symbol(c"__kmpc_omp_target_task_alloc")?,
                symbol(c"__kmpc_omp_task_with_deps")?,
            );
            // SAFETY: libomp's functions with the signatures of its kmp.h.
            unsafe {
                Some(Api {
                    global_thread_num: std::mem::transmute::<usize, GlobalThreadNum>(a),
                    task_alloc: std::mem::transmute::<usize, TargetTaskAlloc>(b),
                    task_with_deps: std::mem::transmute::<usize, TaskWithDeps>(c),
                })
            }
        })
        .as_ref()
    }
}

type Work = Box<dyn FnOnce() + Send>;

extern "C" fn run_work(_gtid: i32, task: *mut tasks::KmpTask) -> i32 {
    // SAFETY: `shareds` holds the Box<Work> leaked by `spawn_with_dependences`, run once.
    let work = unsafe { Box::from_raw((*task).shareds as *mut Work) };
    // A panic must not unwind into libomp.
    if std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)).is_err() {
        crate::logging::failure_message("internal error in an asynchronous device-memory task");
    }
    0
}

/// Runs `work` as a libomp task after the dependences in `deps` (`omp_depend_t` objects), as
/// LLVM's `_async` routines do. Without libomp in the process there can be no dependences and
/// no one to wait: the work runs now.
///
/// # Safety
/// `deps` must hold `count` valid `omp_depend_t` objects (or be null when `count` is 0).
pub unsafe fn spawn_with_dependences(work: Work, count: c_int, deps: *const *const c_void) -> bool {
    let Some(api) = tasks::api() else {
        work();
        return true;
    };
    let dependences: Vec<tasks::DependInfo> = (0..count.max(0) as usize)
        .filter_map(|i| {
            // SAFETY: caller's promise: `count` depend objects, each pointing at a kmp_depend_info_t.
            let object = unsafe { *deps.add(i) } as *const tasks::DependInfo;
            (!object.is_null()).then(|| unsafe { *object })
        })
        .collect();
    // SAFETY: libomp's documented task protocol: allocate, fill shareds, submit.
    unsafe {
        let gtid = (api.global_thread_num)(std::ptr::null());
        let task = (api.task_alloc)(
            std::ptr::null(),
            gtid,
            tasks::HIDDEN_HELPER,
            tasks::KMP_TASK_SIZE,
            0,
            run_work,
            -1,
        );
        if task.is_null() {
            return false;
        }
        (*task).shareds = Box::into_raw(Box::new(work)) as *mut c_void;
        (api.task_with_deps)(
            std::ptr::null(),
            gtid,
            task,
            dependences.len() as i32,
            dependences.as_ptr(),
            0,
            std::ptr::null(),
        );
    }
    true
}

/// libomp's `__kmpc_omp_wait_deps`: blocks until the sibling tasks the dependences name have
/// completed.
type WaitDependences = unsafe extern "C" fn(
    loc: *const c_void,
    gtid: i32,
    ndeps: i32,
    deps: *const c_void,
    ndeps_noalias: i32,
    noalias: *const c_void,
);

/// Waits, as a task scheduling point, for the tasks that `deps` and `noalias`
/// (`kmp_depend_info_t` arrays from the compiler) depend on, as the `depend` clause of an
/// `interop` construct requires. Without libomp in the process no task can be pending.
///
/// # Safety
/// `deps` must hold `ndeps` and `noalias` `ndeps_noalias` `kmp_depend_info_t` records (null
/// when the count is 0), and `gtid` must be the calling thread's libomp thread number.
pub unsafe fn wait_for_dependences(
    loc: *const c_void,
    gtid: i32,
    ndeps: i32,
    deps: *const c_void,
    ndeps_noalias: i32,
    noalias: *const c_void,
) {
    static FUNCTION: OnceCell<Option<WaitDependences>> = OnceCell::new();
    let wait = FUNCTION.get_or_init(|| {
        // SAFETY: dlsym with RTLD_DEFAULT and a NUL-terminated name has no preconditions.
        let address = unsafe { dlsym(RTLD_DEFAULT, c"__kmpc_omp_wait_deps".as_ptr()) };
        // SAFETY: libomp's __kmpc_omp_wait_deps has the signature of its kmp.h.
        (!address.is_null())
            .then(|| unsafe { std::mem::transmute::<*mut c_void, WaitDependences>(address) })
    });
    if let Some(wait) = wait {
        if ndeps > 0 || ndeps_noalias > 0 {
            // SAFETY: the caller's promise about the arrays and the thread number.
            unsafe { wait(loc, gtid, ndeps, deps, ndeps_noalias, noalias) };
        }
    }
}

/// libomp's slot for a `nowait` target task's asynchronous handle.
type HasTaskTeam = unsafe extern "C" fn(gtid: i32) -> bool;
type AsyncHandleSlot = unsafe extern "C" fn(gtid: i32) -> *mut *mut c_void;

struct AsyncHandleApi {
    global_thread_num: tasks::GlobalThreadNum,
    has_task_team: HasTaskTeam,
    handle_slot: AsyncHandleSlot,
}

/// Where the current `nowait` target task keeps its asynchronous handle, as LLVM's runtime
/// asks libomp: only a task with a task team can be run again later, to poll
/// `__tgt_target_nowait_query`. `None` without libomp, outside such a task, or when the slot is
/// already taken (the construct then completes before returning).
pub fn target_task_handle_slot() -> Option<*mut *mut c_void> {
    static API: OnceCell<Option<AsyncHandleApi>> = OnceCell::new();
    let api = API
        .get_or_init(|| {
            let symbol = tasks::symbol;
            let (a, b, c) = (
                symbol(c"__kmpc_global_thread_num")?,
                symbol(c"__kmpc_omp_has_task_team")?,
                symbol(c"__kmpc_omp_get_target_async_handle_ptr")?,
            );
            // SAFETY: libomp's functions with the signatures of its kmp.h.
            unsafe {
                Some(AsyncHandleApi {
                    global_thread_num: std::mem::transmute::<usize, tasks::GlobalThreadNum>(a),
                    has_task_team: std::mem::transmute::<usize, HasTaskTeam>(b),
                    handle_slot: std::mem::transmute::<usize, AsyncHandleSlot>(c),
                })
            }
        })
        .as_ref()?;
    // SAFETY: libomp's calls take the calling thread's number (KMP_GTID_DNE, -2, if it has none).
    unsafe {
        let gtid = (api.global_thread_num)(std::ptr::null());
        if gtid == -2 || !(api.has_task_team)(gtid) {
            return None;
        }
        let slot = (api.handle_slot)(gtid);
        (!slot.is_null() && (*slot).is_null()).then_some(slot)
    }
}
