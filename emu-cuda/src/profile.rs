//! The emulated device: an H100-like profile, named so that nobody mistakes it for hardware,
//! or, with `OMPTARGET_EMU_PROFILE=gh200`, a GH200-like coherent node (the same sm_90 GPU,
//! whose kernels reach the host's pageable memory through the host's page tables).

use std::sync::OnceLock;

/// Which device the emulator presents, chosen once per process by `OMPTARGET_EMU_PROFILE`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Profile {
    /// Unset: the H100 profile. It reports no pageable memory access, but kernels, which run
    /// on the CPU, still reach pageable memory (what the existing programs and tests rely on).
    Default,
    /// `h100`: the H100 profile, strict about pageable memory: a kernel given a pointer into
    /// it faults with `CUDA_ERROR_ILLEGAL_ADDRESS`, as on an H100 without HMM (see `pageable`).
    H100,
    /// `gh200`: a Grace Hopper node: pageable and managed memory reachable from kernels,
    /// coherently, through the host's page tables (ATS over NVLink-C2C).
    Gh200,
}

impl Profile {
    /// The value of `OMPTARGET_EMU_PROFILE` (`None`: unset); an unknown one keeps the default,
    /// with one line on stderr.
    pub fn from_setting(setting: Option<&str>) -> Profile {
        match setting.map(str::trim) {
            None | Some("") => Profile::Default,
            Some(v) if v.eq_ignore_ascii_case("h100") => Profile::H100,
            Some(v) if v.eq_ignore_ascii_case("gh200") => Profile::Gh200,
            Some(other) => {
                eprintln!(
                    "omptarget-emu (CUDA): OMPTARGET_EMU_PROFILE={other} is not a profile of \
                     the emulated CUDA driver (h100, gh200); the default H100 profile is used"
                );
                Profile::Default
            }
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Profile::Default | Profile::H100 => NAME,
            Profile::Gh200 => GH200_NAME,
        }
    }

    /// Whether a kernel given pageable host memory faults (only when asked for: see
    /// [`Profile::Default`]).
    pub fn faults_on_pageable(self) -> bool {
        self == Profile::H100
    }
}

/// The profile of this process.
pub fn current() -> Profile {
    static PROFILE: OnceLock<Profile> = OnceLock::new();
    *PROFILE.get_or_init(|| {
        Profile::from_setting(std::env::var("OMPTARGET_EMU_PROFILE").ok().as_deref())
    })
}

pub const NAME: &str = "omptarget-emu H100 (emulated CUDA device, not hardware)";
pub const GH200_NAME: &str = "omptarget-emu GH200 (emulated CUDA device, not hardware)";
pub const COMPUTE_CAPABILITY: (i32, i32) = (9, 0);
pub const SM: u32 = 90;
pub const DRIVER_VERSION: i32 = 12020;
pub const MAX_THREADS_PER_BLOCK: u32 = 1024;
pub const MAX_BLOCK: [u32; 3] = [1024, 1024, 64];
pub const MAX_GRID: [u32; 3] = [i32::MAX as u32, 65535, 65535];
/// Dynamic shared memory a kernel may use without opting in.
pub const SHARED_DEFAULT: u32 = 48 * 1024;
/// The most a kernel may opt in to (`cuFuncSetAttribute`).
pub const SHARED_OPTIN: u32 = 227 * 1024;
pub const MULTIPROCESSORS: u32 = 132;
pub const WARP_SIZE: u32 = 32;
/// What one multiprocessor holds at once (occupancy): threads, blocks, shared memory, of
/// which each resident block takes 1 KiB for the system (sm_90).
pub const THREADS_PER_MULTIPROCESSOR: u32 = 2048;
pub const BLOCKS_PER_MULTIPROCESSOR: u32 = 32;
pub const SHARED_PER_MULTIPROCESSOR: u32 = 228 * 1024;
pub const SHARED_RESERVED_PER_BLOCK: u32 = 1024;

/// `cuDeviceGetAttribute` on this process's profile.
pub fn attribute(attribute: i32, device: usize) -> Option<i32> {
    attribute_of(current(), attribute, device)
}

