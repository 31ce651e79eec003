//! The emulated device: an H100-like profile, named so that nobody mistakes it for hardware.

pub const NAME: &str = "omptarget-emu H100 (emulated CUDA device, not hardware)";
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

/// `cuDeviceGetAttribute`. `None` for numbers that are not attributes of CUDA 12.2's driver.
pub fn attribute(attribute: i32, device: usize) -> Option<i32> {
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
