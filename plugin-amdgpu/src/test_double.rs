//! `SoftwareHsa`: a **test double** of [`HsaInterface`] that runs everything on the CPU, so the
//! stream, signal and event logic can be tested without an AMD GPU. It is not an HSA
//! implementation and is only built for tests.
//!
//! What it models:
//! - Signals are atomics with waiters; `on_signal_zero` handlers run on one handler thread, as
//!   HSA's async handlers run on a runtime thread.
//! - Each queue has a worker thread that runs its packets in order. A barrier-AND packet waits
//!   for its dependences; a kernel packet calls the Rust closure registered for its
//!   `kernel_object` with the kernarg address. A closure returning `Err` puts the queue in error,
//!   like a memory fault: `queue_error` reports it, no further packet runs and the kernel's
//!   completion signal is never decremented.
//! - Each async copy runs on its own thread (after an optional random delay, to shake out
//!   missing dependences): waits for its dependences, copies, decrements the completion signal.
//! - Memory comes from two pools: [`DEVICE_POOL`] and the fine-grained [`HOST_POOL`], real heap
//!   memory. `async_copy` rejects (`INVALID_ARGUMENT`, synchronously) any range that is not pool
//!   memory or the agent address of locked host memory; host-pool memory also needs
//!   `allow_access` for the GPU. Locked memory gets agent addresses distinct from its host
//!   addresses, so code passing the host address to a copy is caught too.
//!
//! - Profiling as ROCr's API gives it: a profiled queue writes when it started and completed
//!   each packet into the packet's completion signal, a copy submitted with copy profiling on
//!   writes its own start and end; a signal keeps the last stamps written. The system clock is
//!   not the host's (another origin, 250 MHz), so the calibration onto the host clock is
//!   exercised. [`SoftwareHsa::unprofile_queue`] stops a queue's stamps.
//!
//! For tests: counters ([`SoftwareHsa::stats`], [`SoftwareHsa::packets`]), failure injection
//! ([`SoftwareHsa::fail_after`]), and a list of misuses seen (use of unknown or destroyed
//! signals, memory freed under a pending copy, signals decremented below 0), which a test
//! checks is empty. Dropping the double stops and joins its threads.

use crate::hsa_interface::{
    Agent, HsaError, HsaInterface, HsaResult, KernelDispatch, MemoryPool, Queue, QueueOrder,
    Signal, SignalHandler, Stuck, WaitMode,
};
use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Condvar, Mutex, Weak};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};
use sync_util::{lock, wait_timeout};

/// The GPU agent of the double.
pub const GPU_AGENT: Agent = Agent(0x6770);
/// The host CPU agent of the double.
pub const HOST_AGENT: Agent = Agent(0xc0);
/// Coarse-grained device memory.
pub const DEVICE_POOL: MemoryPool = MemoryPool(0xd0);
/// Fine-grained host memory, for staging buffers and kernel arguments.
pub const HOST_POOL: MemoryPool = MemoryPool(0xf0);

/// Agent addresses of locked host memory are the host address plus this.
const LOCK_ALIAS: usize = 1 << 60;
/// How often blocked threads of the double look for shutdown.
const POLL: Duration = Duration::from_millis(5);
/// Alignment of pool allocations (a page, as HSA's).
const ALLOC_ALIGN: usize = 4096;
/// `HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION`, what a faulting kernel reports.
const STATUS_MEMORY_FAULT: u32 = 0x1029;
/// The double's system clock: ticks per second, and how far its origin is from the host's.
const CLOCK_HZ: u64 = 250_000_000;
const CLOCK_ORIGIN_NS: u64 = 7_000_000_000_000;

/// The double's HSA system clock now, in ticks.
fn system_ticks() -> u64 {
    (crate::stream::monotonic_ns() + CLOCK_ORIGIN_NS) / (1_000_000_000 / CLOCK_HZ)
}

/// A kernel of the double: called with the kernarg address; `Err` is a device fault.
pub type KernelFn = Arc<dyn Fn(usize) -> Result<(), String> + Send + Sync>;

/// Calls [`SoftwareHsa::fail_after`] can make fail.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum FaultOp {
    CreateSignal,
    CreateQueue,
    /// Either packet kind.
    Submit,
    AsyncCopy,
    OnSignalZero,
    Allocate,
    AllowAccess,
    LockHostMemory,
    /// `hsa_amd_profiling_set_profiler_enabled`.
    EnableQueueProfiling,
}

/// Counts since the double was created.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    pub signals_created: usize,
    pub signals_live: usize,
    pub queues_created: usize,
    pub queues_live: usize,
    pub async_copies: usize,
    pub handlers_registered: usize,
    pub device_allocations: usize,
    pub device_live: usize,
    pub host_allocations: usize,
    pub host_live: usize,
    pub locks: usize,
    pub unlocks: usize,
    /// Lock calls not matched by an unlock yet.
    pub locks_live: usize,
    /// Calls of the profiling functions (enabling, reading stamps, the system clock).
    pub profiling_calls: usize,
}

