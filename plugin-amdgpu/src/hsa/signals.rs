//! Waiting on signals and running work when they reach zero.

use super::error::check;
use crate::hsa_interface::{HsaError, Signal, SignalHandler};
use hsa_sys::*;
use std::ffi::c_void;
use std::io::Write;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Duration;

/// Ticks per second assumed where the runtime does not report its timestamp frequency.
const NANOSECOND_TICKS: u64 = 1_000_000_000;

/// `timeout` in ticks of the system timestamp at `frequency` Hz (the unit of
/// `hsa_signal_wait_*`'s timeout hint), saturating at `u64::MAX` (wait forever).
pub fn timeout_ticks(timeout: Duration, frequency: Option<u64>) -> u64 {
    let hz = u128::from(frequency.unwrap_or(NANOSECOND_TICKS));
    let ticks = timeout.as_nanos().saturating_mul(hz) / 1_000_000_000;
    u64::try_from(ticks).unwrap_or(u64::MAX)
}

/// Runs `handler` once on a runtime thread after `signal` reaches 0
/// (`hsa_amd_signal_async_handler`). The handler should be short: the runtime runs every
/// asynchronous handler of the process on one thread.
pub fn on_signal_zero(
    library: &HsaLibrary,
    signal: Signal,
    handler: SignalHandler,
) -> Result<(), HsaError> {
    let data = Box::into_raw(Box::new(handler));
    // SAFETY: `run_signal_handler` matches the handler type and takes ownership of `data`
    // when called; the runtime calls it once because it returns false. The signal handle is
    // the caller's to keep valid, as for every signal call.
    let status = unsafe {
        (library.hsa_amd_signal_async_handler)(
            hsa_signal_t { handle: signal.0 },
            HSA_SIGNAL_CONDITION_EQ,
            0,
            Some(run_signal_handler),
            data.cast(),
        )
    };
    if let Err(error) = check("hsa_amd_signal_async_handler", status) {
        // SAFETY: registration failed, so the runtime never calls the handler: the box is
        // still ours to free.
        drop(unsafe { Box::from_raw(data) });
        return Err(error);
    }
    Ok(())
}

/// The trampoline `on_signal_zero` registers: runs the boxed handler and unregisters.
///
/// # Safety
/// `data` must be a `Box<SignalHandler>` from `Box::into_raw`, passed here once.
unsafe extern "C" fn run_signal_handler(_value: hsa_signal_value_t, data: *mut c_void) -> bool {
    // SAFETY: `data` is the box `on_signal_zero` leaked for this one call.
    let handler = unsafe { Box::from_raw(data.cast::<SignalHandler>()) };
    if catch_unwind(AssertUnwindSafe(move || (*handler)())).is_err() {
        // A panic must not unwind into the runtime; the handler's work is lost, say so.
        let _ = writeln!(
            std::io::stderr(),
            "AMDGPU: a signal completion handler panicked; its work was not completed"
        );
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    #[test]
    fn timeouts_convert_to_timestamp_ticks() {
        let second = Duration::from_secs(1);
        assert_eq!(timeout_ticks(second, Some(100_000_000)), 100_000_000);
        assert_eq!(
            timeout_ticks(Duration::from_micros(250), Some(100_000_000)),
            25_000
        );
        assert_eq!(timeout_ticks(Duration::from_millis(3), None), 3_000_000);
        assert_eq!(timeout_ticks(Duration::ZERO, Some(1_000)), 0);
        assert_eq!(timeout_ticks(Duration::MAX, Some(100_000_000)), u64::MAX);
        assert_eq!(
            timeout_ticks(Duration::from_secs(u64::MAX / 2), None),
            u64::MAX
        );
    }

    fn leaked(handler: SignalHandler) -> *mut c_void {
        Box::into_raw(Box::new(handler)).cast()
    }

    #[test]
    fn the_trampoline_runs_the_handler_once_and_unregisters() {
        let runs = Arc::new(AtomicUsize::new(0));
        let counter = runs.clone();
        let data = leaked(Box::new(move || {
            counter.fetch_add(1, Ordering::SeqCst);
        }));
        // SAFETY: `data` is a leaked Box<SignalHandler>, passed once.
        let keep = unsafe { run_signal_handler(0, data) };
        assert!(!keep);
        assert_eq!(runs.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn a_panicking_handler_does_not_unwind_out_of_the_trampoline() {
        let data = leaked(Box::new(|| panic!("handler failed")));
        // SAFETY: as above.
        assert!(!unsafe { run_signal_handler(0, data) });
    }
}
