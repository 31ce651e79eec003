//! Asynchronous queues and events of one device.
//!
//! Each queue is a worker thread running submitted operations in order, the way a GPU stream
//! runs its commands. A real plugin replaces the worker with its driver's stream and the
//! [`Event`] with a driver event, and keeps the handle tables, the pool of idle queues and the
//! "first error is reported by synchronize" rule.

use crate::{lock, wait_while};
use plugin_api::{EventHandle, PluginError, QueueHandle};
use std::collections::{HashMap, VecDeque};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};

type Result<T> = std::result::Result<T, PluginError>;

/// One operation: a copy, a kernel launch, or an event record or wait.
pub type Job = Box<dyn FnOnce() -> Result<()> + Send>;

/// The core creates and releases a queue per target construct: keep this many for reuse
/// rather than starting a thread each time.
const IDLE_QUEUES: usize = 4;

struct Op {
    job: Job,
    /// Event operations run even after an earlier operation failed, so nobody waits forever.
    always: bool,
}

#[derive(Default)]
struct State {
    ops: VecDeque<Op>,
    /// Operations submitted and not yet finished, the running one included.
    pending: usize,
    /// The first failure since the last synchronisation; later work is skipped until then.
    error: Option<PluginError>,
    closing: bool,
}

#[derive(Default)]
struct Shared {
    state: Mutex<State>,
    /// Signalled on every change: new work for the worker, completion for waiters.
    changed: Condvar,
}

struct Queue {
    shared: Arc<Shared>,
}

fn run_worker(shared: Arc<Shared>) {
    loop {
        let (op, skip) = {
            let mut state = wait_while(&shared.state, &shared.changed, |s| {
                s.ops.is_empty() && !s.closing
            });
            match state.ops.pop_front() {
                Some(op) => {
                    let skip = state.error.is_some() && !op.always;
                    (op, skip)
                }
                None => return, // closing and drained
            }
        };
        let result = if skip {
            Ok(())
        } else {
            // A panicking operation must not kill the worker: its waiters would hang.
            catch_unwind(AssertUnwindSafe(op.job))
                .unwrap_or_else(|_| Err(PluginError::failed("a queued operation panicked")))
        };
        let mut state = lock(&shared.state);
        state.pending -= 1;
        if let Err(e) = result {
            state.error.get_or_insert(e);
        }
        drop(state);
        shared.changed.notify_all();
    }
}

impl Queue {
    fn start(name: String) -> Result<Queue> {
        let shared = Arc::new(Shared::default());
        let worker = Arc::clone(&shared);
        std::thread::Builder::new()
            .name(name)
            .spawn(move || run_worker(worker))
            .map_err(|e| PluginError::failed(format!("cannot start a queue thread: {e}")))?;
        Ok(Queue { shared })
    }

    fn submit(&self, job: Job, always: bool) {
        let mut state = lock(&self.shared.state);
        state.ops.push_back(Op { job, always });
        state.pending += 1;
        drop(state);
        self.shared.changed.notify_all();
    }

    /// Waits until every submitted operation has finished; returns and clears the first error.
    fn drain(&self) -> Result<()> {
        let mut state = wait_while(&self.shared.state, &self.shared.changed, |s| s.pending > 0);
        state.error.take().map_or(Ok(()), Err)
    }

    /// As `drain` without waiting: `Ok(false)` while work is outstanding.
    fn poll(&self) -> Result<bool> {
        let mut state = lock(&self.shared.state);
        if state.pending > 0 {
            return Ok(false);
        }
        state.error.take().map_or(Ok(true), Err)
    }
}

impl Drop for Queue {
    fn drop(&mut self) {
        // The worker finishes what is queued, then exits.
        lock(&self.shared.state).closing = true;
        self.shared.changed.notify_all();
    }
}

/// Set once, when the work submitted before one `record_event` has completed.
#[derive(Default)]
struct Signal {
    done: Mutex<bool>,
    changed: Condvar,
}

impl Signal {
    fn set(&self) {
        *lock(&self.done) = true;
        self.changed.notify_all();
    }

    fn wait(&self) {
        let _done = wait_while(&self.done, &self.changed, |done| !*done);
    }
}

/// An event is its latest record: waits started before a re-record still wait for the record
/// they saw (CUDA's rule), and an event never recorded is complete.
#[derive(Default)]
pub struct Event {
    latest: Mutex<Option<Arc<Signal>>>,
}

impl Event {
    fn record(&self) -> Arc<Signal> {
        let signal = Arc::new(Signal::default());
        *lock(&self.latest) = Some(Arc::clone(&signal));
        signal
    }

    fn latest(&self) -> Option<Arc<Signal>> {
        lock(&self.latest).clone()
    }
}

