//! Pinned staging buffers for two-step copies, kept for reuse instead of allocated per copy.
//!
//! Buffers come from the fine-grained host pool, made accessible to the GPU, and are bucketed
//! by power-of-two capacity; free buffers are kept up to a byte budget. Under valgrind a kept
//! buffer is no-access, so a use after release is reported; it is addressable again when
//! reused, or before it goes back to HSA.

use crate::hsa_interface::{Agent, HsaError, HsaInterface, HsaResult, MemoryPool};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use sync_util::lock;

/// The smallest buffer handed out: small copies share one bucket.
const MIN_CAPACITY: usize = 4096;
/// Bytes of free buffers kept for reuse; beyond this, released buffers go back to the pool.
const MAX_CACHED_BYTES: usize = 64 << 20;

/// A staging buffer: `capacity` bytes of pinned host memory at `ptr`.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct StagingBuffer {
    pub(crate) ptr: usize,
    pub(crate) capacity: usize,
}

pub(crate) struct StagingPool<H: HsaInterface> {
    hsa: Arc<H>,
    pool: MemoryPool,
    gpu: Agent,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    free: BTreeMap<usize, Vec<usize>>,
    cached_bytes: usize,
    /// Buffers handed out and not released yet.
    outstanding: usize,
    closed: bool,
}

impl<H: HsaInterface> StagingPool<H> {
    pub(crate) fn new(hsa: Arc<H>, pool: MemoryPool, gpu: Agent) -> Self {
        StagingPool {
            hsa,
            pool,
            gpu,
            state: Mutex::new(State::default()),
        }
    }

    /// A buffer of at least `size` bytes.
    pub(crate) fn acquire(&self, size: usize) -> HsaResult<StagingBuffer> {
        let capacity = size
            .max(MIN_CAPACITY)
            .checked_next_power_of_two()
            .ok_or_else(|| {
                HsaError::new(
                    HsaError::STATUS_INVALID_ARGUMENT,
                    format!("staging buffer of {size} bytes is too large"),
                )
            })?;
        {
            let mut state = lock(&self.state);
            if state.closed {
                return Err(HsaError::new(
                    HsaError::STATUS_ERROR,
                    "staging buffers used after the stream manager shut down",
                ));
            }
            if let Some(ptr) = state.free.get_mut(&capacity).and_then(Vec::pop) {
                state.cached_bytes -= capacity;
                state.outstanding += 1;
                valgrind_requests::undefined_under_memcheck(ptr, capacity);
                return Ok(StagingBuffer { ptr, capacity });
            }
        }
        let ptr = self.hsa.allocate(self.pool, capacity)?;
        if let Err(err) = self.hsa.allow_access(&[self.gpu], ptr) {
            let _ = self.hsa.free(ptr);
            return Err(err);
        }
        lock(&self.state).outstanding += 1;
        Ok(StagingBuffer { ptr, capacity })
    }

    /// Takes a buffer back once no copy or host step uses it any more.
    pub(crate) fn release(&self, buffer: StagingBuffer) -> HsaResult<()> {
        {
            let mut state = lock(&self.state);
            state.outstanding = state.outstanding.saturating_sub(1);
            if !state.closed && state.cached_bytes + buffer.capacity <= MAX_CACHED_BYTES {
                state.cached_bytes += buffer.capacity;
                valgrind_requests::noaccess_under_memcheck(buffer.ptr, buffer.capacity);
                state
                    .free
                    .entry(buffer.capacity)
                    .or_default()
                    .push(buffer.ptr);
                return Ok(());
            }
        }
        self.hsa.free(buffer.ptr)
    }

    /// Frees the cached buffers; buffers released later are freed at once.
    pub(crate) fn shutdown(&self) -> HsaResult<()> {
        let (free, outstanding) = {
            let mut state = lock(&self.state);
            state.closed = true;
            state.cached_bytes = 0;
            (std::mem::take(&mut state.free), state.outstanding)
        };
        if outstanding > 0 {
            log::warn!("{outstanding} staging buffers still in use at shutdown; not freed");
        }
        let mut first_err = None;
        for (capacity, list) in free {
            for ptr in list {
                valgrind_requests::undefined_under_memcheck(ptr, capacity);
                if let Err(err) = self.hsa.free(ptr) {
                    first_err.get_or_insert(err);
                }
            }
        }
        first_err.map_or(Ok(()), Err)
    }

    pub(crate) fn cached(&self) -> usize {
        lock(&self.state).free.values().map(Vec::len).sum()
    }

    pub(crate) fn outstanding(&self) -> usize {
        lock(&self.state).outstanding
    }
}
