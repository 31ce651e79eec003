//! An HSA queue: creating it, recording the errors the runtime reports for it, and publishing
//! AQL packets into its ring.
//!
//! Publishing follows the AQL protocol as LLVM's plugin does: reserve a packet index, wait
//! until the packet processor has consumed the slot from the previous lap of the ring, write
//! the packet body, store its first 32 bits (header and setup) with release ordering so the
//! processor never sees a valid header before the body, then ring the doorbell with the index.
//! A lock per queue keeps index order and publication order the same.
//!
//! Untested on hardware: no machine this was developed on has an AMD GPU.

use super::error::{check, hsa_error, usage_error};
use super::packets::ReadyPacket;
use crate::hsa_interface::{Agent, HsaError, Stuck};
use hsa_sys::*;
use std::ffi::c_void;
use std::io::Write;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use sync_util::lock;

/// Where the first error the runtime reports for a queue is kept.
type ErrorSlot = OnceLock<HsaError>;

/// Spins between yields of the thread while waiting for room in a full queue.
const SPINS_BEFORE_YIELD: u32 = 64;
/// A full ring is asked whether it is stuck every this many yields (the question loads
/// signals).
const YIELDS_BETWEEN_CHECKS: u32 = 16;
/// After this many yields a full ring is waited for in short sleeps: a long kernel ahead
/// keeps it full for as long as it runs.
const YIELDS_BEFORE_SLEEP: u32 = 1024;
const FULL_RING_SLEEP: std::time::Duration = std::time::Duration::from_micros(50);

/// A queue of AQL packets on one agent (`HSA_QUEUE_TYPE_MULTI`). Destroyed by
/// [`HsaQueue::destroy`] or on drop.
pub struct HsaQueue {
    library: Arc<HsaLibrary>,
    raw: *mut hsa_queue_t,
    /// The ring (`base_address`), its length in packets and the doorbell: fixed for the life
    /// of the queue, copied out once.
    ring: *mut u32,
    size: u32,
    doorbell: hsa_signal_t,
    errors: Arc<ErrorSlot>,
    /// Held while publishing a packet; `true` once the queue is destroyed.
    destroyed: Mutex<bool>,
}

// SAFETY: the queue is a runtime object meant to be used from any thread (multi-producer);
// the fields only read after creation are never written, and writes to the ring happen under
// the `destroyed` lock.
unsafe impl Send for HsaQueue {}
// SAFETY: as above: every `&self` method either only reads fixed fields or takes the lock.
unsafe impl Sync for HsaQueue {}

impl HsaQueue {
    /// `hsa_queue_create` on `agent` with room for `size` packets (a power of two). Errors
    /// the runtime reports later for the queue are printed to stderr and kept for
    /// [`HsaQueue::error`].
    pub fn create(
        library: &Arc<HsaLibrary>,
        agent: Agent,
        size: u32,
    ) -> Result<HsaQueue, HsaError> {
        if !size.is_power_of_two() {
            return Err(usage_error(
                HSA_STATUS_ERROR_INVALID_ARGUMENT,
                format!("hsa_queue_create: queue size {size} is not a power of two"),
            ));
        }
        let errors: Arc<ErrorSlot> = Arc::new(OnceLock::new());
        // The runtime may call back for as long as the queue exists, and no HSA call says
        // when it has stopped calling: the callback's reference is never given back (a few
        // bytes per queue created).
        let callback_data = Arc::into_raw(errors.clone()) as *mut c_void;
        let mut raw: *mut hsa_queue_t = std::ptr::null_mut();
        // SAFETY: `record_queue_error` matches the callback type and `callback_data` stays
        // valid forever; `raw` is a valid out-parameter. u32::MAX for the segment sizes means
        // "not known in advance", as LLVM passes.
        let status = unsafe {
            (library.hsa_queue_create)(
                hsa_agent_t { handle: agent.0 },
                size,
                HSA_QUEUE_TYPE_MULTI,
                Some(record_queue_error),
                callback_data,
                u32::MAX,
                u32::MAX,
                &mut raw,
            )
        };
        if let Err(error) = check("hsa_queue_create", status) {
            // SAFETY: creation failed, so the runtime did not keep `callback_data`: release it.
            drop(unsafe { Arc::from_raw(callback_data as *const ErrorSlot) });
            return Err(error);
        }
        // SAFETY: hsa_queue_create succeeded, so `raw` points to the runtime's queue, valid
        // until hsa_queue_destroy; these fields never change.
        let (ring, ring_size, doorbell) =
            unsafe { ((*raw).base_address, (*raw).size, (*raw).doorbell_signal) };
        Ok(HsaQueue {
            library: library.clone(),
            raw,
            ring: ring.cast(),
            size: ring_size,
            doorbell,
            errors,
            destroyed: Mutex::new(false),
        })
    }