/// The queues and events of one device.
pub struct Queues {
    device: i32,
    live: Mutex<HashMap<u64, Arc<Queue>>>,
    idle: Mutex<Vec<Arc<Queue>>>,
    events: Mutex<HashMap<u64, Arc<Event>>>,
    /// Handles are never reused, so a stale handle is an error rather than someone else's queue.
    next_handle: AtomicU64,
    threads_started: AtomicUsize,
}

impl Queues {
    pub fn new(device: i32) -> Self {
        Queues {
            device,
            live: Mutex::default(),
            idle: Mutex::default(),
            events: Mutex::default(),
            next_handle: AtomicU64::new(1), // 0 is QueueHandle::SYNC
            threads_started: AtomicUsize::new(0),
        }
    }

    fn handle(&self) -> u64 {
        self.next_handle.fetch_add(1, Ordering::Relaxed)
    }

    fn unknown(&self, what: &str, handle: u64) -> PluginError {
        PluginError::invalid_argument(format!(
            "{what} {handle} is not a live {what} of example device {}",
            self.device
        ))
    }

    fn queue(&self, queue: QueueHandle) -> Result<Arc<Queue>> {
        let found = lock(&self.live).get(&queue.0).cloned();
        found.ok_or_else(|| self.unknown("queue", queue.0))
    }

    fn event(&self, event: EventHandle) -> Result<Arc<Event>> {
        let found = lock(&self.events).get(&event.0).cloned();
        found.ok_or_else(|| self.unknown("event", event.0))
    }

    pub fn create(&self) -> Result<QueueHandle> {
        let reused = lock(&self.idle).pop();
        let queue = match reused {
            Some(q) => q,
            None => {
                let n = self.threads_started.fetch_add(1, Ordering::Relaxed);
                Arc::new(Queue::start(format!("example{}-q{n}", self.device))?)
            }
        };
        let handle = self.handle();
        lock(&self.live).insert(handle, queue);
        Ok(QueueHandle(handle))
    }

    pub fn release(&self, queue: QueueHandle) -> Result<()> {
        let removed = lock(&self.live).remove(&queue.0);
        let q = removed.ok_or_else(|| self.unknown("queue", queue.0))?;
        // The contract says released queues were synchronised; be safe if one was not.
        if let Err(e) = q.drain() {
            log::warn!("queue {} released with an unreported error: {e}", queue.0);
        }
        let mut idle = lock(&self.idle);
        if idle.len() < IDLE_QUEUES {
            idle.push(q);
        }
        Ok(())
    }

    /// Runs `job` now (`QueueHandle::SYNC`) or after the work already on `queue`.
    pub fn submit(&self, queue: QueueHandle, job: Job) -> Result<()> {
        if queue == QueueHandle::SYNC {
            return job();
        }
        self.queue(queue)?.submit(job, false);
        Ok(())
    }

    pub fn synchronize(&self, queue: QueueHandle) -> Result<()> {
        if queue == QueueHandle::SYNC {
            return Ok(());
        }
        self.queue(queue)?.drain()
    }

    pub fn query(&self, queue: QueueHandle) -> Result<bool> {
        if queue == QueueHandle::SYNC {
            return Ok(true);
        }
        self.queue(queue)?.poll()
    }

    pub fn create_event(&self) -> Result<EventHandle> {
        let handle = self.handle();
        lock(&self.events).insert(handle, Arc::default());
        Ok(EventHandle(handle))
    }

    pub fn destroy_event(&self, event: EventHandle) -> Result<()> {
        let removed = lock(&self.events).remove(&event.0);
        removed
            .map(|_| ())
            .ok_or_else(|| self.unknown("event", event.0))
    }

    pub fn record_event(&self, event: EventHandle, queue: QueueHandle) -> Result<()> {
        let ev = self.event(event)?;
        if queue == QueueHandle::SYNC {
            ev.record().set(); // nothing is outstanding on the synchronous "queue"
            return Ok(());
        }
        let q = self.queue(queue)?; // checked first: a record that never runs would hang waiters
        let signal = ev.record();
        let marker: Job = Box::new(move || {
            signal.set();
            Ok(())
        });
        q.submit(marker, true);
        Ok(())
    }

    pub fn wait_event(&self, event: EventHandle, queue: QueueHandle) -> Result<()> {
        let Some(signal) = self.event(event)?.latest() else {
            return Ok(());
        };
        if queue == QueueHandle::SYNC {
            signal.wait();
            return Ok(());
        }
        let barrier: Job = Box::new(move || {
            signal.wait();
            Ok(())
        });
        self.queue(queue)?.submit(barrier, true);
        Ok(())
    }

    pub fn sync_event(&self, event: EventHandle) -> Result<()> {
        if let Some(signal) = self.event(event)?.latest() {
            signal.wait();
        }
        Ok(())
    }

