//! Host kernels of `nowait` target regions run off libomp's hidden helper threads.
//!
//! libomp 19 runs every `target nowait` task on one of its hidden helper threads, and a host
//! kernel runs on the thread that launches it. The kernel's `teams` and `parallel` constructs
//! are then nested in the hidden helper team, so libomp serializes them, and while a
//! serialized region runs, the thread's task team is null and its team is the serialized
//! team (`__kmp_serialized_parallel`, kmp_runtime.cpp:1335; `__kmp_push_task_team_node`,
//! kmp_tasking.cpp:4081). Meanwhile an ordinary thread that creates a target task copies the
//! task team and team of its "shadow" hidden helper thread (gtid % (helpers - 1) + 2) into the
//! task (`__kmp_task_alloc`, kmp_tasking.cpp:1608-1612), and pushing the task hands it to that
//! team (`__kmp_push_task`, kmp_tasking.cpp:487; `__kmpc_give_task`), where
//! `__kmp_give_task` asserts `task_team != NULL` (kmp_tasking.cpp:4368), or, in a libomp built
//! without assertions, dereferences it. The shadow is the helper that runs most of its
//! thread's target tasks, so a thread issuing `nowait` regions while its previous kernel runs
//! hits this often: `nowait` loops under LLVM's runtime abort the same way.
//!
//! So a hidden helper thread hands a host kernel to a partner thread and waits for it. The
//! partners are the threads of one libomp parallel region of their own, one per hidden helper
//! worker: a kernel runs nested in an active parallel region, as on the hidden helper (its
//! `teams` and `parallel` regions serialized, `omp_get_level()` 2), on a thread whose task team
//! no other thread's tasks are ever given. Handing a kernel over costs two thread wake-ups (some
//! 8 µs more per `nowait` region on a 2-CPU VM). The team's region ends when the plugin shuts
//! down at exit ([`close`]).
//!
//! What remains is libomp's: the host version of a `nowait` region with `teams` or `parallel`
//! (offloading disabled, no device, a failed launch) runs in the hidden helper task itself,
//! where no offload runtime can move it, and still triggers the abort (with LLVM's runtime
//! too); so does a kernel launched while the team is closed or could not be formed.

use std::cell::UnsafeCell;
use std::ffi::{c_char, c_void};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, OnceLock};
use std::thread::Thread;
use std::time::Duration;
use sync_util::lock;

extern "C" {
    fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
    fn pthread_atfork(
        prepare: Option<extern "C" fn()>,
        parent: Option<extern "C" fn()>,
        child: Option<extern "C" fn()>,
    ) -> i32;
}

/// `KernelArgsTy::Flags.NoWait`, bit 0 of [`plugin_api::LaunchConfig::flags`].
pub const NOWAIT: u64 = 1;

type ThreadNum = unsafe extern "C" fn() -> i32;
type GlobalThreadNum = unsafe extern "C" fn(loc: *const c_void) -> i32;
type PushNumThreads = unsafe extern "C" fn(loc: *const c_void, gtid: i32, count: i32);
type PushProcBind = unsafe extern "C" fn(loc: *const c_void, gtid: i32, bind: i32);
type Microtask = unsafe extern "C" fn(gtid: *mut i32, tid: *mut i32, shared: *mut c_void);
type ForkCall = unsafe extern "C" fn(loc: *const c_void, argc: i32, microtask: Microtask, ...);
type StackSize = unsafe extern "C" fn() -> usize;

/// The libomp calls this module makes, where the process has them all.
struct Libomp {
    thread_num: ThreadNum,
    num_threads: ThreadNum,
    thread_limit: ThreadNum,
    global_thread_num: GlobalThreadNum,
    push_num_threads: PushNumThreads,
    push_proc_bind: PushProcBind,
    fork_call: ForkCall,
    stack_size: StackSize,
}

fn symbol(name: &std::ffi::CStr) -> Option<*mut c_void> {
    // SAFETY: dlsym with RTLD_DEFAULT (null) and a NUL-terminated name has no preconditions.
    let address = unsafe { dlsym(std::ptr::null_mut(), name.as_ptr()) };
    (!address.is_null()).then_some(address)
}

/// The function `name` of the process, as the function pointer type `F`.
///
/// # Safety
/// `F` must be a function pointer type of the function's signature.
unsafe fn function<F: Copy>(name: &std::ffi::CStr) -> Option<F> {
    const { assert!(std::mem::size_of::<F>() == std::mem::size_of::<*mut c_void>()) };
    let address = symbol(name)?;
    // SAFETY: the caller's promise; a function pointer is an address.
    Some(unsafe { std::mem::transmute_copy::<*mut c_void, F>(&address) })
}

