//! `cuLaunchKernel`: the launch's checks, as the driver makes them, and its parameter buffer.

use crate::driver::Function;
use crate::profile;
use crate::status::{self, Result};
use std::sync::atomic::Ordering;

/// `CU_LAUNCH_PARAM_END`, `CU_LAUNCH_PARAM_BUFFER_POINTER`, `CU_LAUNCH_PARAM_BUFFER_SIZE`.
const PARAM_END: usize = 0;
const PARAM_BUFFER_POINTER: usize = 1;
const PARAM_BUFFER_SIZE: usize = 2;

/// The grid and block limits, and shared memory within what the kernel was allowed.
pub fn check_geometry(
    function: &Function,
    grid: [u32; 3],
    block: [u32; 3],
    shared: u32,
) -> Result<()> {
    let threads = block.iter().map(|&b| b as u64).product::<u64>();
    let within =
        |dims: [u32; 3], max: [u32; 3]| dims.iter().zip(max).all(|(&d, m)| d >= 1 && d <= m);
    if !within(grid, profile::MAX_GRID)
        || !within(block, profile::MAX_BLOCK)
        || threads > function.kernel.max_threads as u64
    {
        return Err(status::INVALID_VALUE);
    }
    let allowed = function.max_dynamic_shared.load(Ordering::Relaxed);
    if shared > allowed {
        return Err(status::INVALID_VALUE);
    }
    Ok(())
}

/// The launch's parameter bytes, from `kernelParams` (one pointer per parameter, laid out as
/// the cubin says) or from `extra` (a packed buffer and its size).
///
/// # Safety
/// The pointers are the caller's, as the driver API defines them.
pub unsafe fn parameters(
    function: &Function,
    params: *const *const u8,
    extra: *const usize,
) -> Result<Vec<u8>> {
    let kernel = &function.kernel;
    match (params.is_null(), extra.is_null()) {
        (false, false) => Err(status::INVALID_VALUE),
        (true, true) if kernel.param_size == 0 => Ok(Vec::new()),
        (true, true) => Err(status::INVALID_VALUE),
        (false, true) => {
            if kernel.params.is_empty() && kernel.param_size > 0 {
                // No layout to read the pointers with (the cubin lacks parameter records).
                return Err(status::INVALID_VALUE);
            }
            let mut buffer = vec![0u8; kernel.param_size as usize];
            for (i, &(offset, size)) in kernel.params.iter().enumerate() {
                // SAFETY: kernelParams has one valid pointer per parameter (the caller's
                // contract), each to `size` readable bytes.
                let source = unsafe { *params.add(i) };
                if source.is_null() {
                    return Err(status::INVALID_VALUE);
                }
                // SAFETY: as above.
                let value = unsafe { std::slice::from_raw_parts(source, size as usize) };
                buffer[offset as usize..(offset + size) as usize].copy_from_slice(value);
            }
            Ok(buffer)
        }
        (true, false) => {
            let (mut pointer, mut size) = (None, None);
            let mut at = 0;
            loop {
                // SAFETY: `extra` is a PARAM_END-terminated list of key, value pairs.
                let key = unsafe { *extra.add(at) };
                match key {
                    PARAM_END => break,
                    // SAFETY: each key is followed by its value.
                    PARAM_BUFFER_POINTER => pointer = Some(unsafe { *extra.add(at + 1) }),
                    PARAM_BUFFER_SIZE => {
                        // SAFETY: as above; the value points to a size_t.
                        size = Some(unsafe { *(*extra.add(at + 1) as *const usize) })
                    }
                    _ => return Err(status::INVALID_VALUE),
                }
                at += 2;
            }
            let (Some(pointer), Some(size)) = (pointer, size) else {
                return Err(status::INVALID_VALUE);
            };
            if pointer == 0 || size < kernel.param_size as usize || size > 32 * 1024 {
                return Err(status::INVALID_VALUE);
            }
            // SAFETY: the buffer holds `size` bytes (the caller's contract).
            Ok(unsafe { std::slice::from_raw_parts(pointer as *const u8, size) }.to_vec())
        }
    }
}

/// The parameter buffer as the twin's arguments: one 8-byte value per parameter (OpenMP
/// kernels take pointers and pointer-sized values only).
pub fn twin_arguments(function: &Function, buffer: &[u8]) -> Result<Vec<usize>> {
    if buffer.len() & 7 != 0
        || function
            .kernel
            .params
            .iter()
            .any(|&(o, s)| s != 8 || o % 8 != 0)
    {
        eprintln!(
            "omptarget-emu (CUDA): kernel {} has parameters that are not 8-byte values; its \
             twin cannot be called with them",
            function.name
        );
        return Err(status::NOT_SUPPORTED);
    }
    Ok(buffer
        .chunks_exact(8)
        .map(|w| usize::from_ne_bytes(w.try_into().unwrap()))
        .collect())
}

/// How many blocks of `block` threads, each with `dynamic` bytes of dynamic shared memory, one
/// multiprocessor of the emulated device holds at once: limited by its threads (whole warps),
/// its block slots and its shared memory (static, dynamic and the system's reserve per block).
/// A block over the kernel's allowance of dynamic shared memory cannot run at all.
pub fn blocks_per_multiprocessor(function: &Function, block: u32, dynamic: usize) -> u32 {
    let allowed = function.max_dynamic_shared.load(Ordering::Relaxed) as usize;
    if block == 0 || dynamic > allowed {
        return 0;
    }
    let threads = block.div_ceil(profile::WARP_SIZE) * profile::WARP_SIZE;
    let by_threads = profile::THREADS_PER_MULTIPROCESSOR / threads;
    let shared = function.kernel.static_shared as usize
        + dynamic
        + profile::SHARED_RESERVED_PER_BLOCK as usize;
    let by_shared = profile::SHARED_PER_MULTIPROCESSOR as usize / shared;
    by_threads
        .min(profile::BLOCKS_PER_MULTIPROCESSOR)
        .min(u32::try_from(by_shared).unwrap_or(u32::MAX))
}

/// `cuOccupancyMaxPotentialBlockSize`, as CUDA's occupancy calculator (`cuda_occupancy.h`)
/// computes it: the block size, at most `limit` (0: none) and the kernel's and device's
/// limits, that keeps the most threads resident per multiprocessor, trying sizes from the
/// largest down in whole warps and stopping at the first that fills a multiprocessor; and the
/// smallest grid that fills the device with it. `dynamic` gives the dynamic shared memory a
/// block size needs. Answers (0, 0) when no block size fits.
pub fn potential_block_size(
    function: &Function,
    limit: u32,
    mut dynamic: impl FnMut(u32) -> usize,
) -> (u32, u32) {
    let mut largest = function
        .kernel
        .max_threads
        .min(profile::MAX_THREADS_PER_BLOCK);
    if limit > 0 {
        largest = largest.min(limit);
    }
    let (mut best_block, mut best_blocks, mut best_threads) = (0, 0, 0);
    let mut aligned = largest.div_ceil(profile::WARP_SIZE) * profile::WARP_SIZE;
    while aligned > 0 {
        let block = aligned.min(largest);
        let blocks = blocks_per_multiprocessor(function, block, dynamic(block));
        if block * blocks > best_threads {
            (best_block, best_blocks, best_threads) = (block, blocks, block * blocks);
        }
        if best_threads == profile::THREADS_PER_MULTIPROCESSOR {
            break;
        }
        aligned -= profile::WARP_SIZE;
    }
    (best_blocks * profile::MULTIPROCESSORS, best_block)
}