fn invalid(message: impl Into<String>) -> HsaError {
    HsaError::new(HsaError::STATUS_INVALID_ARGUMENT, message)
}

/// The test double. See the module documentation.
pub struct SoftwareHsa {
    inner: Arc<Inner>,
}

struct Inner {
    shutdown: AtomicBool,
    next_handle: AtomicU64,
    signals: Mutex<HashMap<u64, Arc<SignalState>>>,
    queues: Mutex<HashMap<u64, Arc<QueueState>>>,
    kernels: Mutex<HashMap<u64, KernelFn>>,
    memory: Mutex<Memory>,
    faults: Mutex<HashMap<FaultOp, usize>>,
    misuse: Mutex<Vec<String>>,
    handler_tx: Mutex<Option<mpsc::Sender<SignalHandler>>>,
    /// The handler thread and copy threads (queue workers are kept by their queues).
    threads: Mutex<Vec<JoinHandle<()>>>,
    counters: Counters,
    jitter_us: AtomicU64,
    rng: AtomicU64,
    /// `hsa_amd_profiling_async_copy_enable`.
    copy_profiling: AtomicBool,
    /// How long each copy takes once started (a slow copy engine), in microseconds.
    copy_us: AtomicU64,
}

#[derive(Default)]
struct Counters {
    signals_created: AtomicUsize,
    signals_destroyed: AtomicUsize,
    queues_created: AtomicUsize,
    queues_destroyed: AtomicUsize,
    async_copies: AtomicUsize,
    handlers_registered: AtomicUsize,
    device_allocations: AtomicUsize,
    host_allocations: AtomicUsize,
    locks: AtomicUsize,
    unlocks: AtomicUsize,
    profiling_calls: AtomicUsize,
}

struct SignalState {
    value: AtomicI64,
    /// Handlers waiting for 0; the mutex also orders value changes with waiters.
    handlers: Mutex<Vec<SignalHandler>>,
    changed: Condvar,
    destroyed: AtomicBool,
    stamps: Mutex<Stamps>,
}

/// The profiling stamps a signal holds, in system clock ticks.
#[derive(Default)]
struct Stamps {
    /// The last packet of a profiled queue that completed the signal.
    packet: (u64, u64),
    /// The last copy submitted with copy profiling on: `None` if there was none (ROCr then
    /// answers `HSA_STATUS_ERROR`).
    copy: Option<(u64, u64)>,
}

enum Packet {
    Barrier {
        deps: Vec<Signal>,
        completion: Signal,
    },
    Kernel {
        dispatch: KernelDispatch,
        completion: Signal,
    },
}

struct QueueState {
    handle: u64,
    pending: Mutex<VecDeque<Packet>>,
    arrived: Condvar,
    error: Mutex<Option<HsaError>>,
    destroyed: AtomicBool,
    barriers: AtomicUsize,
    kernels: AtomicUsize,
    worker: Mutex<Option<JoinHandle<()>>>,
    /// `hsa_amd_profiling_set_profiler_enabled`.
    profiling: AtomicBool,
}

struct Allocation {
    size: usize,
    pool: MemoryPool,
    gpu_access: bool,
}

struct Locked {
    size: usize,
    count: usize,
}

#[derive(Default)]
struct Memory {
    allocations: BTreeMap<usize, Allocation>,
    locked: BTreeMap<usize, Locked>,
}

impl Memory {
    /// The host address behind `addr..addr+size` as the GPU sees it, if it may use that range.
    fn resolve(&self, addr: usize, size: usize) -> Result<usize, String> {
        let end = addr
            .checked_add(size)
            .ok_or_else(|| format!("range {addr:#x}+{size} overflows"))?;
        if let Some((&start, allocation)) = self.allocations.range(..=addr).next_back() {
            if end <= start + allocation.size {
                if allocation.pool == HOST_POOL && !allocation.gpu_access {
                    return Err(format!(
                        "host-pool memory {addr:#x}+{size} was not made accessible to the GPU"
                    ));
                }
                return Ok(addr);
            }
        }
        if addr >= LOCK_ALIAS {
            let host = addr - LOCK_ALIAS;
            if let Some((&start, locked)) = self.locked.range(..=host).next_back() {
                if host + size <= start + locked.size {
                    return Ok(host);
                }
            }
        }
        Err(format!(
            "{addr:#x}+{size} is neither pool memory nor the agent address of locked host memory"
        ))
    }

    /// Copies between two resolved ranges while the caller holds the memory lock, so neither
    /// can be freed meanwhile.
    fn copy(&self, dst: usize, src: usize, size: usize) -> Result<(), String> {
        let dst = self.resolve(dst, size)?;
        let src = self.resolve(src, size)?;
        // SAFETY: both ranges were just resolved to live pool allocations or locked host memory
        // (which the test keeps alive while locked), and the memory lock keeps pool memory from
        // being freed during the copy; `copy` allows overlap.
        unsafe { std::ptr::copy(src as *const u8, dst as *mut u8, size) };
        Ok(())
    }