fn libomp() -> Option<&'static Libomp> {
    static LIBOMP: OnceLock<Option<Libomp>> = OnceLock::new();
    LIBOMP
        .get_or_init(|| {
            // SAFETY: each name is a libomp function of the type it is read as (omp.h, kmp.h).
            unsafe {
                Some(Libomp {
                    thread_num: function(c"omp_get_thread_num")?,
                    num_threads: function(c"omp_get_num_threads")?,
                    thread_limit: function(c"omp_get_thread_limit")?,
                    global_thread_num: function(c"__kmpc_global_thread_num")?,
                    push_num_threads: function(c"__kmpc_push_num_threads")?,
                    push_proc_bind: function(c"__kmpc_push_proc_bind")?,
                    fork_call: function(c"__kmpc_fork_call")?,
                    stack_size: function(c"kmp_get_stacksize_s")?,
                })
            }
        })
        .as_ref()
}

/// The libomp thread numbers of the hidden helper workers, first and last: libomp gives its
/// hidden helper team numbers 1 to N (1 being the team's main thread, which runs no task) and
/// no other thread any of them. N is `LIBOMP_NUM_HIDDEN_HELPER_THREADS` + 1 (8 by default);
/// none without hidden helpers (`LIBOMP_USE_HIDDEN_HELPER_TASK` false, or 0 threads).
fn hidden_helper_workers() -> Option<(i32, i32)> {
    static WORKERS: OnceLock<Option<(i32, i32)>> = OnceLock::new();
    *WORKERS.get_or_init(|| {
        let setting = |name: &str| std::env::var(name).ok().map(|v| v.trim().to_lowercase());
        let disabled = |v: &str| {
            [
                "0", "f", "false", ".false.", "n", "no", "off", "disable", "disabled",
            ]
            .contains(&v)
        };
        if setting("LIBOMP_USE_HIDDEN_HELPER_TASK").is_some_and(|v| disabled(&v)) {
            return None;
        }
        // libomp takes 0 to 16 and keeps its default for anything else.
        let workers = setting("LIBOMP_NUM_HIDDEN_HELPER_THREADS")
            .and_then(|v| v.parse::<i32>().ok())
            .filter(|n| (0..=16).contains(n))
            .unwrap_or(7);
        (workers > 0).then_some((2, workers + 1))
    })
}

const IDLE: u32 = 0;
const POSTED: u32 = 1;
const DONE: u32 = 2;
/// The team is closing ([`close`]): the partner leaves the team's region.
const CLOSED: u32 = 3;

/// A kernel call handed to a partner.
struct Job {
    function: usize,
    args: *const usize,
    count: usize,
    /// The hidden helper thread waiting for the kernel to return.
    waiter: Option<Thread>,
}

/// One partner thread and its mailbox.
struct Slot {
    /// Hidden helpers sharing this partner (where libomp formed fewer partners than helpers)
    /// take turns.
    turn: Mutex<()>,
    state: AtomicU32,
    /// Written by the helper holding `turn` while `state` is IDLE; read by the partner while
    /// it is POSTED.
    job: UnsafeCell<Job>,
    partner: OnceLock<Thread>,
}

// SAFETY: `job` is handed between the two threads through `state` (release/acquire), as
// described on the field; everything else is Sync.
unsafe impl Sync for Slot {}

struct Team {
    slots: Box<[Slot]>,
    /// Partners that have taken their slot.
    arrived: AtomicUsize,
    /// The team's size once every partner has arrived.
    formed: Mutex<Option<usize>>,
    formed_signal: Condvar,
    /// The team's region has ended ([`close`]).
    joined: Mutex<bool>,
    joined_signal: Condvar,
}

/// Set in a child forked after the team formed: the child has none of its threads.
static FORKED: AtomicBool = AtomicBool::new(false);

extern "C" fn forked_child() {
    FORKED.store(true, Ordering::Relaxed);
}

/// The partner team and its size, formed at the first kernel a hidden helper launches; None
/// where libomp lacks a call it needs or the team could not be formed (kernels then run where
/// they are launched), in a forked child, which has none of the team's threads, and once the
/// team is closed ([`close`]).
fn team() -> Option<(&'static Team, usize)> {
    let team = *TEAM.get_or_init(form_team);
    team.filter(|_| !FORKED.load(Ordering::Relaxed) && !CLOSING.load(Ordering::Relaxed))
}