    /// Queue threads started so far (the pool keeps this low).
    pub fn threads_started(&self) -> usize {
        self.threads_started.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    fn push(log: &Arc<Mutex<Vec<u32>>>, value: u32, delay_ms: u64) -> Job {
        let log = Arc::clone(log);
        Box::new(move || {
            std::thread::sleep(Duration::from_millis(delay_ms));
            lock(&log).push(value);
            Ok(())
        })
    }

    #[test]
    fn operations_run_in_order_after_the_call_returns() {
        let queues = Queues::new(0);
        let q = queues.create().unwrap();
        let log = Arc::new(Mutex::new(Vec::new()));
        let (tx, blocked) = gate();
        queues.submit(q, blocked).unwrap();
        for (i, delay) in [(1, 20), (2, 0), (3, 5)] {
            queues.submit(q, push(&log, i, delay)).unwrap();
        }
        assert!(!queues.query(q).unwrap(), "work is still blocked");
        assert!(lock(&log).is_empty());
        tx.send(()).unwrap();
        queues.synchronize(q).unwrap();
        assert_eq!(*lock(&log), [1, 2, 3]);
        assert!(queues.query(q).unwrap());
        queues.submit(QueueHandle::SYNC, push(&log, 4, 0)).unwrap();
        assert_eq!(lock(&log).last(), Some(&4));
        queues.release(q).unwrap();
        assert!(queues.synchronize(q).is_err(), "released handles are stale");
    }

    #[test]
    fn first_error_is_reported_once_and_skips_later_work() {
        let queues = Queues::new(0);
        let q = queues.create().unwrap();
        let log = Arc::new(Mutex::new(Vec::new()));
        let ev = queues.create_event().unwrap();
        queues
            .submit(q, Box::new(|| Err(PluginError::failed("first"))))
            .unwrap();
        queues
            .submit(q, Box::new(|| Err(PluginError::failed("second"))))
            .unwrap();
        queues.submit(q, push(&log, 1, 0)).unwrap();
        queues.record_event(ev, q).unwrap();
        queues.sync_event(ev).unwrap(); // the marker still runs
        assert_eq!(queues.synchronize(q).unwrap_err().message.as_str(), "first");
        assert!(lock(&log).is_empty());
        queues.submit(q, push(&log, 2, 0)).unwrap();
        queues.synchronize(q).unwrap();
        assert_eq!(*lock(&log), [2]);
    }

    /// A job that blocks its queue until the sender is used.
    fn gate() -> (mpsc::Sender<()>, Job) {
        let (tx, rx) = mpsc::channel::<()>();
        let job: Job = Box::new(move || rx.recv().map_err(|e| PluginError::failed(e.to_string())));
        (tx, job)
    }

    #[test]
    fn events_order_work_across_queues() {
        let queues = Queues::new(1);
        let (a, b) = (queues.create().unwrap(), queues.create().unwrap());
        let ev = queues.create_event().unwrap();
        queues.sync_event(ev).unwrap(); // never recorded: complete
        let log = Arc::new(Mutex::new(Vec::new()));
        let (open_a, blocked) = gate();
        queues.submit(a, push(&log, 1, 30)).unwrap();
        queues.record_event(ev, a).unwrap();
        queues.submit(a, blocked).unwrap();
        queues.submit(a, push(&log, 3, 0)).unwrap();
        queues.wait_event(ev, b).unwrap();
        queues.submit(b, push(&log, 2, 0)).unwrap();
        queues.synchronize(b).unwrap();
        queues.sync_event(ev).unwrap();
        assert_eq!(
            *lock(&log),
            [1, 2],
            "b ran after the record, a is still blocked"
        );
        // A wait started before a re-record keeps waiting for the record it saw.
        queues.record_event(ev, a).unwrap();
        queues.wait_event(ev, b).unwrap();
        queues.submit(b, push(&log, 4, 0)).unwrap();
        queues.record_event(ev, QueueHandle::SYNC).unwrap();
        queues.sync_event(ev).unwrap(); // the latest record is complete at once
        assert!(!queues.query(b).unwrap(), "b still waits for a");
        open_a.send(()).unwrap();
        queues.synchronize(b).unwrap();
        queues.synchronize(a).unwrap();
        assert_eq!(*lock(&log), [1, 2, 3, 4]);
        queues.destroy_event(ev).unwrap();
        assert!(queues.destroy_event(ev).is_err());
        assert!(queues.record_event(ev, a).is_err());
    }

    #[test]
    fn released_queues_are_reused() {
        let queues = Queues::new(0);
        for _ in 0..10 {
            let q = queues.create().unwrap();
            queues.submit(q, Box::new(|| Ok(()))).unwrap();
            queues.synchronize(q).unwrap();
            queues.release(q).unwrap();
        }
        assert_eq!(queues.threads_started(), 1);
        let e = queues.release(QueueHandle(12345)).unwrap_err();
        assert!(e.message.contains("12345"), "{}", e.message);
    }
}
