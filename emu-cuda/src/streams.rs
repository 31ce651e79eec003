//! Streams and events. Each stream has a worker thread that runs its operations later, in
//! submission order (after `OMPTARGET_EMU_DELAY_US`), so a plugin that reads results without
//! synchronising sees stale data, as on hardware. Events order work across streams. A stream of
//! a context whose kernel faulted is abandoned: its work counts as done without running (the
//! faulting kernel's never finishes), only the events' marks are still reached, so that nothing
//! waits for it forever.

use crate::config;
use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};
use sync_util::{lock, wait};

struct Operation {
    run: Box<dyn FnOnce() + Send>,
    /// An event's mark, reached even when the stream is abandoned.
    marker: bool,
}

#[derive(Default)]
struct Queue {
    pending: VecDeque<Operation>,
    submitted: u64,
    completed: u64,
    /// An operation runs now and is not counted yet.
    running: bool,
    /// The context's kernel faulted: nothing more runs.
    abandoned: bool,
    closing: bool,
}

pub struct Stream {
    pub device: usize,
    /// Created without `CU_STREAM_NON_BLOCKING`: synchronises with the legacy default stream.
    pub blocking: bool,
    queue: Mutex<Queue>,
    changed: Condvar,
}

impl Stream {
    /// A stream with its worker thread.
    pub fn start(device: usize, blocking: bool) -> std::io::Result<Arc<Stream>> {
        let stream = Arc::new(Stream {
            device,
            blocking,
            queue: Mutex::default(),
            changed: Condvar::new(),
        });
        let worker = stream.clone();
        // The stream's loop runs on a kept worker, which serves other work once the stream is
        // destroyed (the library is never unmapped, see build.rs).
        omptarget_emu_support::workers::run(&format!("emu-cuda-stream-dev{device}"), move || {
            worker.run()
        })?;
        Ok(stream)
    }

    fn run(&self) {
        let delay = config::get().delay_us;
        loop {
            let operation = {
                let mut queue = self.queue.lock().unwrap();
                loop {
                    if let Some(op) = queue.pending.pop_front() {
                        queue.running = true;
                        break op;
                    }
                    if queue.closing {
                        return;
                    }
                    queue = wait(&self.changed, queue);
                }
            };
            if delay > 0 {
                std::thread::sleep(Duration::from_micros(delay));
            }
            (operation.run)();
            let mut queue = lock(&self.queue);
            // Not counted yet unless the stream was abandoned while it ran.
            if std::mem::take(&mut queue.running) {
                queue.completed += 1;
            }
            drop(queue);
            self.changed.notify_all();
        }
    }

    /// Queues `operation`; it runs after everything submitted before it.
    pub fn submit(&self, operation: impl FnOnce() + Send + 'static) {
        self.push(Box::new(operation), false);
    }

    /// Queues an event's mark: `reach` runs in order, or at once if the stream is abandoned.
    pub fn submit_marker(&self, reach: impl FnOnce() + Send + 'static) {
        self.push(Box::new(reach), true);
    }

    fn push(&self, run: Box<dyn FnOnce() + Send>, marker: bool) {
        let mut queue = lock(&self.queue);
        queue.submitted += 1;
        if queue.abandoned {
            queue.completed += 1;
            drop(queue);
            if marker {
                run();
            }
            return;
        }
        queue.pending.push_back(Operation { run, marker });
        drop(queue);
        self.changed.notify_all();
    }

    /// Abandons the stream (its context's kernel faulted): what is queued counts as done, only
    /// its marks are reached; when `faulted`, the operation running now (the faulting kernel,
    /// whose thread never returns) counts as done too, else it finishes as it runs.
    pub fn abandon(&self, faulted: bool) {
        let mut queue = lock(&self.queue);
        queue.abandoned = true;
        let dropped = std::mem::take(&mut queue.pending);
        queue.completed += dropped.len() as u64;
        if faulted && std::mem::take(&mut queue.running) {
            queue.completed += 1;
        }
        drop(queue);
        for operation in dropped.into_iter().filter(|o| o.marker) {
            (operation.run)();
        }
        self.changed.notify_all();
    }

