//! Profiling of the double, as ROCr's API gives it: a profiled queue writes when it started
//! and completed each packet into the packet's completion signal, a copy submitted with copy
//! profiling on writes its own start and end. The system clock is not the host's (another
//! origin, 250 MHz), so the calibration onto the host clock is exercised.

use super::{invalid, Inner, GPU_AGENT};
use crate::hsa_interface::{Agent, HsaError, HsaResult, Signal};
use std::sync::atomic::Ordering;
use sync_util::lock;

/// The double's system clock: ticks per second, and how far its origin is from the host's.
pub(super) const CLOCK_HZ: u64 = 250_000_000;
const CLOCK_ORIGIN_NS: u64 = 7_000_000_000_000;

/// The double's HSA system clock now, in ticks.
pub(super) fn system_ticks() -> u64 {
    (crate::stream::monotonic_ns() + CLOCK_ORIGIN_NS) / (1_000_000_000 / CLOCK_HZ)
}

/// `hsa_amd_profiling_*` and the system clock (enabling a queue's profiling is the queues').
impl Inner {
    pub(super) fn count_profiling_call(&self) {
        self.counters
            .profiling_calls
            .fetch_add(1, Ordering::Relaxed);
    }

    pub(super) fn enable_copy_profiling(&self) -> HsaResult<()> {
        self.count_profiling_call();
        self.copy_profiling.store(true, Ordering::SeqCst);
        Ok(())
    }

    pub(super) fn dispatch_time(&self, agent: Agent, signal: Signal) -> HsaResult<(u64, u64)> {
        self.count_profiling_call();
        if agent != GPU_AGENT {
            return Err(invalid(format!(
                "dispatch time asked of agent {:#x}",
                agent.0
            )));
        }
        let state = self
            .signal(signal)
            .ok_or_else(|| invalid(format!("dispatch time of unknown signal {:#x}", signal.0)))?;
        let stamps = lock(&state.stamps).packet;
        Ok(stamps)
    }

    pub(super) fn copy_time(&self, signal: Signal) -> HsaResult<(u64, u64)> {
        self.count_profiling_call();
        let state = self
            .signal(signal)
            .ok_or_else(|| invalid(format!("copy time of unknown signal {:#x}", signal.0)))?;
        let stamps = lock(&state.stamps).copy;
        stamps.ok_or_else(|| {
            HsaError::new(
                HsaError::STATUS_ERROR,
                "hsa_amd_profiling_get_async_copy_time failed: no profiled copy completed it",
            )
        })
    }

    pub(super) fn system_timestamp(&self) -> HsaResult<u64> {
        self.count_profiling_call();
        Ok(system_ticks())
    }
}
