//! Values owned by the host OpenMP runtime (libomp), looked up at run time so that our library
//! does not link against it.

use once_cell::sync::OnceCell;
use std::ffi::{c_char, c_int, c_void};
use std::sync::atomic::{AtomicBool, Ordering};

extern "C" {
    fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
}

/// `RTLD_DEFAULT`: search the global scope.
const RTLD_DEFAULT: *mut c_void = std::ptr::null_mut();

/// The head of libomp's `kmp_task_t`; libomp allocates the whole structure.
#[repr(C)]
struct KmpTask {
    shareds: *mut c_void,
    routine: TaskRoutine,
    part_id: i32,
}

type TaskRoutine = extern "C" fn(gtid: i32, task: *mut KmpTask) -> i32;
/// `kmp_task_t` is 40 bytes on 64-bit targets: shareds, routine, part_id, data1, data2.
const KMP_TASK_SIZE: usize = 40;
/// `kmp_tasking_flags_t::hidden_helper`.
const HIDDEN_HELPER: i32 = 1 << 7;

/// libomp's `kmp_depend_info_t`: what an `omp_depend_t` points to.
#[repr(C)]
#[derive(Copy, Clone)]
struct DependInfo {
    base_addr: isize,
    len: usize,
    flags: u8,
}

type DefaultDevice = extern "C" fn() -> c_int;
type GlobalThreadNum = unsafe extern "C" fn(loc: *const c_void) -> i32;
type TargetTaskAlloc = unsafe extern "C" fn(
    loc: *const c_void,
    gtid: i32,
    flags: i32,
    sizeof_task: usize,
    sizeof_shareds: usize,
    routine: TaskRoutine,
    device_id: i64,
) -> *mut KmpTask;
type TaskWithDeps = unsafe extern "C" fn(
    loc: *const c_void,
    gtid: i32,
    task: *mut KmpTask,
    ndeps: i32,
    deps: *const DependInfo,
    ndeps_noalias: i32,
    noalias: *const DependInfo,
) -> i32;
/// `__kmpc_omp_wait_deps`, whose arguments are [`wait_for_dependences`]'s.
type WaitDependences =
    unsafe extern "C" fn(*const c_void, i32, i32, *const c_void, i32, *const c_void);
type HasTaskTeam = unsafe extern "C" fn(gtid: i32) -> bool;
type TaskWait = unsafe extern "C" fn(loc: *const c_void, gtid: i32) -> i32;
type AsyncHandleSlot = unsafe extern "C" fn(gtid: i32) -> *mut *mut c_void;

/// The libomp functions this runtime calls, each `None` where the process has no libomp (or
/// one too old to have it). One table, filled once at the first call to any of them.
struct Libomp {
    default_device: Option<DefaultDevice>,
    global_thread_num: Option<GlobalThreadNum>,
    task_alloc: Option<TargetTaskAlloc>,
    task_with_deps: Option<TaskWithDeps>,
    wait_deps: Option<WaitDependences>,
    has_task_team: Option<HasTaskTeam>,
    handle_slot: Option<AsyncHandleSlot>,
    taskwait: Option<TaskWait>,
}

fn symbol(name: &std::ffi::CStr) -> Option<*mut c_void> {
    // SAFETY: dlsym with RTLD_DEFAULT and a NUL-terminated name has no preconditions.
    let address = unsafe { dlsym(RTLD_DEFAULT, name.as_ptr()) };
    (!address.is_null()).then_some(address)
}

fn libomp() -> &'static Libomp {
    static LIBOMP: OnceCell<Libomp> = OnceCell::new();
    LIBOMP.get_or_init(|| {
        // SAFETY: each name is a libomp function whose signature (kmp.h, omp.h) is the type
        // it is read as.
        unsafe {
            Libomp {
                default_device: symbol(c"omp_get_default_device").map(|a| std::mem::transmute(a)),
                global_thread_num: symbol(c"__kmpc_global_thread_num")
                    .map(|a| std::mem::transmute(a)),
                task_alloc: symbol(c"__kmpc_omp_target_task_alloc").map(|a| std::mem::transmute(a)),
                task_with_deps: symbol(c"__kmpc_omp_task_with_deps")
                    .map(|a| std::mem::transmute(a)),
                wait_deps: symbol(c"__kmpc_omp_wait_deps").map(|a| std::mem::transmute(a)),
                has_task_team: symbol(c"__kmpc_omp_has_task_team").map(|a| std::mem::transmute(a)),
                handle_slot: symbol(c"__kmpc_omp_get_target_async_handle_ptr")
                    .map(|a| std::mem::transmute(a)),
                taskwait: symbol(c"__kmpc_omp_taskwait").map(|a| std::mem::transmute(a)),
            }
        }
    })
}

/// `omp_get_default_device()` of libomp (OMP_DEFAULT_DEVICE, `omp_set_default_device`); 0 when
/// no host OpenMP runtime is loaded.
pub(crate) fn default_device() -> i32 {
    libomp().default_device.map_or(0, |f| f())
}

type Work = Box<dyn FnOnce() + Send>;

extern "C" fn run_work(_gtid: i32, task: *mut KmpTask) -> i32 {
    // SAFETY: `shareds` holds the Box<Work> leaked by `spawn_with_dependences`, run once.
    let work = unsafe { Box::from_raw((*task).shareds as *mut Work) };
    // A panic must not unwind into libomp.
    if std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)).is_err() {
        crate::observe::logging::failure_message(
            "internal error in an asynchronous device-memory task",
        );
    }
    0
}

