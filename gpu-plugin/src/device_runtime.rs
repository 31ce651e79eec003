//! Layouts that LLVM's device runtime (the `libomptarget-<arch>.bc` linked into every GPU
//! image) reads from memory the host fills in: the device environment global and the launch
//! environment passed to kernels. From `offload/include/Shared/Environment.h`.

/// `DeviceEnvironmentTy`, written to the image's `__omp_rtl_device_environment` global when the
/// image is loaded (its layout is the image format's, shared with the host plugin).
pub use offload_image::device_environment::DeviceEnvironment;

/// Device `device_num` of a plugin's `num_devices`, as every GPU plugin describes it: the
/// settings' debug bits and dynamic shared memory, the device's clock and parallelism. The
/// indirect-call table is placed later, when the program registers its calls.
pub fn device_environment_for(
    settings: &crate::settings::Settings,
    device_num: u32,
    num_devices: u32,
    clock_frequency: u64,
    hardware_parallelism: u64,
) -> DeviceEnvironment {
    DeviceEnvironment {
        debug_kind: settings.device_debug_kind,
        num_devices,
        device_num,
        dynamic_mem_size: settings.shared_memory_size,
        clock_frequency,
        hardware_parallelism,
        ..DeviceEnvironment::default()
    }
}

/// The device runtime's indirect-call table for `calls`: `{host, device}` address pairs
/// (`std::pair<void *, void *>`), sorted by host address because the device's lookup
/// (`__llvm_omp_indirect_call_lookup`) searches it by halves. Its address and entry count go
/// into [`DeviceEnvironment::indirect_call_table`] and `indirect_call_table_size`.
pub fn indirect_call_table(calls: &[plugin_api::IndirectCall]) -> Vec<u8> {
    let mut sorted = calls.to_vec();
    sorted.sort_by_key(|call| call.host);
    sorted
        .iter()
        .flat_map(|call| {
            call.host
                .to_le_bytes()
                .into_iter()
                .chain(call.device.to_le_bytes())
        })
        .collect()
}

/// `KernelLaunchEnvironmentTy`: the implicit first argument of kernels compiled for kernel
/// arguments version 3 and later; only kernels with team reductions read it.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct KernelLaunchEnvironment {
    pub reduction_count: u32,
    pub reduction_iteration_count: u32,
    /// Device address of the team-reduction buffer.
    pub reduction_buffer: u64,
}

impl KernelLaunchEnvironment {
    /// Bytes of the C struct.
    pub const SIZE: usize = 16;

    /// The struct as the device reads it (little-endian, C layout).
    pub fn to_bytes(&self) -> [u8; Self::SIZE] {
        let mut out = [0u8; Self::SIZE];
        out[0..4].copy_from_slice(&self.reduction_count.to_le_bytes());
        out[4..8].copy_from_slice(&self.reduction_iteration_count.to_le_bytes());
        out[8..16].copy_from_slice(&self.reduction_buffer.to_le_bytes());
        out
    }
}

/// The launch-environment argument for a kernel that needs none: the device runtime never
/// reads it, and an invalid address makes a stray read fault loudly.
pub const NO_LAUNCH_ENVIRONMENT: usize = usize::MAX;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_launch_environment_matches_the_c_struct() {
        let launch = KernelLaunchEnvironment {
            reduction_count: 0,
            reduction_iteration_count: 0,
            reduction_buffer: 0x1122,
        };
        assert_eq!(&launch.to_bytes()[8..10], &[0x22, 0x11]);
    }

    #[test]
    fn indirect_call_table_is_sorted_pairs() {
        let calls = [
            plugin_api::IndirectCall {
                host: 0x2000,
                device: 0xb2,
            },
            plugin_api::IndirectCall {
                host: 0x1000,
                device: 0xb1,
            },
        ];
        let table = indirect_call_table(&calls);
        let words: Vec<u64> = table
            .chunks(8)
            .map(|w| u64::from_le_bytes(w.try_into().unwrap()))
            .collect();
        assert_eq!(words, [0x1000, 0xb1, 0x2000, 0xb2]);
    }
}
