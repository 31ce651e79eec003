//! Device memory for kernel launch environments and team-reduction buffers, kept per device
//! and reused across launches by the GPU plugins (LLVM's memory manager does the same for these
//! allocations): allocating and freeing them for every launch costs runtime calls, and on
//! CUDA `cuMemFree` waits for the whole device, which would stall other threads' constructs.
//!
//! A buffer is in one launch's hands from `take` until that launch's stream has been
//! synchronised; only then is it given back, so two launches never share one.

use crate::KernelLaunchEnvironment;
use std::sync::{Mutex, MutexGuard, PoisonError};

/// Where the reduction buffer starts in a pooled allocation: after the launch environment,
/// at the alignment `cuMemAlloc` guarantees (HSA's pools align to pages).
pub const BUFFER_OFFSET: u64 = 256;

/// One device allocation: a launch environment at `address`, then a reduction buffer of
/// `capacity` bytes at `address + BUFFER_OFFSET`.
#[derive(Debug)]
pub struct LaunchBuffer {
    pub address: u64,
    pub capacity: u64,
    /// The environment's initial contents (counters zero, the buffer's address), kept at a
    /// stable host address so an asynchronous copy can read it until the stream is done.
    host_environment: Box<[u8; KernelLaunchEnvironment::SIZE]>,
}

impl LaunchBuffer {
    fn new(address: u64, capacity: u64) -> LaunchBuffer {
        let environment = KernelLaunchEnvironment {
            reduction_count: 0,
            reduction_iteration_count: 0,
            reduction_buffer: address + BUFFER_OFFSET,
        };
        LaunchBuffer {
            address,
            capacity,
            host_environment: Box::new(environment.to_bytes()),
        }
    }

    /// The host copy of the environment to write to `address` before each launch (the
    /// device runtime counts in it).
    pub fn host_environment(&self) -> &[u8; KernelLaunchEnvironment::SIZE] {
        &self.host_environment
    }
}

/// The device's idle launch buffers.
#[derive(Default)]
pub struct LaunchBufferPool {
    idle: Mutex<Vec<LaunchBuffer>>,
}

impl LaunchBufferPool {
    /// The idle buffers, also after a panic elsewhere poisoned the lock (each change is one
    /// push or pop). plugin-api ships on its own to vendors, so it has no dependency for this
    /// one line (the workspace's crates use `sync_util::lock`).
    fn idle(&self) -> MutexGuard<'_, Vec<LaunchBuffer>> {
        self.idle.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The smallest idle buffer with room for `bytes` of reduction data, or a new one from
    /// `allocate` (called with the allocation's size in bytes). New buffers are rounded up
    /// to a power of two so that kernels of similar needs share them.
    pub fn take<E>(
        &self,
        bytes: u64,
        allocate: impl FnOnce(u64) -> Result<u64, E>,
    ) -> Result<LaunchBuffer, E> {
        if let Some(buffer) = self.take_idle(bytes) {
            return Ok(buffer);
        }
        let capacity = bytes.max(1).checked_next_power_of_two().unwrap_or(bytes);
        let address = allocate(BUFFER_OFFSET.saturating_add(capacity))?;
        Ok(LaunchBuffer::new(address, capacity))
    }

    fn take_idle(&self, bytes: u64) -> Option<LaunchBuffer> {
        let mut idle = self.idle();
        let best = idle
            .iter()
            .enumerate()
            .filter(|(_, b)| b.capacity >= bytes)
            .min_by_key(|(_, b)| b.capacity)
            .map(|(i, _)| i)?;
        Some(idle.swap_remove(best))
    }

    /// Returns a buffer once the launch that took it has completed.
    pub fn give_back(&self, buffer: LaunchBuffer) {
        self.idle().push(buffer);
    }

    /// Removes every idle buffer and returns their device addresses, to be freed.
    pub fn drain(&self) -> Vec<u64> {
        let idle = std::mem::take(&mut *self.idle());
        idle.into_iter().map(|b| b.address).collect()
    }

