//! A stream: a chain of slots, each operation depending on the one before it. Kernels, event
//! waits and completion live here; the copies (host to device, device to host, device to
//! device, staged or locked) are pushed by `super::copies`.

use super::event::{Event, Recorded};
use super::queue_pool::{QueueHealth, QueueSet};
use super::shared::{finish_slots, Shared};
use super::signal_pool::SignalRef;
use super::slot::{Release, Slot};
use super::timing::{monotonic_ns, Step, StepClock, StreamTiming, WorkSpan};
use super::wait::{wait_zero, wait_zero_within};
use crate::hsa_interface::{HsaInterface, HsaResult, KernelDispatch, Queue, QueueOrder, Signal};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use sync_util::lock;

/// Work the caller wants done once a kernel completed.
type Callback = Box<dyn FnOnce() + Send>;

/// An ordered sequence of kernels and copies on one device. `Send + Sync`; every method takes
/// `&self` and locks internally. Created by [`super::StreamManager::create_stream`].
///
/// Host buffers named in pushes must stay valid until [`Stream::synchronize`] (or a `query`
/// returning `true`) — also when the push returned an error, since part of it may have been
/// submitted already.
pub struct Stream<H: HsaInterface> {
    pub(super) shared: Arc<Shared<H>>,
    id: u64,
    state: Mutex<ChainState<H>>,
}

pub(super) struct ChainState<H: HsaInterface> {
    /// The HSA queue, shared with other streams; replaced when it stopped for good, and chosen
    /// again when the stream gets work after being idle (see [`Stream::activate`]).
    queue: Arc<QueueHealth<H>>,
    /// The stream counts as a user of `queue`: it has work that was not completed yet.
    counted: bool,
    /// The queue was handed out ([`Stream::hsa_queue`]): the stream stays on it (counted as
    /// its user while it has work, as any stream).
    pinned: bool,
    pub(super) slots: Vec<Slot<H>>,
    /// The queues the pending work went through (its packets', and those of events waited on).
    watch: QueueSet<H>,
    /// Slots of a chain whose wait failed and that had not completed: kept, not reused, and
    /// finished if they complete after all.
    abandoned: Vec<Slot<H>>,
    /// The device's timing of the stream's work, while it is timed (see `super::timing`).
    pub(super) timing: Option<StreamTiming>,
}

/// Whether a push is work the plugin reports timing for (a program's copy or kernel) or the
/// plugin's own (a launch environment's copy), which is never timed.
#[derive(Copy, Clone, PartialEq, Eq)]
pub(super) enum Work {
    Counted,
    Internal,
}

/// A timed push under way: when it was submitted and where its slots start in the chain.
pub(super) struct OpStart {
    at_ns: u64,
    from: usize,
}

impl<H: HsaInterface> ChainState<H> {
    /// The last slot's signal, if that work may still be running.
    pub(super) fn pending_input(&self) -> Option<SignalRef<H>> {
        self.slots
            .last()
            .filter(|slot| !slot.is_done())
            .map(|slot| slot.signal.clone())
    }

    /// Moves completed slots (of the chain and of earlier failed chains) out; the incomplete
    /// ones of the chain become abandoned. The chain is empty afterwards. `last_done`: the
    /// chain's last signal was seen at 0, so every slot of the chain and what it waited on is
    /// done (each slot waits for the one before it) and need not be asked.
    fn take_completed(&mut self, last_done: bool) -> Vec<Slot<H>> {
        self.watch.clear();
        let mut finished = Vec::new();
        let mut slots = std::mem::take(&mut self.slots);
        if last_done {
            for slot in &slots {
                slot.signal.mark_done();
                slot.deps.iter().flatten().for_each(SignalRef::mark_done);
            }
        }
        let abandoned = std::mem::take(&mut self.abandoned);
        for slot in slots.drain(..).chain(abandoned) {
            if slot.is_done() {
                finished.push(slot);
            } else {
                self.abandoned.push(slot);
            }
        }
        // Keep the chain's allocation for the next cycle.
        self.slots = slots;
        finished
    }

    /// A timed push starting now, if the stream is timed and `work` counts.
    pub(super) fn begin_op(&self, work: Work) -> Option<OpStart> {
        match (&self.timing, work) {
            (Some(_), Work::Counted) => Some(OpStart {
                at_ns: monotonic_ns(),
                from: self.slots.len(),
            }),
            _ => None,
        }
    }

