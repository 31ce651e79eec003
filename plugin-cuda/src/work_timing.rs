//! The device's own timing of queued copies and launches (plugin ABI 1.5), for the core's
//! `LIBOMPTARGET_PROFILE`: a pair of timing events around each operation, read once the
//! stream's work has completed with `cuEventElapsedTime` against a reference event whose host
//! time is known (CUDA has no call that reads the GPU's clock on the host's time base).
//!
//! The stream and event pools stay timing-free (`CU_EVENT_DISABLE_TIMING` events are cheaper to
//! record and wait on); this timer has events of its own, created only once profiling asks.

use crate::driver::{self, Event, Stream};
use host_os::clock::{host_clock_ns, ClockMapping};
use plugin_api::WorkTime;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use sync_util::lock;

/// What the timer needs from the driver (the real one, or a fake in tests).
pub trait TimingDriver {
    fn create_timing_event(&self) -> driver::Result<Event>;
    fn record(&self, event: Event, stream: Stream) -> driver::Result<()>;
    fn wait(&self, event: Event) -> driver::Result<()>;
    fn elapsed_ms(&self, start: Event, end: Event) -> driver::Result<f32>;
    fn destroy(&self, event: Event) -> driver::Result<()>;
}

impl TimingDriver for driver::Driver {
    fn create_timing_event(&self) -> driver::Result<Event> {
        driver::Driver::create_timing_event(self)
    }
    fn record(&self, event: Event, stream: Stream) -> driver::Result<()> {
        self.record_event(event, stream)
    }
    fn wait(&self, event: Event) -> driver::Result<()> {
        self.sync_event(event)
    }
    fn elapsed_ms(&self, start: Event, end: Event) -> driver::Result<f32> {
        driver::Driver::elapsed_ms(self, start, end)
    }
    fn destroy(&self, event: Event) -> driver::Result<()> {
        self.destroy_event(event)
    }
}

/// A reference event: recorded on an idle stream and waited for, so its device time is known
/// on the host's clock within the mapping's uncertainty.
struct Reference {
    event: Event,
    clock: ClockMapping,
}

/// A reference older than this is renewed before it is used: `cuEventElapsedTime` answers in
/// `f32` milliseconds, which keep sub-microsecond precision only over about a second.
const REFERENCE_LIFETIME_NS: u64 = 500_000_000;

/// Calibration tries; the tightest host window is kept.
const CALIBRATION_TRIES: usize = 3;

#[derive(Default)]
pub struct WorkTimer {
    on: AtomicBool,
    /// Timing events not in use.
    idle: Mutex<Vec<Event>>,
    /// Each stream's timed operations not yet asked for: (start, end) events, in order.
    pending: Mutex<HashMap<usize, Vec<(Event, Event)>>>,
    reference: Mutex<Option<Reference>>,
}

impl WorkTimer {
    pub fn start(&self) {
        self.on.store(true, Ordering::Release);
    }

    #[inline]
    pub fn is_on(&self) -> bool {
        self.on.load(Ordering::Relaxed)
    }

    fn take_event<D: TimingDriver>(&self, driver: &D) -> driver::Result<Event> {
        if let Some(event) = lock(&self.idle).pop() {
            return Ok(event);
        }
        driver.create_timing_event()
    }

    fn give_back(&self, events: impl IntoIterator<Item = Event>) {
        lock(&self.idle).extend(events);
    }

    /// Runs `op`, which queues one operation on `stream`, between two timing events; a driver
    /// failure of the timing itself becomes an `E` through `convert`. The context must be
    /// current (events may be created).
    pub fn around<D: TimingDriver, T, E>(
        &self,
        driver: &D,
        stream: Stream,
        convert: impl Fn(driver::DriverError) -> E,
        op: impl FnOnce() -> Result<T, E>,
    ) -> Result<T, E> {
        let start = self.take_event(driver).map_err(&convert)?;
        let end = match self.take_event(driver) {
            Ok(end) => end,
            Err(e) => {
                self.give_back([start]);
                return Err(convert(e));
            }
        };
        let queued = driver
            .record(start, stream)
            .map_err(&convert)
            .and_then(|_| op())
            .and_then(|value| driver.record(end, stream).map(|_| value).map_err(&convert));
        match queued {
            Ok(value) => {
                let mut pending = lock(&self.pending);
                pending
                    .entry(stream.0 as usize)
                    .or_default()
                    .push((start, end));
                Ok(value)
            }
            Err(e) => {
                self.give_back([start, end]);
                Err(e)
            }
        }
    }

