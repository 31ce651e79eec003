//! Globals of an OpenMP device image that its loader reads or fills in, as LLVM's
//! `offload/include/Shared/Environment.h` lays them out: the device environment
//! (`__omp_rtl_device_environment`, written by the plugin when it loads the image) and each
//! kernel's `<kernel>_kernel_environment` (read-only: how the compiler configured the kernel).
//! Every device runtime reads the same layouts, whether LLVM's GPU runtime or omptarget-rs's
//! host device runtime (host-device-runtime/) in an x86-64 image.

/// The image's device environment global.
pub const DEVICE_ENVIRONMENT_SYMBOL: &str = "__omp_rtl_device_environment";

/// The suffix of a kernel's kernel environment global (`<kernel>_kernel_environment`).
pub const KERNEL_ENVIRONMENT_SUFFIX: &str = "_kernel_environment";

/// `DeviceEnvironmentTy`.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct DeviceEnvironment {
    /// `LIBOMPTARGET_DEVICE_RTL_DEBUG` bits.
    pub debug_kind: u32,
    /// Devices of the plugin.
    pub num_devices: u32,
    /// This device's number within the plugin.
    pub device_num: u32,
    /// `LIBOMPTARGET_SHARED_MEMORY_SIZE`.
    pub dynamic_mem_size: u32,
    /// The device clock's ticks per second (`omp_get_wtick`).
    pub clock_frequency: u64,
    pub indirect_call_table: u64,
    pub indirect_call_table_size: u64,
    /// Threads that can run at once (`omp_get_num_procs` on the device).
    pub hardware_parallelism: u64,
}

impl DeviceEnvironment {
    /// Bytes of the C struct.
    pub const SIZE: usize = 48;

    /// The struct as the device reads it (little-endian, C layout).
    pub fn to_bytes(&self) -> [u8; Self::SIZE] {
        let mut out = [0u8; Self::SIZE];
        out[0..4].copy_from_slice(&self.debug_kind.to_le_bytes());
        out[4..8].copy_from_slice(&self.num_devices.to_le_bytes());
        out[8..12].copy_from_slice(&self.device_num.to_le_bytes());
        out[12..16].copy_from_slice(&self.dynamic_mem_size.to_le_bytes());
        out[16..24].copy_from_slice(&self.clock_frequency.to_le_bytes());
        out[24..32].copy_from_slice(&self.indirect_call_table.to_le_bytes());
        out[32..40].copy_from_slice(&self.indirect_call_table_size.to_le_bytes());
        out[40..48].copy_from_slice(&self.hardware_parallelism.to_le_bytes());
        out
    }
}

/// The launch configuration of a kernel: `ConfigurationEnvironmentTy`, the head of
/// `KernelEnvironmentTy` (followed by the ident and dynamic environment pointers).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct KernelConfiguration {
    pub use_generic_state_machine: u8,
    pub may_use_nested_parallelism: u8,
    /// 1 generic, 2 SPMD, 3 generic-SPMD.
    pub exec_mode: u8,
    /// Threads per team the kernel allows; below 1 where the compiler set no bound.
    pub min_threads: i32,
    pub max_threads: i32,
    /// Teams the kernel allows: -1 for a region without a teams construct (one team), 0 for
    /// no bound.
    pub min_teams: i32,
    pub max_teams: i32,
    pub reduction_data_size: i32,
    pub reduction_buffer_length: i32,
}

impl KernelConfiguration {
    /// Bytes of the C struct (three bytes, a byte of padding, six 32-bit fields).
    pub const SIZE: usize = 28;

    /// Reads the struct from its bytes.
    pub fn from_bytes(bytes: &[u8; Self::SIZE]) -> KernelConfiguration {
        let word = |at: usize| i32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"));
        KernelConfiguration {
            use_generic_state_machine: bytes[0],
            may_use_nested_parallelism: bytes[1],
            exec_mode: bytes[2],
            min_threads: word(4),
            max_threads: word(8),
            min_teams: word(12),
            max_teams: word(16),
            reduction_data_size: word(20),
            reduction_buffer_length: word(24),
        }
    }

    /// Reads the struct from the head of a global's bytes (a kernel environment's initial
    /// bytes in an image); `None` when they are too few.
    pub fn parse(bytes: &[u8]) -> Option<KernelConfiguration> {
        Some(Self::from_bytes(bytes.get(..Self::SIZE)?.try_into().ok()?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_match_the_c_structs() {
        let env = DeviceEnvironment {
            debug_kind: 1,
            num_devices: 2,
            device_num: 3,
            dynamic_mem_size: 4,
            clock_frequency: 5,
            indirect_call_table: 6,
            indirect_call_table_size: 7,
            hardware_parallelism: 8,
        };
        let bytes = env.to_bytes();
        assert_eq!(bytes[8], 3);
        assert_eq!(bytes[12], 4);
        assert_eq!(bytes[16], 5);
        assert_eq!(bytes[40], 8);

        // flang's `{ i8 0, i8 1, i8 2, i32 1, i32 256, i32 3, i32 3, i32 0, i32 0 }`.
        let mut raw = [0u8; KernelConfiguration::SIZE];
        raw[..3].copy_from_slice(&[0, 1, 2]);
        for (i, v) in [1i32, 256, 3, 3, 0, 0].iter().enumerate() {
            raw[4 + 4 * i..8 + 4 * i].copy_from_slice(&v.to_le_bytes());
        }
        let config = KernelConfiguration::from_bytes(&raw);
        assert_eq!(config.exec_mode, 2);
        assert_eq!(config.max_threads, 256);
        assert_eq!((config.min_teams, config.max_teams), (3, 3));
        assert_eq!(KernelConfiguration::parse(&raw), Some(config));
        assert_eq!(KernelConfiguration::parse(&raw[..27]), None);
    }
}
