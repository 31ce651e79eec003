//! Recycled HSA signals, handed out as reference-counted [`SignalRef`]s.
//!
//! Why reference counts: a signal may be read by the slot that owns it, by the next operation
//! of the chain, by another stream's barrier and by an event, each finishing at its own time.
//! It is safe to reset and reuse only when all of them are done, which is exactly when the last
//! reference drops.

use crate::hsa_interface::{HsaError, HsaInterface, HsaResult, Signal};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use sync_util::lock;

pub(crate) struct SignalPool<H: HsaInterface> {
    inner: Arc<PoolInner<H>>,
}

struct PoolInner<H: HsaInterface> {
    hsa: Arc<H>,
    state: Mutex<PoolState>,
}

#[derive(Default)]
struct PoolState {
    /// Completed signals ready for reuse.
    idle: Vec<Signal>,
    /// Signals dropped before they completed: their work died (a queue error), so a barrier
    /// or copy may still wait on them. Never reused.
    parked: Vec<Signal>,
    created: usize,
    closed: bool,
}

impl<H: HsaInterface> SignalPool<H> {
    /// A pool holding `initial` fresh signals.
    pub(crate) fn new(hsa: Arc<H>, initial: u32) -> HsaResult<Self> {
        let mut idle = Vec::with_capacity(initial as usize);
        for _ in 0..initial {
            match hsa.create_signal(1) {
                Ok(signal) => idle.push(signal),
                Err(err) => {
                    for signal in idle {
                        let _ = hsa.destroy_signal(signal);
                    }
                    return Err(err);
                }
            }
        }
        let state = PoolState {
            created: idle.len(),
            idle,
            ..PoolState::default()
        };
        Ok(SignalPool {
            inner: Arc::new(PoolInner {
                hsa,
                state: Mutex::new(state),
            }),
        })
    }

    /// A signal with value 1, reused when one is idle.
    pub(crate) fn acquire(&self) -> HsaResult<SignalRef<H>> {
        let reused = {
            let mut state = lock(&self.inner.state);
            if state.closed {
                return Err(HsaError::new(
                    HsaError::STATUS_ERROR,
                    "signal pool used after the stream manager shut down",
                ));
            }
            state.idle.pop()
        };
        let signal = match reused {
            Some(signal) => signal,
            None => {
                let signal = self.inner.hsa.create_signal(1)?;
                lock(&self.inner.state).created += 1;
                signal
            }
        };
        // Only idle signals (value 0, nobody holding them) are reused, so nobody watches the reset.
        self.inner.hsa.signal_store(signal, 1);
        Ok(SignalRef(Arc::new(Owned {
            signal,
            pool: Arc::clone(&self.inner),
            seen_done: AtomicBool::new(false),
        })))
    }

    /// Destroys the idle signals and the parked ones that completed since; the pool refuses
    /// further use and destroys signals returned later. Parked signals still pending are left
    /// alone: something may wait on them.
    pub(crate) fn shutdown(&self) -> HsaResult<()> {
        let (idle, parked) = {
            let mut state = lock(&self.inner.state);
            state.closed = true;
            (
                std::mem::take(&mut state.idle),
                std::mem::take(&mut state.parked),
            )
        };
        let hsa = &self.inner.hsa;
        let mut first_err = None;
        let mut leaked = 0;
        for signal in idle {
            if let Err(err) = hsa.destroy_signal(signal) {
                first_err.get_or_insert(err);
            }
        }
        for signal in parked {
            if hsa.signal_load(signal) != 0 {
                leaked += 1;
            } else if let Err(err) = hsa.destroy_signal(signal) {
                first_err.get_or_insert(err);
            }
        }
        if leaked > 0 {
            log::warn!("{leaked} HSA signals of failed work are never completed; not destroyed");
        }
        first_err.map_or(Ok(()), Err)
    }

    pub(crate) fn idle_count(&self) -> usize {
        lock(&self.inner.state).idle.len()
    }

    pub(crate) fn created_count(&self) -> usize {
        lock(&self.inner.state).created
    }

    pub(crate) fn parked_count(&self) -> usize {
        lock(&self.inner.state).parked.len()
    }
}

/// A shared hold on a pooled signal; the signal returns to the pool when the last one drops.
pub(crate) struct SignalRef<H: HsaInterface>(Arc<Owned<H>>);

impl<H: HsaInterface> Clone for SignalRef<H> {
    fn clone(&self) -> Self {
        SignalRef(Arc::clone(&self.0))
    }
}

impl<H: HsaInterface> SignalRef<H> {
    pub(crate) fn signal(&self) -> Signal {
        self.0.signal
    }

    pub(crate) fn hsa(&self) -> &Arc<H> {
        &self.0.pool.hsa
    }

    /// Whether the signal reached 0. Once seen at 0 it is not asked again (a pooled signal
    /// is set again only after it went back to the pool).
    pub(crate) fn is_done(&self) -> bool {
        if self.0.seen_done.load(Ordering::Acquire) {
            return true;
        }
        let done = self.hsa().signal_load(self.signal()) == 0;
        if done {
            self.mark_done();
        }
        done
    }

    /// Records that the signal is 0, known without asking the runtime (a later signal of the
    /// same chain was seen at 0, which implies it).
    pub(crate) fn mark_done(&self) {
        self.0.seen_done.store(true, Ordering::Release);
    }

    /// A reference that does not keep the signal from being recycled.
    pub(crate) fn downgrade(&self) -> WeakSignalRef<H> {
        WeakSignalRef(Arc::downgrade(&self.0))
    }

    /// Gives back a signal no submitted work refers to: completes it so it is recycled.
    pub(crate) fn retire_unused(self) {
        self.hsa().signal_store(self.signal(), 0);
    }
}

/// Refers to a pooled signal while someone else holds it; upgrading fails once it went back to
/// the pool, so a recycled signal is never mistaken for the old one.
pub(crate) struct WeakSignalRef<H: HsaInterface>(Weak<Owned<H>>);

impl<H: HsaInterface> WeakSignalRef<H> {
    pub(crate) fn upgrade(&self) -> Option<SignalRef<H>> {
        self.0.upgrade().map(SignalRef)
    }
}

struct Owned<H: HsaInterface> {
    signal: Signal,
    pool: Arc<PoolInner<H>>,
    /// The signal was seen at 0 (or is known to be): no need to load it again.
    seen_done: AtomicBool,
}

impl<H: HsaInterface> Drop for Owned<H> {
    fn drop(&mut self) {
        let hsa = &self.pool.hsa;
        let done = *self.seen_done.get_mut() || hsa.signal_load(self.signal) == 0;
        let mut state = lock(&self.pool.state);
        if !done {
            state.parked.push(self.signal);
        } else if !state.closed {
            state.idle.push(self.signal);
        } else {
            drop(state);
            if let Err(err) = hsa.destroy_signal(self.signal) {
                log::warn!("destroying a signal after shutdown: {err}");
            }
        }
    }
}