    /// The timings of `stream`'s operations since the last call, in order; its work has
    /// completed. `idle` is an idle stream, for a new reference event when one is needed.
    pub fn times<D: TimingDriver>(
        &self,
        driver: &D,
        stream: Stream,
        idle: Stream,
    ) -> driver::Result<Vec<WorkTime>> {
        let Some(pairs) = lock(&self.pending).remove(&(stream.0 as usize)) else {
            return Ok(Vec::new());
        };
        let result = self.read(driver, &pairs, idle);
        self.give_back(pairs.into_iter().flat_map(|(a, b)| [a, b]));
        result
    }

    fn read<D: TimingDriver>(
        &self,
        driver: &D,
        pairs: &[(Event, Event)],
        idle: Stream,
    ) -> driver::Result<Vec<WorkTime>> {
        let mut reference = lock(&self.reference);
        let stale = match &*reference {
            Some(r) => host_clock_ns().saturating_sub(r.clock.host_ns) > REFERENCE_LIFETIME_NS,
            None => true,
        };
        if stale {
            if let Some(old) = reference.take() {
                self.give_back([old.event]);
            }
            // An event per try: the kept window must go with the record it timed.
            let mut used = Vec::with_capacity(CALIBRATION_TRIES);
            let calibrated = ClockMapping::calibrate(CALIBRATION_TRIES, || {
                let event = self.take_event(driver)?;
                used.push(event);
                driver.record(event, idle)?;
                driver.wait(event)?;
                Ok(event)
            });
            match calibrated {
                Ok((event, clock)) => {
                    self.give_back(used.into_iter().filter(|e| *e != event));
                    *reference = Some(Reference { event, clock });
                }
                Err(e) => {
                    self.give_back(used);
                    return Err(e);
                }
            }
        }
        let reference = reference.as_ref().expect("calibrated above");
        let at = |event: Event| -> driver::Result<u64> {
            let ms = driver.elapsed_ms(reference.event, event)? as f64;
            Ok((reference.clock.host_ns as f64 + ms * 1e6).max(0.0) as u64)
        };
        pairs
            .iter()
            .map(|&(start, end)| {
                let start_ns = at(start)?;
                // The span's length from its own two events, which keeps full precision.
                let length_ns = (driver.elapsed_ms(start, end)?.max(0.0) as f64 * 1e6) as u64;
                Ok(WorkTime {
                    start_ns,
                    end_ns: start_ns + length_ns,
                    uncertainty_ns: reference.clock.uncertainty_ns,
                })
            })
            .collect()
    }

    /// Forgets what `stream` timed and nobody asked for (the stream goes back to its pool).
    pub fn discard(&self, stream: Stream) {
        if !self.is_on() {
            return;
        }
        if let Some(pairs) = lock(&self.pending).remove(&(stream.0 as usize)) {
            self.give_back(pairs.into_iter().flat_map(|(a, b)| [a, b]));
        }
    }