    fn read(&self, addr: usize, len: usize) -> Result<Vec<u8>, String> {
        let src = self.resolve(addr, len)?;
        let mut out = vec![0u8; len];
        // SAFETY: as in `copy`; `out` has `len` bytes and is our own.
        unsafe { std::ptr::copy(src as *const u8, out.as_mut_ptr(), len) };
        Ok(out)
    }

    fn write(&self, addr: usize, bytes: &[u8]) -> Result<(), String> {
        let dst = self.resolve(addr, bytes.len())?;
        // SAFETY: as in `copy`; `bytes` is a live slice of its length.
        unsafe { std::ptr::copy(bytes.as_ptr(), dst as *mut u8, bytes.len()) };
        Ok(())
    }
}

impl Drop for Memory {
    fn drop(&mut self) {
        for (ptr, allocation) in std::mem::take(&mut self.allocations) {
            if let Ok(layout) = Layout::from_size_align(allocation.size, ALLOC_ALIGN) {
                // SAFETY: `ptr` came from `alloc_zeroed` with this very layout and was not freed
                // (freeing removes it from the map); no thread of the double runs any more.
                unsafe { dealloc(ptr as *mut u8, layout) };
            }
        }
    }
}

/// Reads and writes pool memory as a kernel would; for kernel closures and test checks. Holds
/// the double weakly, so closures holding it do not keep the double alive.
#[derive(Clone)]
pub struct DeviceMemory {
    inner: Weak<Inner>,
}

impl DeviceMemory {
    fn memory<T>(&self, f: impl FnOnce(&Memory) -> Result<T, String>) -> Result<T, String> {
        let inner = self.inner.upgrade().ok_or("the test double is gone")?;
        let memory = lock(&inner.memory);
        f(&memory)
    }

    pub fn read(&self, addr: usize, len: usize) -> Result<Vec<u8>, String> {
        self.memory(|memory| memory.read(addr, len))
    }

    pub fn write(&self, addr: usize, bytes: &[u8]) -> Result<(), String> {
        self.memory(|memory| memory.write(addr, bytes))
    }

    pub fn read_u64(&self, addr: usize) -> Result<u64, String> {
        let bytes = self.read(addr, 8)?;
        let mut word = [0u8; 8];
        word.copy_from_slice(&bytes);
        Ok(u64::from_ne_bytes(word))
    }

    pub fn write_u64(&self, addr: usize, value: u64) -> Result<(), String> {
        self.write(addr, &value.to_ne_bytes())
    }
}

impl Default for SoftwareHsa {
    fn default() -> Self {
        Self::new()
    }
}

impl SoftwareHsa {
    pub fn new() -> Self {
        let (tx, rx) = mpsc::channel::<SignalHandler>();
        let inner = Arc::new(Inner {
            shutdown: AtomicBool::new(false),
            next_handle: AtomicU64::new(0x1000),
            signals: Mutex::new(HashMap::new()),
            queues: Mutex::new(HashMap::new()),
            kernels: Mutex::new(HashMap::new()),
            memory: Mutex::new(Memory::default()),
            faults: Mutex::new(HashMap::new()),
            misuse: Mutex::new(Vec::new()),
            handler_tx: Mutex::new(Some(tx)),
            threads: Mutex::new(Vec::new()),
            counters: Counters::default(),
            jitter_us: AtomicU64::new(0),
            rng: AtomicU64::new(0x853c_49e6_748f_ea9b),
            copy_profiling: AtomicBool::new(false),
            copy_us: AtomicU64::new(0),
        });
        let worker = Arc::clone(&inner);
        let handler_thread = thread::Builder::new()
            .name("swhsa-handlers".into())
            .spawn(move || worker.run_handlers(rx))
            .expect("test double: cannot start its handler thread");
        lock(&inner.threads).push(handler_thread);
        SoftwareHsa { inner }
    }

    pub fn gpu_agent(&self) -> Agent {
        GPU_AGENT
    }

    pub fn host_agent(&self) -> Agent {
        HOST_AGENT
    }

    pub fn device_pool(&self) -> MemoryPool {
        DEVICE_POOL
    }

    pub fn host_pool(&self) -> MemoryPool {
        HOST_POOL
    }

    /// Makes kernel packets with `kernel_object == object` call `kernel(kernarg_address)`.
    pub fn register_kernel(
        &self,
        object: u64,
        kernel: impl Fn(usize) -> Result<(), String> + Send + Sync + 'static,
    ) {
        lock(&self.inner.kernels).insert(object, Arc::new(kernel));
    }

    /// Access to the double's memory, for kernels and checks.
    pub fn memory(&self) -> DeviceMemory {
        DeviceMemory {
            inner: Arc::downgrade(&self.inner),
        }
    }

    /// The next `successes` calls of `op` succeed, the one after fails (once).
    pub fn fail_after(&self, op: FaultOp, successes: usize) {
        lock(&self.inner.faults).insert(op, successes);
    }

    /// Async copies wait a random time up to `max` before they start.
    pub fn set_copy_jitter(&self, max: Duration) {
        let micros = u64::try_from(max.as_micros()).unwrap_or(u64::MAX);
        self.inner.jitter_us.store(micros, Ordering::Relaxed);
    }

