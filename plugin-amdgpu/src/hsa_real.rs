//! [`RealHsa`]: the [`HsaInterface`] seam over the real ROCm runtime.
//!
//! Each method is the HSA call its trait documentation names, translated: handles become the
//! C structs of one `u64`, statuses become [`HsaError`]s naming the call. Queues are kept in a
//! table so that their recorded errors and their packet lock can be found from the handle.
//!
//! Handles passed in must be ones this runtime returned and not yet destroyed: HSA uses
//! signal handles and addresses as pointers without checking them, so a stale handle is
//! undefined behaviour in the runtime, exactly as in C. Queue handles are checked (against the
//! table).
//!
//! No hardware tests: no machine this was developed on has an AMD GPU. The stream logic above
//! the seam is tested over the CPU double instead.

use crate::hsa::packets::{barrier_and_packet, kernel_dispatch_packet, ReadyPacket};
use crate::hsa::signals::{self, timeout_ticks};
use crate::hsa::{check, HsaQueue, HsaRuntime};
use crate::hsa_interface::{
    Agent, HsaError, HsaInterface, HsaResult, KernelDispatch, MemoryPool, Queue, QueueOrder,
    SdmaEngine, Signal, SignalHandler, Stuck, WaitMode,
};
use hsa_sys::*;
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::{Arc, RwLock};
use std::time::Duration;
use sync_util::{read, write};

/// The seam over libhsa-runtime64.
pub struct RealHsa {
    runtime: Arc<HsaRuntime>,
    queues: RwLock<HashMap<u64, Arc<HsaQueue>>>,
}

impl RealHsa {
    pub fn new(runtime: Arc<HsaRuntime>) -> RealHsa {
        RealHsa {
            runtime,
            queues: RwLock::new(HashMap::new()),
        }
    }

    pub fn runtime(&self) -> &Arc<HsaRuntime> {
        &self.runtime
    }

    /// Whether the runtime exports the four profiling functions timing the device's work needs.
    pub fn has_profiling(&self) -> bool {
        let library = self.library();
        library.hsa_amd_profiling_set_profiler_enabled.is_some()
            && library.hsa_amd_profiling_async_copy_enable.is_some()
            && library.hsa_amd_profiling_get_dispatch_time.is_some()
            && library.hsa_amd_profiling_get_async_copy_time.is_some()
    }

    fn library(&self) -> &HsaLibrary {
        self.runtime.library()
    }

    /// The queue behind `queue`, or `HSA_STATUS_ERROR_INVALID_QUEUE`.
    fn queue(&self, queue: Queue) -> HsaResult<Arc<HsaQueue>> {
        let queues = read(&self.queues);
        queues
            .get(&queue.0)
            .cloned()
            .ok_or_else(|| unknown_queue(queue))
    }
}

fn unknown_queue(queue: Queue) -> HsaError {
    HsaError::new(
        HSA_STATUS_ERROR_INVALID_QUEUE,
        format!("queue {:#x} is not a live queue of this runtime", queue.0),
    )
}

fn raw_signal(signal: Signal) -> hsa_signal_t {
    hsa_signal_t { handle: signal.0 }
}

fn raw_agents(agents: &[Agent]) -> Vec<hsa_agent_t> {
    agents
        .iter()
        .map(|agent| hsa_agent_t { handle: agent.0 })
        .collect()
}

fn raw_signals(signals: &[Signal]) -> Vec<hsa_signal_t> {
    signals.iter().map(|&signal| raw_signal(signal)).collect()
}

/// A copy's dependency signals as the runtime's copy calls take them: the list, its length,
/// and a pointer that is null for none (the list lives as long as this).
struct Dependencies {
    signals: Vec<hsa_signal_t>,
    count: u32,
}

impl Dependencies {
    fn of(deps: &[Signal]) -> HsaResult<Dependencies> {
        Ok(Dependencies {
            signals: raw_signals(deps),
            count: count(deps.len(), "dependency signals")?,
        })
    }

    fn pointer(&self) -> *const hsa_signal_t {
        if self.signals.is_empty() {
            std::ptr::null()
        } else {
            self.signals.as_ptr()
        }
    }
}