    /// Whether everything submitted has run (`cuStreamQuery`).
    pub fn idle(&self) -> bool {
        let queue = lock(&self.queue);
        queue.completed == queue.submitted
    }

    /// Waits until everything submitted so far has run.
    pub fn wait_idle(&self) {
        let mut queue = lock(&self.queue);
        let target = queue.submitted;
        while queue.completed < target {
            queue = wait(&self.changed, queue);
        }
    }

    /// Lets the worker finish what is queued and exit (`cuStreamDestroy`: the driver releases
    /// the stream once its work is done).
    pub fn close(&self) {
        lock(&self.queue).closing = true;
        self.changed.notify_all();
    }
}

#[derive(Default)]
struct Marks {
    /// How many times the event was recorded, and how many of those records have been reached.
    recorded: u64,
    reached: u64,
    /// When the last reached record was reached (timing events only).
    reached_at: Option<Instant>,
}

#[derive(Default)]
pub struct Event {
    marks: Mutex<Marks>,
    changed: Condvar,
    /// Created without `CU_EVENT_DISABLE_TIMING`: its records carry the time they were reached.
    timed: bool,
    /// The device of the context it was created in.
    pub device: usize,
}

/// Why an event cannot be timed (`cuEventElapsedTime`).
#[derive(Debug, PartialEq, Eq)]
pub enum Untimed {
    /// Created with `CU_EVENT_DISABLE_TIMING`, or never recorded.
    NoTiming,
    /// Its latest record has not been reached yet.
    NotReached,
}

impl Event {
    /// An event of `device`'s context; `timed` unless created with `CU_EVENT_DISABLE_TIMING`.
    pub fn new(timed: bool, device: usize) -> Event {
        Event {
            timed,
            device,
            ..Event::default()
        }
    }

    /// When the stream reached the event's latest record.
    pub fn reached_at(&self) -> std::result::Result<Instant, Untimed> {
        let marks = lock(&self.marks);
        if !self.timed || marks.recorded == 0 {
            return Err(Untimed::NoTiming);
        }
        if marks.reached < marks.recorded {
            return Err(Untimed::NotReached);
        }
        marks.reached_at.ok_or(Untimed::NoTiming)
    }

    /// A new record; returns the mark that the stream reaches later ([`reach`](Self::reach)).
    pub fn record(&self) -> u64 {
        let mut marks = lock(&self.marks);
        marks.recorded += 1;
        marks.recorded
    }

    pub fn reach(&self, mark: u64) {
        let mut marks = lock(&self.marks);
        if self.timed && mark >= marks.reached {
            marks.reached_at = Some(Instant::now());
        }
        marks.reached = marks.reached.max(mark);
        drop(marks);
        self.changed.notify_all();
    }

    /// The latest record, which waiters wait for (an event never recorded is complete).
    pub fn latest(&self) -> u64 {
        lock(&self.marks).recorded
    }

    pub fn wait_for(&self, mark: u64) {
        let mut marks = lock(&self.marks);
        while marks.reached < mark {
            marks = wait(&self.changed, marks);
        }
    }

