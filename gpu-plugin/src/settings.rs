//! The environment variables every GPU plugin honours (`GenericDeviceTy`), with LLVM's names
//! and defaults, read once when the plugin starts.

/// Values from the environment; `None` means "not set: leave the driver's default".
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    /// `LIBOMPTARGET_NUM_INITIAL_STREAMS`: streams created per device up front.
    pub initial_streams: usize,
    /// `LIBOMPTARGET_NUM_INITIAL_EVENTS`: events created per device up front.
    pub initial_events: usize,
    /// `OMP_NUM_TEAMS`: an upper bound on teams per kernel.
    pub num_teams: Option<u32>,
    /// `OMP_TEAMS_THREAD_LIMIT`: an upper bound on threads per team.
    pub teams_thread_limit: Option<u32>,
    /// `LIBOMPTARGET_STACK_SIZE`: per-thread device stack bytes.
    pub stack_size: Option<u64>,
    /// `LIBOMPTARGET_HEAP_SIZE`: device malloc heap bytes.
    pub heap_size: Option<u64>,
    /// `LIBOMPTARGET_SHARED_MEMORY_SIZE`: dynamic shared memory every kernel gets.
    pub shared_memory_size: u32,
    /// `LIBOMPTARGET_DEVICE_RTL_DEBUG`: debug bits for the device runtime.
    pub device_debug_kind: u32,
    /// `LIBOMPTARGET_MIN_THREADS_FOR_LOW_TRIP_COUNT`.
    pub min_threads_for_low_trip_count: u32,
    /// `LIBOMPTARGET_REUSE_BLOCKS_FOR_HIGH_TRIP_COUNT`.
    pub reuse_blocks_for_high_trip_count: bool,
}

impl Settings {
    pub fn from_env() -> Settings {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Settings {
        let number = |name: &str| -> Option<u64> {
            let text = get(name)?;
            let value = text.trim();
            let parsed = match value
                .strip_prefix("0x")
                .or_else(|| value.strip_prefix("0X"))
            {
                Some(hex) => u64::from_str_radix(hex, 16).ok(),
                None => value.parse().ok(),
            };
            if parsed.is_none() {
                log::warn!("{name}='{text}' is not a non-negative number; ignored");
            }
            parsed
        };
        let small = |name: &str| number(name).map(|v| v.min(u32::MAX as u64) as u32);
        let flag = |name: &str, default: bool| -> bool {
            match get(name).map(|v| v.trim().to_ascii_lowercase()) {
                None => default,
                Some(v) if ["1", "true", "on", "yes"].contains(&v.as_str()) => true,
                Some(v) if ["0", "false", "off", "no"].contains(&v.as_str()) => false,
                Some(v) => {
                    log::warn!("{name}='{v}' is not a boolean; using {default}");
                    default
                }
            }
        };
        Settings {
            initial_streams: number("LIBOMPTARGET_NUM_INITIAL_STREAMS")
                .unwrap_or(1)
                .clamp(1, 4096) as usize,
            initial_events: number("LIBOMPTARGET_NUM_INITIAL_EVENTS")
                .unwrap_or(1)
                .clamp(1, 4096) as usize,
            num_teams: small("OMP_NUM_TEAMS").filter(|&n| n > 0),
            teams_thread_limit: small("OMP_TEAMS_THREAD_LIMIT").filter(|&n| n > 0),
            stack_size: number("LIBOMPTARGET_STACK_SIZE"),
            heap_size: number("LIBOMPTARGET_HEAP_SIZE"),
            shared_memory_size: small("LIBOMPTARGET_SHARED_MEMORY_SIZE").unwrap_or(0),
            device_debug_kind: small("LIBOMPTARGET_DEVICE_RTL_DEBUG").unwrap_or(0),
            min_threads_for_low_trip_count: small("LIBOMPTARGET_MIN_THREADS_FOR_LOW_TRIP_COUNT")
                .unwrap_or(32),
            reuse_blocks_for_high_trip_count: flag(
                "LIBOMPTARGET_REUSE_BLOCKS_FOR_HIGH_TRIP_COUNT",
                true,
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_values() {
        let none = Settings::from_lookup(|_| None);
        assert_eq!(none.initial_streams, 1);
        assert_eq!(none.num_teams, None);
        assert_eq!(none.min_threads_for_low_trip_count, 32);
        assert!(none.reuse_blocks_for_high_trip_count);
        let set = Settings::from_lookup(|name| {
            Some(
                match name {
                    "OMP_NUM_TEAMS" => "64",
                    "OMP_TEAMS_THREAD_LIMIT" => "0",
                    "LIBOMPTARGET_HEAP_SIZE" => "0x1000000",
                    "LIBOMPTARGET_NUM_INITIAL_STREAMS" => "8",
                    "LIBOMPTARGET_REUSE_BLOCKS_FOR_HIGH_TRIP_COUNT" => "false",
                    "LIBOMPTARGET_STACK_SIZE" => "lots",
                    _ => return None,
                }
                .to_string(),
            )
        });
        assert_eq!(set.num_teams, Some(64));
        assert_eq!(set.teams_thread_limit, None);
        assert_eq!(set.heap_size, Some(16 << 20));
        assert_eq!(set.initial_streams, 8);
        assert_eq!(set.stack_size, None);
        assert!(!set.reuse_blocks_for_high_trip_count);
    }
}
