//! One link of a stream's chain and what to do once it completed.

use super::signal_pool::SignalRef;
use super::staging::StagingBuffer;
use super::timing::Step;
use crate::hsa_interface::{HsaInterface, Queue};

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