    /// Whether its latest record has been reached (`cuEventQuery`; an event never recorded
    /// is complete).
    pub fn complete(&self) -> bool {
        let marks = lock(&self.marks);
        marks.reached >= marks.recorded
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    #[test]
    fn work_runs_later_and_in_order() {
        let stream = Stream::start(0, true).unwrap();
        let log = Arc::new(Mutex::new(Vec::new()));
        let gate = Arc::new((Mutex::new(false), Condvar::new()));
        let (g, l) = (gate.clone(), log.clone());
        stream.submit(move || {
            let mut open = lock(&g.0);
            while !*open {
                open = wait(&g.1, open);
            }
            lock(&l).push(1);
        });
        let l = log.clone();
        stream.submit(move || lock(&l).push(2));
        assert!(!stream.idle(), "nothing runs before the gate opens");
        assert!(lock(&log).is_empty());
        *lock(&gate.0) = true;
        gate.1.notify_all();
        stream.wait_idle();
        assert_eq!(*lock(&log), vec![1, 2]);
        stream.close();
    }

    #[test]
    fn an_event_orders_two_streams() {
        let (a, b) = (
            Stream::start(0, true).unwrap(),
            Stream::start(0, true).unwrap(),
        );
        let value = Arc::new(AtomicU32::new(0));
        let event = Arc::new(Event::default());
        assert!(event.complete(), "never recorded");
        let v = value.clone();
        a.submit(move || {
            std::thread::sleep(Duration::from_millis(30));
            v.store(1, Ordering::SeqCst);
        });
        let mark = event.record();
        let e = event.clone();
        a.submit(move || e.reach(mark));
        let (e, v, seen) = (event.clone(), value.clone(), Arc::new(AtomicU32::new(9)));
        let s = seen.clone();
        b.submit(move || {
            e.wait_for(mark);
            s.store(v.load(Ordering::SeqCst), Ordering::SeqCst);
        });
        b.wait_idle();
        assert_eq!(seen.load(Ordering::SeqCst), 1);
        assert!(event.complete());
        a.close();
        b.close();
    }

    /// A gate that operations wait at until it opens.
    fn gate() -> (
        Arc<(Mutex<bool>, Condvar)>,
        impl Fn() + Send + Clone + 'static,
    ) {
        let gate = Arc::new((Mutex::new(false), Condvar::new()));
        let g = gate.clone();
        let wait_at_gate = move || {
            let mut open = lock(&g.0);
            while !*open {
                open = wait(&g.1, open);
            }
        };
        (gate, wait_at_gate)
    }

    #[test]
    fn an_abandoned_stream_counts_its_work_done_and_reaches_its_marks() {
        let stream = Stream::start(0, true).unwrap();
        let (gate, wait_at_gate) = gate();
        let ran = Arc::new(AtomicU32::new(0));
        // The "faulting kernel": runs and does not return until the gate opens.
        let r = ran.clone();
        stream.submit(move || {
            wait_at_gate();
            r.fetch_add(1, Ordering::SeqCst);
        });
        let r = ran.clone();
        stream.submit(move || {
            r.fetch_add(10, Ordering::SeqCst);
        });
        let event = Arc::new(Event::new(true, 0));
        let (e, mark) = (event.clone(), event.record());
        stream.submit_marker(move || e.reach(mark));
        while !lock(&stream.queue).running {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(!stream.idle() && !event.complete());
        stream.abandon(true);
        assert!(
            stream.idle(),
            "the faulting kernel and what follows count as done"
        );
        stream.wait_idle();
        assert!(event.complete(), "the mark is reached");
        // Later work is dropped at once; marks are reached at once.
        let r = ran.clone();
        stream.submit(move || {
            r.fetch_add(100, Ordering::SeqCst);
        });
        let (e, mark) = (event.clone(), event.record());
        stream.submit_marker(move || e.reach(mark));
        assert!(stream.idle() && event.complete());
        // The kernel that was counted done returns after all (only in this test): not counted
        // twice.
        *lock(&gate.0) = true;
        gate.1.notify_all();
        while ran.load(Ordering::SeqCst) == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
        std::thread::sleep(Duration::from_millis(10));
        let queue = lock(&stream.queue);
        assert_eq!((queue.submitted, queue.completed), (5, 5));
        drop(queue);
        assert_eq!(
            ran.load(Ordering::SeqCst),
            1,
            "only the running operation ran"
        );
        stream.close();
    }

    #[test]
    fn a_stream_abandoned_for_another_streams_fault_finishes_what_runs() {
        let stream = Stream::start(0, true).unwrap();
        let (gate, wait_at_gate) = gate();
        stream.submit(wait_at_gate);
        stream.submit(|| panic!("queued work of an abandoned stream never runs"));
        while !lock(&stream.queue).running {
            std::thread::sleep(Duration::from_millis(1));
        }
        stream.abandon(false);
        assert!(!stream.idle(), "its running kernel is not the faulting one");
        *lock(&gate.0) = true;
        gate.1.notify_all();
        stream.wait_idle();
        stream.close();
    }
}
