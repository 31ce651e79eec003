//! One link of a stream's chain, what to do once it completed, and the queues it depends on.

use super::manager::Shared;
use super::queue_pool::QueueHealth;
use super::signal_pool::SignalRef;
use super::staging::StagingBuffer;
use super::timing::Step;
use crate::hsa_interface::{HsaError, HsaInterface, HsaResult, Queue};
use std::sync::Arc;

/// Work the host does after an operation completed, when its stream is synchronized.
pub(crate) enum Release {
    /// Give a staging buffer back to the staging pool.
    Staging(StagingBuffer),
    /// Unlock host memory locked for a large copy (the host address).
    Unlock(usize),
    /// The caller's action, e.g. recycling a kernel's argument buffer.
    Callback(Box<dyn FnOnce() + Send>),
}

/// An operation of a stream. Its signal reaches 0 only after the previous slot's did.
pub(crate) struct Slot<H: HsaInterface> {
    pub(crate) signal: SignalRef<H>,
    /// The queue when a packet on it completes the signal: a later kernel on the same queue
    /// is then ordered by the barrier bit alone.
    pub(crate) on_queue: Option<Queue>,
    /// Signals the operation waits on, held so they are not reused while it may still read them.
    pub(crate) deps: [Option<SignalRef<H>>; 2],
    /// Put on the operation's last slot: that slot completing means the operation is done.
    pub(crate) release: Option<Release>,
    /// How the slot's work is timed, when its stream times its work.
    pub(crate) step: Option<Step>,
}

impl<H: HsaInterface> Slot<H> {
    pub(crate) fn new(signal: SignalRef<H>, on_queue: Option<Queue>) -> Self {
        Slot {
            signal,
            on_queue,
            deps: [None, None],
            release: None,
            step: None,
        }
    }

    pub(crate) fn with_deps(
        mut self,
        first: Option<SignalRef<H>>,
        second: Option<SignalRef<H>>,
    ) -> Self {
        self.deps = [first, second];
        self
    }

    pub(crate) fn with_release(mut self, release: Option<Release>) -> Self {
        self.release = release;
        self
    }

    pub(crate) fn with_step(mut self, step: Option<Step>) -> Self {
        self.step = step;
        self
    }

    pub(crate) fn is_done(&self) -> bool {
        self.signal.is_done()
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

/// The HSA queues a chain of work went through: if one of them stops, waiting on the chain
/// may never end. Small, so a vector.
pub(crate) struct QueueSet<H: HsaInterface>(Vec<Arc<QueueHealth<H>>>);

impl<H: HsaInterface> Default for QueueSet<H> {
    fn default() -> Self {
        QueueSet(Vec::new())
    }
}

impl<H: HsaInterface> Clone for QueueSet<H> {
    fn clone(&self) -> Self {
        QueueSet(self.0.clone())
    }
}

impl<H: HsaInterface> QueueSet<H> {
    pub(crate) fn insert(&mut self, queue: &Arc<QueueHealth<H>>) {
        if !self.0.iter().any(|known| Arc::ptr_eq(known, queue)) {
            self.0.push(Arc::clone(queue));
        }
    }

    pub(crate) fn extend(&mut self, other: &QueueSet<H>) {
        for queue in &other.0 {
            self.insert(queue);
        }
    }

    pub(crate) fn clear(&mut self) {
        self.0.clear();
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &Arc<QueueHealth<H>>> + '_ {
        self.0.iter()
    }

    /// Why one of the queues cannot make progress, if one cannot.
    pub(crate) fn failure(&self) -> Option<HsaError> {
        self.0.iter().find_map(QueueHealth::failure)
    }
}
