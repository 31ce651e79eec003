//! Signals: a 64-bit value that agents set and wait on; waits with HSA's conditions, timeouts
//! and wait-state hints, and handlers that a thread of their own calls once a condition holds
//! (`hsa_amd_signal_async_handler`).

use crate::status::{self, Result};
use hsa_sys::*;
use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock, RwLock};
use std::time::{Duration, Instant};
use sync_util::{lock, read, wait_timeout, write};

pub struct Signal {
    value: AtomicI64,
    lock: Mutex<()>,
    changed: Condvar,
    /// Profiling timestamps the signal holds (see [`Stamps`]).
    stamps: Mutex<Stamps>,
}

/// The profiling timestamps of a signal, as ROCr keeps them in its signal memory
/// (`SharedSignal` in ROCr's `core/inc/signal.h`), in ticks of the system clock: what
/// `hsa_amd_profiling_get_dispatch_time` and `hsa_amd_profiling_get_async_copy_time` read.
/// Nothing clears them but a new profiled packet or copy: a signal keeps its last stamps.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Stamps {
    /// `amd_signal_t::start_ts`/`end_ts`: written by the packet processor of a queue with
    /// profiling enabled for each packet this signal completes, and by copies the CPU runs.
    pub packet: (u64, u64),
    /// The agent whose engine ran the last copy submitted with copy profiling on (ROCr's
    /// `async_copy_agent`); `None` until one was (ROCr then answers `HSA_STATUS_ERROR`).
    pub copy_agent: Option<crate::agents::AgentIndex>,
    /// `sdma_start_ts`/`sdma_end_ts`: written by a GPU's copy engine; cleared when a
    /// profiled copy is submitted (ROCr's `CopyPrep`).
    pub sdma: (u64, u64),
}

impl Signal {
    pub fn load(&self) -> i64 {
        self.value.load(Ordering::Acquire)
    }

    pub fn store(&self, value: i64) {
        self.value.store(value, Ordering::Release);
        self.wake();
    }

    pub fn subtract(&self, amount: i64) {
        self.value.fetch_sub(amount, Ordering::AcqRel);
        self.wake();
    }

    pub fn stamps(&self) -> Stamps {
        *lock(&self.stamps)
    }

    pub fn change_stamps(&self, change: impl FnOnce(&mut Stamps)) {
        change(&mut lock(&self.stamps));
    }

    fn wake(&self) {
        drop(lock(&self.lock));
        self.changed.notify_all();
        handlers().wake();
    }

    /// Waits until `condition` holds against `compare`, or `timeout` passes; returns the value
    /// last seen.
    pub fn wait(
        &self,
        condition: hsa_signal_condition_t,
        compare: i64,
        timeout: Option<Duration>,
    ) -> i64 {
        let deadline = timeout.and_then(|t| Instant::now().checked_add(t));
        let mut guard = lock(&self.lock);
        loop {
            let value = self.load();
            if holds(condition, value, compare) {
                return value;
            }
            let wait = match deadline {
                Some(deadline) => match deadline.checked_duration_since(Instant::now()) {
                    Some(left) if !left.is_zero() => left,
                    _ => return value,
                },
                None => Duration::from_secs(3600),
            };
            guard = wait_timeout(&self.changed, guard, wait).0;
        }
    }
}

/// Whether `value` satisfies `condition` against `compare`; an unknown condition never holds.
pub fn holds(condition: hsa_signal_condition_t, value: i64, compare: i64) -> bool {
    match condition {
        HSA_SIGNAL_CONDITION_EQ => value == compare,
        HSA_SIGNAL_CONDITION_NE => value != compare,
        HSA_SIGNAL_CONDITION_LT => value < compare,
        HSA_SIGNAL_CONDITION_GTE => value >= compare,
        _ => false,
    }
}

pub fn valid_condition(condition: hsa_signal_condition_t) -> bool {
    condition <= HSA_SIGNAL_CONDITION_GTE
}

/// Every live signal by handle.
#[derive(Default)]
pub struct Signals {
    live: RwLock<HashMap<u64, Arc<Signal>>>,
    next: AtomicU64,
    created: AtomicU64,
}

/// Signal handles: tagged numbers, never reused.
const SIGNAL_TAG: u64 = 0x5160_0000_0000;

impl Signals {
    pub fn create(&self, initial: i64) -> hsa_signal_t {
        let handle = SIGNAL_TAG + self.next.fetch_add(1, Ordering::Relaxed) + 1;
        let signal = Arc::new(Signal {
            value: AtomicI64::new(initial),
            lock: Mutex::new(()),
            changed: Condvar::new(),
            stamps: Mutex::new(Stamps::default()),
        });
        write(&self.live).insert(handle, signal);
        self.created.fetch_add(1, Ordering::Relaxed);
        hsa_signal_t { handle }
    }