    /// The handle the seam uses for this queue: the `hsa_queue_t *`.
    pub fn handle(&self) -> u64 {
        self.raw as u64
    }

    /// The first error the runtime reported for the queue, if any. A queue in error processes
    /// no further packets.
    pub fn error(&self) -> Option<HsaError> {
        self.errors.get().cloned()
    }

    /// Publishes `packet`. Waits while the ring is full; fails at once if the queue is in
    /// error or destroyed, and ends the wait with the error `stuck` reports (the queue will
    /// never free a slot).
    pub fn submit(&self, packet: &ReadyPacket, stuck: Stuck<'_>) -> Result<(), HsaError> {
        let destroyed = self.lock();
        if *destroyed {
            return Err(usage_error(
                HSA_STATUS_ERROR_INVALID_QUEUE,
                format!("queue {:#x} was destroyed", self.handle()),
            ));
        }
        if let Some(error) = self.error() {
            return Err(error);
        }
        // SAFETY: a live queue (not destroyed, checked under the lock held until we return).
        let index = unsafe { (self.library.hsa_queue_add_write_index_relaxed)(self.raw, 1) };
        if let Err(error) = self.wait_for_slot(index, stuck) {
            // The slot of `index` stays reserved and is never written: the packet processor
            // would wait for it forever, so the queue is of no use any more.
            let _ = self.errors.set(error.clone());
            return Err(error);
        }
        let slot = self.slot(index);
        // SAFETY: `slot` is the 64-byte, 64-byte-aligned ring entry for `index`, which the
        // packet processor has consumed (wait_for_slot) and no other producer writes (the
        // lock); the header is written last by the atomic store.
        unsafe {
            std::ptr::copy_nonoverlapping(packet.words[1..].as_ptr(), slot.add(1), 15);
            AtomicU32::from_ptr(slot).store(packet.header_word(), Ordering::Release);
        }
        // The doorbell takes the index of the last packet published (as a signal value).
        // SAFETY: the doorbell signal of a live queue.
        unsafe { (self.library.hsa_signal_store_relaxed)(self.doorbell, index as i64) };
        drop(destroyed);
        Ok(())
    }

    /// Waits until the packet processor has consumed the slot `index` reuses, i.e. the read
    /// index is within a ring's length of it: spinning a little, then yielding, then sleeping.
    /// Gives up when the queue reports an error (a queue in error never advances its read
    /// index) or `stuck` says it never will.
    fn wait_for_slot(&self, index: u64, stuck: Stuck<'_>) -> Result<(), HsaError> {
        let mut spins = 0u32;
        let mut yields = 0u32;
        loop {
            // SAFETY: a live queue (the caller holds the lock and checked it is not destroyed).
            let read = unsafe { (self.library.hsa_queue_load_read_index_scacquire)(self.raw) };
            if index.wrapping_sub(read) < u64::from(self.size) {
                return Ok(());
            }
            if let Some(error) = self.error() {
                return Err(error);
            }
            spins += 1;
            if spins < SPINS_BEFORE_YIELD {
                std::hint::spin_loop();
                continue;
            }
            spins = 0;
            yields = yields.saturating_add(1);
            if yields.is_multiple_of(YIELDS_BETWEEN_CHECKS) {
                if let Some(error) = stuck() {
                    return Err(error);
                }
            }
            if yields < YIELDS_BEFORE_SLEEP {
                std::thread::yield_now();
            } else {
                std::thread::sleep(FULL_RING_SLEEP);
            }
        }
    }