fn raw_agent(agent: Agent) -> hsa_agent_t {
    hsa_agent_t { handle: agent.0 }
}

/// A count of agents or signals as the `u32` HSA takes.
fn count(len: usize, what: &str) -> HsaResult<u32> {
    u32::try_from(len).map_err(|_| {
        HsaError::new(
            HSA_STATUS_ERROR_INVALID_ARGUMENT,
            format!("{len} {what} is more than HSA accepts"),
        )
    })
}

impl HsaInterface for RealHsa {
    // --- Signals -----------------------------------------------------------------------------

    fn create_signal(&self, initial: i64) -> HsaResult<Signal> {
        let mut signal = hsa_signal_t::default();
        // SAFETY: no consumer list (any agent may wait), no attributes; `signal` is a valid
        // out-parameter.
        let status = unsafe {
            (self.library().hsa_amd_signal_create)(initial, 0, std::ptr::null(), 0, &mut signal)
        };
        check("hsa_amd_signal_create", status)?;
        Ok(Signal(signal.handle))
    }

    fn destroy_signal(&self, signal: Signal) -> HsaResult<()> {
        // SAFETY: the seam's contract: `signal` came from create_signal and is destroyed once.
        let status = unsafe { (self.library().hsa_signal_destroy)(raw_signal(signal)) };
        check("hsa_signal_destroy", status)
    }

    fn signal_load(&self, signal: Signal) -> i64 {
        // SAFETY: the seam's contract: a live signal of this runtime.
        unsafe { (self.library().hsa_signal_load_scacquire)(raw_signal(signal)) }
    }

    fn signal_store(&self, signal: Signal, value: i64) {
        // SAFETY: the seam's contract: a live signal of this runtime.
        unsafe { (self.library().hsa_signal_store_screlease)(raw_signal(signal), value) }
    }

    fn signal_subtract(&self, signal: Signal, value: i64) {
        // SAFETY: the seam's contract: a live signal of this runtime.
        unsafe { (self.library().hsa_signal_subtract_screlease)(raw_signal(signal), value) }
    }

    fn wait_signal_zero(&self, signal: Signal, timeout: Duration, mode: WaitMode) -> i64 {
        let ticks = timeout_ticks(timeout, self.runtime.timestamp_frequency());
        // SAFETY: the seam's contract: a live signal of this runtime. The timeout is a hint;
        // the caller re-checks the value returned.
        unsafe {
            (self.library().hsa_signal_wait_scacquire)(
                raw_signal(signal),
                HSA_SIGNAL_CONDITION_EQ,
                0,
                ticks,
                match mode {
                    WaitMode::Spin => HSA_WAIT_STATE_ACTIVE,
                    WaitMode::Sleep => HSA_WAIT_STATE_BLOCKED,
                },
            )
        }
    }

    fn on_signal_zero(&self, signal: Signal, handler: SignalHandler) -> HsaResult<()> {
        signals::on_signal_zero(self.library(), signal, handler)
    }

    // --- Queues ------------------------------------------------------------------------------

    fn create_queue(&self, agent: Agent, size: u32) -> HsaResult<Queue> {
        let queue = HsaQueue::create(self.runtime.library(), agent, size)?;
        let handle = queue.handle();
        let mut queues = write(&self.queues);
        queues.insert(handle, Arc::new(queue));
        Ok(Queue(handle))
    }

    fn destroy_queue(&self, queue: Queue) -> HsaResult<()> {
        let removed = {
            let mut queues = write(&self.queues);
            queues.remove(&queue.0)
        };
        // A submission still holding the queue finishes first (destroy takes its lock), and
        // any later one fails: the queue is marked destroyed.
        removed.ok_or_else(|| unknown_queue(queue))?.destroy()
    }

    fn queue_error(&self, queue: Queue) -> Option<HsaError> {
        self.queue(queue).ok()?.error()
    }