    /// Counts a timed push that succeeded: one operation, made of the steps of the slots it
    /// pushed. A failed push is not counted (its slots' steps belong to no operation).
    pub(super) fn end_op(&mut self, op: Option<OpStart>, succeeded: bool) {
        let (Some(op), Some(timing)) = (op, self.timing.as_mut()) else {
            return;
        };
        if !succeeded {
            timing.prelude = None;
            return;
        }
        let pushed = self.slots.get_mut(op.from..).unwrap_or_default();
        let steps = pushed.iter().filter(|slot| slot.step.is_some()).count();
        let id = timing.open(op.at_ns, steps);
        for step in pushed.iter_mut().filter_map(|slot| slot.step.as_mut()) {
            step.op = Some(id);
        }
    }

    /// Reads the times of the timed steps among `finished`, before their signals go back to
    /// the pool; after a failure the operations not handed out yet are forgotten (some of them
    /// never complete).
    fn time_completed(&mut self, hsa: &H, finished: &[Slot<H>], ok: bool) {
        let Some(timing) = self.timing.as_mut() else {
            return;
        };
        for slot in finished {
            if let Some(step) = &slot.step {
                timing.record(hsa, slot.signal.signal(), step);
            }
        }
        if !ok {
            timing.discard();
        }
    }
}

impl<H: HsaInterface> Stream<H> {
    pub(crate) fn new(shared: Arc<Shared<H>>, queue: Arc<QueueHealth<H>>) -> Self {
        shared.live_streams.fetch_add(1, Ordering::AcqRel);
        let id = shared.next_stream_id.fetch_add(1, Ordering::Relaxed);
        Stream {
            shared,
            id,
            // Created for work: the manager counted the stream as the queue's user.
            state: Mutex::new(ChainState {
                queue,
                counted: true,
                pinned: false,
                slots: Vec::new(),
                watch: QueueSet::default(),
                abandoned: Vec::new(),
                timing: None,
            }),
        }
    }

    /// The HSA queue this stream's packets go to (shared with other streams). The stream keeps
    /// it from now on (the caller may submit packets to it, an OpenMP interop object's
    /// `targetsync`), unless it stops for good.
    pub fn hsa_queue(&self) -> Queue {
        let mut state = self.state();
        if let Err(err) = self.pin(&mut state) {
            // An idle stream that could not get a queue keeps the one it had, which exists.
            log::warn!("choosing an HSA queue for a stream: {err}");
            state.pinned = true;
        }
        state.queue.queue()
    }

    /// Makes the stream a user of a queue when it gets work after being idle: the queue pool
    /// chooses one (the least used, or the next round-robin), as LLVM assigns a queue each time
    /// a stream leaves the device's pool. A stream with work in flight keeps its queue, so that
    /// its packets stay ordered.
    pub(super) fn activate(&self, state: &mut ChainState<H>) -> HsaResult<()> {
        if state.counted {
            return Ok(());
        }
        if state.pinned {
            state.queue.add_user();
        } else {
            state.queue = self.shared.queues.assign()?;
        }
        state.counted = true;
        Ok(())
    }

    /// Keeps the stream on its queue for good, choosing it now if the stream is idle.
    fn pin(&self, state: &mut ChainState<H>) -> HsaResult<()> {
        self.activate(state)?;
        state.pinned = true;
        Ok(())
    }

    /// The stream's work is done: it lets its queue go (a pinned stream keeps it, uncounted).
    fn go_idle(state: &mut ChainState<H>) {
        if state.counted {
            state.queue.release_user();
            state.counted = false;
        }
    }

    /// The stream's queue, replaced by a working one when it stopped for good (HSA reported an
    /// error for it, or a barrier in it waits on failed work) and none of this stream's work
    /// is pending on it: that failure is reported by the stream's wait first.
    fn working_queue(&self, state: &mut ChainState<H>) -> HsaResult<Arc<QueueHealth<H>>> {
        if let Some(err) = state.queue.failure() {
            if state.pending_input().is_some() {
                return Err(err);
            }
            log::warn!(
                "HSA queue {:#x} stopped ({}); the stream goes on on another queue",
                state.queue.queue().0,
                err.message
            );
            let replacement = self.shared.queues.replace(&state.queue)?;
            state.queue.release_user();
            state.queue = replacement;
        }
        Ok(Arc::clone(&state.queue))
    }

