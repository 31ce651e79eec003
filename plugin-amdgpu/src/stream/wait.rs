//! Waiting on a signal without waiting forever.

use super::queue_pool::QueueSet;
use crate::hsa_interface::{HsaInterface, HsaResult, Signal, WaitMode};
use std::time::{Duration, Instant};

/// How long one `wait_signal_zero` call blocks before the queues are checked again.
const WAIT_SLICE: Duration = Duration::from_millis(100);

/// Blocks until `signal` is 0, spinning for the first `busy` (LLVM's
/// `LIBOMPTARGET_AMDGPU_STREAM_BUSYWAIT`: short work completes without a sleep and a wake-up),
/// then sleeping. Work that went through `queues` only ends if they keep working, so a stopped
/// queue ends the wait with its error.
pub(crate) fn wait_zero<H: HsaInterface>(
    hsa: &H,
    queues: &QueueSet<H>,
    signal: Signal,
    busy: Duration,
) -> HsaResult<()> {
    wait_zero_within(hsa, queues, signal, busy, None).map(|_| ())
}

/// [`wait_zero`] for at most `limit` when there is one: `Ok(false)` when it passed first.
pub(crate) fn wait_zero_within<H: HsaInterface>(
    hsa: &H,
    queues: &QueueSet<H>,
    signal: Signal,
    busy: Duration,
    limit: Option<Duration>,
) -> HsaResult<bool> {
    let deadline = limit.map(|limit| Instant::now() + limit);
    let busy = limit.map_or(busy, |limit| busy.min(limit));
    if !busy.is_zero() && hsa.wait_signal_zero(signal, busy, WaitMode::Spin) == 0 {
        return Ok(true);
    }
    loop {
        let slice = match deadline {
            None => WAIT_SLICE,
            Some(deadline) => match deadline.saturating_duration_since(Instant::now()) {
                left if left.is_zero() => return Ok(false),
                left => left.min(WAIT_SLICE),
            },
        };
        if hsa.wait_signal_zero(signal, slice, WaitMode::Sleep) == 0 {
            return Ok(true);
        }
        if let Some(err) = queues.failure() {
            // The work may have completed just before another stream's packet failed.
            if hsa.signal_load(signal) == 0 {
                return Ok(true);
            }
            return Err(err);
        }
    }
}