    fn submit_barrier_and(
        &self,
        queue: Queue,
        deps: &[Signal],
        completion: Signal,
        order: QueueOrder,
        stuck: Stuck<'_>,
    ) -> HsaResult<()> {
        let packet = ReadyPacket::from(barrier_and_packet(deps, completion, order)?);
        self.queue(queue)?.submit(&packet, stuck)
    }

    fn submit_kernel(
        &self,
        queue: Queue,
        dispatch: &KernelDispatch,
        completion: Signal,
        order: QueueOrder,
        stuck: Stuck<'_>,
    ) -> HsaResult<()> {
        let packet = ReadyPacket::from(kernel_dispatch_packet(dispatch, completion, order)?);
        self.queue(queue)?.submit(&packet, stuck)
    }

    // --- Memory ------------------------------------------------------------------------------

    fn async_copy(
        &self,
        dst: usize,
        dst_agent: Agent,
        src: usize,
        src_agent: Agent,
        size: usize,
        deps: &[Signal],
        completion: Signal,
    ) -> HsaResult<()> {
        let deps = Dependencies::of(deps)?;
        // SAFETY: the seam's contract: both ranges are device memory or host memory the
        // agents may access, and the signals are live; `deps` outlives the call (the runtime
        // copies the dependency list before returning).
        let status = unsafe {
            (self.library().hsa_amd_memory_async_copy)(
                dst as *mut c_void,
                raw_agent(dst_agent),
                src as *const c_void,
                raw_agent(src_agent),
                size,
                deps.count,
                deps.pointer(),
                raw_signal(completion),
            )
        };
        check("hsa_amd_memory_async_copy", status)
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
        let copy = engine_function(
            self.library().hsa_amd_memory_async_copy_on_engine,
            "hsa_amd_memory_async_copy_on_engine",
        )?;
        let deps = Dependencies::of(deps)?;
        // SAFETY: as for `async_copy`; the engine is a plain id the runtime checks.
        let status = unsafe {
            copy(
                dst as *mut c_void,
                raw_agent(dst_agent),
                src as *const c_void,
                raw_agent(src_agent),
                size,
                deps.count,
                deps.pointer(),
                raw_signal(completion),
                engine.id,
                engine.force_sdma,
            )
        };
        check("hsa_amd_memory_async_copy_on_engine", status)
    }

    fn copy_engine_status(&self, dst_agent: Agent, src_agent: Agent) -> HsaResult<u32> {
        let status_of = engine_function(
            self.library().hsa_amd_memory_copy_engine_status,
            "hsa_amd_memory_copy_engine_status",
        )?;
        let mut mask = 0u32;
        // SAFETY: two agent handles and a valid out-parameter; the runtime checks the agents.
        let status = unsafe {
            status_of(
                hsa_agent_t {
                    handle: dst_agent.0,
                },
                hsa_agent_t {
                    handle: src_agent.0,
                },
                &mut mask,
            )
        };
        check("hsa_amd_memory_copy_engine_status", status)?;
        Ok(mask)
    }

    fn allocate(&self, pool: MemoryPool, size: usize) -> HsaResult<usize> {
        let mut pointer: *mut c_void = std::ptr::null_mut();
        // SAFETY: no flags; `pointer` is a valid out-parameter; an invalid pool is reported as
        // HSA_STATUS_ERROR_INVALID_MEMORY_POOL.
        let status = unsafe {
            (self.library().hsa_amd_memory_pool_allocate)(
                hsa_amd_memory_pool_t { handle: pool.0 },
                size,
                0,
                &mut pointer,
            )
        };
        check("hsa_amd_memory_pool_allocate", status)?;
        Ok(pointer as usize)
    }

    fn free(&self, ptr: usize) -> HsaResult<()> {
        // SAFETY: the seam's contract: `ptr` came from allocate and is freed once.
        let status = unsafe { (self.library().hsa_amd_memory_pool_free)(ptr as *mut c_void) };
        check("hsa_amd_memory_pool_free", status)
    }

