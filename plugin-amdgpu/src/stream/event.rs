//! Events: a snapshot of where a stream's work stood when it was recorded.

use super::queue_pool::QueueSet;
use super::signal_pool::SignalRef;
use super::wait::wait_zero;
use crate::hsa_interface::{HsaInterface, HsaResult};
use std::sync::Mutex;
use std::time::Duration;
use sync_util::lock;

/// What an event recorded: the signal of the stream's last slot then, the queues that work
/// went through, and the stream (waiting on one's own event needs nothing).
pub(crate) struct Recorded<H: HsaInterface> {
    pub(crate) signal: SignalRef<H>,
    pub(crate) queues: QueueSet<H>,
    pub(crate) stream: u64,
}

impl<H: HsaInterface> Clone for Recorded<H> {
    fn clone(&self) -> Self {
        Recorded {
            signal: self.signal.clone(),
            queues: self.queues.clone(),
            stream: self.stream,
        }
    }
}

/// Completes when the work its stream had when [`super::Stream::record`] ran completes.
/// An event never recorded, or recorded on a stream with nothing pending, is complete.
/// Holding an event keeps the recorded signal from being reused, not the stream's other work.
pub struct Event<H: HsaInterface> {
    recorded: Mutex<Option<Recorded<H>>>,
}

impl<H: HsaInterface> std::fmt::Debug for Event<H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let recorded = lock(&self.recorded)
            .as_ref()
            .map(|r| (r.stream, r.signal.signal()));
        f.debug_struct("Event")
            .field("recorded", &recorded)
            .finish()
    }
}

impl<H: HsaInterface> Event<H> {
    pub(crate) fn new() -> Self {
        Event {
            recorded: Mutex::new(None),
        }
    }

    pub(crate) fn set(&self, recorded: Option<Recorded<H>>) {
        // Replace under the lock, drop the old signal after it.
        let old = std::mem::replace(&mut *lock(&self.recorded), recorded);
        drop(old);
    }

    /// The recorded work if it has not completed yet.
    pub(crate) fn pending(&self) -> Option<Recorded<H>> {
        let recorded = lock(&self.recorded).clone()?;
        (!recorded.signal.is_done()).then_some(recorded)
    }

    /// Blocks until the recorded work completed; fails if a queue it went through failed.
    pub fn synchronize(&self) -> HsaResult<()> {
        match self.pending() {
            None => Ok(()),
            Some(recorded) => wait_zero(
                recorded.signal.hsa().as_ref(),
                &recorded.queues,
                recorded.signal.signal(),
                // An event is waited for by a thread that has other work to block on it.
                Duration::ZERO,
            ),
        }
    }

    /// Whether the recorded work completed, without blocking; fails if a queue it went through
    /// failed.
    pub fn query(&self) -> HsaResult<bool> {
        match self.pending() {
            None => Ok(true),
            Some(recorded) => match recorded.queues.failure() {
                Some(err) if !recorded.signal.is_done() => Err(err),
                _ => Ok(recorded.signal.is_done()),
            },
        }
    }
}