/// Runs `work` as a libomp task after the dependences in `deps` (`omp_depend_t` objects), as
/// LLVM's `_async` routines do. Without libomp in the process there can be no dependences and
/// no one to wait: the work runs now.
///
/// # Safety
/// `deps` must hold `count` valid `omp_depend_t` objects (or be null when `count` is 0).
pub(crate) unsafe fn spawn_with_dependences(
    work: Work,
    count: c_int,
    deps: *const *const c_void,
) -> bool {
    let omp = libomp();
    let (Some(global_thread_num), Some(task_alloc), Some(task_with_deps)) =
        (omp.global_thread_num, omp.task_alloc, omp.task_with_deps)
    else {
        work();
        return true;
    };
    let dependences: Vec<DependInfo> = (0..count.max(0) as usize)
        .filter_map(|i| {
            // SAFETY: caller's promise: `count` depend objects, each pointing at a kmp_depend_info_t.
            let object = unsafe { *deps.add(i) } as *const DependInfo;
            // SAFETY: a non-null depend object points at a kmp_depend_info_t (as above).
            (!object.is_null()).then(|| unsafe { *object })
        })
        .collect();
    // SAFETY: libomp's documented task protocol: allocate, fill shareds, submit.
    unsafe {
        let gtid = global_thread_num(std::ptr::null());
        let task = task_alloc(
            std::ptr::null(),
            gtid,
            HIDDEN_HELPER,
            KMP_TASK_SIZE,
            0,
            run_work,
            -1,
        );
        if task.is_null() {
            return false;
        }
        (*task).shareds = Box::into_raw(Box::new(work)) as *mut c_void;
        task_with_deps(
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

/// Waits, as a task scheduling point, for the tasks that `deps` and `noalias`
/// (`kmp_depend_info_t` arrays from the compiler) depend on, as the `depend` clause of an
/// `interop` construct requires (libomp's `__kmpc_omp_wait_deps`). Without libomp in the
/// process no task can be pending.
///
/// # Safety
/// `deps` must hold `ndeps` and `noalias` `ndeps_noalias` `kmp_depend_info_t` records (null
/// when the count is 0), and `gtid` must be the calling thread's libomp thread number.
pub(crate) unsafe fn wait_for_dependences(
    loc: *const c_void,
    gtid: i32,
    ndeps: i32,
    deps: *const c_void,
    ndeps_noalias: i32,
    noalias: *const c_void,
) {
    if let Some(wait) = libomp().wait_deps {
        if ndeps > 0 || ndeps_noalias > 0 {
            // SAFETY: the caller's promise about the arrays and the thread number.
            unsafe { wait(loc, gtid, ndeps, deps, ndeps_noalias, noalias) };
        }
    }
}

/// Set once a `nowait` construct has run: see [`wait_for_child_tasks`].
static NOWAIT_SEEN: AtomicBool = AtomicBool::new(false);

/// A `nowait` construct runs (in its target task): from now on the program may have target
/// tasks still queued or running when it unregisters its last offloading library.
#[inline]
pub(crate) fn note_nowait_construct() {
    if !NOWAIT_SEEN.load(Ordering::Relaxed) {
        NOWAIT_SEEN.store(true, Ordering::Relaxed);
    }
}

/// Waits, as `#pragma omp taskwait` does, for the calling thread's child tasks, once any
/// `nowait` construct has run. A program may return from `main` with `nowait` target regions
/// still queued or running (HeCBench's burger-omp does): it unregisters its offloading library
/// from an exit handler, while libomp finishes the remaining target tasks only in its own
/// destructor, which runs after every exit handler. Releasing the mappings and shutting the
/// plugins down first would leave those tasks a device that is gone (LLVM's runtime crashes
/// there). Called as a library is unregistered, before any of its kernels or mappings go.
pub(crate) fn wait_for_child_tasks() {
    if !NOWAIT_SEEN.load(Ordering::Relaxed) {
        return;
    }
    let omp = libomp();
    let (Some(global_thread_num), Some(taskwait)) = (omp.global_thread_num, omp.taskwait) else {
        return;
    };
    // SAFETY: libomp's calls take a null location and the calling thread's number.
    unsafe {
        let gtid = global_thread_num(std::ptr::null());
        if gtid >= 0 {
            taskwait(std::ptr::null(), gtid);
        }
    }
}

/// Where the current `nowait` target task keeps its asynchronous handle, as LLVM's runtime
/// asks libomp: only a task with a task team can be run again later, to poll
/// `__tgt_target_nowait_query`. `None` without libomp, outside such a task, or when the slot is
/// already taken (the construct then completes before returning).
pub(crate) fn target_task_handle_slot() -> Option<*mut *mut c_void> {
    let omp = libomp();
    let (global_thread_num, has_task_team, handle_slot) =
        (omp.global_thread_num?, omp.has_task_team?, omp.handle_slot?);
    // SAFETY: libomp's calls take the calling thread's number (KMP_GTID_DNE, -2, if it has none).
    unsafe {
        let gtid = global_thread_num(std::ptr::null());
        if gtid == -2 || !has_task_team(gtid) {
            return None;
        }
        let slot = handle_slot(gtid);
        (!slot.is_null() && (*slot).is_null()).then_some(slot)
    }
}
