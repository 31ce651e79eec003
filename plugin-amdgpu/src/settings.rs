//! The environment variables that tune the AMDGPU plugin, with LLVM's names and defaults
//! (`AMDGPUDeviceTy`), read once when the plugin starts. The ones every GPU plugin reads are in
//! [`gpu_plugin::Settings`].

/// LLVM's default of `LIBOMPTARGET_AMDGPU_NUM_HSA_QUEUES`.
pub const DEFAULT_NUM_QUEUES: u32 = 4;
/// LLVM's default of `LIBOMPTARGET_AMDGPU_HSA_QUEUE_SIZE`.
pub const DEFAULT_QUEUE_SIZE: u32 = 512;
/// LLVM's default of `LIBOMPTARGET_AMDGPU_TEAMS_PER_CU`.
pub const DEFAULT_TEAMS_PER_CU: u32 = 4;
/// LLVM's default of `LIBOMPTARGET_AMDGPU_MAX_ASYNC_COPY_BYTES`.
pub const DEFAULT_MAX_ASYNC_COPY_BYTES: u32 = 1 << 20;
/// LLVM's default of `LIBOMPTARGET_AMDGPU_NUM_INITIAL_HSA_SIGNALS`.
pub const DEFAULT_INITIAL_SIGNALS: u32 = 64;
/// LLVM's default of `LIBOMPTARGET_AMDGPU_STREAM_BUSYWAIT`: 2 ms. LLVM passes the value as the
/// wait's timeout hint, in ticks of the runtime's timestamp, which ROCm counts in nanoseconds.
pub const DEFAULT_STREAM_BUSY_WAIT_NS: u32 = 2_000_000;

/// LLVM's default of `LIBOMPTARGET_AMDGPU_HSA_QUEUE_BUSY_TRACKING`.
pub const DEFAULT_QUEUE_BUSY_TRACKING: bool = true;
/// LLVM's default of `LIBOMPTARGET_AMDGPU_USE_MULTIPLE_SDMA_ENGINES`.
pub const DEFAULT_MULTIPLE_SDMA_ENGINES: bool = false;

pub const QUEUE_BUSY_TRACKING_VAR: &str = "LIBOMPTARGET_AMDGPU_HSA_QUEUE_BUSY_TRACKING";
pub const MULTIPLE_SDMA_ENGINES_VAR: &str = "LIBOMPTARGET_AMDGPU_USE_MULTIPLE_SDMA_ENGINES";

/// AMDGPU-specific values from the environment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AmdgpuSettings {
    /// `LIBOMPTARGET_AMDGPU_NUM_HSA_QUEUES`: HSA queues per device, shared by streams.
    pub num_queues: u32,
    /// `LIBOMPTARGET_AMDGPU_HSA_QUEUE_SIZE`: packets per HSA queue.
    pub queue_size: u32,
    /// `LIBOMPTARGET_AMDGPU_TEAMS_PER_CU`: default teams per compute unit.
    pub teams_per_cu: u32,
    /// `LIBOMPTARGET_AMDGPU_MAX_ASYNC_COPY_BYTES`: host copies of at least this many bytes
    /// lock the host buffer instead of going through a staging buffer.
    pub max_async_copy_bytes: u32,
    /// `LIBOMPTARGET_AMDGPU_NUM_INITIAL_HSA_SIGNALS`: signals created per device up front.
    pub initial_signals: u32,
    /// `LIBOMPTARGET_AMDGPU_STREAM_BUSYWAIT`: nanoseconds a stream's synchronisation spins
    /// before it sleeps (0: it sleeps at once).
    pub stream_busy_wait_ns: u32,
    /// `LIBOMPTARGET_AMDGPU_HSA_QUEUE_BUSY_TRACKING`: a stream getting work takes the HSA queue
    /// fewest streams use, rather than the next one round-robin.
    pub queue_busy_tracking: bool,
    /// `LIBOMPTARGET_AMDGPU_USE_MULTIPLE_SDMA_ENGINES`: copies alternate between the GPU's
    /// first two SDMA engines instead of leaving the choice to the runtime.
    pub multiple_sdma_engines: bool,
}

