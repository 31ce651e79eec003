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
//!   A copy on a named SDMA engine is checked by ROCr's rules for an MI200 (gfx90a) GPU with
//!   two engines: engine 1 copies only from the host; `copy_engine_status` lists engines 1 and
//!   2 from the host, engine 2 towards it, none within the GPU.
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
//!
//! Layout: this module holds the double, its test controls and the [`HsaInterface`] calls,
//! each handed to the module of its concern: `signals`, `queues`, `memory` (pools, locked
//! memory, copies) and `profiling` (stamps and the system clock).

mod memory;
mod profiling;
mod queues;
mod signals;

pub use memory::DeviceMemory;

use crate::hsa_interface::{
    Agent, HsaError, HsaInterface, HsaResult, KernelDispatch, MemoryPool, Queue, QueueOrder,
    SdmaEngine, Signal, SignalHandler, Stuck, WaitMode,
};
use memory::Memory;
use profiling::CLOCK_HZ;
use queues::{Packet, QueueState};
use signals::SignalState;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::Duration;
use sync_util::lock;

/// The GPU agent of the double.
pub const GPU_AGENT: Agent = Agent(0x6770);
/// The host CPU agent of the double.
pub const HOST_AGENT: Agent = Agent(0xc0);
/// Coarse-grained device memory.
pub const DEVICE_POOL: MemoryPool = MemoryPool(0xd0);
/// Fine-grained host memory, for staging buffers and kernel arguments.
pub const HOST_POOL: MemoryPool = MemoryPool(0xf0);

