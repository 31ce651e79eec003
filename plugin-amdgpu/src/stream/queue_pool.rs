//! The HSA queues of one device: created lazily, handed to streams, replaced when they stopped
//! for good, destroyed at shutdown; and whether each one can still make progress.
//!
//! Which queue a stream gets (LLVM's `AMDGPUStreamManagerTy::assignNextQueue`): with busy
//! tracking (`LIBOMPTARGET_AMDGPU_HSA_QUEUE_BUSY_TRACKING`, on by default) the first created
//! queue that no stream uses, else the one with the fewest users (a queue not created yet has
//! none: it is created then); without, the next queue round-robin. A queue's users are the
//! streams holding it for work (see `Stream`'s activation): a stream takes a queue when it gets
//! work after being idle and lets it go once that work is done, as LLVM's streams take one when
//! they leave the device's pool and let it go when they return to it.
//!
//! A queue stops for good in two ways: HSA reports an error for it (a kernel faulted), or a
//! barrier packet in it waits for another stream's work that went through a stopped queue.
//! The second is invisible to HSA, yet it blocks every later packet of every stream sharing the
//! queue; [`QueueHealth::failure`] reports both.

use super::signal_pool::{SignalRef, WeakSignalRef};
use crate::hsa_interface::{Agent, HsaError, HsaInterface, HsaResult, Queue};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use sync_util::lock;

pub(crate) struct QueuePool<H: HsaInterface> {
    hsa: Arc<H>,
    agent: Agent,
    size: u32,
    entries: Vec<Entry<H>>,
    /// The next queue of the round-robin choice.
    next: AtomicUsize,
    /// Choose the least used queue (LLVM's busy tracking) rather than round-robin.
    busy_tracking: bool,
    /// Held while a queue is chosen and its user counted, so that two streams choosing at
    /// once see each other's choice (LLVM chooses under its stream pool's lock).
    choosing: Mutex<()>,
    /// Queues that stopped and were replaced: destroyed at shutdown, when no stream refers to
    /// them any more.
    retired: Mutex<Vec<Arc<QueueHealth<H>>>>,
    /// The device times its work: every queue is profiled, those created later too.
    profiling: AtomicBool,
}

struct Entry<H: HsaInterface> {
    /// The queue in this place, once created; creation and replacement happen under the lock,
    /// so two streams do not both create one.
    health: Mutex<Option<Arc<QueueHealth<H>>>>,
}

impl<H: HsaInterface> QueuePool<H> {
    pub(crate) fn new(
        hsa: Arc<H>,
        agent: Agent,
        count: u32,
        size: u32,
        busy_tracking: bool,
    ) -> Self {
        let entries = (0..count)
            .map(|_| Entry {
                health: Mutex::new(None),
            })
            .collect();
        QueuePool {
            hsa,
            agent,
            size,
            entries,
            next: AtomicUsize::new(0),
            busy_tracking,
            choosing: Mutex::new(()),
            retired: Mutex::new(Vec::new()),
            profiling: AtomicBool::new(false),
        }
    }

    /// Profiles every queue (`hsa_amd_profiling_set_profiler_enabled`): those there now, and
    /// those created from now on. The flag goes first: a queue created meanwhile either sees it
    /// or is already in its place when the loop gets there (enabling twice does no harm).
    pub(crate) fn enable_profiling(&self) -> HsaResult<()> {
        self.profiling.store(true, Ordering::SeqCst);
        for entry in &self.entries {
            if let Some(health) = lock(&entry.health).as_ref() {
                self.hsa.enable_queue_profiling(health.queue)?;
            }
        }
        Ok(())
    }

    /// A queue for a stream that gets work, counted as one more user of it: the least used one
    /// with busy tracking, else the next in round-robin order; created if it does not exist
    /// yet. The stream gives it back with [`QueueHealth::release_user`].
    pub(crate) fn assign(&self) -> HsaResult<Arc<QueueHealth<H>>> {
        let _choosing = lock(&self.choosing);
        let index = if self.busy_tracking {
            self.least_used()
        } else {
            self.next.fetch_add(1, Ordering::Relaxed) % self.entries.len().max(1)
        };
        let entry = self.entries.get(index).ok_or_else(|| {
            HsaError::new(
                HsaError::STATUS_INVALID_ARGUMENT,
                "the stream manager has no HSA queues (num_queues is 0)",
            )
        })?;
        let mut health = lock(&entry.health);
        let queue = match health.as_ref() {
            Some(health) => Arc::clone(health),
            None => {
                let created = self.create()?;
                *health = Some(Arc::clone(&created));
                created
            }
        };
        queue.users.fetch_add(1, Ordering::AcqRel);
        Ok(queue)
    }