    pub(super) fn state(&self) -> MutexGuard<'_, ChainState<H>> {
        lock(&self.state)
    }

    pub(super) fn hsa(&self) -> &H {
        &self.shared.hsa
    }

    /// Refuses new work behind pending work that can never complete.
    pub(super) fn check_failed(&self, state: &ChainState<H>) -> HsaResult<()> {
        // The queues' state first: it costs no runtime call, and a failure is rare.
        match state.watch.failure() {
            Some(err) if state.pending_input().is_some() => Err(err),
            _ => Ok(()),
        }
    }

    // --- Kernels -----------------------------------------------------------------------------

    /// Launches a kernel after the stream's earlier work. `release` runs (on any thread) once
    /// the kernel completed and the stream is synchronized or queried complete. On error the
    /// kernel was not launched and `release` has already run.
    pub fn push_kernel(
        &self,
        dispatch: &KernelDispatch,
        release: Option<Box<dyn FnOnce() + Send>>,
    ) -> HsaResult<()> {
        let mut release = release;
        let mut state = self.state();
        let op = state.begin_op(Work::Counted);
        let result = self.push_kernel_locked(&mut state, dispatch, &mut release, op.is_some());
        state.end_op(op, result.is_ok());
        // Left over only if the kernel was never launched: the kernel reads nothing, but the
        // launch's earlier work on this stream (the copy of its launch environment, say) may
        // still read what the release frees. It runs once that work completed, or now.
        if let Some(action) = release {
            match state.slots.last().filter(|slot| !slot.is_done()) {
                Some(last) => {
                    let after = Slot::new(last.signal.clone(), last.on_queue);
                    state
                        .slots
                        .push(after.with_release(Some(Release::Callback(action))));
                }
                None => {
                    drop(state);
                    action();
                }
            }
        }
        result
    }

    fn push_kernel_locked(
        &self,
        state: &mut ChainState<H>,
        dispatch: &KernelDispatch,
        release: &mut Option<Callback>,
        timed: bool,
    ) -> HsaResult<()> {
        let hsa = self.hsa();
        self.check_failed(state)?;
        self.activate(state)?;
        let health = self.working_queue(state)?;
        let queue = health.queue();
        let stuck = || health.failure();
        let done = self.shared.signals.acquire()?;
        let input = state.pending_input();
        // A pending packet of this stream on this queue: the barrier bit orders the kernel
        // after it. Anything else pending (a copy, a host step) needs a barrier packet first,
        // which holds the kernel back by itself. With nothing pending the kernel is free to
        // run beside other streams' packets.
        let (barrier, order) = match (&input, state.slots.last()) {
            (Some(_), Some(last)) if last.on_queue == Some(queue) => {
                (false, QueueOrder::AfterEarlierPackets)
            }
            (Some(_), _) => (true, QueueOrder::Unordered),
            _ => (false, QueueOrder::Unordered),
        };
        if barrier {
            // The barrier and the kernel each decrement the kernel's signal once.
            hsa.signal_store(done.signal(), 2);
        }
        let submitted = {
            let _order = health.submit_lock();
            let barrier_submitted = match input.as_ref().filter(|_| barrier) {
                Some(dep) => hsa.submit_barrier_and(
                    queue,
                    &[dep.signal()],
                    done.signal(),
                    QueueOrder::Unordered,
                    &stuck,
                ),
                None => Ok(()),
            };
            if let Err(err) = barrier_submitted {
                done.retire_unused();
                return Err(err);
            }
            hsa.submit_kernel(queue, dispatch, done.signal(), order, &stuck)
        };
        let slot = Slot::new(done, Some(queue));
        match submitted {
            Ok(()) => {
                let callback = release.take().map(Release::Callback);
                // With a barrier before it, the barrier completes the same signal first; the
                // kernel's stamps, written after (the packet processor starts nothing past a
                // waiting barrier), are the ones the signal keeps.
                let step = timed.then(|| Step::new(StepClock::Dispatch));
                state.slots.push(
                    slot.with_deps(input, None)
                        .with_release(callback)
                        .with_step(step),
                );
                state.watch.insert(&health);
                Ok(())
            }
            Err(err) if barrier => {
                // The barrier is in the queue and will decrement once: let that complete the
                // slot, which stays in the chain as a plain barrier.
                hsa.signal_subtract(slot.signal.signal(), 1);
                state.slots.push(slot.with_deps(input, None));
                state.watch.insert(&health);
                Err(err)
            }
            Err(err) => {
                slot.signal.retire_unused();
                Err(err)
            }
        }
    }

    // --- Events ------------------------------------------------------------------------------

    /// Makes `event` complete when this stream's work so far completes (at once if there is
    /// none). The last slot is recorded without asking whether it completed: whoever waits for
    /// the event asks, and mostly it has not yet.
    pub fn record(&self, event: &Event<H>) -> HsaResult<()> {
        let recorded = {
            let state = self.state();
            state.slots.last().map(|slot| Recorded {
                signal: slot.signal.clone(),
                queues: state.watch.clone(),
                stream: self.id,
            })
        };
        event.set(recorded);
        Ok(())
    }

    /// Makes this stream's later work wait for `event`: a barrier-AND packet on the recorded
    /// signal, or nothing if that work already completed or was recorded on this stream.
    /// Fails if the recorded work's queue failed.
    pub fn wait_for(&self, event: &Event<H>) -> HsaResult<()> {
        let Some(recorded) = event.pending() else {
            return Ok(());
        };
        if recorded.stream == self.id {
            return Ok(());
        }
        let hsa = self.hsa();
        let mut state = self.state();
        self.check_failed(&state)?;
        if let Some(err) = recorded.queues.failure() {
            if !recorded.signal.is_done() {
                return Err(err);
            }
        }
        self.activate(&mut state)?;
        let health = self.working_queue(&mut state)?;
        let queue = health.queue();
        let done = self.shared.signals.acquire()?;
        let input = state.pending_input();
        // The barrier also waits for this stream's previous slot, so that its completion
        // implies everything before it, as every slot's must.
        let deps = [
            recorded.signal.signal(),
            input.as_ref().map_or(Signal(0), SignalRef::signal),
        ];
        let deps = if input.is_some() {
            &deps[..]
        } else {
            &deps[..1]
        };
        let submitted = {
            let _order = health.submit_lock();
            // The dependencies say what to wait for; nothing else in the queue is waited on.
            let stuck = || health.failure();
            hsa.submit_barrier_and(queue, deps, done.signal(), QueueOrder::Unordered, &stuck)
        };
        if let Err(err) = submitted {
            done.retire_unused();
            return Err(err);
        }
        // Should the awaited work die, this queue is blocked for good: let its users know.
        health.add_wait(&recorded.signal, &recorded.queues);
        let slot = Slot::new(done, Some(queue)).with_deps(input, Some(recorded.signal));
        state.slots.push(slot);
        state.watch.insert(&health);
        state.watch.extend(&recorded.queues);
        Ok(())
    }

    /// Makes the stream's completion imply that of every packet submitted to its HSA queue so
    /// far, also packets the program submitted to that queue itself (the `targetsync` handle
    /// of an OpenMP interop object): a barrier-AND packet, whose barrier bit starts it only
    /// after every earlier packet of the queue completed.
    pub fn fence_queue(&self) -> HsaResult<()> {
        let hsa = self.hsa();
        let mut state = self.state();
        self.check_failed(&state)?;
        // The queue the program was given ([`Stream::hsa_queue`]); not replaced: the fence is
        // for this very queue, which the program also uses.
        self.pin(&mut state)?;
        let health = Arc::clone(&state.queue);
        if let Some(err) = health.failure() {
            return Err(err);
        }
        let queue = health.queue();
        let done = self.shared.signals.acquire()?;
        let input = state.pending_input();
        let deps: Vec<Signal> = input.iter().map(SignalRef::signal).collect();
        let submitted = {
            let _order = health.submit_lock();
            let stuck = || health.failure();
            hsa.submit_barrier_and(
                queue,
                &deps,
                done.signal(),
                QueueOrder::AfterEarlierPackets,
                &stuck,
            )
        };
        if let Err(err) = submitted {
            done.retire_unused();
            return Err(err);
        }
        state
            .slots
            .push(Slot::new(done, Some(queue)).with_deps(input, None));
        state.watch.insert(&health);
        Ok(())
    }

    // --- Completion --------------------------------------------------------------------------

    /// Waits for the stream's work, runs the release actions and recycles signals and staging
    /// buffers. Returns the error of a queue the work went through, if one failed; that work is
    /// then dropped from the stream (its resources kept aside) and the stream starts afresh.
    pub fn synchronize(&self) -> HsaResult<()> {
        let (finished, result) = {
            let mut state = self.state();
            let result = match state.slots.last() {
                None => Ok(()),
                Some(last) => wait_zero(
                    self.hsa(),
                    &state.watch,
                    last.signal.signal(),
                    self.shared.config.busy_wait,
                ),
            };
            let last_done = result.is_ok();
            let finished = state.take_completed(last_done);
            state.time_completed(self.hsa(), &finished, last_done);
            Self::go_idle(&mut state);
            (finished, result)
        };
        let released = finish_slots(&self.shared, finished);
        result.and(released)
    }

    /// Waits at most `limit` for the stream's work (spinning first for the busy wait when
    /// `spin`), and leaves it to [`Stream::synchronize`]: true when the work completed or a
    /// queue it went through failed (which `synchronize` then reports), false when `limit`
    /// passed first.
    pub fn wait_within(&self, limit: Duration, spin: bool) -> bool {
        let state = self.state();
        let Some(last) = state.slots.last() else {
            return true;
        };
        let busy = match spin {
            true => self.shared.config.busy_wait,
            false => Duration::ZERO,
        };
        let waited = wait_zero_within(
            self.hsa(),
            &state.watch,
            last.signal.signal(),
            busy,
            Some(limit),
        );
        waited.unwrap_or(true)
    }

    /// Whether the stream's work completed, without blocking; if so, completes it as
    /// [`Stream::synchronize`] does. Fails (dropping the work) if a queue it went through failed.
    pub fn query(&self) -> HsaResult<bool> {
        let (finished, result) = {
            let mut state = self.state();
            // One signal load per query: `nowait` constructs are polled, each poll a query.
            let result = match state.slots.last() {
                None => Ok(true),
                Some(last) if last.is_done() => Ok(true),
                Some(_) => match state.watch.failure() {
                    Some(err) => Err(err),
                    None => Ok(false),
                },
            };
            let finished = match result {
                Ok(false) => return Ok(false),
                Ok(true) => state.take_completed(true),
                Err(_) => state.take_completed(false),
            };
            Self::go_idle(&mut state);
            state.time_completed(self.hsa(), &finished, result.is_ok());
            (finished, result)
        };
        let released = finish_slots(&self.shared, finished);
        let done = result?;
        released.map(|()| done)
    }
}