/// `cuDeviceGetAttribute` of `profile`. `None` for numbers that are not attributes of CUDA
/// 12.2's driver (the numbers are cuda.h's `CUdevice_attribute`).
pub fn attribute_of(profile: Profile, attribute: i32, device: usize) -> Option<i32> {
    if profile == Profile::Gh200 {
        if let Some(value) = gh200_attribute(attribute) {
            return Some(value);
        }
    }
    let value = match attribute {
        1 => MAX_THREADS_PER_BLOCK as i32,
        2..=4 => MAX_BLOCK[(attribute - 2) as usize] as i32,
        5..=7 => MAX_GRID[(attribute - 5) as usize] as i32,
        8 => SHARED_DEFAULT as i32,
        9 => 64 * 1024, // total constant memory
        10 => WARP_SIZE as i32,
        11 => i32::MAX,  // max pitch
        12 => 65536,     // registers per block
        13 => 1_980_000, // clock rate, kHz
        14 => 512,       // texture alignment
        15 => 1,         // copy and kernel overlap
        16 => MULTIPROCESSORS as i32,
        17 | 18 => 0,            // kernel timeout, integrated
        19 => 1,                 // can map host memory
        20 => 0,                 // compute mode: default
        31 => 1,                 // concurrent kernels
        32 => 1,                 // ECC
        33 => device as i32 + 1, // PCI bus
        34 | 35 => 0,            // PCI device, TCC driver
        36 => 2_619_000,         // memory clock, kHz
        37 => 5120,              // memory bus width
        38 => 50 * 1024 * 1024,  // L2 cache
        39 => THREADS_PER_MULTIPROCESSOR as i32,
        40 => 3, // async engines
        41 => 1, // unified addressing
        50 => 0, // PCI domain
        75 => COMPUTE_CAPABILITY.0,
        76 => COMPUTE_CAPABILITY.1,
        81 => SHARED_PER_MULTIPROCESSOR as i32,
        82 => 65536, // registers per multiprocessor
        83 => 1,     // managed memory
        84 => 0,     // multi-GPU board
        86 => 0,     // host native atomics
        88 => 0,     // pageable memory access
        89 => 1,     // concurrent managed access
        97 => SHARED_OPTIN as i32,
        106 => BLOCKS_PER_MULTIPROCESSOR as i32,
        115 => 1, // memory pools supported
        // Every other attribute of CUDA 12.2 (up to CU_DEVICE_ATTRIBUTE_MAX): not modelled.
        21..=30
        | 42..=49
        | 51..=74
        | 77..=80
        | 85
        | 87
        | 90..=96
        | 98..=105
        | 107..=114
        | 116..=133 => 0,
        _ => return None,
    };
    Some(value)
}

/// Where a GH200 with its driver answers otherwise than the H100 profile: the GPU is the same
/// sm_90 part (132 SMs), with HBM3 on a wider bus, and the Grace CPU beside it shares one
/// coherent address space over NVLink-C2C (Address Translation Services), which is what the
/// memory attributes say.
fn gh200_attribute(attribute: i32) -> Option<i32> {
    Some(match attribute {
        // Six HBM3 stacks: 4 TB/s at the same memory clock as the H100's five (5120 bits).
        37 => 6144,
        86 => 1,  // HOST_NATIVE_ATOMIC_SUPPORTED: atomics on host memory are native (C2C)
        88 => 1,  // PAGEABLE_MEMORY_ACCESS
        89 => 1,  // CONCURRENT_MANAGED_ACCESS
        91 => 1,  // CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM
        100 => 1, // PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES (ATS, not HMM's mirroring)
        101 => 1, // DIRECT_MANAGED_MEM_ACCESS_FROM_HOST
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_setting_picks_the_profile() {
        assert_eq!(Profile::from_setting(None), Profile::Default);
        assert_eq!(Profile::from_setting(Some("gh200")), Profile::Gh200);
        assert_eq!(Profile::from_setting(Some("GH200")), Profile::Gh200);
        assert_eq!(Profile::from_setting(Some("h100")), Profile::H100);
        assert_eq!(Profile::from_setting(Some("mi300a")), Profile::Default);
    }

    #[test]
    fn a_gh200_reaches_host_memory_and_an_h100_does_not() {
        let coherent = [86, 88, 89, 91, 100, 101];
        for attribute in coherent {
            assert_eq!(attribute_of(Profile::Gh200, attribute, 0), Some(1));
        }
        for attribute in [86, 88, 91, 100, 101] {
            assert_eq!(attribute_of(Profile::Default, attribute, 0), Some(0));
            assert_eq!(attribute_of(Profile::H100, attribute, 0), Some(0));
        }
        assert_eq!(attribute_of(Profile::Gh200, 16, 0), Some(132));
        assert_eq!(attribute_of(Profile::Gh200, 75, 0), Some(9));
        assert_eq!(attribute_of(Profile::Gh200, 76, 0), Some(0));
        assert_eq!(attribute_of(Profile::Gh200, 134, 0), None);
        assert_eq!(Profile::Gh200.name(), GH200_NAME);
    }
}