    /// LLVM's choice with busy tracking: the first created queue without users, else the
    /// first with the fewest (a queue not created yet counts as none, but is taken only when
    /// every created one is in use).
    fn least_used(&self) -> usize {
        let mut chosen = 0;
        let mut fewest = usize::MAX;
        for (index, entry) in self.entries.iter().enumerate() {
            let users = lock(&entry.health)
                .as_ref()
                .map(|health| health.users.load(Ordering::Acquire));
            if users == Some(0) {
                return index;
            }
            let users = users.unwrap_or(0);
            if users < fewest {
                (chosen, fewest) = (index, users);
            }
        }
        chosen
    }

    /// How many streams use each queue place (0 for one not created): for tests.
    #[cfg(test)]
    pub(crate) fn users(&self) -> Vec<usize> {
        self.entries
            .iter()
            .map(|entry| {
                lock(&entry.health)
                    .as_ref()
                    .map_or(0, |health| health.users.load(Ordering::Acquire))
            })
            .collect()
    }

    fn create(&self) -> HsaResult<Arc<QueueHealth<H>>> {
        let queue = self.hsa.create_queue(self.agent, self.size)?;
        if self.profiling.load(Ordering::SeqCst) {
            // The program's work does not depend on it: without profiling the queue's packets
            // carry no stamps of their own, which the timing reports as an error.
            if let Err(err) = self.hsa.enable_queue_profiling(queue) {
                log::warn!("HSA queue {:#x} is not profiled: {err}", queue.0);
            }
        }
        Ok(Arc::new(QueueHealth {
            hsa: Arc::clone(&self.hsa),
            queue,
            users: AtomicUsize::new(0),
            waits: Mutex::new(Vec::new()),
            submit: Mutex::new(()),
        }))
    }

    /// A working queue for a stream whose queue `failed` stopped for good: the queue that took
    /// its place, created now if nobody replaced it yet, counted as one more user of it (the
    /// stream lets the stopped one go). The stopped queue is destroyed at shutdown.
    pub(crate) fn replace(&self, failed: &Arc<QueueHealth<H>>) -> HsaResult<Arc<QueueHealth<H>>> {
        for entry in &self.entries {
            let mut health = lock(&entry.health);
            if health.as_ref().is_some_and(|h| Arc::ptr_eq(h, failed)) {
                let created = self.create()?;
                lock(&self.retired).push(Arc::clone(failed));
                *health = Some(Arc::clone(&created));
                created.users.fetch_add(1, Ordering::AcqRel);
                return Ok(created);
            }
        }
        // Replaced already by another stream: take a queue as a stream getting work does.
        self.assign()
    }

    pub(crate) fn created(&self) -> usize {
        self.entries
            .iter()
            .filter(|entry| lock(&entry.health).is_some())
            .count()
            + lock(&self.retired).len()
    }

    /// Destroys every queue created. Streams must be gone.
    pub(crate) fn shutdown(&self) -> HsaResult<()> {
        let mut first_err = None;
        let retired = std::mem::take(&mut *lock(&self.retired));
        let current = self
            .entries
            .iter()
            .filter_map(|entry| lock(&entry.health).take());
        for health in retired.into_iter().chain(current) {
            lock(&health.waits).clear();
            if let Err(err) = self.hsa.destroy_queue(health.queue) {
                first_err.get_or_insert(err);
            }
        }
        first_err.map_or(Ok(()), Err)
    }
}

/// One HSA queue and the barriers in it that wait on other streams' work.
pub(crate) struct QueueHealth<H: HsaInterface> {
    hsa: Arc<H>,
    queue: Queue,
    /// Streams holding this queue for work (see [`QueuePool::assign`]).
    users: AtomicUsize,
    waits: Mutex<Vec<CrossWait<H>>>,
    /// Held while a barrier and its kernel are written, so no other packet comes between them
    /// (not needed for correctness: it keeps other streams from queueing behind our barrier).
    submit: Mutex<()>,
}