static TEAM: OnceLock<Option<(&'static Team, usize)>> = OnceLock::new();
/// Set by [`close`]: kernels run where they are launched again.
static CLOSING: AtomicBool = AtomicBool::new(false);

fn form_team() -> Option<(&'static Team, usize)> {
    let omp = libomp()?;
    let (first, last) = hidden_helper_workers()?;
    let wanted = (last - first + 1) as usize;
    let team: &'static Team = Box::leak(Box::new(Team {
        slots: (0..wanted)
            .map(|_| Slot {
                turn: Mutex::new(()),
                state: AtomicU32::new(IDLE),
                job: UnsafeCell::new(Job {
                    function: 0,
                    args: std::ptr::null(),
                    count: 0,
                    waiter: None,
                }),
                partner: OnceLock::new(),
            })
            .collect(),
        arrived: AtomicUsize::new(0),
        formed: Mutex::new(None),
        formed_signal: Condvar::new(),
        joined: Mutex::new(false),
        joined_signal: Condvar::new(),
    }));
    // The partners' stacks are libomp's (OMP_STACKSIZE), as the hidden helpers' are; this
    // thread becomes the team's first partner.
    // SAFETY: a libomp query without arguments.
    let stack = unsafe { (omp.stack_size)() }.max(1 << 20);
    let started = std::thread::Builder::new()
        .name("omptarget-host-kernels".into())
        .stack_size(stack)
        .spawn(move || {
            let shared = team as *const Team as *mut c_void;
            // SAFETY: libomp's calls for `#pragma omp parallel num_threads(wanted)
            // proc_bind(false)`, made from this thread, which libomp registers as a root; the
            // microtask takes the one shared argument passed. It returns once the team closes.
            unsafe {
                let gtid = (omp.global_thread_num)(std::ptr::null());
                let limit = (omp.thread_limit)().max(1) as usize;
                (omp.push_num_threads)(std::ptr::null(), gtid, wanted.min(limit) as i32);
                (omp.push_proc_bind)(std::ptr::null(), gtid, 0);
                (omp.fork_call)(std::ptr::null(), 1, partner, shared);
            }
            // Closed: the region has ended. The thread stays (a libomp root whose thread
            // exits unregisters itself under libomp's fork/join lock, which can deadlock
            // libomp 19 against another thread's registration; emu-support's workers say
            // more), so that libomp finds it idle when it ends.
            *lock(&team.joined) = true;
            team.joined_signal.notify_all();
            loop {
                std::thread::park();
            }
        });
    if let Err(e) = started {
        log::warn!("host kernels of nowait regions run on libomp's hidden helper threads: {e}");
        return None;
    }
    let formed = lock(&team.formed);
    let (formed, _) = team
        .formed_signal
        .wait_timeout_while(formed, Duration::from_secs(30), |f| f.is_none())
        .unwrap_or_else(|e| e.into_inner());
    let size = (*formed)?;
    // SAFETY: registers a handler without arguments that only stores a flag.
    if unsafe { pthread_atfork(None, None, Some(forked_child)) } != 0 {
        log::warn!("no fork handler: a forked child would hand kernels to threads it lacks");
        return None;
    }
    log::debug!("host kernels of nowait regions run on {size} partner threads");
    Some((team, size))
}

/// A partner's life: take its slot, then run the kernels handed to it.
unsafe extern "C" fn partner(_gtid: *mut i32, tid: *mut i32, shared: *mut c_void) {
    // SAFETY: `shared` is the leaked Team that `form_team` passed, `tid` libomp's number of
    // this thread in the team.
    let (team, tid) = unsafe { (&*(shared as *const Team), *tid as usize) };
    // SAFETY: a libomp query without arguments, inside the team's region.
    let size = unsafe { libomp().map_or(1, |omp| (omp.num_threads)()) }.max(1) as usize;
    let size = size.min(team.slots.len());
    let Some(slot) = team.slots.get(tid).filter(|_| tid < size) else {
        return; // more threads than asked for: never used
    };
    let _ = slot.partner.set(std::thread::current());
    if team.arrived.fetch_add(1, Ordering::AcqRel) + 1 == size {
        *lock(&team.formed) = Some(size);
        team.formed_signal.notify_all();
    }
    loop {
        if wait_for(&slot.state, POSTED) == CLOSED {
            return;
        }
        // SAFETY: POSTED: the helper wrote the job and waits until DONE.
        let job = unsafe { &mut *slot.job.get() };
        // SAFETY: the helper's kernel and arguments, as `call_kernel`'s caller promised.
        unsafe {
            crate::sys::call_with_args(
                job.function,
                std::slice::from_raw_parts(job.args, job.count),
            )
        };
        let waiter = job.waiter.take();
        slot.state.store(DONE, Ordering::Release);
        if let Some(waiter) = waiter {
            waiter.unpark();
        }
    }
}

