//! The device's own timing of a stream's work (plugin ABI 1.5, for `LIBOMPTARGET_PROFILE`),
//! with ROCm's profiling API as ROCm's tools use it.
//!
//! # What HSA gives
//!
//! Once `hsa_amd_profiling_set_profiler_enabled(queue, 1)` is set, the packet processor writes
//! when it started and completed each packet of the queue into the packet's completion signal;
//! once `hsa_amd_profiling_async_copy_enable(true)` is set, each copy submitted afterwards
//! writes its start and end into its completion signal. `hsa_amd_profiling_get_dispatch_time`
//! and `hsa_amd_profiling_get_async_copy_time` read them back, already in the HSA *system*
//! clock domain. ROCr's sources say so: `GpuAgent::TranslateTime(core::Signal*, ...)`
//! (`runtime/hsa-runtime/core/runtime/amd_gpu_agent.cpp`) reads the signal's raw GPU-clock
//! stamps and maps them onto the system clock with its periodically re-synchronised
//! GPU/system counter pairs (its comments bound that mapping's error at about half a
//! microsecond); `hsa_amd_profiling_get_async_copy_time` (`hsa_ext_amd.cpp`) does the same for
//! copies by a GPU agent and returns a CPU agent's copy stamps as they are, "already in system
//! domain". That domain is `HSA_SYSTEM_INFO_TIMESTAMP`, which ROCr reads from
//! `CLOCK_BOOTTIME` (`os::ReadSystemClock`, `core/util/lnx/os_linux.cpp`), not from the
//! `CLOCK_MONOTONIC` the plugin ABI reports on: the two differ by the time the machine was
//! suspended. So [`Clock`] maps the system domain onto `CLOCK_MONOTONIC` by calibration.
//!
//! A signal keeps the stamps of the last profiled packet or copy that completed it, and the
//! signal pool reuses signals: each operation's times are read where the stream learns that it
//! completed ([`super::Stream::synchronize`], or a query that found it done), before its
//! signals go back to the pool, and kept per stream until [`super::Stream::take_work_times`].
//!
//! # What counts
//!
//! One [`WorkSpan`] per successful push of a kernel, a host copy or a device copy, in push
//! order, whatever its steps: a copy staged through a pinned buffer is one span from its first
//! step's start to its last step's end (host steps are timed by the host on its own clock).
//! Barrier packets, the plugin's internal copies (launch environments) and pushes that failed
//! are not counted. Nothing is kept, and no profiling call made, on a stream whose timing is
//! off: a push then tests one `Option`.

use crate::hsa_interface::{Agent, HsaError, HsaInterface, HsaResult, Signal};
use host_os::clock::ClockMapping;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Calibration reads of the HSA system clock; the one in the narrowest host window is kept.
const CALIBRATION_READS: usize = 5;

/// `CLOCK_MONOTONIC` now, in nanoseconds: the clock the plugin ABI reports work times on.
pub(crate) fn monotonic_ns() -> u64 {
    host_os::clock::host_clock_ns()
}

/// How the HSA system clock maps onto the host's `CLOCK_MONOTONIC`: one system-clock reading
/// taken between two host readings, the host time at their midpoint, and half the window as
/// the uncertainty (plus one tick of the system clock).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Clock {
    ticks: u64,
    host_ns: u64,
    frequency: u64,
    pub(crate) uncertainty_ns: u64,
}

impl Clock {
    /// Calibrates from [`CALIBRATION_READS`] reads, keeping the narrowest
    /// (`host_os::clock::ClockMapping`, as the CUDA plugin calibrates its events).
    pub(crate) fn calibrate<H: HsaInterface>(hsa: &H) -> HsaResult<Clock> {
        let frequency = hsa.timestamp_frequency()?;
        if frequency == 0 {
            return Err(HsaError::new(
                HsaError::STATUS_ERROR,
                "the HSA system clock has a frequency of 0",
            ));
        }
        let (ticks, mapping) =
            ClockMapping::calibrate(CALIBRATION_READS, || hsa.system_timestamp())?;
        Ok(Clock {
            ticks,
            host_ns: mapping.host_ns,
            frequency,
            // The system clock's own resolution: one tick.
            uncertainty_ns: mapping.uncertainty_ns + 1_000_000_000u64.div_ceil(frequency),
        })
    }

    /// The host time of system-clock tick `ticks`.
    pub(crate) fn host_ns(&self, ticks: u64) -> u64 {
        let elapsed = (i128::from(ticks) - i128::from(self.ticks)) * 1_000_000_000
            / i128::from(self.frequency);
        (i128::from(self.host_ns) + elapsed).clamp(0, i128::from(u64::MAX)) as u64
    }
}