/// How often blocked threads of the double look for shutdown.
const POLL: Duration = Duration::from_millis(5);

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
    /// The SDMA engine id each copy was submitted for, in submission order (`None`: the
    /// runtime's choice, `hsa_amd_memory_async_copy`).
    copy_engines: Mutex<Vec<Option<u32>>>,
    /// What `copy_engine_status` answers instead of its rules, when set.
    engine_status: Mutex<Option<u32>>,
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
            copy_engines: Mutex::new(Vec::new()),
            engine_status: Mutex::new(None),
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

    /// The next `successes` calls of `op` succeed, the one after fails (once).
    pub fn fail_after(&self, op: FaultOp, successes: usize) {
        lock(&self.inner.faults).insert(op, successes);
    }

    /// The SDMA engine id each copy was submitted for, in order (`None`: no engine named).
    pub fn copy_engines(&self) -> Vec<Option<u32>> {
        lock(&self.inner.copy_engines).clone()
    }

    /// Makes `copy_engine_status` answer `mask` (0: no engine free) instead of its rules.
    pub fn set_engine_status(&self, mask: Option<u32>) {
        *lock(&self.inner.engine_status) = mask;
    }

    /// Misuses seen so far (empty when the code under test behaved).
    pub fn misuse(&self) -> Vec<String> {
        lock(&self.inner.misuse).clone()
    }

    pub fn stats(&self) -> Stats {
        let c = &self.inner.counters;
        let load = |counter: &AtomicUsize| counter.load(Ordering::Relaxed);
        let memory = lock(&self.inner.memory);
        Stats {
            signals_created: load(&c.signals_created),
            signals_live: load(&c.signals_created) - load(&c.signals_destroyed),
            queues_created: load(&c.queues_created),
            queues_live: load(&c.queues_created) - load(&c.queues_destroyed),
            async_copies: load(&c.async_copies),
            handlers_registered: load(&c.handlers_registered),
            device_allocations: load(&c.device_allocations),
            device_live: memory.live_in(DEVICE_POOL),
            host_allocations: load(&c.host_allocations),
            host_live: memory.live_in(HOST_POOL),
            locks: load(&c.locks),
            unlocks: load(&c.unlocks),
            locks_live: memory.locks_live(),
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
            threads.extend(queue.stop());
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

/// What every concern of the double shares: misuse records, injected faults, handles, threads.
impl Inner {
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
}

/// Each call is the double's version of the HSA function the trait names; the work is done by
/// the module of its concern.
impl HsaInterface for SoftwareHsa {
    fn create_signal(&self, initial: i64) -> HsaResult<Signal> {
        self.inner.create_signal(initial)
    }

    fn destroy_signal(&self, signal: Signal) -> HsaResult<()> {
        self.inner.destroy_signal(signal)
    }

    fn signal_load(&self, signal: Signal) -> i64 {
        self.inner.signal_load(signal)
    }

    fn signal_store(&self, signal: Signal, value: i64) {
        self.inner.change_signal(signal, "store", |_| value);
    }

    fn signal_subtract(&self, signal: Signal, value: i64) {
        self.inner.change_signal(signal, "subtract", |v| v - value);
    }

    fn wait_signal_zero(&self, signal: Signal, timeout: Duration, _mode: WaitMode) -> i64 {
        self.inner.wait_signal_zero(signal, timeout)
    }

    fn on_signal_zero(&self, signal: Signal, handler: SignalHandler) -> HsaResult<()> {
        self.inner.on_signal_zero(signal, handler)
    }

    fn create_queue(&self, agent: Agent, size: u32) -> HsaResult<Queue> {
        self.inner.create_queue(agent, size)
    }

    fn destroy_queue(&self, queue: Queue) -> HsaResult<()> {
        self.inner.destroy_queue(queue)
    }

    fn queue_error(&self, queue: Queue) -> Option<HsaError> {
        self.inner.queue_error(queue)
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
        self.inner.async_copy(dst, src, size, deps, completion)?;
        lock(&self.inner.copy_engines).push(None);
        Ok(())
    }

    fn async_copy_on_engine(
        &self,
        dst: usize,
        dst_agent: Agent,
        src: usize,
        src_agent: Agent,
        size: usize,
        deps: &[Signal],
        completion: Signal,
        engine: SdmaEngine,
    ) -> HsaResult<()> {
        memory::check_engine(dst_agent, src_agent, engine.id)?;
        self.inner.async_copy(dst, src, size, deps, completion)?;
        lock(&self.inner.copy_engines).push(Some(engine.id));
        Ok(())
    }

    fn copy_engine_status(&self, dst_agent: Agent, src_agent: Agent) -> HsaResult<u32> {
        let mask = match *lock(&self.inner.engine_status) {
            Some(mask) => mask,
            None => memory::engine_status(dst_agent, src_agent)?,
        };
        if mask == 0 {
            return Err(HsaError::new(
                HsaError::STATUS_OUT_OF_RESOURCES,
                "no SDMA engine is free for this copy",
            ));
        }
        Ok(mask)
    }

    fn allocate(&self, pool: MemoryPool, size: usize) -> HsaResult<usize> {
        self.inner.allocate(pool, size)
    }

    fn free(&self, ptr: usize) -> HsaResult<()> {
        self.inner.free(ptr)
    }

    fn allow_access(&self, agents: &[Agent], ptr: usize) -> HsaResult<()> {
        self.inner.allow_access(agents, ptr)
    }

    fn lock_host_memory(&self, ptr: usize, size: usize, _agents: &[Agent]) -> HsaResult<usize> {
        self.inner.lock_host_memory(ptr, size)
    }

    fn unlock_host_memory(&self, ptr: usize) -> HsaResult<()> {
        self.inner.unlock_host_memory(ptr)
    }

    fn fill(&self, ptr: usize, value: u32, count: usize) -> HsaResult<()> {
        self.inner.fill(ptr, value, count)
    }

    fn enable_queue_profiling(&self, queue: Queue) -> HsaResult<()> {
        self.inner.enable_queue_profiling(queue)
    }

    fn enable_copy_profiling(&self) -> HsaResult<()> {
        self.inner.enable_copy_profiling()
    }

    fn dispatch_time(&self, agent: Agent, signal: Signal) -> HsaResult<(u64, u64)> {
        self.inner.dispatch_time(agent, signal)
    }

    fn copy_time(&self, signal: Signal) -> HsaResult<(u64, u64)> {
        self.inner.copy_time(signal)
    }

    fn system_timestamp(&self) -> HsaResult<u64> {
        self.inner.system_timestamp()
    }

    fn timestamp_frequency(&self) -> HsaResult<u64> {
        Ok(CLOCK_HZ)
    }
}