impl AmdgpuSettings {
    pub fn from_env() -> AmdgpuSettings {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> AmdgpuSettings {
        let number = |name: &str, default: u32| -> u32 {
            let Some(text) = get(name) else {
                return default;
            };
            match text.trim().parse::<u32>() {
                Ok(v) => v,
                Err(_) => {
                    log::warn!("{name}='{text}' is not a non-negative number; using {default}");
                    default
                }
            }
        };
        AmdgpuSettings {
            num_queues: number("LIBOMPTARGET_AMDGPU_NUM_HSA_QUEUES", DEFAULT_NUM_QUEUES).max(1),
            queue_size: number("LIBOMPTARGET_AMDGPU_HSA_QUEUE_SIZE", DEFAULT_QUEUE_SIZE).max(1),
            teams_per_cu: number("LIBOMPTARGET_AMDGPU_TEAMS_PER_CU", DEFAULT_TEAMS_PER_CU).max(1),
            max_async_copy_bytes: number(
                "LIBOMPTARGET_AMDGPU_MAX_ASYNC_COPY_BYTES",
                DEFAULT_MAX_ASYNC_COPY_BYTES,
            ),
            initial_signals: number(
                "LIBOMPTARGET_AMDGPU_NUM_INITIAL_HSA_SIGNALS",
                DEFAULT_INITIAL_SIGNALS,
            ),
            stream_busy_wait_ns: number(
                "LIBOMPTARGET_AMDGPU_STREAM_BUSYWAIT",
                DEFAULT_STREAM_BUSY_WAIT_NS,
            ),
            queue_busy_tracking: flag(&get, QUEUE_BUSY_TRACKING_VAR, DEFAULT_QUEUE_BUSY_TRACKING),
            multiple_sdma_engines: flag(
                &get,
                MULTIPLE_SDMA_ENGINES_VAR,
                DEFAULT_MULTIPLE_SDMA_ENGINES,
            ),
        }
    }

    /// The queue count and size a device can have: at least one queue, no more than the agent
    /// allows, and (HSA's rule) a power of two packets no larger than its maximum.
    pub fn queues_for(&self, agent_max_queues: u32, agent_max_queue_size: u32) -> (u32, u32) {
        let count = self.num_queues.min(agent_max_queues.max(1)).max(1);
        let wanted = self.queue_size.min(agent_max_queue_size.max(1));
        // Round down to a power of two: HSA refuses other sizes.
        let size = 1u32 << (31 - wanted.leading_zeros());
        (count, size)
    }
}

/// A boolean variable as LLVM's `BoolEnvar` reads it: `true`, `yes`, `on` or `1`, `false`,
/// `no`, `off` or `0`, in any case; anything else keeps `default`.
pub fn flag(get: &impl Fn(&str) -> Option<String>, name: &str, default: bool) -> bool {
    let Some(text) = get(name) else {
        return default;
    };
    match text.to_ascii_lowercase().as_str() {
        "true" | "yes" | "on" | "1" => true,
        "false" | "no" | "off" | "0" => false,
        _ => {
            log::warn!("{name}='{text}' is not a boolean; using {default}");
            default
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_llvms() {
        let s = AmdgpuSettings::from_lookup(|_| None);
        assert_eq!(s.num_queues, 4);
        assert_eq!(s.queue_size, 512);
        assert_eq!(s.teams_per_cu, 4);
        assert_eq!(s.max_async_copy_bytes, 1 << 20);
        assert_eq!(s.initial_signals, 64);
        assert_eq!(s.stream_busy_wait_ns, 2_000_000);
        assert!(s.queue_busy_tracking);
        assert!(!s.multiple_sdma_engines);
    }

    #[test]
    fn booleans_read_as_llvm_reads_them() {
        let with = |value: &'static str| {
            AmdgpuSettings::from_lookup(move |name| {
                [QUEUE_BUSY_TRACKING_VAR, MULTIPLE_SDMA_ENGINES_VAR]
                    .contains(&name)
                    .then(|| value.to_string())
            })
        };
        for off in ["0", "false", "OFF", "No"] {
            let s = with(off);
            assert!(!s.queue_busy_tracking && !s.multiple_sdma_engines, "{off}");
        }
        for on in ["1", "TRUE", "on", "yes"] {
            let s = with(on);
            assert!(s.queue_busy_tracking && s.multiple_sdma_engines, "{on}");
        }
        // Not a boolean (LLVM does not trim either): the defaults.
        let s = with(" 1");
        assert!(s.queue_busy_tracking && !s.multiple_sdma_engines);
    }

    #[test]
    fn values_and_limits() {
        let s = AmdgpuSettings::from_lookup(|name| {
            Some(
                match name {
                    "LIBOMPTARGET_AMDGPU_NUM_HSA_QUEUES" => "0",
                    "LIBOMPTARGET_AMDGPU_HSA_QUEUE_SIZE" => "1000",
                    "LIBOMPTARGET_AMDGPU_MAX_ASYNC_COPY_BYTES" => "4096",
                    "LIBOMPTARGET_AMDGPU_NUM_INITIAL_HSA_SIGNALS" => "many",
                    _ => return None,
                }
                .to_string(),
            )
        });
        assert_eq!(s.num_queues, 1);
        assert_eq!(s.max_async_copy_bytes, 4096);
        assert_eq!(s.initial_signals, 64);
        // 1000 packets wanted, the agent allows 131072: rounded down to 512.
        assert_eq!(s.queues_for(128, 131072), (1, 512));
        let s = AmdgpuSettings::from_lookup(|_| None);
        assert_eq!(s.queues_for(2, 256), (2, 256));
    }
}