/// A barrier in the queue waiting on `signal`, whose work went through `queues`.
struct CrossWait<H: HsaInterface> {
    /// Weak: once the waiting slot and the event let go, the barrier is done with it.
    signal: WeakSignalRef<H>,
    queues: Vec<Weak<QueueHealth<H>>>,
}

impl<H: HsaInterface> QueueHealth<H> {
    pub(crate) fn queue(&self) -> Queue {
        self.queue
    }

    /// A stream that keeps this queue (handed out) has work for it again.
    pub(crate) fn add_user(&self) {
        self.users.fetch_add(1, Ordering::AcqRel);
    }

    /// A stream that held this queue for work lets it go.
    pub(crate) fn release_user(&self) {
        let released = self
            .users
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1));
        debug_assert!(released.is_ok(), "queue released more often than assigned");
    }

    pub(crate) fn submit_lock(&self) -> std::sync::MutexGuard<'_, ()> {
        lock(&self.submit)
    }

    /// Notes a barrier just written to this queue that waits on `signal`, produced by work
    /// that went through `queues`.
    pub(crate) fn add_wait(&self, signal: &SignalRef<H>, queues: &QueueSet<H>) {
        let wait = CrossWait {
            signal: signal.downgrade(),
            queues: queues.iter().map(Arc::downgrade).collect(),
        };
        let mut waits = lock(&self.waits);
        waits.retain(|wait| wait.pending().is_some());
        waits.push(wait);
    }

    /// Why this queue cannot make progress, if it cannot.
    pub(crate) fn failure(self: &Arc<Self>) -> Option<HsaError> {
        self.failure_seen(&mut Vec::new())
    }

    fn failure_seen(self: &Arc<Self>, seen: &mut Vec<*const Self>) -> Option<HsaError> {
        // Waits between queues may form cycles (streams ping-ponging events).
        let me = Arc::as_ptr(self);
        if seen.contains(&me) {
            return None;
        }
        seen.push(me);
        if let Some(err) = self.hsa.queue_error(self.queue) {
            return Some(err);
        }
        // Copied out so no lock is held while other queues are asked (they may ask us).
        let blocking: Vec<Vec<Arc<Self>>> = {
            let mut waits = lock(&self.waits);
            waits.retain(|wait| wait.pending().is_some());
            waits
                .iter()
                .map(|wait| wait.queues.iter().filter_map(Weak::upgrade).collect())
                .collect()
        };
        blocking.iter().flatten().find_map(|other| {
            other.failure_seen(seen).map(|err| {
                HsaError::new(
                    err.status,
                    format!(
                        "HSA queue {:#x} is blocked by a barrier on failed work: {}",
                        self.queue.0, err.message
                    ),
                )
            })
        })
    }
}

impl<H: HsaInterface> CrossWait<H> {
    /// The awaited signal while the barrier may still wait on it.
    fn pending(&self) -> Option<SignalRef<H>> {
        self.signal.upgrade().filter(|signal| !signal.is_done())
    }
}

/// The HSA queues a chain of work went through: if one of them stops, waiting on the chain
/// may never end. Small, so a vector.
pub(crate) struct QueueSet<H: HsaInterface>(Vec<Arc<QueueHealth<H>>>);

impl<H: HsaInterface> Default for QueueSet<H> {
    fn default() -> Self {
        QueueSet(Vec::new())
    }
}

impl<H: HsaInterface> Clone for QueueSet<H> {
    fn clone(&self) -> Self {
        QueueSet(self.0.clone())
    }
}

impl<H: HsaInterface> QueueSet<H> {
    pub(crate) fn insert(&mut self, queue: &Arc<QueueHealth<H>>) {
        if !self.0.iter().any(|known| Arc::ptr_eq(known, queue)) {
            self.0.push(Arc::clone(queue));
        }
    }

    pub(crate) fn extend(&mut self, other: &QueueSet<H>) {
        for queue in &other.0 {
            self.insert(queue);
        }
    }

    pub(crate) fn clear(&mut self) {
        self.0.clear();
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &Arc<QueueHealth<H>>> + '_ {
        self.0.iter()
    }

    /// Why one of the queues cannot make progress, if one cannot.
    pub(crate) fn failure(&self) -> Option<HsaError> {
        self.0.iter().find_map(QueueHealth::failure)
    }
}