    pub fn destroy(&self, signal: hsa_signal_t) -> Result<()> {
        write(&self.live)
            .remove(&signal.handle)
            .map(drop)
            .ok_or(status::INVALID_SIGNAL)
    }

    pub fn get(&self, signal: hsa_signal_t) -> Result<Arc<Signal>> {
        read(&self.live)
            .get(&signal.handle)
            .cloned()
            .ok_or(status::INVALID_SIGNAL)
    }

    /// The signal of `handle` for an entry point that has no status to return an error in: an
    /// invalid handle there is memory corruption on hardware, so the program stops here with
    /// the reason.
    pub fn expect(&self, signal: hsa_signal_t, function: &str) -> Arc<Signal> {
        self.get(signal).unwrap_or_else(|_| {
            eprintln!(
                "omptarget-emu (HSA): {function} was given signal {:#x}, which is not a live \
                 signal (never created, or destroyed); on hardware this corrupts memory",
                signal.handle
            );
            std::process::abort()
        })
    }
}

struct Handler {
    signal: Arc<Signal>,
    condition: hsa_signal_condition_t,
    compare: i64,
    call: unsafe extern "C" fn(hsa_signal_value_t, *mut std::ffi::c_void) -> bool,
    /// The caller's argument, kept as an integer so the handler list can cross threads.
    arg: usize,
}

/// The thread that calls async handlers, and what it waits for.
#[derive(Default)]
pub struct Handlers {
    pending: Mutex<(Vec<Handler>, u64)>,
    changed: Condvar,
    started: OnceLock<()>,
}

pub fn handlers() -> &'static Handlers {
    static HANDLERS: OnceLock<Handlers> = OnceLock::new();
    HANDLERS.get_or_init(Handlers::default)
}

impl Handlers {
    fn wake(&self) {
        let mut pending = lock(&self.pending);
        if pending.0.is_empty() {
            return;
        }
        pending.1 += 1;
        drop(pending);
        self.changed.notify_all();
    }

    /// `hsa_amd_signal_async_handler`.
    pub fn register(
        &'static self,
        signal: Arc<Signal>,
        condition: hsa_signal_condition_t,
        compare: i64,
        call: unsafe extern "C" fn(hsa_signal_value_t, *mut std::ffi::c_void) -> bool,
        arg: usize,
    ) {
        self.started.get_or_init(|| {
            std::thread::Builder::new()
                .name("emu-hsa-handlers".into())
                .spawn(move || self.run())
                .expect("cannot start the HSA emulator's handler thread");
        });
        let mut pending = lock(&self.pending);
        pending.0.push(Handler {
            signal,
            condition,
            compare,
            call,
            arg,
        });
        pending.1 += 1;
        drop(pending);
        self.changed.notify_all();
    }

    fn run(&self) {
        let mut seen = 0;
        loop {
            let ready: Vec<Handler> = {
                let mut pending = lock(&self.pending);
                while pending.1 == seen {
                    pending = wait_timeout(&self.changed, pending, Duration::from_millis(100)).0;
                }
                seen = pending.1;
                let (ready, waiting) = std::mem::take(&mut pending.0)
                    .into_iter()
                    .partition(|h| holds(h.condition, h.signal.load(), h.compare));
                pending.0 = waiting;
                ready
            };
            for handler in ready {
                let value = handler.signal.load();
                // SAFETY: the handler and its argument are what the program registered for
                // this condition; HSA calls them on a runtime thread, as here.
                let again = unsafe { (handler.call)(value, handler.arg as *mut std::ffi::c_void) };
                if again {
                    let mut pending = lock(&self.pending);
                    pending.0.push(handler);
                    pending.1 += 1;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_follow_the_conditions_and_time_out() {
        let signals = Signals::default();
        let handle = signals.create(2);
        let signal = signals.get(handle).unwrap();
        assert_eq!(
            signal.wait(HSA_SIGNAL_CONDITION_EQ, 0, Some(Duration::from_millis(5))),
            2
        );
        let s = signal.clone();
        let t = std::thread::spawn(move || {
            s.subtract(1);
            std::thread::sleep(Duration::from_millis(5));
            s.subtract(1);
        });
        assert_eq!(signal.wait(HSA_SIGNAL_CONDITION_EQ, 0, None), 0);
        assert_eq!(signal.wait(HSA_SIGNAL_CONDITION_LT, 1, None), 0);
        assert_eq!(
            signal.wait(HSA_SIGNAL_CONDITION_GTE, 1, Some(Duration::ZERO)),
            0
        );
        t.join().unwrap();
        signals.destroy(handle).unwrap();
        assert_eq!(signals.destroy(handle), Err(status::INVALID_SIGNAL));
        assert!(signals.get(handle).is_err());
    }
}
