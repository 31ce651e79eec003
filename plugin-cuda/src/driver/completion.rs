//! A flag the driver raises from its own thread when a stream's work reaches it (a host
//! function), for waits with a time limit: the driver's own stream waits have none.

use std::ffi::c_void;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};
use sync_util::{lock, wait_timeout};

#[derive(Default)]
pub struct Completion {
    done: Mutex<bool>,
    raised: Condvar,
}

impl Completion {
    pub fn new() -> Arc<Completion> {
        Arc::default()
    }

    /// Whether the flag is raised, waiting at most `limit` for it.
    pub fn wait_within(&self, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        let mut done = lock(&self.done);
        while !*done {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            done = wait_timeout(&self.raised, done, left).0;
        }
        true
    }

    fn raise(&self) {
        *lock(&self.done) = true;
        self.raised.notify_all();
    }
}

/// Gives `completion` to the driver as a host function's data: one reference, which
/// [`raise_completion`] takes back. The driver skips host functions after a kernel fault; the
/// reference is then never taken back (one small allocation, in a context that is unusable).
pub(super) fn host_function_data(completion: &Arc<Completion>) -> *mut c_void {
    Arc::into_raw(Arc::clone(completion)) as *mut c_void
}

/// Takes back the reference of [`host_function_data`] when the driver refused the function.
///
/// # Safety
/// `data` comes from `host_function_data`, and the driver will not call the function with it.
pub(super) unsafe fn take_back(data: *mut c_void) {
    // SAFETY: as the caller promises, the reference is still `data`'s and used nowhere else.
    drop(unsafe { Arc::from_raw(data as *const Completion) });
}

/// The host function the driver calls when the stream's earlier work has completed.
pub(super) unsafe extern "C" fn raise_completion(data: *mut c_void) {
    // SAFETY: `data` is a reference `host_function_data` gave the driver with this function,
    // which the driver calls at most once per queued call.
    let completion = unsafe { Arc::from_raw(data as *const Completion) };
    // Nothing here panics (the lock ignores poisoning); the guard keeps it so.
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| completion.raise()));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_host_function_raises_the_flag_and_gives_its_reference_back() {
        let done = Completion::new();
        assert!(!done.wait_within(Duration::from_millis(5)));
        let data = host_function_data(&done) as usize;
        assert_eq!(Arc::strong_count(&done), 2);
        // SAFETY: `data` is the reference given above, taken back once, as the driver would.
        let driver = std::thread::spawn(move || unsafe { raise_completion(data as *mut c_void) });
        assert!(done.wait_within(Duration::from_secs(5)));
        driver.join().unwrap();
        assert_eq!(Arc::strong_count(&done), 1);
        assert!(done.wait_within(Duration::ZERO), "the flag stays raised");
    }
}