    /// The first word of the ring entry for `index`.
    fn slot(&self, index: u64) -> *mut u32 {
        let entry = (index & u64::from(self.size - 1)) as usize;
        // A packet is 16 words; the ring holds `size` of them, so the offset stays inside it.
        self.ring.wrapping_add(entry * 16)
    }

    fn lock(&self) -> MutexGuard<'_, bool> {
        // A panic elsewhere while holding the lock leaves the flag itself consistent.
        lock(&self.destroyed)
    }

    /// `hsa_queue_destroy`. Later submissions fail with `HSA_STATUS_ERROR_INVALID_QUEUE`.
    pub fn destroy(&self) -> Result<(), HsaError> {
        let mut destroyed = self.lock();
        if *destroyed {
            return Ok(());
        }
        *destroyed = true;
        // SAFETY: a live queue, destroyed once (the flag, under the lock).
        let status = unsafe { (self.library.hsa_queue_destroy)(self.raw) };
        check("hsa_queue_destroy", status)
    }
}

impl Drop for HsaQueue {
    fn drop(&mut self) {
        if let Err(error) = self.destroy() {
            log::warn!("{error}");
        }
    }
}

/// The error a queue reports through its callback, as an [`HsaError`].
pub(crate) fn queue_error(status: hsa_status_t, queue: u64) -> HsaError {
    let error = hsa_error(&format!("HSA queue {queue:#x}"), status);
    HsaError::new(
        status,
        format!(
            "{}; the queue processes no further packets and work submitted to it will not \
             complete",
            error.message
        ),
    )
}

/// The callback every queue is created with: keeps the first error, and reports every error
/// on stderr (queue errors are fatal to the work on the queue, so they must not pass
/// unnoticed). It does not abort: the caller waiting on the queue's work returns the error.
///
/// # Safety
/// `data` must be an `Arc<ErrorSlot>` pointer that is never released.
unsafe extern "C" fn record_queue_error(
    status: hsa_status_t,
    source: *mut hsa_queue_t,
    data: *mut c_void,
) {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        let error = queue_error(status, source as u64);
        // Once: a log line too would repeat it (errors are always shown).
        let _ = writeln!(std::io::stderr(), "AMDGPU error: {}", error.message);
        // SAFETY: `data` is the never-released Arc<ErrorSlot> pointer of `HsaQueue::create`.
        let slot = unsafe { &*(data as *const ErrorSlot) };
        let _ = slot.set(error);
    }));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queue_errors_name_the_queue_and_the_status() {
        let error = queue_error(HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION, 0x7f00_1000);
        assert_eq!(error.status, 41);
        assert!(
            error.message.starts_with(
                "HSA queue 0x7f001000 failed: HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION (0x29)"
            ),
            "{}",
            error.message
        );
    }

    #[test]
    fn the_callback_keeps_the_first_error() {
        let slot: Arc<ErrorSlot> = Arc::new(OnceLock::new());
        let data = Arc::into_raw(slot.clone()) as *mut c_void;
        // SAFETY: `data` is an Arc<ErrorSlot> pointer, released only at the end of the test
        // after the last call.
        unsafe {
            record_queue_error(HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION, 0x1000 as *mut _, data);
            record_queue_error(HSA_STATUS_ERROR_FATAL, 0x1000 as *mut _, data);
            drop(Arc::from_raw(data as *const ErrorSlot));
        }
        assert_eq!(
            slot.get().map(|e| e.status),
            Some(HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION)
        );
    }
}
