//! Signals of the double: atomics with waiters, and the handler thread that runs
//! `on_signal_zero` handlers as HSA's runtime thread runs async handlers.

use super::{invalid, FaultOp, Inner, POLL};
use crate::hsa_interface::{HsaResult, Signal, SignalHandler};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{mpsc, Arc, Condvar, Mutex};
use std::time::{Duration, Instant};
use sync_util::{lock, wait_timeout};

/// A signal of the double.
pub(super) struct SignalState {
    value: AtomicI64,
    /// Handlers waiting for 0; the mutex also orders value changes with waiters.
    pub(super) handlers: Mutex<Vec<SignalHandler>>,
    changed: Condvar,
    destroyed: AtomicBool,
    pub(super) stamps: Mutex<Stamps>,
}

/// The profiling stamps a signal holds, in system clock ticks.
#[derive(Default)]
pub(super) struct Stamps {
    /// The last packet of a profiled queue that completed the signal.
    pub(super) packet: (u64, u64),
    /// The last copy submitted with copy profiling on: `None` if there was none (ROCr then
    /// answers `HSA_STATUS_ERROR`).
    pub(super) copy: Option<(u64, u64)>,
}

/// `hsa_signal_*` and `hsa_amd_signal_async_handler`, and the waits the queues and copies of
/// the double do on signals.
impl Inner {
    pub(super) fn create_signal(&self, initial: i64) -> HsaResult<Signal> {
        self.check_fault(FaultOp::CreateSignal)?;
        let handle = self.handle();
        let state = Arc::new(SignalState {
            value: AtomicI64::new(initial),
            handlers: Mutex::new(Vec::new()),
            changed: Condvar::new(),
            destroyed: AtomicBool::new(false),
            stamps: Mutex::new(Stamps::default()),
        });
        lock(&self.signals).insert(handle, state);
        self.counters
            .signals_created
            .fetch_add(1, Ordering::Relaxed);
        Ok(Signal(handle))
    }

    pub(super) fn destroy_signal(&self, signal: Signal) -> HsaResult<()> {
        let state = lock(&self.signals)
            .remove(&signal.0)
            .ok_or_else(|| invalid(format!("destroying unknown signal {:#x}", signal.0)))?;
        state.destroyed.store(true, Ordering::SeqCst);
        let pending = std::mem::take(&mut *lock(&state.handlers));
        state.changed.notify_all();
        if !pending.is_empty() {
            self.record_misuse(format!(
                "signal {:#x} destroyed with {} handlers pending",
                signal.0,
                pending.len()
            ));
        }
        self.counters
            .signals_destroyed
            .fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    pub(super) fn signal_load(&self, signal: Signal) -> i64 {
        self.known_signal(signal, "load")
            .map_or(0, |s| s.value.load(Ordering::SeqCst))
    }

    pub(super) fn wait_signal_zero(&self, signal: Signal, timeout: Duration) -> i64 {
        match self.known_signal(signal, "wait") {
            Some(state) => self.wait_zero(&state, timeout),
            None => 0,
        }
    }

    pub(super) fn on_signal_zero(&self, signal: Signal, handler: SignalHandler) -> HsaResult<()> {
        self.check_fault(FaultOp::OnSignalZero)?;
        let state = self
            .signal(signal)
            .ok_or_else(|| invalid(format!("handler on unknown signal {:#x}", signal.0)))?;
        self.counters
            .handlers_registered
            .fetch_add(1, Ordering::Relaxed);
        let run_now = {
            let mut handlers = lock(&state.handlers);
            if state.value.load(Ordering::SeqCst) == 0 {
                Some(handler)
            } else {
                handlers.push(handler);
                None
            }
        };
        if let Some(handler) = run_now {
            self.dispatch(handler);
        }
        Ok(())
    }

    pub(super) fn signal(&self, signal: Signal) -> Option<Arc<SignalState>> {
        lock(&self.signals).get(&signal.0).cloned()
    }

    /// The signal, or a misuse recorded for `what`.
    fn known_signal(&self, signal: Signal, what: &str) -> Option<Arc<SignalState>> {
        let found = self.signal(signal);
        if found.is_none() {
            self.record_misuse(format!("{what} on unknown signal {:#x}", signal.0));
        }
        found
    }

    pub(super) fn change_signal(
        &self,
        signal: Signal,
        what: &str,
        change: impl FnOnce(i64) -> i64,
    ) {
        let Some(state) = self.known_signal(signal, what) else {
            return;
        };
        let ready = {
            let mut handlers = lock(&state.handlers);
            let value = change(state.value.load(Ordering::SeqCst));
            state.value.store(value, Ordering::SeqCst);
            state.changed.notify_all();
            if value < 0 {
                self.record_misuse(format!("signal {:#x} decremented to {value}", signal.0));
            }
            if value == 0 {
                std::mem::take(&mut *handlers)
            } else {
                Vec::new()
            }
        };
        for handler in ready {
            self.dispatch(handler);
        }
    }

    fn dispatch(&self, handler: SignalHandler) {
        if let Some(tx) = lock(&self.handler_tx).as_ref() {
            let _ = tx.send(handler);
        }
    }

    pub(super) fn run_handlers(&self, rx: mpsc::Receiver<SignalHandler>) {
        while !self.shutdown.load(Ordering::SeqCst) {
            match rx.recv_timeout(POLL) {
                Ok(handler) => {
                    if catch_unwind(AssertUnwindSafe(handler)).is_err() {
                        self.record_misuse("a signal handler panicked".into());
                    }
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
        }
    }

    /// Waits up to `timeout` for 0; returns the value seen last.
    fn wait_zero(&self, state: &SignalState, timeout: Duration) -> i64 {
        let deadline = Instant::now() + timeout;
        let mut guard = lock(&state.handlers);
        loop {
            let value = state.value.load(Ordering::SeqCst);
            let now = Instant::now();
            if value == 0
                || now >= deadline
                || state.destroyed.load(Ordering::SeqCst)
                || self.shutdown.load(Ordering::SeqCst)
            {
                return value;
            }
            let slice = (deadline - now).min(POLL);
            guard = wait_timeout(&state.changed, guard, slice).0;
        }
    }

    /// Waits until `signal` is 0; false if the double shuts down, `stop` says so, or the signal
    /// is unknown or destroyed meanwhile (a misuse).
    pub(super) fn wait_until_zero(&self, signal: Signal, stop: impl Fn() -> bool) -> bool {
        let Some(state) = self.known_signal(signal, "waiting") else {
            return false;
        };
        loop {
            if self.wait_zero(&state, POLL) == 0 {
                return true;
            }
            if state.destroyed.load(Ordering::SeqCst) {
                self.record_misuse(format!("signal {:#x} destroyed while awaited", signal.0));
                return false;
            }
            if self.shutdown.load(Ordering::SeqCst) || stop() {
                return false;
            }
        }
    }

    pub(super) fn check_signals(&self, signals: &[Signal]) -> HsaResult<()> {
        let known = lock(&self.signals);
        match signals.iter().find(|s| !known.contains_key(&s.0)) {
            Some(s) => Err(invalid(format!("unknown signal {:#x}", s.0))),
            None => Ok(()),
        }
    }
}