    /// Destroys every event (the device is released).
    pub fn destroy_all<D: TimingDriver>(&self, driver: &D) {
        let pending: Vec<(Event, Event)> =
            lock(&self.pending).drain().flat_map(|(_, v)| v).collect();
        self.give_back(pending.into_iter().flat_map(|(a, b)| [a, b]));
        if let Some(r) = lock(&self.reference).take() {
            self.give_back([r.event]);
        }
        for event in lock(&self.idle).drain(..) {
            let _ = driver.destroy(event);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::DriverError;
    use std::cell::RefCell;

    /// Events reach their records at once, at a fake device time that advances 1 ms per record.
    #[derive(Default)]
    struct Fake {
        next: RefCell<usize>,
        /// Device time (ms) of each event's latest record, by event number.
        times: RefCell<HashMap<usize, f32>>,
        clock_ms: RefCell<f32>,
        records: RefCell<Vec<(usize, usize)>>,
        fail_record: RefCell<bool>,
    }

    fn error(call: &'static str) -> DriverError {
        DriverError {
            call,
            code: 1,
            name: "CUDA_ERROR_INVALID_VALUE".into(),
        }
    }

    impl TimingDriver for Fake {
        fn create_timing_event(&self) -> driver::Result<Event> {
            *self.next.borrow_mut() += 1;
            Ok(Event(*self.next.borrow() as *mut _))
        }
        fn record(&self, event: Event, stream: Stream) -> driver::Result<()> {
            if *self.fail_record.borrow() {
                return Err(error("cuEventRecord"));
            }
            *self.clock_ms.borrow_mut() += 1.0;
            let now = *self.clock_ms.borrow();
            self.times.borrow_mut().insert(event.0 as usize, now);
            self.records
                .borrow_mut()
                .push((event.0 as usize, stream.0 as usize));
            Ok(())
        }
        fn wait(&self, _: Event) -> driver::Result<()> {
            Ok(())
        }
        fn elapsed_ms(&self, start: Event, end: Event) -> driver::Result<f32> {
            let times = self.times.borrow();
            let (a, b) = (times.get(&(start.0 as usize)), times.get(&(end.0 as usize)));
            match (a, b) {
                (Some(a), Some(b)) => Ok(b - a),
                _ => Err(error("cuEventElapsedTime")),
            }
        }
        fn destroy(&self, _: Event) -> driver::Result<()> {
            Ok(())
        }
    }

    fn stream(n: usize) -> Stream {
        Stream(n as *mut _)
    }

    #[test]
    fn each_operation_gets_its_span_in_order_and_once() {
        let (timer, fake) = (WorkTimer::default(), Fake::default());
        timer.start();
        for _ in 0..3 {
            timer
                .around(&fake, stream(7), |e| e, || Ok::<_, DriverError>(()))
                .unwrap();
        }
        timer
            .around(&fake, stream(8), |e| e, || Ok::<_, DriverError>(()))
            .unwrap();
        let times = timer.times(&fake, stream(7), stream(99)).unwrap();
        assert_eq!(times.len(), 3);
        for (a, b) in times.iter().zip(times.iter().skip(1)) {
            assert!(a.start_ns < a.end_ns && a.end_ns < b.start_ns, "{times:?}");
            // One fake millisecond per record: each span is 1 ms, 2 ms apart.
            assert_eq!(a.end_ns - a.start_ns, 1_000_000);
            assert_eq!(b.start_ns - a.start_ns, 2_000_000);
        }
        assert!(timer
            .times(&fake, stream(7), stream(99))
            .unwrap()
            .is_empty());
        // The other stream's operation is still there, and the reference was made on the
        // calibration stream.
        assert_eq!(timer.times(&fake, stream(8), stream(99)).unwrap().len(), 1);
        assert!(fake.records.borrow().iter().any(|&(_, s)| s == 99));
        // Calibration used an event per try and kept one as the reference: every other event
        // is idle again.
        assert_eq!(
            lock(&timer.idle).len() + 1,
            *fake.next.borrow(),
            "events leaked"
        );
    }

    #[test]
    fn failed_operations_are_not_timed_and_released_streams_forget() {
        let (timer, fake) = (WorkTimer::default(), Fake::default());
        timer.start();
        let failed = timer.around(
            &fake,
            stream(1),
            |e| e,
            || Err::<(), _>(error("cuLaunchKernel")),
        );
        assert!(failed.is_err());
        timer
            .around(&fake, stream(1), |e| e, || Ok::<_, DriverError>(()))
            .unwrap();
        *fake.fail_record.borrow_mut() = true;
        assert!(timer
            .around(&fake, stream(1), |e| e, || Ok::<_, DriverError>(()))
            .is_err());
        *fake.fail_record.borrow_mut() = false;
        timer.discard(stream(1));
        assert!(timer.times(&fake, stream(1), stream(2)).unwrap().is_empty());
        // Every event comes back: the 4 created (2 for the first try, reused by the second
        // while the third needed 2 more) are all idle again.
        assert_eq!(*fake.next.borrow(), 4);
        assert_eq!(lock(&timer.idle).len(), 4);
    }
}
