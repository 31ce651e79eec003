//! The HSA calls the stream, signal and event logic needs, behind one small trait.
//!
//! Why a seam: the ordering logic (streams as chains of slots, barrier packets, two-step copies,
//! events) is the hardest part of the plugin and there is no AMD GPU where it is built and
//! tested. The plugin runs it over [`crate::hsa_real::RealHsa`] (libhsa-runtime64); the unit
//! tests run the same code over `crate::test_double::SoftwareHsa`, a test double that executes
//! the calls on the CPU. Everything here mirrors an HSA call closely enough that the real
//! implementation is a thin translation.
//!
//! Handles are plain integers, as in HSA (`hsa_signal_t`, `hsa_agent_t`, `hsa_amd_memory_pool_t`
//! are structs of one `u64`; a queue is an `hsa_queue_t *`).

use std::fmt;
use std::time::Duration;

/// An HSA signal (`hsa_signal_t`): a 64-bit value the device or host decrements on completion.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Signal(pub u64);

/// An HSA queue (`hsa_queue_t *`) of AQL packets processed in order by one agent.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Queue(pub u64);

/// An HSA agent (`hsa_agent_t`): a GPU or the host CPU.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Agent(pub u64);

/// An AMD memory pool (`hsa_amd_memory_pool_t`).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct MemoryPool(pub u64);

/// A failed HSA call: the `hsa_status_t` and a message naming the call and the status.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HsaError {
    /// The `hsa_status_t` value (0x1000 and up are errors); `STATUS_ERROR` when there is none.
    pub status: u32,
    pub message: String,
}

impl HsaError {
    /// `HSA_STATUS_ERROR`, the generic failure.
    pub const STATUS_ERROR: u32 = 0x1000;
    /// `HSA_STATUS_ERROR_INVALID_ARGUMENT`.
    pub const STATUS_INVALID_ARGUMENT: u32 = 0x1001;
    /// `HSA_STATUS_ERROR_OUT_OF_RESOURCES`.
    pub const STATUS_OUT_OF_RESOURCES: u32 = 0x1008;

    pub fn new(status: u32, message: impl Into<String>) -> HsaError {
        HsaError {
            status,
            message: message.into(),
        }
    }
}

impl fmt::Display for HsaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for HsaError {}

pub type HsaResult<T> = Result<T, HsaError>;

/// The fields of an AQL kernel dispatch packet (`hsa_kernel_dispatch_packet_t`) that vary per
/// launch; the implementation fills in the header, setup dimensions and completion signal.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct KernelDispatch {
    /// The kernel's code handle (`HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT`: the address of
    /// its `.kd` descriptor).
    pub kernel_object: u64,
    /// Address of the kernel argument buffer, in a kernarg pool.
    pub kernarg_address: usize,
    /// Work-items per work-group in each dimension.
    pub workgroup_size: [u16; 3],
    /// Work-items in the whole grid in each dimension (a multiple of the work-group size).
    pub grid_size: [u32; 3],
    /// LDS bytes: the kernel's fixed group segment size plus dynamic shared memory.
    pub group_segment_size: u32,
    /// Scratch bytes per work-item.
    pub private_segment_size: u32,
}

/// How a wait passes its time (HSA's wait-state hint).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum WaitMode {
    /// Spin on the CPU (`HSA_WAIT_STATE_ACTIVE`): the lowest latency, a core kept busy.
    Spin,
    /// Sleep in the kernel (`HSA_WAIT_STATE_BLOCKED`).
    Sleep,
}

/// Whether a packet waits for the packets before it in its queue (the AQL barrier bit).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum QueueOrder {
    /// Starts only after every earlier packet of the queue completed.
    AfterEarlierPackets,
    /// May start while earlier packets still run (barrier packets before it still hold it
    /// back: the packet processor launches nothing past a barrier packet that waits).
    Unordered,
}

/// Asked now and then while a submission waits for a free slot in a full ring: an error says
/// the queue will never free one (a barrier in it waits for work that failed elsewhere), and
/// ends the wait with that error.
pub type Stuck<'a> = &'a dyn Fn() -> Option<HsaError>;

