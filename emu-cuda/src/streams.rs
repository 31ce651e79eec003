//! Streams and events. Each stream has a worker thread that runs its operations later, in
//! submission order (after `OMPTARGET_EMU_DELAY_US`), so a plugin that reads results without
//! synchronising sees stale data, as on hardware. Events order work across streams.

use crate::config;
use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};
use sync_util::{lock, wait};

type Operation = Box<dyn FnOnce() + Send>;

#[derive(Default)]
struct Queue {
    pending: VecDeque<Operation>,
    submitted: u64,
    completed: u64,
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
            operation();
            lock(&self.queue).completed += 1;
            self.changed.notify_all();
        }
    }

    /// Queues `operation`; it runs after everything submitted before it.
    pub fn submit(&self, operation: impl FnOnce() + Send + 'static) {
        let mut queue = lock(&self.queue);
        queue.pending.push_back(Box::new(operation));
        queue.submitted += 1;
        drop(queue);
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
    /// An event; `timed` unless created with `CU_EVENT_DISABLE_TIMING`.
    pub fn new(timed: bool) -> Event {
        Event {
            timed,
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

    #[cfg(test)]
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
}