    pub fn idle_count(&self) -> usize {
        self.idle().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An allocator handing out increasing fake addresses and counting its calls.
    struct FakeDevice {
        next: u64,
        sizes: Vec<u64>,
    }

    impl FakeDevice {
        fn new() -> FakeDevice {
            FakeDevice {
                next: 0x1000,
                sizes: Vec::new(),
            }
        }
        fn allocate(&mut self, size: u64) -> Result<u64, ()> {
            let address = self.next;
            self.next += 0x10_0000;
            self.sizes.push(size);
            Ok(address)
        }
    }

    #[test]
    fn consecutive_launches_reuse_one_buffer() {
        let (pool, mut device) = (LaunchBufferPool::default(), FakeDevice::new());
        for _ in 0..5 {
            let b = pool.take(1000, |n| device.allocate(n)).unwrap();
            assert!(b.capacity >= 1000);
            pool.give_back(b);
        }
        assert_eq!(device.sizes, [BUFFER_OFFSET + 1024]);
    }

    #[test]
    fn a_buffer_in_use_is_not_handed_to_another_launch() {
        let (pool, mut device) = (LaunchBufferPool::default(), FakeDevice::new());
        let first = pool.take(64, |n| device.allocate(n)).unwrap();
        let second = pool.take(64, |n| device.allocate(n)).unwrap();
        assert_ne!(first.address, second.address);
        assert_eq!(device.sizes.len(), 2);
        pool.give_back(first);
        pool.give_back(second);
        assert_eq!(pool.idle_count(), 2);
    }

    #[test]
    fn grows_when_a_bigger_buffer_is_needed_and_picks_the_smallest_fit() {
        let (pool, mut device) = (LaunchBufferPool::default(), FakeDevice::new());
        let small = pool.take(100, |n| device.allocate(n)).unwrap();
        pool.give_back(small);
        let big = pool.take(5000, |n| device.allocate(n)).unwrap();
        assert_eq!(big.capacity, 8192);
        pool.give_back(big);
        assert_eq!(device.sizes.len(), 2);
        // The small request takes the small buffer, the big one the big.
        let again_small = pool.take(50, |_| Err(())).unwrap();
        assert_eq!(again_small.capacity, 128);
        let again_big = pool.take(6000, |_| Err(())).unwrap();
        assert_eq!(again_big.capacity, 8192);
    }

    #[test]
    fn the_environment_points_past_itself_with_zero_counters() {
        let pool = LaunchBufferPool::default();
        let b = pool.take(16, |_| Ok::<u64, ()>(0x7000)).unwrap();
        let env = b.host_environment();
        assert_eq!(env[..8], [0; 8]);
        assert_eq!(
            u64::from_le_bytes(env[8..].try_into().unwrap()),
            0x7000 + BUFFER_OFFSET
        );
        assert!(BUFFER_OFFSET as usize >= KernelLaunchEnvironment::SIZE);
    }

    #[test]
    fn a_failed_allocation_leaves_the_pool_as_it_was() {
        let pool = LaunchBufferPool::default();
        assert_eq!(
            pool.take(16, |_| Err::<u64, _>("out of memory"))
                .unwrap_err(),
            "out of memory"
        );
        assert_eq!(pool.idle_count(), 0);
    }

    #[test]
    fn drain_hands_back_every_idle_address() {
        let (pool, mut device) = (LaunchBufferPool::default(), FakeDevice::new());
        let a = pool.take(8, |n| device.allocate(n)).unwrap();
        let b = pool.take(8, |n| device.allocate(n)).unwrap();
        let mut expected = vec![a.address, b.address];
        pool.give_back(a);
        pool.give_back(b);
        let mut drained = pool.drain();
        drained.sort();
        expected.sort();
        assert_eq!(drained, expected);
        assert_eq!(pool.idle_count(), 0);
    }
}
