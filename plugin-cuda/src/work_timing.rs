//! The device's own timing of queued copies and launches (plugin ABI 1.5), for the core's
//! `LIBOMPTARGET_PROFILE`: a pair of timing events around each operation, read once the
//! stream's work has completed with `cuEventElapsedTime` against a reference event whose host
//! time is known (CUDA has no call that reads the GPU's clock on the host's time base).
//!
//! The stream and event pools stay timing-free (`CU_EVENT_DISABLE_TIMING` events are cheaper to
//! record and wait on); this timer has events of its own, created only once profiling asks.

use crate::driver::{self, Driver, Event, Owned, Releasable, Stream};
use host_os::clock::{host_clock_ns, ClockMapping};
use plugin_api::WorkTime;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use sync_util::lock;

/// What the timer needs from the driver (the real one, or a fake in tests); its events are
/// destroyed by their owners.
pub trait TimingDriver {
    fn create_timing_event(&self) -> driver::Result<Event>;
    fn record(&self, event: Event, stream: Stream) -> driver::Result<()>;
    fn wait(&self, event: Event) -> driver::Result<()>;
    fn elapsed_ms(&self, start: Event, end: Event) -> driver::Result<f32>;
}

impl TimingDriver for Driver {
    fn create_timing_event(&self) -> driver::Result<Event> {
        Driver::create_timing_event(self)
    }
    fn record(&self, event: Event, stream: Stream) -> driver::Result<()> {
        self.record_event(event, stream)
    }
    fn wait(&self, event: Event) -> driver::Result<()> {
        self.sync_event(event)
    }
    fn elapsed_ms(&self, start: Event, end: Event) -> driver::Result<f32> {
        Driver::elapsed_ms(self, start, end)
    }
}

/// A reference event: recorded on an idle stream and waited for, so its device time is known
/// on the host's clock within the mapping's uncertainty.
struct Reference<D>
where
    Event: Releasable<D>,
{
    event: Owned<Event, D>,
    clock: ClockMapping,
}

/// A reference older than this is renewed before it is used: `cuEventElapsedTime` answers in
/// `f32` milliseconds, which keep sub-microsecond precision only over about a second.
const REFERENCE_LIFETIME_NS: u64 = 500_000_000;

/// Calibration tries; the tightest host window is kept.
const CALIBRATION_TRIES: usize = 3;

/// A timed operation's start and end events.
type Span<D> = (Owned<Event, D>, Owned<Event, D>);

/// Owns its events wherever they are (idle, pending, the reference): each is destroyed once,
/// by `destroy_all` or when the timer is dropped.
pub struct WorkTimer<D = Driver>
where
    Event: Releasable<D>,
{
    on: AtomicBool,
    /// Timing events not in use.
    idle: Mutex<Vec<Owned<Event, D>>>,
    /// Each stream's timed operations not yet asked for: (start, end) events, in order.
    pending: Mutex<HashMap<usize, Vec<Span<D>>>>,
    reference: Mutex<Option<Reference<D>>>,
}

impl<D> Default for WorkTimer<D>
where
    Event: Releasable<D>,
{
    fn default() -> Self {
        WorkTimer {
            on: AtomicBool::new(false),
            idle: Mutex::default(),
            pending: Mutex::default(),
            reference: Mutex::new(None),
        }
    }
}