    fn allow_access(&self, agents: &[Agent], ptr: usize) -> HsaResult<()> {
        let agents = raw_agents(agents);
        let agent_count = count(agents.len(), "agents")?;
        // SAFETY: `agents` holds `agent_count` agents for the duration of the call; null
        // flags are allowed; the runtime checks `ptr` is one of its allocations.
        let status = unsafe {
            (self.library().hsa_amd_agents_allow_access)(
                agent_count,
                agents.as_ptr(),
                std::ptr::null(),
                ptr as *const c_void,
            )
        };
        check("hsa_amd_agents_allow_access", status)
    }

    fn lock_host_memory(&self, ptr: usize, size: usize, agents: &[Agent]) -> HsaResult<usize> {
        let mut agents = raw_agents(agents);
        let agent_count = count(agents.len(), "agents")?;
        let agent_count = i32::try_from(agent_count).map_err(|_| {
            HsaError::new(
                HSA_STATUS_ERROR_INVALID_ARGUMENT,
                "too many agents to lock for",
            )
        })?;
        // No agents means all of them, as LLVM's plugin locks.
        let agent_pointer = if agents.is_empty() {
            std::ptr::null_mut()
        } else {
            agents.as_mut_ptr()
        };
        let mut agent_address: *mut c_void = std::ptr::null_mut();
        // SAFETY: the seam's contract: `ptr..ptr+size` is host memory of this process;
        // `agents` holds `agent_count` agents for the call; `agent_address` is a valid
        // out-parameter.
        let status = unsafe {
            (self.library().hsa_amd_memory_lock)(
                ptr as *mut c_void,
                size,
                agent_pointer,
                agent_count,
                &mut agent_address,
            )
        };
        check("hsa_amd_memory_lock", status)?;
        Ok(agent_address as usize)
    }

    fn unlock_host_memory(&self, ptr: usize) -> HsaResult<()> {
        // SAFETY: the seam's contract: `ptr` was locked by lock_host_memory.
        let status = unsafe { (self.library().hsa_amd_memory_unlock)(ptr as *mut c_void) };
        check("hsa_amd_memory_unlock", status)
    }

    fn prefault_host_memory(&self, ptr: usize, size: usize, agent: Agent) -> HsaResult<()> {
        let set = self.library().hsa_amd_svm_attributes_set.ok_or_else(|| {
            HsaError::new(
                HSA_STATUS_ERROR,
                "the HSA runtime does not export hsa_amd_svm_attributes_set",
            )
        })?;
        // SVM attributes apply to whole pages.
        const PAGE: usize = 4096;
        let start = ptr & !(PAGE - 1);
        let end = ptr
            .checked_add(size)
            .map(|e| e.next_multiple_of(PAGE))
            .ok_or_else(|| {
                HsaError::new(HSA_STATUS_ERROR_INVALID_ARGUMENT, "the range wraps around")
            })?;
        let mut pair = hsa_amd_svm_attribute_pair_t {
            attribute: HSA_AMD_SVM_ATTRIB_AGENT_ACCESSIBLE_IN_PLACE as u64,
            value: agent.0,
        };
        // SAFETY: the seam's contract: host memory of this process; one attribute pair, read
        // by the call.
        let status = unsafe { set(start as *mut c_void, end - start, &mut pair, 1) };
        check("hsa_amd_svm_attributes_set", status)
    }

    fn fill(&self, ptr: usize, value: u32, count: usize) -> HsaResult<()> {
        // SAFETY: the seam's contract: `count` aligned words from `ptr` in memory HSA knows;
        // the runtime checks both and refuses otherwise.
        let status =
            unsafe { (self.library().hsa_amd_memory_fill)(ptr as *mut c_void, value, count) };
        check("hsa_amd_memory_fill", status)
    }

    // --- Profiling ---------------------------------------------------------------------------

    fn enable_queue_profiling(&self, queue: Queue) -> HsaResult<()> {
        let enable = profiling_function(
            self.library().hsa_amd_profiling_set_profiler_enabled,
            "hsa_amd_profiling_set_profiler_enabled",
        )?;
        // Checked against the table: a live queue of this runtime.
        let raw = self.queue(queue)?.handle() as *mut hsa_queue_t;
        // SAFETY: `raw` is a live queue this runtime created (found in the table above).
        let status = unsafe { enable(raw, 1) };
        check("hsa_amd_profiling_set_profiler_enabled", status)
    }