    /// Barrier-AND and kernel packets submitted to `queue` so far.
    pub fn packets(&self, queue: Queue) -> (usize, usize) {
        lock(&self.inner.queues).get(&queue.0).map_or((0, 0), |q| {
            (
                q.barriers.load(Ordering::Relaxed),
                q.kernels.load(Ordering::Relaxed),
            )
        })
    }

    /// Makes every copy take `duration` once started (between its profiling stamps).
    pub fn set_copy_duration(&self, duration: Duration) {
        self.inner
            .copy_us
            .store(duration.as_micros() as u64, Ordering::Relaxed);
    }

    /// Stops `queue` writing profiling stamps, as a queue never profiled.
    pub fn unprofile_queue(&self, queue: Queue) {
        if let Some(state) = lock(&self.inner.queues).get(&queue.0) {
            state.profiling.store(false, Ordering::SeqCst);
        }
    }

    /// Misuses seen so far (empty when the code under test behaved).
    pub fn misuse(&self) -> Vec<String> {
        lock(&self.inner.misuse).clone()
    }

    pub fn stats(&self) -> Stats {
        let c = &self.inner.counters;
        let load = |counter: &AtomicUsize| counter.load(Ordering::Relaxed);
        let memory = lock(&self.inner.memory);
        let live_in = |pool| {
            memory
                .allocations
                .values()
                .filter(|a| a.pool == pool)
                .count()
        };
        Stats {
            signals_created: load(&c.signals_created),
            signals_live: load(&c.signals_created) - load(&c.signals_destroyed),
            queues_created: load(&c.queues_created),
            queues_live: load(&c.queues_created) - load(&c.queues_destroyed),
            async_copies: load(&c.async_copies),
            handlers_registered: load(&c.handlers_registered),
            device_allocations: load(&c.device_allocations),
            device_live: live_in(DEVICE_POOL),
            host_allocations: load(&c.host_allocations),
            host_live: live_in(HOST_POOL),
            locks: load(&c.locks),
            unlocks: load(&c.unlocks),
            locks_live: memory.locked.values().map(|l| l.count).sum(),
            profiling_calls: load(&c.profiling_calls),
        }
    }
}

impl Drop for SoftwareHsa {
    fn drop(&mut self) {
        let inner = &self.inner;
        inner.shutdown.store(true, Ordering::SeqCst);
        lock(&inner.handler_tx).take();
        let queues: Vec<Arc<QueueState>> = lock(&inner.queues).drain().map(|(_, q)| q).collect();
        let mut threads = std::mem::take(&mut *lock(&inner.threads));
        for queue in &queues {
            queue.destroyed.store(true, Ordering::SeqCst);
            queue.arrived.notify_all();
            threads.extend(lock(&queue.worker).take());
        }
        // Everything blocked polls the shutdown flag, so the joins end soon. The last handle
        // may be dropped by one of our own threads (a handler); it cannot join itself.
        let me = thread::current().id();
        for handle in threads {
            if handle.thread().id() != me {
                let _ = handle.join();
            }
        }
        // Closures may hold handles to the double: drop them to break cycles.
        lock(&inner.kernels).clear();
        for signal in lock(&inner.signals).drain().map(|(_, s)| s) {
            lock(&signal.handlers).clear();
        }
    }
}

impl Inner {
    fn count_profiling_call(&self) {
        self.counters
            .profiling_calls
            .fetch_add(1, Ordering::Relaxed);
    }

    fn record_misuse(&self, what: String) {
        lock(&self.misuse).push(what);
    }

    fn check_fault(&self, op: FaultOp) -> HsaResult<()> {
        let mut faults = lock(&self.faults);
        match faults.get_mut(&op) {
            Some(0) => {
                faults.remove(&op);
                Err(HsaError::new(
                    HsaError::STATUS_OUT_OF_RESOURCES,
                    format!("injected failure of {op:?}"),
                ))
            }
            Some(left) => {
                *left -= 1;
                Ok(())
            }
            None => Ok(()),
        }
    }

    fn handle(&self) -> u64 {
        self.next_handle.fetch_add(1, Ordering::Relaxed)
    }

    fn signal(&self, signal: Signal) -> Option<Arc<SignalState>> {
        lock(&self.signals).get(&signal.0).cloned()
    }

    /// The signal, or a misuse recorded for `what`.
    fn known_signal(&self, signal: Signal, what: &str) -> Option<Arc<SignalState>> {
        let found = self.signal(signal);
        if found.is_none() {
            self.record_misuse(format!("{what} on unknown signal {:#x}", signal.0));
        }
        found
    }

    fn change_signal(&self, signal: Signal, what: &str, change: impl FnOnce(i64) -> i64) {
        let Some(state) = self.known_signal(signal, what) else {
            return;
        };
        let ready = {
            let mut handlers = lock(&state.handlers);
            let value = change(state.value.load(Ordering::SeqCst));
            state.value.store(value, Ordering::SeqCst);
            state.changed.notify_all();
            if value < 0 {
                self.record_misuse(format!("signal {:#x} decremented to {value}", signal.0));
            }
            if value == 0 {
                std::mem::take(&mut *handlers)
            } else {
                Vec::new()
            }
        };
        for handler in ready {
            self.dispatch(handler);
        }
    }

