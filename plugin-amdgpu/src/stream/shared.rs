//! What the streams of one device share: the pools they draw from, the work failed streams
//! left behind, and the release actions that give resources back once work completed.

use super::copy_engines::CopyEngines;
use super::queue_pool::QueuePool;
use super::signal_pool::SignalPool;
use super::slot::{Release, Slot};
use super::staging::StagingPool;
use super::timing::Clock;
use super::StreamConfig;
use crate::hsa_interface::{HsaInterface, HsaResult};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize};
use std::sync::{Arc, Mutex, OnceLock};
use sync_util::lock;

/// What streams of one device share.
pub(crate) struct Shared<H: HsaInterface> {
    pub(crate) hsa: Arc<H>,
    pub(crate) config: StreamConfig,
    pub(crate) signals: SignalPool<H>,
    pub(crate) queues: QueuePool<H>,
    pub(crate) staging: StagingPool<H>,
    /// Which SDMA engine each copy asks for.
    pub(crate) engines: CopyEngines,
    /// Slots of dropped streams whose work failed and never completed; kept so their signals and
    /// buffers are not reused while a dead barrier or copy may still refer to them.
    pub(crate) graveyard: Mutex<Vec<Slot<H>>>,
    pub(crate) live_streams: AtomicUsize,
    pub(crate) next_stream_id: AtomicU64,
    pub(crate) closed: AtomicBool,
    /// Set once the device times its work (queues and copies profiled): how the HSA system
    /// clock maps onto the host's.
    pub(crate) clock: OnceLock<Clock>,
}

impl<H: HsaInterface> Shared<H> {
    /// Finishes the graveyard slots that completed after all.
    pub(crate) fn reap_graveyard(&self) -> HsaResult<()> {
        let done: Vec<Slot<H>> = {
            let mut graveyard = lock(&self.graveyard);
            if graveyard.is_empty() {
                return Ok(());
            }
            let (done, stuck) = std::mem::take(&mut *graveyard)
                .into_iter()
                .partition(Slot::is_done);
            *graveyard = stuck;
            done
        };
        finish_slots(self, done)
    }
}

/// Runs the release actions of completed slots and lets go of their signals; returns the
/// first error and still finishes the rest.
pub(crate) fn finish_slots<H: HsaInterface>(
    shared: &Shared<H>,
    slots: impl IntoIterator<Item = Slot<H>>,
) -> HsaResult<()> {
    let mut first_err = None;
    for slot in slots {
        if let Some(release) = slot.release {
            if let Err(err) = run_release(shared, release) {
                first_err.get_or_insert(err);
            }
        }
    }
    first_err.map_or(Ok(()), Err)
}

/// Runs one release action (also used at once for work that was never submitted).
pub(crate) fn run_release<H: HsaInterface>(shared: &Shared<H>, release: Release) -> HsaResult<()> {
    match release {
        Release::Staging(buffer) => shared.staging.release(buffer),
        Release::Unlock(ptr) => shared.hsa.unlock_host_memory(ptr),
        Release::Callback(action) => {
            action();
            Ok(())
        }
    }
}
