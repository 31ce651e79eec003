//! Streams, signals and events of one AMD GPU, modelled on LLVM's NextGen AMDGPU plugin and built
//! only on [`HsaInterface`](crate::hsa_interface::HsaInterface).
//!
//! # What the device layer calls
//!
//! ```text
//! StreamConfig { agent, host_agent, staging_pool, num_queues, queue_size,
//!                max_async_copy_bytes, initial_signals }        (StreamConfig::with_defaults)
//! StreamManager::<H>::with_policy(hsa: Arc<H>, config, StreamPolicy)
//!   -> HsaResult<StreamManager<H>>           (StreamPolicy: queue and copy engine choice)
//!   .create_stream() -> HsaResult<Stream<H>>     (queue chosen as StreamPolicy says, created lazily)
//!   .create_event() -> Event<H>
//!   .stats() -> ManagerStats
//!   .start_work_timing() -> HsaResult<()>        (profiles queues and copies; see `timing`)
//!   .shutdown() -> HsaResult<()>                  (once every stream is dropped)
//! Stream<H>  (Send + Sync, &self everywhere)
//!   .push_kernel(&KernelDispatch, Option<Box<dyn FnOnce() + Send>>) -> HsaResult<()>
//!   unsafe .push_host_to_device(dst, src, size, pinned_src: Option<usize>) -> HsaResult<()>
//!   unsafe .push_device_to_host(dst, src, size, pinned_dst: Option<usize>) -> HsaResult<()>
//!   .push_device_to_device(dst, dst_agent, src, src_agent, size) -> HsaResult<()>
//!   .record(&Event<H>) / .wait_for(&Event<H>) -> HsaResult<()>
//!   .synchronize() -> HsaResult<()>,  .query() -> HsaResult<bool>,  .hsa_queue() -> Queue
//!   unsafe .push_internal_host_to_device(dst, src, size) -> HsaResult<()>   (never timed)
//!   .start_timing() -> bool,  .stop_timing(),  .take_work_times() -> HsaResult<Vec<WorkSpan>>
//! Event<H>
//!   .synchronize() -> HsaResult<()>,  .query() -> HsaResult<bool>
//! ```
//!
//! The host-copy pushes are `unsafe`: the host buffer is read or written after they return, up
//! to the stream's synchronisation (see their `# Safety` sections).
//!
//! # Design
//!
//! A stream is a chain of slots. Each operation takes a slot with a fresh output signal (from a
//! recycling signal pool, set to 1) and depends on the previous slot's signal, so a slot's
//! signal reaching 0 means every earlier slot of the chain is done too. Release actions (staging
//! buffer, host unlock, kernarg callback) sit on the operation's last slot and run when the
//! stream is synchronized or queried complete.
//!
//! Signals are reference counted instead of LLVM's sync-cycle counter: a slot holds its own
//! signal and the signals its operation waits on, an event holds the signal it recorded. A
//! signal goes back to the pool when the last holder lets go *and* its value is 0; one that
//! never completed (its work died with a queue) is parked, never reused.
//!
//! Queue choice: a stream takes a queue from the pool when it gets work after being idle and
//! lets it go once that work completed, as LLVM's streams take one each time they leave the
//! device's pool: the least used queue, or the next round-robin without busy tracking
//! ([`StreamPolicy`]). A stream with work in flight keeps its queue.
//!
//! Ordering on shared queues: streams share HSA queues, so a queue interleaves the
//! packets of several streams. A kernel packet has the barrier bit and starts after every earlier
//! packet of its queue, so it needs no barrier when the stream's previous slot was itself a packet
//! on the same queue. Otherwise (a copy, a host step, or nothing known) a barrier-AND packet on
//! the previous signal goes first, unless that signal is already 0. The barrier decrements the
//! kernel's own signal, which then starts at 2, so no extra signal is spent on it.
//!
//! Nothing waits forever: every wait is a loop of short `wait_signal_zero` slices that checks
//! the queues the awaited work went through (the stream's packets and those of the events it
//! waited on). A queue has stopped if HSA reports `queue_error` for it, or if a barrier in it
//! waits on work that went through a stopped queue: that barrier never passes and blocks every
//! stream sharing the queue, so the queue pool tracks such barriers. A stopped queue ends the
//! wait with the original error. The failed work is then dropped from the stream (its signals
//! and buffers kept aside, never reused) and the stream goes on: its next packet goes to a new
//! HSA queue that takes the stopped one's place in the pool (the stopped one is destroyed at
//! shutdown). A submission to a full ring waits for a free slot, and gives up with the error
//! when the queue can never free one.
//!
//! Failure of a push part-way leaves the chain consistent: whatever was never submitted is
//! undone (signals completed and recycled, staging buffers and locks released), whatever was
//! submitted stays in the chain as a valid link, and the push returns the error.

