//! Waiting on a signal without waiting forever.

use super::queue_pool::QueueSet;
use crate::hsa_interface::{HsaInterface, HsaResult, Signal, WaitMode};
use std::time::Duration;

/// How long one `wait_signal_zero` call blocks before the queues are checked again.
const WAIT_SLICE: Duration = Duration::from_millis(10);

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
    if !busy.is_zero() && hsa.wait_signal_zero(signal, busy, WaitMode::Spin) == 0 {
        return Ok(());
    }
    loop {
        if hsa.wait_signal_zero(signal, WAIT_SLICE, WaitMode::Sleep) == 0 {
            return Ok(());
        }
        if let Some(err) = queues.failure() {
            // The work may have completed just before another stream's packet failed.
            if hsa.signal_load(signal) == 0 {
                return Ok(());
            }
            return Err(err);
        }
    }
}
