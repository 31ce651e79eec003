//! The host clock that device timings are reported on (the plugin ABI's `WorkTime`):
//! `CLOCK_MONOTONIC`, the clock `std::time::Instant` reads on Linux.

use std::ffi::c_int;

/// `CLOCK_MONOTONIC` now, in nanoseconds.
pub fn host_clock_ns() -> u64 {
    #[repr(C)]
    struct Timespec {
        seconds: i64,
        nanoseconds: i64,
    }
    extern "C" {
        fn clock_gettime(clock: c_int, time: *mut Timespec) -> c_int;
    }
    const CLOCK_MONOTONIC: c_int = 1;
    let mut time = Timespec {
        seconds: 0,
        nanoseconds: 0,
    };
    // SAFETY: writes one timespec we own; CLOCK_MONOTONIC always exists on Linux.
    unsafe { clock_gettime(CLOCK_MONOTONIC, &mut time) };
    (time.seconds as u64) * 1_000_000_000 + time.nanoseconds as u64
}

/// A device clock mapped onto the host's: the host time of one device reading, and how far it
/// may be off either way.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct ClockMapping {
    /// The host time the device reading corresponds to.
    pub host_ns: u64,
    /// Half the window in which the device was read.
    pub uncertainty_ns: u64,
}

impl ClockMapping {
    /// Reads the device's clock with `read` between two host readings, `tries` times, and
    /// keeps the tightest window: the device reading (what `read` returned) with the host time
    /// of the window's middle.
    pub fn calibrate<T, E>(
        tries: usize,
        mut read: impl FnMut() -> Result<T, E>,
    ) -> Result<(T, ClockMapping), E> {
        let mut best: Option<(T, ClockMapping)> = None;
        for _ in 0..tries.max(1) {
            let before = host_clock_ns();
            let reading = read()?;
            let after = host_clock_ns();
            let mapping = ClockMapping {
                host_ns: before + (after - before) / 2,
                uncertainty_ns: (after - before).div_ceil(2),
            };
            let tighter = match &best {
                Some((_, b)) => mapping.uncertainty_ns < b.uncertainty_ns,
                None => true,
            };
            if tighter {
                best = Some((reading, mapping));
            }
        }
        Ok(best.expect("at least one try"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_host_clock_is_instants_clock() {
        let a = host_clock_ns();
        let i = std::time::Instant::now();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let elapsed = i.elapsed().as_nanos() as u64;
        let b = host_clock_ns();
        assert!(b - a >= elapsed, "{} {}", b - a, elapsed);
        assert!(b - a < elapsed + 1_000_000);
    }

    #[test]
    fn calibration_keeps_the_tightest_window() {
        let mut n = 0u64;
        let (reading, mapping) = ClockMapping::calibrate::<_, ()>(3, || {
            n += 1;
            if n == 2 {
                return Ok(n);
            }
            std::thread::sleep(std::time::Duration::from_millis(3));
            Ok(n)
        })
        .unwrap();
        assert_eq!(reading, 2);
        assert!(mapping.uncertainty_ns < 1_000_000, "{mapping:?}");
        assert!(ClockMapping::calibrate(2, || Err::<(), _>("broken")).is_err());
    }
}