/// An SDMA engine a copy is asked to run on ([`HsaInterface::async_copy_on_engine`]).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct SdmaEngine {
    /// The engine's `hsa_amd_sdma_engine_id_t` bit (`HSA_AMD_SDMA_ENGINE_0` is 1, `_1` is 2).
    pub id: u32,
    /// A copy within one GPU also goes to an SDMA engine, not to a blit kernel.
    pub force_sdma: bool,
}

/// Work a handler runs once a signal reaches zero (see [`HsaInterface::on_signal_zero`]).
pub type SignalHandler = Box<dyn FnOnce() + Send + 'static>;

/// The HSA calls streams, signals and events are built from. Implementations must be usable
/// from any thread; every call mirrors the HSA function named in its documentation.
pub trait HsaInterface: Send + Sync + 'static {
    // --- Signals -------------------------------------------------------------------------

    /// `hsa_amd_signal_create` (`hsa_signal_create`) with `initial` as the value.
    fn create_signal(&self, initial: i64) -> HsaResult<Signal>;
    /// `hsa_signal_destroy`.
    fn destroy_signal(&self, signal: Signal) -> HsaResult<()>;
    /// `hsa_signal_load_scacquire`.
    fn signal_load(&self, signal: Signal) -> i64;
    /// `hsa_signal_store_screlease`: sets the value and wakes waiters.
    fn signal_store(&self, signal: Signal, value: i64);
    /// `hsa_signal_subtract_screlease`: how the host completes work it did itself.
    fn signal_subtract(&self, signal: Signal, value: i64);
    /// `hsa_signal_wait_scacquire(signal, HSA_SIGNAL_CONDITION_EQ, 0, ...)` for at most
    /// `timeout`, passing the time as `mode` says; returns the value observed last (0 when the
    /// wait succeeded). May return early (spuriously), as HSA's wait may.
    fn wait_signal_zero(&self, signal: Signal, timeout: Duration, mode: WaitMode) -> i64;
    /// `hsa_amd_signal_async_handler(signal, HSA_SIGNAL_CONDITION_EQ, 0, ...)`: runs `handler`
    /// once on a runtime thread after `signal` reaches 0 (at once if it is 0 already).
    fn on_signal_zero(&self, signal: Signal, handler: SignalHandler) -> HsaResult<()>;

    // --- Queues --------------------------------------------------------------------------

    /// `hsa_queue_create` on `agent` with room for `size` packets (a power of two), of type
    /// multi-producer. Errors HSA reports asynchronously for the queue are kept and returned by
    /// [`HsaInterface::queue_error`].
    fn create_queue(&self, agent: Agent, size: u32) -> HsaResult<Queue>;
    /// `hsa_queue_destroy`.
    fn destroy_queue(&self, queue: Queue) -> HsaResult<()>;
    /// The first error HSA reported for `queue` through its error callback, if any, its message
    /// naming the queue. A queue in error processes no further packets: signals it should
    /// complete never will, so waiters check this instead of waiting forever.
    fn queue_error(&self, queue: Queue) -> Option<HsaError>;
    /// Writes a barrier-AND packet: later packets of `queue` start after every signal in `deps`
    /// (at most 5, as the packet has 5 slots) reaches 0 (and, with
    /// [`QueueOrder::AfterEarlierPackets`], every earlier packet completed); then `completion`
    /// is decremented.
    fn submit_barrier_and(
        &self,
        queue: Queue,
        deps: &[Signal],
        completion: Signal,
        order: QueueOrder,
        stuck: Stuck<'_>,
    ) -> HsaResult<()>;
    /// Writes a kernel dispatch packet; `completion` is decremented when the kernel finishes.
    fn submit_kernel(
        &self,
        queue: Queue,
        dispatch: &KernelDispatch,
        completion: Signal,
        order: QueueOrder,
        stuck: Stuck<'_>,
    ) -> HsaResult<()>;

    // --- Memory --------------------------------------------------------------------------

    /// `hsa_amd_memory_async_copy`: copies `size` bytes after every signal in `deps` reached 0,
    /// then decrements `completion`. Both addresses must be device memory or host memory
    /// locked/allocated for the agents (not plain host memory).
    #[allow(clippy::too_many_arguments)]
    fn async_copy(
        &self,
        dst: usize,
        dst_agent: Agent,
        src: usize,
        src_agent: Agent,
        size: usize,
        deps: &[Signal],
        completion: Signal,
    ) -> HsaResult<()>;
    /// `hsa_amd_memory_async_copy_on_engine` (ROCm 5.7 and later): as
    /// [`HsaInterface::async_copy`], on the SDMA engine `engine` names of the GPU that runs the
    /// copy. The runtime refuses (`INVALID_ARGUMENT`) an engine that cannot copy that way.
    #[allow(clippy::too_many_arguments)]
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
    ) -> HsaResult<()>;
    /// `hsa_amd_memory_copy_engine_status`: the `hsa_amd_sdma_engine_id_t` bits of the engines
    /// that may copy from `src_agent` to `dst_agent` and are free now; an error when none is, or
    /// for one agent (a copy within a GPU), or when the runtime lacks the call.
    fn copy_engine_status(&self, dst_agent: Agent, src_agent: Agent) -> HsaResult<u32>;
    /// `hsa_amd_memory_pool_allocate`.
    fn allocate(&self, pool: MemoryPool, size: usize) -> HsaResult<usize>;
    /// `hsa_amd_memory_pool_free`.
    fn free(&self, ptr: usize) -> HsaResult<()>;
    /// `hsa_amd_agents_allow_access`: lets `agents` access memory allocated from a pool.
    fn allow_access(&self, agents: &[Agent], ptr: usize) -> HsaResult<()>;
    /// `hsa_amd_memory_lock`: page-locks plain host memory for `agents`, returns the address
    /// the agents use for it.
    fn lock_host_memory(&self, ptr: usize, size: usize, agents: &[Agent]) -> HsaResult<usize>;
    /// `hsa_amd_memory_unlock`.
    fn unlock_host_memory(&self, ptr: usize) -> HsaResult<()>;
    /// Enters `ptr..ptr+size` of host memory in `agent`'s page tables now, so that its
    /// kernels use it in place without faulting it in (HSA's SVM attribute
    /// `AGENT_ACCESSIBLE_IN_PLACE`). Runtimes without SVM refuse.
    fn prefault_host_memory(&self, ptr: usize, size: usize, agent: Agent) -> HsaResult<()> {
        let _ = (ptr, size, agent);
        Err(HsaError::new(
            hsa_sys::HSA_STATUS_ERROR,
            "this HSA runtime cannot set SVM attributes",
        ))
    }
    /// `hsa_amd_memory_fill`: writes `value` to `count` 32-bit words from `ptr` (4-byte
    /// aligned, inside one allocation or locked range) before returning. Ordered with no
    /// queue: the caller waits for queued work that uses the memory first.
    fn fill(&self, ptr: usize, value: u32, count: usize) -> HsaResult<()>;

    // --- Profiling (the device's timing of queued work, for LIBOMPTARGET_PROFILE) -------------

    /// `hsa_amd_profiling_set_profiler_enabled(queue, 1)`: from now on the packet processor
    /// writes when it started and completed each packet of `queue` into the packet's
    /// completion signal.
    fn enable_queue_profiling(&self, queue: Queue) -> HsaResult<()>;
    /// `hsa_amd_profiling_async_copy_enable(true)`: copies submitted from now on (on any agent)
    /// write when they started and completed into their completion signal.
    fn enable_copy_profiling(&self) -> HsaResult<()>;
    /// `hsa_amd_profiling_get_dispatch_time(agent, signal)`: `(start, end)` of the last packet
    /// of a profiled queue of `agent` that completed `signal`, in ticks of the HSA system
    /// clock. ROCr answers for any signal (what a signal holds that no profiled packet
    /// completed means nothing).
    fn dispatch_time(&self, agent: Agent, signal: Signal) -> HsaResult<(u64, u64)>;
    /// `hsa_amd_profiling_get_async_copy_time(signal)`: `(start, end)` of the last copy
    /// submitted with copy profiling on that completed `signal`, in system clock ticks.
    fn copy_time(&self, signal: Signal) -> HsaResult<(u64, u64)>;
    /// `hsa_system_get_info(HSA_SYSTEM_INFO_TIMESTAMP)`: the HSA system clock now, in ticks.
    fn system_timestamp(&self) -> HsaResult<u64>;
    /// `HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY`: ticks per second of the system clock.
    fn timestamp_frequency(&self) -> HsaResult<u64>;
}