mod chain;
mod copies;
mod copy_engines;
mod event;
mod host_copy;
mod manager;
mod queue_pool;
mod shared;
mod signal_pool;
mod slot;
mod staging;
mod timing;
mod wait;

#[cfg(test)]
mod tests;

pub use chain::Stream;
pub use event::Event;
pub use manager::{ManagerStats, StreamManager};
#[cfg(test)]
pub(crate) use timing::monotonic_ns;
pub use timing::WorkSpan;

use crate::hsa_interface::{Agent, MemoryPool};
use std::time::Duration;

use crate::settings::{
    AmdgpuSettings, DEFAULT_INITIAL_SIGNALS, DEFAULT_MAX_ASYNC_COPY_BYTES,
    DEFAULT_MULTIPLE_SDMA_ENGINES, DEFAULT_NUM_QUEUES, DEFAULT_QUEUE_BUSY_TRACKING,
    DEFAULT_QUEUE_SIZE, DEFAULT_STREAM_BUSY_WAIT_NS,
};

/// How a device's streams choose HSA queues and copy engines (LLVM's AMDGPU settings).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamPolicy {
    /// `LIBOMPTARGET_AMDGPU_HSA_QUEUE_BUSY_TRACKING`: a stream getting work takes the queue
    /// fewest streams use (else the next one round-robin).
    pub queue_busy_tracking: bool,
    /// `LIBOMPTARGET_AMDGPU_USE_MULTIPLE_SDMA_ENGINES`: copies alternate between SDMA engines
    /// `HSA_AMD_SDMA_ENGINE_0` and `_1` (else the runtime picks the engine).
    pub multiple_sdma_engines: bool,
}

impl StreamPolicy {
    /// LLVM's defaults: busy tracking on, one engine chosen by the runtime.
    pub const LLVM_DEFAULTS: StreamPolicy = StreamPolicy {
        queue_busy_tracking: DEFAULT_QUEUE_BUSY_TRACKING,
        multiple_sdma_engines: DEFAULT_MULTIPLE_SDMA_ENGINES,
    };

    pub fn from_settings(settings: &AmdgpuSettings) -> StreamPolicy {
        StreamPolicy {
            queue_busy_tracking: settings.queue_busy_tracking,
            multiple_sdma_engines: settings.multiple_sdma_engines,
        }
    }
}

/// How one device's streams are set up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamConfig {
    /// The GPU.
    pub agent: Agent,
    /// The CPU agent, named for the host side of copies to and from host memory.
    pub host_agent: Agent,
    /// Fine-grained host pool the pinned staging buffers come from.
    pub staging_pool: MemoryPool,
    /// HSA queues, created lazily and shared by streams (at least 1).
    pub num_queues: u32,
    /// Packets per HSA queue (a power of two).
    pub queue_size: u32,
    /// Host copies of at least this many bytes lock the host buffer instead of staging.
    pub max_async_copy_bytes: usize,
    /// Signals created up front and recycled.
    pub initial_signals: u32,
    /// How long a stream's synchronisation spins before it sleeps.
    pub busy_wait: Duration,
}

impl StreamConfig {
    /// The configuration with LLVM's defaults for everything but the agents and the pool.
    pub fn with_defaults(agent: Agent, host_agent: Agent, staging_pool: MemoryPool) -> Self {
        StreamConfig {
            agent,
            host_agent,
            staging_pool,
            num_queues: DEFAULT_NUM_QUEUES,
            queue_size: DEFAULT_QUEUE_SIZE,
            max_async_copy_bytes: DEFAULT_MAX_ASYNC_COPY_BYTES as usize,
            initial_signals: DEFAULT_INITIAL_SIGNALS,
            busy_wait: Duration::from_nanos(DEFAULT_STREAM_BUSY_WAIT_NS.into()),
        }
    }
}