impl<H: HsaInterface> Stream<H> {
    // --- Timing ------------------------------------------------------------------------------

    /// Times the work pushed from now on (see `super::timing`), if the manager's timing has
    /// started ([`super::StreamManager::start_work_timing`]); returns whether it does. What was
    /// timed before and not taken is discarded.
    pub fn start_timing(&self) -> bool {
        let Some(clock) = self.shared.clock.get() else {
            return false;
        };
        self.state().timing = Some(StreamTiming::new(*clock, self.shared.config.agent));
        true
    }

    /// Stops timing the stream's work and discards what was timed and not taken.
    pub fn stop_timing(&self) {
        self.state().timing = None;
    }

    /// The device's timing of the operations pushed since timing started or this was last
    /// asked, one span per push of a kernel, a host copy or a device copy that succeeded, in
    /// push order, for those that completed (after [`Stream::synchronize`], or a query that
    /// answered true). An error if one of them has no trustworthy times (they are handed out
    /// all the same). Empty while the stream is not timed.
    pub fn take_work_times(&self) -> HsaResult<Vec<WorkSpan>> {
        match self.state().timing.as_mut() {
            Some(timing) => timing.take(),
            None => Ok(Vec::new()),
        }
    }
}

impl<H: HsaInterface> std::fmt::Debug for Stream<H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stream")
            .field("id", &self.id)
            .field("queue", &self.state().queue.queue())
            .field("pending_slots", &self.state().slots.len())
            .finish()
    }
}

impl<H: HsaInterface> Drop for Stream<H> {
    fn drop(&mut self) {
        if let Err(err) = self.synchronize() {
            log::warn!("stream dropped with failed work: {err}");
        }
        let abandoned = {
            let mut state = self.state();
            if state.counted {
                state.queue.release_user();
                state.counted = false;
            }
            std::mem::take(&mut state.abandoned)
        };
        if !abandoned.is_empty() {
            lock(&self.shared.graveyard).extend(abandoned);
        }
        self.shared.live_streams.fetch_sub(1, Ordering::AcqRel);
    }
}