/// One timed operation of a stream, on the host's `CLOCK_MONOTONIC`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WorkSpan {
    pub start_ns: u64,
    pub end_ns: u64,
    /// How far either end may be off, either way, from mapping the device's clock.
    pub uncertainty_ns: u64,
}

/// How a step of a timed operation (one slot of the chain) is timed.
pub(crate) enum StepClock {
    /// A kernel dispatch packet completes the slot's signal.
    Dispatch,
    /// An asynchronous copy completes it.
    Copy,
    /// A host step of a staged copy: the handler running it times it.
    Host(Arc<HostStep>),
}

/// The timing of one slot: how, and which operation it belongs to (`None` until the push
/// succeeded: a failed push is not counted).
pub(crate) struct Step {
    pub(crate) clock: StepClock,
    pub(crate) op: Option<u64>,
}

impl Step {
    pub(crate) fn new(clock: StepClock) -> Step {
        Step { clock, op: None }
    }
}

/// When a host step ran, written by the handler that runs it, read once its slot completed.
#[derive(Default)]
pub(crate) struct HostStep {
    start_ns: AtomicU64,
    end_ns: AtomicU64,
}

impl HostStep {
    /// Runs `work`, noting when it started and ended.
    pub(crate) fn time(&self, work: impl FnOnce()) {
        self.start_ns.store(monotonic_ns(), Ordering::Relaxed);
        work();
        // Released before the step's signal is decremented; read after it was seen at 0.
        self.end_ns.store(monotonic_ns(), Ordering::Release);
    }

    fn span(&self) -> (u64, u64) {
        let end = self.end_ns.load(Ordering::Acquire);
        (self.start_ns.load(Ordering::Relaxed), end)
    }
}

/// An operation being timed: the union of its steps' spans.
struct OpTime {
    submitted_ns: u64,
    start_ns: u64,
    end_ns: u64,
    uncertainty_ns: u64,
    steps_left: usize,
    /// Why its times cannot be trusted.
    error: Option<String>,
}

impl OpTime {
    fn widen(&mut self, start_ns: u64, end_ns: u64, uncertainty_ns: u64) {
        self.start_ns = self.start_ns.min(start_ns);
        self.end_ns = self.end_ns.max(end_ns);
        self.uncertainty_ns = self.uncertainty_ns.max(uncertainty_ns);
    }
}

/// A stream's timed operations since its timing started or was last asked, in push order.
pub(crate) struct StreamTiming {
    clock: Clock,
    agent: Agent,
    ops: VecDeque<OpTime>,
    /// The id of `ops[0]`; ids below it were handed out or discarded.
    first: u64,
    /// Set by the push being made: a host step it ran at once (start, end).
    pub(crate) prelude: Option<(u64, u64)>,
}

impl StreamTiming {
    pub(crate) fn new(clock: Clock, agent: Agent) -> StreamTiming {
        StreamTiming {
            clock,
            agent,
            ops: VecDeque::new(),
            first: 0,
            prelude: None,
        }
    }

    /// Counts a successful push made at `submitted_ns` whose slots carry `steps` steps; its
    /// id, for those steps.
    pub(crate) fn open(&mut self, submitted_ns: u64, steps: usize) -> u64 {
        let id = self.first + self.ops.len() as u64;
        let mut op = OpTime {
            submitted_ns,
            start_ns: u64::MAX,
            end_ns: 0,
            uncertainty_ns: 0,
            steps_left: steps,
            error: None,
        };
        if let Some((start, end)) = self.prelude.take() {
            op.widen(start, end, 0);
        }
        if steps == 0 {
            op.error = Some("an operation without timed steps".into());
        }
        self.ops.push_back(op);
        id
    }

