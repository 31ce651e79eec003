//! The per-device owner of queues, signals and staging buffers that streams draw from.

use super::chain::Stream;
use super::copy_engines::CopyEngines;
use super::event::Event;
use super::queue_pool::QueuePool;
use super::shared::Shared;
use super::signal_pool::SignalPool;
use super::staging::StagingPool;
use super::timing::Clock;
use super::{StreamConfig, StreamPolicy};
use crate::hsa_interface::{HsaError, HsaInterface, HsaResult};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use sync_util::lock;

/// Counts for diagnostics and tests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ManagerStats {
    /// Signals created so far (initial ones included).
    pub signals_created: usize,
    /// Signals in the pool, ready for reuse.
    pub signals_idle: usize,
    /// Signals of failed work, never reused.
    pub signals_parked: usize,
    /// HSA queues created so far.
    pub queues_created: usize,
    /// Staging buffers in use.
    pub staging_outstanding: usize,
    /// Staging buffers kept for reuse.
    pub staging_cached: usize,
    /// Streams not dropped yet.
    pub live_streams: usize,
}

/// Streams, events and their resources for one device. `Send + Sync`.
pub struct StreamManager<H: HsaInterface> {
    shared: Arc<Shared<H>>,
}

impl<H: HsaInterface> StreamManager<H> {
    /// Creates the initial signals; queues are created when streams first need them, and
    /// chosen, with the copies' engines, as `policy` says.
    pub fn with_policy(hsa: Arc<H>, config: StreamConfig, policy: StreamPolicy) -> HsaResult<Self> {
        if config.num_queues == 0 {
            return Err(HsaError::new(
                HsaError::STATUS_INVALID_ARGUMENT,
                "the number of HSA queues must be at least 1",
            ));
        }
        let signals = SignalPool::new(Arc::clone(&hsa), config.initial_signals)?;
        let queues = QueuePool::new(
            Arc::clone(&hsa),
            config.agent,
            config.num_queues,
            config.queue_size,
            policy.queue_busy_tracking,
        );
        let staging = StagingPool::new(Arc::clone(&hsa), config.staging_pool, config.agent);
        Ok(StreamManager {
            shared: Arc::new(Shared {
                hsa,
                config,
                signals,
                queues,
                staging,
                engines: CopyEngines::new(policy.multiple_sdma_engines),
                graveyard: Mutex::new(Vec::new()),
                live_streams: AtomicUsize::new(0),
                next_stream_id: AtomicU64::new(0),
                closed: AtomicBool::new(false),
                clock: OnceLock::new(),
            }),
        })
    }

    /// A stream, on the HSA queue the policy chooses (created now if needed).
    pub fn create_stream(&self) -> HsaResult<Stream<H>> {
        if self.shared.closed.load(Ordering::Acquire) {
            return Err(HsaError::new(
                HsaError::STATUS_ERROR,
                "stream requested after the stream manager shut down",
            ));
        }
        // A convenient moment to give back what failed streams left behind.
        if let Err(err) = self.shared.reap_graveyard() {
            log::warn!("releasing resources of failed work: {err}");
        }
        let queue = self.shared.queues.assign()?;
        Ok(Stream::new(Arc::clone(&self.shared), queue))
    }

    /// An event, recorded later with [`Stream::record`].
    pub fn create_event(&self) -> Event<H> {
        Event::new()
    }

    /// From now on the device can time its streams' work ([`Stream::start_timing`]): every
    /// HSA queue of the pool is profiled (`hsa_amd_profiling_set_profiler_enabled`, also on
    /// queues created later), copy profiling is on (`hsa_amd_profiling_async_copy_enable`),
    /// and the HSA system clock is calibrated against the host's. Later calls do nothing.
    pub fn start_work_timing(&self) -> HsaResult<()> {
        let shared = &self.shared;
        if shared.clock.get().is_some() {
            return Ok(());
        }
        let clock = Clock::calibrate(&*shared.hsa)?;
        shared.hsa.enable_copy_profiling()?;
        shared.queues.enable_profiling()?;
        let _ = shared.clock.set(clock);
        Ok(())
    }

    /// Whether [`StreamManager::start_work_timing`] succeeded.
    pub fn times_work(&self) -> bool {
        self.shared.clock.get().is_some()
    }

    /// How many streams hold each queue place for work (0 for a queue not created).
    #[cfg(test)]
    pub(crate) fn queue_users(&self) -> Vec<usize> {
        self.shared.queues.users()
    }

    pub fn stats(&self) -> ManagerStats {
        let shared = &self.shared;
        ManagerStats {
            signals_created: shared.signals.created_count(),
            signals_idle: shared.signals.idle_count(),
            signals_parked: shared.signals.parked_count(),
            queues_created: shared.queues.created(),
            staging_outstanding: shared.staging.outstanding(),
            staging_cached: shared.staging.cached(),
            live_streams: shared.live_streams.load(Ordering::Acquire),
        }
    }

    /// Destroys queues, signals and staging buffers. Every stream must be dropped first (an
    /// error otherwise, and nothing is destroyed). Later calls do nothing. Resources of work
    /// that failed and never completed are left alone (logged): a dead packet may refer to them.
    pub fn shutdown(&self) -> HsaResult<()> {
        let shared = &self.shared;
        let live = shared.live_streams.load(Ordering::Acquire);
        if live > 0 {
            return Err(HsaError::new(
                HsaError::STATUS_ERROR,
                format!("stream manager shut down with {live} streams still alive"),
            ));
        }
        if shared.closed.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        let mut first_err = shared.reap_graveyard().err();
        if let Err(err) = shared.queues.shutdown() {
            first_err.get_or_insert(err);
        }
        let stuck = std::mem::take(&mut *lock(&shared.graveyard));
        if !stuck.is_empty() {
            log::warn!(
                "{} operations of failed streams never completed; their buffers are not freed",
                stuck.len()
            );
            // Dropping them parks their signals; their release actions are dropped unrun.
            drop(stuck);
        }
        for result in [shared.signals.shutdown(), shared.staging.shutdown()] {
            if let Err(err) = result {
                first_err.get_or_insert(err);
            }
        }
        first_err.map_or(Ok(()), Err)
    }
}

impl<H: HsaInterface> std::fmt::Debug for StreamManager<H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamManager")
            .field("config", &self.shared.config)
            .field("stats", &self.stats())
            .finish()
    }
}

impl<H: HsaInterface> Drop for StreamManager<H> {
    fn drop(&mut self) {
        // Best effort for a device layer that did not call shutdown; with live streams it
        // refuses, and their resources stay with the streams.
        if let Err(err) = self.shutdown() {
            log::warn!("stream manager dropped without a clean shutdown: {err}");
        }
    }
}