    fn enable_copy_profiling(&self) -> HsaResult<()> {
        let enable = profiling_function(
            self.library().hsa_amd_profiling_async_copy_enable,
            "hsa_amd_profiling_async_copy_enable",
        )?;
        // SAFETY: takes a plain flag.
        let status = unsafe { enable(true) };
        check("hsa_amd_profiling_async_copy_enable", status)
    }

    fn dispatch_time(&self, agent: Agent, signal: Signal) -> HsaResult<(u64, u64)> {
        let get = profiling_function(
            self.library().hsa_amd_profiling_get_dispatch_time,
            "hsa_amd_profiling_get_dispatch_time",
        )?;
        let mut time = hsa_amd_profiling_dispatch_time_t::default();
        // SAFETY: the seam's contract: a live signal of this runtime; `time` is a valid
        // out-parameter of the type the function writes.
        let status = unsafe {
            get(
                hsa_agent_t { handle: agent.0 },
                raw_signal(signal),
                &mut time,
            )
        };
        check("hsa_amd_profiling_get_dispatch_time", status)?;
        Ok((time.start, time.end))
    }

    fn copy_time(&self, signal: Signal) -> HsaResult<(u64, u64)> {
        let get = profiling_function(
            self.library().hsa_amd_profiling_get_async_copy_time,
            "hsa_amd_profiling_get_async_copy_time",
        )?;
        let mut time = hsa_amd_profiling_async_copy_time_t::default();
        // SAFETY: the seam's contract: a live signal of this runtime; `time` is a valid
        // out-parameter of the type the function writes.
        let status = unsafe { get(raw_signal(signal), &mut time) };
        check("hsa_amd_profiling_get_async_copy_time", status)?;
        Ok((time.start, time.end))
    }

    fn system_timestamp(&self) -> HsaResult<u64> {
        self.runtime.system_timestamp()
    }

    fn timestamp_frequency(&self) -> HsaResult<u64> {
        self.runtime.timestamp_frequency().ok_or_else(|| {
            HsaError::new(
                HSA_STATUS_ERROR,
                "the HSA runtime gives no HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY",
            )
        })
    }
}

/// An optional SDMA engine entry point, or the error saying the runtime lacks it.
fn engine_function<F>(function: Option<F>, name: &str) -> HsaResult<F> {
    function.ok_or_else(|| {
        HsaError::new(
            HSA_STATUS_ERROR,
            format!(
                "the HSA runtime does not export {name} (ROCm 5.7 and later), which copies on \
                 chosen SDMA engines need (LIBOMPTARGET_AMDGPU_USE_MULTIPLE_SDMA_ENGINES)"
            ),
        )
    })
}

/// An optional profiling entry point, or the error saying the runtime lacks it.
fn profiling_function<F>(function: Option<F>, name: &str) -> HsaResult<F> {
    function.ok_or_else(|| {
        HsaError::new(
            HSA_STATUS_ERROR,
            format!("the HSA runtime does not export {name}, which timing the device's work needs"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_that_fit_pass_and_others_are_refused() {
        assert_eq!(count(5, "agents"), Ok(5));
        if usize::BITS > 32 {
            let error = count(usize::MAX, "agents").unwrap_err();
            assert_eq!(error.status, HSA_STATUS_ERROR_INVALID_ARGUMENT);
        }
    }

    #[test]
    fn handles_convert_one_to_one() {
        assert_eq!(raw_signal(Signal(42)).handle, 42);
        assert_eq!(
            raw_agents(&[Agent(1), Agent(2)]),
            [hsa_agent_t { handle: 1 }, hsa_agent_t { handle: 2 }]
        );
        assert_eq!(raw_signals(&[Signal(3)]), [hsa_signal_t { handle: 3 }]);
    }

    #[test]
    fn unknown_queues_are_invalid_queues() {
        let error = unknown_queue(Queue(0x1234));
        assert_eq!(error.status, HSA_STATUS_ERROR_INVALID_QUEUE);
        assert!(error.message.contains("0x1234"));
    }
}