/// Waits until `state` is `wanted` or CLOSED, and answers which (the other side unparks this
/// thread after changing it). Spinning first gained nothing measurable on a 2-CPU machine: the
/// partner needs the CPU the waiting thread would spin on, with libomp's own threads spinning
/// for KMP_BLOCKTIME.
fn wait_for(state: &AtomicU32, wanted: u32) -> u32 {
    loop {
        let now = state.load(Ordering::Acquire);
        if now == wanted || now == CLOSED {
            return now;
        }
        std::thread::park();
    }
}

/// The partner for the calling thread, when it is one of libomp's hidden helper workers.
fn partner_slot() -> Option<&'static Slot> {
    let omp = libomp()?;
    // A hidden helper worker is thread 1 or later of the hidden helper team; a thread libomp
    // does not know answers 0 here, so it is not registered by the next call.
    // SAFETY: libomp queries without arguments.
    if unsafe { (omp.thread_num)() } < 1 {
        return None;
    }
    let (first, last) = hidden_helper_workers()?;
    // SAFETY: as above (a null location is allowed).
    let gtid = unsafe { (omp.global_thread_num)(std::ptr::null()) };
    if !(first..=last).contains(&gtid) {
        return None;
    }
    let (team, size) = team()?;
    team.slots.get((gtid - first) as usize % size)
}

/// Calls the kernel at `function` with `args`: on a partner thread when the launch is a
/// `nowait` region's (`flags` of the launch) made on one of libomp's hidden helper threads
/// (see the module's comment), else on the calling thread.
///
/// # Safety
/// As [`crate::sys::call_with_args`].
pub unsafe fn call_kernel(function: usize, args: &[usize], flags: u64) {
    if flags & NOWAIT != 0 {
        if let Some(slot) = partner_slot() {
            let _turn = lock(&slot.turn);
            if slot.state.load(Ordering::Acquire) == CLOSED {
                // SAFETY: the caller's promise.
                return unsafe { crate::sys::call_with_args(function, args) };
            }
            // SAFETY: IDLE and our turn: the partner does not read the job.
            unsafe {
                *slot.job.get() = Job {
                    function,
                    args: args.as_ptr(),
                    count: args.len(),
                    waiter: Some(std::thread::current()),
                }
            };
            slot.state.store(POSTED, Ordering::Release);
            if let Some(partner) = slot.partner.get() {
                partner.unpark();
            }
            wait_for(&slot.state, DONE);
            slot.state.store(IDLE, Ordering::Relaxed);
            return;
        }
    }
    // SAFETY: the caller's promise.
    unsafe { crate::sys::call_with_args(function, args) }
}

/// Ends the partner team's parallel region, as the plugin shuts down at process exit: libomp
/// ends itself in its destructor, after every exit handler, and with another thread's
/// parallel region still active it leaves its worker threads unreaped while it frees their
/// state (kmp_runtime.cpp, `__kmp_internal_end`), where a worker that wakes then crashes.
/// Kernels launched afterwards run where they are launched.
pub fn close() {
    CLOSING.store(true, Ordering::Relaxed);
    let Some(Some((team, size))) = TEAM.get().copied() else {
        return;
    };
    if FORKED.load(Ordering::Relaxed) {
        return;
    }
    for slot in &team.slots[..size] {
        // After any kernel the partner is running; helpers that take their turn later find the
        // slot closed.
        let _turn = lock(&slot.turn);
        slot.state.store(CLOSED, Ordering::Release);
        if let Some(partner) = slot.partner.get() {
            partner.unpark();
        }
    }
    let joined = lock(&team.joined);
    let (joined, _) = team
        .joined_signal
        .wait_timeout_while(joined, Duration::from_secs(10), |j| !*j)
        .unwrap_or_else(|e| e.into_inner());
    if !*joined {
        log::warn!("the host plugin's partner threads did not end their parallel region");
    }
}