impl<D: TimingDriver> WorkTimer<D>
where
    Event: Releasable<D>,
{
    pub fn start(&self) {
        self.on.store(true, Ordering::Release);
    }

    #[inline]
    pub fn is_on(&self) -> bool {
        self.on.load(Ordering::Relaxed)
    }

    fn take_event(&self, driver: &Arc<D>) -> driver::Result<Owned<Event, D>> {
        if let Some(event) = lock(&self.idle).pop() {
            return Ok(event);
        }
        Ok(Owned::adopt(driver, driver.create_timing_event()?))
    }

    fn give_back(&self, events: impl IntoIterator<Item = Owned<Event, D>>) {
        lock(&self.idle).extend(events);
    }

    /// Runs `op`, which queues one operation on `stream`, between two timing events; a driver
    /// failure of the timing itself becomes an `E` through `convert`. The context must be
    /// current (events may be created).
    pub fn around<T, E>(
        &self,
        driver: &Arc<D>,
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
            .record(start.handle(), stream)
            .map_err(&convert)
            .and_then(|_| op())
            .and_then(|value| {
                let recorded = driver.record(end.handle(), stream);
                recorded.map(|_| value).map_err(&convert)
            });
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
    pub fn times(
        &self,
        driver: &Arc<D>,
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

    fn read(
        &self,
        driver: &Arc<D>,
        pairs: &[Span<D>],
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
                let handle = event.handle();
                used.push(event);
                driver.record(handle, idle)?;
                driver.wait(handle)?;
                Ok(used.len() - 1)
            });
            match calibrated {
                Ok((kept, clock)) => {
                    let event = used.remove(kept);
                    self.give_back(used);
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
            let ms = driver.elapsed_ms(reference.event.handle(), event)? as f64;
            Ok((reference.clock.host_ns as f64 + ms * 1e6).max(0.0) as u64)
        };
        pairs
            .iter()
            .map(|(start, end)| {
                let (start, end) = (start.handle(), end.handle());
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

    /// Destroys every event (the device is released); failures are not reported.
    pub fn destroy_all(&self) {
        let pending: Vec<_> = lock(&self.pending).drain().flat_map(|(_, v)| v).collect();
        self.give_back(pending.into_iter().flat_map(|(a, b)| [a, b]));
        if let Some(r) = lock(&self.reference).take() {
            self.give_back([r.event]);
        }
        let idle = std::mem::take(&mut *lock(&self.idle));
        for event in idle {
            let _ = event.release();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::DriverError;
    use std::sync::Mutex;
    use sync_util::lock;

    /// Events reach their records at once, at a fake device time that advances 1 ms per record.
    #[derive(Default)]
    struct Fake {
        next: Mutex<usize>,
        /// Device time (ms) of each event's latest record, by event number.
        times: Mutex<HashMap<usize, f32>>,
        clock_ms: Mutex<f32>,
        records: Mutex<Vec<(usize, usize)>>,
        fail_record: Mutex<bool>,
        destroyed: Mutex<Vec<usize>>,
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
            *lock(&self.next) += 1;
            Ok(Event(*lock(&self.next) as *mut _))
        }
        fn record(&self, event: Event, stream: Stream) -> driver::Result<()> {
            if *lock(&self.fail_record) {
                return Err(error("cuEventRecord"));
            }
            *lock(&self.clock_ms) += 1.0;
            let now = *lock(&self.clock_ms);
            lock(&self.times).insert(event.0 as usize, now);
            lock(&self.records).push((event.0 as usize, stream.0 as usize));
            Ok(())
        }
        fn wait(&self, _: Event) -> driver::Result<()> {
            Ok(())
        }
        fn elapsed_ms(&self, start: Event, end: Event) -> driver::Result<f32> {
            let times = lock(&self.times);
            let (a, b) = (times.get(&(start.0 as usize)), times.get(&(end.0 as usize)));
            match (a, b) {
                (Some(a), Some(b)) => Ok(b - a),
                _ => Err(error("cuEventElapsedTime")),
            }
        }
    }

    impl Releasable<Fake> for Event {
        fn release(self, driver: &Fake) -> driver::Result<()> {
            lock(&driver.destroyed).push(self.0 as usize);
            Ok(())
        }
    }

    fn stream(n: usize) -> Stream {
        Stream(n as *mut _)
    }

    #[test]
    fn each_operation_gets_its_span_in_order_and_once() {
        let (timer, fake) = (WorkTimer::default(), Arc::new(Fake::default()));
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
        assert!(lock(&fake.records).iter().any(|&(_, s)| s == 99));
        // Calibration used an event per try and kept one as the reference: every other event
        // is idle again.
        assert_eq!(
            lock(&timer.idle).len() + 1,
            *lock(&fake.next),
            "events leaked"
        );
    }

    #[test]
    fn failed_operations_are_not_timed_and_released_streams_forget() {
        let (timer, fake) = (WorkTimer::default(), Arc::new(Fake::default()));
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
        *lock(&fake.fail_record) = true;
        assert!(timer
            .around(&fake, stream(1), |e| e, || Ok::<_, DriverError>(()))
            .is_err());
        *lock(&fake.fail_record) = false;
        timer.discard(stream(1));
        assert!(timer.times(&fake, stream(1), stream(2)).unwrap().is_empty());
        // Every event comes back: the 4 created (2 for the first try, reused by the second
        // while the third needed 2 more) are all idle again.
        assert_eq!(*lock(&fake.next), 4);
        assert_eq!(lock(&timer.idle).len(), 4);
    }

    #[test]
    fn every_event_is_destroyed_once_wherever_it_is() {
        let (timer, fake) = (WorkTimer::default(), Arc::new(Fake::default()));
        timer.start();
        let time = |s| timer.around(&fake, stream(s), |e| e, || Ok::<_, DriverError>(()));
        time(1).unwrap();
        // A reference, idle events, and one stream's operation still pending.
        assert_eq!(timer.times(&fake, stream(1), stream(9)).unwrap().len(), 1);
        time(2).unwrap();
        timer.destroy_all();
        let mut destroyed = lock(&fake.destroyed).clone();
        destroyed.sort();
        let created: Vec<usize> = (1..=*lock(&fake.next)).collect();
        assert_eq!(destroyed, created);
        // Dropping the emptied timer destroys nothing more; a dropped timer destroys its own.
        drop(timer);
        assert_eq!(lock(&fake.destroyed).len(), created.len());
        let timer = WorkTimer::default();
        timer
            .around(&fake, stream(3), |e| e, || Ok::<_, DriverError>(()))
            .unwrap();
        drop(timer);
        assert_eq!(lock(&fake.destroyed).len(), created.len() + 2);
    }
}