    fn dispatch(&self, handler: SignalHandler) {
        if let Some(tx) = lock(&self.handler_tx).as_ref() {
            let _ = tx.send(handler);
        }
    }

    fn run_handlers(&self, rx: mpsc::Receiver<SignalHandler>) {
        while !self.shutdown.load(Ordering::SeqCst) {
            match rx.recv_timeout(POLL) {
                Ok(handler) => {
                    if catch_unwind(AssertUnwindSafe(handler)).is_err() {
                        self.record_misuse("a signal handler panicked".into());
                    }
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
        }
    }

    /// Waits up to `timeout` for 0; returns the value seen last.
    fn wait_zero(&self, state: &SignalState, timeout: Duration) -> i64 {
        let deadline = Instant::now() + timeout;
        let mut guard = lock(&state.handlers);
        loop {
            let value = state.value.load(Ordering::SeqCst);
            let now = Instant::now();
            if value == 0
                || now >= deadline
                || state.destroyed.load(Ordering::SeqCst)
                || self.shutdown.load(Ordering::SeqCst)
            {
                return value;
            }
            let slice = (deadline - now).min(POLL);
            guard = wait_timeout(&state.changed, guard, slice).0;
        }
    }

    /// Waits until `signal` is 0; false if the double shuts down, `stop` says so, or the signal
    /// is unknown or destroyed meanwhile (a misuse).
    fn wait_until_zero(&self, signal: Signal, stop: impl Fn() -> bool) -> bool {
        let Some(state) = self.known_signal(signal, "waiting") else {
            return false;
        };
        loop {
            if self.wait_zero(&state, POLL) == 0 {
                return true;
            }
            if state.destroyed.load(Ordering::SeqCst) {
                self.record_misuse(format!("signal {:#x} destroyed while awaited", signal.0));
                return false;
            }
            if self.shutdown.load(Ordering::SeqCst) || stop() {
                return false;
            }
        }
    }

    fn spawn(
        self: &Arc<Self>,
        name: &str,
        job: impl FnOnce(Arc<Inner>) + Send + 'static,
    ) -> HsaResult<JoinHandle<()>> {
        let inner = Arc::clone(self);
        thread::Builder::new()
            .name(name.into())
            .stack_size(256 * 1024)
            .spawn(move || job(inner))
            .map_err(|err| {
                HsaError::new(
                    HsaError::STATUS_OUT_OF_RESOURCES,
                    format!("test double cannot start a thread: {err}"),
                )
            })
    }

    fn run_queue(&self, queue: &QueueState) {
        let stopped =
            || queue.destroyed.load(Ordering::SeqCst) || self.shutdown.load(Ordering::SeqCst);
        loop {
            let packet = {
                let mut pending = lock(&queue.pending);
                loop {
                    if stopped() {
                        return;
                    }
                    if let Some(packet) = pending.pop_front() {
                        break packet;
                    }
                    pending = wait_timeout(&queue.arrived, pending, POLL).0;
                }
            };
            let started = queue.profiling.load(Ordering::SeqCst).then(system_ticks);
            match packet {
                Packet::Barrier { deps, completion } => {
                    for dep in deps {
                        if !self.wait_until_zero(dep, stopped) {
                            return;
                        }
                    }
                    self.stamp_packet(completion, started);
                    self.change_signal(completion, "barrier completion", |v| v - 1);
                }
                Packet::Kernel {
                    dispatch,
                    completion,
                } => {
                    let kernel = lock(&self.kernels).get(&dispatch.kernel_object).cloned();
                    let result = match kernel {
                        Some(kernel) => {
                            catch_unwind(AssertUnwindSafe(|| kernel(dispatch.kernarg_address)))
                                .unwrap_or_else(|_| Err("the kernel panicked".into()))
                        }
                        None => Err("no kernel registered for this object".into()),
                    };
                    if let Err(message) = result {
                        // As on a device: the queue stops, the completion never comes.
                        *lock(&queue.error) = Some(HsaError::new(
                            STATUS_MEMORY_FAULT,
                            format!(
                                "memory fault in kernel {:#x} on queue {:#x}: {message}",
                                dispatch.kernel_object, queue.handle
                            ),
                        ));
                        return;
                    }
                    self.stamp_packet(completion, started);
                    self.change_signal(completion, "kernel completion", |v| v - 1);
                }
            }
        }
    }

    /// A profiled packet that started at `started` completes `signal` now.
    fn stamp_packet(&self, signal: Signal, started: Option<u64>) {
        if let (Some(start), Some(state)) = (started, self.signal(signal)) {
            lock(&state.stamps).packet = (start, system_ticks());
        }
    }

    fn jitter(&self) -> Duration {
        let max = self.jitter_us.load(Ordering::Relaxed);
        if max == 0 {
            return Duration::ZERO;
        }
        // splitmix64 over a shared counter: cheap and good enough to shuffle timings.
        let mut x = self
            .rng
            .fetch_add(0x9e37_79b9_7f4a_7c15, Ordering::Relaxed)
            .wrapping_add(0x9e37_79b9_7f4a_7c15);
        x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        x ^= x >> 31;
        Duration::from_micros(x % (max + 1))
    }

    fn queue(&self, queue: Queue) -> HsaResult<Arc<QueueState>> {
        lock(&self.queues)
            .get(&queue.0)
            .cloned()
            .ok_or_else(|| invalid(format!("unknown queue {:#x}", queue.0)))
    }

    fn check_signals(&self, signals: &[Signal]) -> HsaResult<()> {
        let known = lock(&self.signals);
        match signals.iter().find(|s| !known.contains_key(&s.0)) {
            Some(s) => Err(invalid(format!("unknown signal {:#x}", s.0))),
            None => Ok(()),
        }
    }

    fn submit(&self, queue: Queue, packet: Packet) -> HsaResult<()> {
        self.check_fault(FaultOp::Submit)?;
        let state = self.queue(queue)?;
        match &packet {
            Packet::Barrier { deps, completion } => {
                if deps.len() > 5 {
                    return Err(invalid("a barrier-AND packet takes at most 5 signals"));
                }
                self.check_signals(deps)?;
                self.check_signals(&[*completion])?;
                state.barriers.fetch_add(1, Ordering::Relaxed);
            }
            Packet::Kernel { completion, .. } => {
                self.check_signals(&[*completion])?;
                state.kernels.fetch_add(1, Ordering::Relaxed);
            }
        }
        lock(&state.pending).push_back(packet);
        state.arrived.notify_all();
        Ok(())
    }
}

impl HsaInterface for SoftwareHsa {
    fn create_signal(&self, initial: i64) -> HsaResult<Signal> {
        let inner = &self.inner;
        inner.check_fault(FaultOp::CreateSignal)?;
        let handle = inner.handle();
        let state = Arc::new(SignalState {
            value: AtomicI64::new(initial),
            handlers: Mutex::new(Vec::new()),
            changed: Condvar::new(),
            destroyed: AtomicBool::new(false),
            stamps: Mutex::new(Stamps::default()),
        });
        lock(&inner.signals).insert(handle, state);
        inner
            .counters
            .signals_created
            .fetch_add(1, Ordering::Relaxed);
        Ok(Signal(handle))
    }

    fn destroy_signal(&self, signal: Signal) -> HsaResult<()> {
        let inner = &self.inner;
        let state = lock(&inner.signals)
            .remove(&signal.0)
            .ok_or_else(|| invalid(format!("destroying unknown signal {:#x}", signal.0)))?;
        state.destroyed.store(true, Ordering::SeqCst);
        let pending = std::mem::take(&mut *lock(&state.handlers));
        state.changed.notify_all();
        if !pending.is_empty() {
            inner.record_misuse(format!(
                "signal {:#x} destroyed with {} handlers pending",
                signal.0,
                pending.len()
            ));
        }
        inner
            .counters
            .signals_destroyed
            .fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    fn signal_load(&self, signal: Signal) -> i64 {
        self.inner
            .known_signal(signal, "load")
            .map_or(0, |s| s.value.load(Ordering::SeqCst))
    }

    fn signal_store(&self, signal: Signal, value: i64) {
        self.inner.change_signal(signal, "store", |_| value);
    }

    fn signal_subtract(&self, signal: Signal, value: i64) {
        self.inner.change_signal(signal, "subtract", |v| v - value);
    }

    fn wait_signal_zero(&self, signal: Signal, timeout: Duration, _mode: WaitMode) -> i64 {
        match self.inner.known_signal(signal, "wait") {
            Some(state) => self.inner.wait_zero(&state, timeout),
            None => 0,
        }
    }

    fn on_signal_zero(&self, signal: Signal, handler: SignalHandler) -> HsaResult<()> {
        let inner = &self.inner;
        inner.check_fault(FaultOp::OnSignalZero)?;
        let state = inner
            .signal(signal)
            .ok_or_else(|| invalid(format!("handler on unknown signal {:#x}", signal.0)))?;
        inner
            .counters
            .handlers_registered
            .fetch_add(1, Ordering::Relaxed);
        let run_now = {
            let mut handlers = lock(&state.handlers);
            if state.value.load(Ordering::SeqCst) == 0 {
                Some(handler)
            } else {
                handlers.push(handler);
                None
            }
        };
        if let Some(handler) = run_now {
            inner.dispatch(handler);
        }
        Ok(())
    }

    fn create_queue(&self, agent: Agent, size: u32) -> HsaResult<Queue> {
        let inner = &self.inner;
        inner.check_fault(FaultOp::CreateQueue)?;
        if agent != GPU_AGENT {
            return Err(invalid(format!(
                "queue on agent {:#x}, not the GPU",
                agent.0
            )));
        }
        if size == 0 || !size.is_power_of_two() {
            return Err(invalid(format!("queue size {size} is not a power of two")));
        }
        let handle = inner.handle();
        let state = Arc::new(QueueState {
            handle,
            pending: Mutex::new(VecDeque::new()),
            arrived: Condvar::new(),
            error: Mutex::new(None),
            destroyed: AtomicBool::new(false),
            barriers: AtomicUsize::new(0),
            kernels: AtomicUsize::new(0),
            worker: Mutex::new(None),
            profiling: AtomicBool::new(false),
        });
        let worker_state = Arc::clone(&state);
        let worker = inner.spawn("swhsa-queue", move |inner| inner.run_queue(&worker_state))?;
        *lock(&state.worker) = Some(worker);
        lock(&inner.queues).insert(handle, state);
        inner
            .counters
            .queues_created
            .fetch_add(1, Ordering::Relaxed);
        Ok(Queue(handle))
    }

    fn destroy_queue(&self, queue: Queue) -> HsaResult<()> {
        let inner = &self.inner;
        let state = lock(&inner.queues)
            .remove(&queue.0)
            .ok_or_else(|| invalid(format!("destroying unknown queue {:#x}", queue.0)))?;
        state.destroyed.store(true, Ordering::SeqCst);
        state.arrived.notify_all();
        let worker = lock(&state.worker).take();
        if let Some(worker) = worker {
            if worker.thread().id() != thread::current().id() {
                let _ = worker.join();
            }
        }
        inner
            .counters
            .queues_destroyed
            .fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    fn queue_error(&self, queue: Queue) -> Option<HsaError> {
        let state = lock(&self.inner.queues).get(&queue.0).cloned()?;
        let error = lock(&state.error).clone();
        error
    }

    fn submit_barrier_and(
        &self,
        queue: Queue,
        deps: &[Signal],
        completion: Signal,
        _order: QueueOrder,
        _stuck: Stuck<'_>,
    ) -> HsaResult<()> {
        // Packets run one at a time here: every order is kept, and the queue is never full.
        let packet = Packet::Barrier {
            deps: deps.to_vec(),
            completion,
        };
        self.inner.submit(queue, packet)
    }

    fn submit_kernel(
        &self,
        queue: Queue,
        dispatch: &KernelDispatch,
        completion: Signal,
        _order: QueueOrder,
        _stuck: Stuck<'_>,
    ) -> HsaResult<()> {
        let packet = Packet::Kernel {
            dispatch: *dispatch,
            completion,
        };
        self.inner.submit(queue, packet)
    }

    fn async_copy(
        &self,
        dst: usize,
        _dst_agent: Agent,
        src: usize,
        _src_agent: Agent,
        size: usize,
        deps: &[Signal],
        completion: Signal,
    ) -> HsaResult<()> {
        let inner = &self.inner;
        inner.check_fault(FaultOp::AsyncCopy)?;
        inner.check_signals(deps)?;
        inner.check_signals(&[completion])?;
        {
            let memory = lock(&inner.memory);
            memory
                .resolve(dst, size)
                .and_then(|_| memory.resolve(src, size))
                .map_err(|why| invalid(format!("async copy rejected: {why}")))?;
        }
        inner.counters.async_copies.fetch_add(1, Ordering::Relaxed);
        let deps = deps.to_vec();
        // As ROCr: copy profiling is read when the copy is submitted; the signal's copy
        // stamps are cleared then, and written by the copy.
        let profiled = inner.copy_profiling.load(Ordering::SeqCst);
        if profiled {
            if let Some(state) = inner.signal(completion) {
                lock(&state.stamps).copy = Some((0, 0));
            }
        }
        let copy = inner.spawn("swhsa-copy", move |inner| {
            thread::sleep(inner.jitter());
            for dep in deps {
                if !inner.wait_until_zero(dep, || false) {
                    return;
                }
            }
            let start = system_ticks();
            thread::sleep(Duration::from_micros(inner.copy_us.load(Ordering::Relaxed)));
            let copied = lock(&inner.memory).copy(dst, src, size);
            if let Err(why) = copied {
                inner.record_misuse(format!("async copy found its memory gone: {why}"));
            }
            if profiled {
                if let Some(state) = inner.signal(completion) {
                    lock(&state.stamps).copy = Some((start, system_ticks()));
                }
            }
            inner.change_signal(completion, "copy completion", |v| v - 1);
        })?;
        let mut threads = lock(&inner.threads);
        threads.retain(|thread| !thread.is_finished());
        threads.push(copy);
        Ok(())
    }

    fn allocate(&self, pool: MemoryPool, size: usize) -> HsaResult<usize> {
        let inner = &self.inner;
        inner.check_fault(FaultOp::Allocate)?;
        let counter = match pool {
            DEVICE_POOL => &inner.counters.device_allocations,
            HOST_POOL => &inner.counters.host_allocations,
            _ => return Err(invalid(format!("unknown memory pool {:#x}", pool.0))),
        };
        if size == 0 {
            return Err(invalid("allocation of 0 bytes"));
        }
        let layout = Layout::from_size_align(size, ALLOC_ALIGN)
            .map_err(|_| invalid(format!("allocation of {size} bytes is too large")))?;
        // SAFETY: `layout` has a non-zero size.
        let ptr = unsafe { alloc_zeroed(layout) } as usize;
        if ptr == 0 {
            return Err(HsaError::new(
                HsaError::STATUS_OUT_OF_RESOURCES,
                format!("out of memory allocating {size} bytes"),
            ));
        }
        let allocation = Allocation {
            size,
            pool,
            gpu_access: pool == DEVICE_POOL,
        };
        lock(&inner.memory).allocations.insert(ptr, allocation);
        counter.fetch_add(1, Ordering::Relaxed);
        Ok(ptr)
    }

    fn free(&self, ptr: usize) -> HsaResult<()> {
        let allocation = lock(&self.inner.memory)
            .allocations
            .remove(&ptr)
            .ok_or_else(|| invalid(format!("freeing {ptr:#x}, not a pool allocation")))?;
        let layout = Layout::from_size_align(allocation.size, ALLOC_ALIGN)
            .map_err(|_| invalid("corrupt allocation record"))?;
        // SAFETY: `ptr` came from `alloc_zeroed` with this layout and is freed once: it was
        // just removed from the map, and copies resolve addresses under the same lock.
        unsafe { dealloc(ptr as *mut u8, layout) };
        Ok(())
    }

    fn allow_access(&self, agents: &[Agent], ptr: usize) -> HsaResult<()> {
        let inner = &self.inner;
        inner.check_fault(FaultOp::AllowAccess)?;
        let mut memory = lock(&inner.memory);
        let allocation = memory
            .allocations
            .get_mut(&ptr)
            .ok_or_else(|| invalid(format!("allow_access on {ptr:#x}, not a pool allocation")))?;
        if agents.contains(&GPU_AGENT) {
            allocation.gpu_access = true;
        }
        Ok(())
    }

    fn lock_host_memory(&self, ptr: usize, size: usize, _agents: &[Agent]) -> HsaResult<usize> {
        let inner = &self.inner;
        inner.check_fault(FaultOp::LockHostMemory)?;
        if ptr == 0 || size == 0 || ptr >= LOCK_ALIAS {
            return Err(invalid(format!("cannot lock {ptr:#x}+{size}")));
        }
        let mut memory = lock(&inner.memory);
        let locked = memory
            .locked
            .entry(ptr)
            .or_insert(Locked { size, count: 0 });
        locked.size = locked.size.max(size);
        locked.count += 1;
        inner.counters.locks.fetch_add(1, Ordering::Relaxed);
        Ok(ptr + LOCK_ALIAS)
    }

    fn unlock_host_memory(&self, ptr: usize) -> HsaResult<()> {
        let inner = &self.inner;
        let mut memory = lock(&inner.memory);
        let locked = memory
            .locked
            .get_mut(&ptr)
            .ok_or_else(|| invalid(format!("unlocking {ptr:#x}, which is not locked")))?;
        locked.count -= 1;
        if locked.count == 0 {
            memory.locked.remove(&ptr);
        }
        inner.counters.unlocks.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    fn enable_queue_profiling(&self, queue: Queue) -> HsaResult<()> {
        self.inner.count_profiling_call();
        self.inner.check_fault(FaultOp::EnableQueueProfiling)?;
        self.inner
            .queue(queue)?
            .profiling
            .store(true, Ordering::SeqCst);
        Ok(())
    }

    fn enable_copy_profiling(&self) -> HsaResult<()> {
        self.inner.count_profiling_call();
        self.inner.copy_profiling.store(true, Ordering::SeqCst);
        Ok(())
    }

    fn dispatch_time(&self, agent: Agent, signal: Signal) -> HsaResult<(u64, u64)> {
        let inner = &self.inner;
        inner.count_profiling_call();
        if agent != GPU_AGENT {
            return Err(invalid(format!(
                "dispatch time asked of agent {:#x}",
                agent.0
            )));
        }
        let state = inner
            .signal(signal)
            .ok_or_else(|| invalid(format!("dispatch time of unknown signal {:#x}", signal.0)))?;
        let stamps = lock(&state.stamps).packet;
        Ok(stamps)
    }

    fn copy_time(&self, signal: Signal) -> HsaResult<(u64, u64)> {
        let inner = &self.inner;
        inner.count_profiling_call();
        let state = inner
            .signal(signal)
            .ok_or_else(|| invalid(format!("copy time of unknown signal {:#x}", signal.0)))?;
        let stamps = lock(&state.stamps).copy;
        stamps.ok_or_else(|| {
            HsaError::new(
                HsaError::STATUS_ERROR,
                "hsa_amd_profiling_get_async_copy_time failed: no profiled copy completed it",
            )
        })
    }

    fn system_timestamp(&self) -> HsaResult<u64> {
        self.inner.count_profiling_call();
        Ok(system_ticks())
    }

    fn timestamp_frequency(&self) -> HsaResult<u64> {
        Ok(CLOCK_HZ)
    }
}