    /// Reads the times of a completed step whose slot's signal is `signal`.
    pub(crate) fn record<H: HsaInterface>(&mut self, hsa: &H, signal: Signal, step: &Step) {
        let Some(id) = step.op else { return };
        let Some(index) = id.checked_sub(self.first) else {
            return; // discarded after a failure
        };
        let (clock, agent) = (self.clock, self.agent);
        let Some(op) = self.ops.get_mut(index as usize) else {
            return;
        };
        let read = match &step.clock {
            StepClock::Host(host) => {
                let (start, end) = host.span();
                Ok((start, end, 0))
            }
            StepClock::Dispatch => hsa
                .dispatch_time(agent, signal)
                .map(|(start, end)| device_span(&clock, start, end)),
            StepClock::Copy => hsa
                .copy_time(signal)
                .map(|(start, end)| device_span(&clock, start, end)),
        };
        op.steps_left = op.steps_left.saturating_sub(1);
        match read {
            Ok((start, end, uncertainty)) => {
                // Stamps from before the operation was submitted, or from after now, are not
                // its own: a packet of an unprofiled queue leaves the signal's old stamps
                // (or none), as does a copy submitted with copy profiling off.
                let now = monotonic_ns();
                if end < start
                    || start.saturating_add(uncertainty) < op.submitted_ns
                    || end > now.saturating_add(uncertainty)
                {
                    op.error.get_or_insert_with(|| {
                        format!(
                            "the device's times of an operation ({start} to {end} ns) are not \
                             within its submission at {} ns and now ({now} ns)",
                            op.submitted_ns
                        )
                    });
                } else {
                    op.widen(start, end, uncertainty);
                }
            }
            Err(err) => {
                op.error.get_or_insert(err.message);
            }
        }
    }

    /// Forgets the operations not handed out yet (their work failed: some never complete).
    pub(crate) fn discard(&mut self) {
        self.first += self.ops.len() as u64;
        self.ops.clear();
        self.prelude = None;
    }

    /// The spans of the completed operations at the front, in push order; an error if one of
    /// them could not be timed (they are handed out all the same).
    pub(crate) fn take(&mut self) -> HsaResult<Vec<WorkSpan>> {
        let mut spans = Vec::new();
        let mut error = None;
        while self.ops.front().is_some_and(|op| op.steps_left == 0) {
            let Some(op) = self.ops.pop_front() else {
                break;
            };
            self.first += 1;
            match op.error {
                Some(why) => {
                    error.get_or_insert(why);
                }
                None => spans.push(WorkSpan {
                    start_ns: op.start_ns,
                    end_ns: op.end_ns,
                    uncertainty_ns: op.uncertainty_ns,
                }),
            }
        }
        match error {
            None => Ok(spans),
            Some(why) => Err(HsaError::new(HsaError::STATUS_ERROR, why)),
        }
    }
}

/// A device-timed step on the host's clock: (start, end, uncertainty).
fn device_span(clock: &Clock, start: u64, end: u64) -> (u64, u64, u64) {
    (
        clock.host_ns(start),
        clock.host_ns(end),
        clock.uncertainty_ns,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clock_maps_ticks_at_its_frequency() {
        let clock = Clock {
            ticks: 1_000,
            host_ns: 5_000_000,
            frequency: 100_000_000, // 10 ns a tick
            uncertainty_ns: 30,
        };
        assert_eq!(clock.host_ns(1_000), 5_000_000);
        assert_eq!(clock.host_ns(1_100), 5_001_000);
        assert_eq!(clock.host_ns(900), 4_999_000);
        assert_eq!(clock.host_ns(0), 4_990_000);
        let early = Clock {
            host_ns: 10,
            ..clock
        };
        assert_eq!(early.host_ns(0), 0, "clamped, not wrapped");
    }

    #[test]
    fn operations_are_handed_out_once_all_their_steps_completed() {
        let clock = Clock {
            ticks: 0,
            host_ns: 0,
            frequency: 1_000_000_000,
            uncertainty_ns: 5,
        };
        let mut timing = StreamTiming::new(clock, Agent(1));
        let first = timing.open(0, 2);
        let second = timing.open(0, 1);
        assert_eq!((first, second), (0, 1));
        let host = Arc::new(HostStep::default());
        host.time(|| std::thread::sleep(std::time::Duration::from_millis(1)));
        let step = |op| Step {
            clock: StepClock::Host(Arc::clone(&host)),
            op: Some(op),
        };
        // Host steps make no HSA call.
        let hsa = crate::test_double::SoftwareHsa::new();
        timing.record(&hsa, Signal(0), &step(first));
        timing.record(&hsa, Signal(0), &step(second));
        assert_eq!(timing.take().unwrap(), Vec::new(), "one step of two done");
        timing.discard();
        timing.record(&hsa, Signal(0), &step(first));
        assert_eq!(timing.take().unwrap(), Vec::new(), "discarded");
        let third = timing.open(0, 1);
        assert_eq!(third, 2, "ids go on after a discard");
        timing.record(&hsa, Signal(0), &step(third));
        let spans = timing.take().unwrap();
        assert_eq!(spans.len(), 1);
        assert!(spans[0].end_ns - spans[0].start_ns >= 1_000_000);
        assert_eq!(spans[0].uncertainty_ns, 0);
    }
}
