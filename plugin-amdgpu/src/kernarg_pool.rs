//! Kernel argument buffers: memory of the host's kernarg pool that GPUs read at dispatch.
//! Allocating pool memory is a system call, and every launch needs a buffer that lives until
//! the kernel completed, so freed buffers are kept by size class and reused (LLVM's
//! `AMDGPUMemoryManagerTy` over the kernarg pool does the same). Under valgrind an idle buffer
//! is no-access, so a use after it was given back is reported; it is addressable again when
//! taken, or before it goes back to HSA.

use crate::hsa_interface::{Agent, HsaInterface, HsaResult, MemoryPool};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use sync_util::lock;

/// Smallest buffer handed out: a code-object-v5 kernel with a few arguments fits.
const MIN_BUFFER: usize = 512;
/// Idle buffers kept per size class; more are freed.
const KEEP_PER_CLASS: usize = 64;

pub struct KernargPool<H: HsaInterface> {
    hsa: Arc<H>,
    pool: MemoryPool,
    /// Agents given access to every buffer (the GPUs).
    agents: Vec<Agent>,
    idle: Mutex<HashMap<usize, Vec<usize>>>,
}

/// A buffer taken from a [`KernargPool`]; give it back with [`KernargPool::give_back`] once
/// the kernel that reads it completed.
#[derive(Debug, PartialEq, Eq)]
pub struct KernargBuffer {
    pub address: usize,
    pub capacity: usize,
}

impl<H: HsaInterface> KernargPool<H> {
    pub fn new(hsa: Arc<H>, pool: MemoryPool, agents: Vec<Agent>) -> Self {
        KernargPool {
            hsa,
            pool,
            agents,
            idle: Mutex::new(HashMap::new()),
        }
    }

    fn class_of(size: usize) -> usize {
        size.max(MIN_BUFFER).next_power_of_two()
    }

    /// A buffer of at least `size` bytes holding `bytes` at its start.
    pub fn take(&self, bytes: &[u8]) -> HsaResult<KernargBuffer> {
        let capacity = Self::class_of(bytes.len());
        let reused = lock(&self.idle).get_mut(&capacity).and_then(Vec::pop);
        let address = match reused {
            Some(address) => {
                valgrind_requests::undefined_under_memcheck(address, capacity);
                address
            }
            None => {
                let address = self.hsa.allocate(self.pool, capacity)?;
                if let Err(e) = self.hsa.allow_access(&self.agents, address) {
                    let _ = self.hsa.free(address);
                    return Err(e);
                }
                address
            }
        };
        // SAFETY: `address` is a live buffer of this pool of `capacity >= bytes.len()` bytes,
        // host-accessible by the pool's definition, just taken (from the idle list or fresh), so
        // no kernel reads it and no other caller holds it.
        unsafe { write_bytes(address, bytes) };
        Ok(KernargBuffer { address, capacity })
    }

    /// Returns a buffer for reuse.
    pub fn give_back(&self, buffer: KernargBuffer) {
        let mut idle = lock(&self.idle);
        let list = idle.entry(buffer.capacity).or_default();
        if list.len() < KEEP_PER_CLASS {
            valgrind_requests::noaccess_under_memcheck(buffer.address, buffer.capacity);
            list.push(buffer.address);
        } else if let Err(e) = self.hsa.free(buffer.address) {
            log::warn!("amdgpu: freeing a kernel argument buffer: {e}");
        }
    }

    /// Frees every idle buffer (at plugin shutdown).
    pub fn release_idle(&self) {
        let mut idle = lock(&self.idle);
        for (capacity, list) in idle.drain() {
            for address in list {
                valgrind_requests::undefined_under_memcheck(address, capacity);
                let _ = self.hsa.free(address);
            }
        }
    }
}

/// Copies `bytes` into pool memory at `address`.
///
/// # Safety
/// `address..address + bytes.len()` must be host-writable memory (a live kernarg-pool buffer
/// of at least that size) that nothing else reads or writes during the call.
unsafe fn write_bytes(address: usize, bytes: &[u8]) {
    // SAFETY: the caller's promise; `bytes` is a live slice, and cannot overlap a buffer that
    // nothing else uses.
    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), address as *mut u8, bytes.len()) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_double::SoftwareHsa;

    #[test]
    fn buffers_hold_the_arguments_and_are_reused_by_size_class() {
        let hsa = Arc::new(SoftwareHsa::new());
        let pool = KernargPool::new(hsa.clone(), hsa.host_pool(), vec![hsa.gpu_agent()]);
        let args: Vec<u8> = (0..100).collect();
        let first = pool.take(&args).unwrap();
        assert_eq!(first.capacity, MIN_BUFFER);
        // SAFETY: the buffer is live pool memory of `capacity` bytes and nothing else uses it.
        let written = unsafe { std::slice::from_raw_parts(first.address as *const u8, 100) };
        assert_eq!(written, &args[..]);
        let second = pool.take(&args).unwrap();
        assert_ne!(first.address, second.address);
        let address = first.address;
        pool.give_back(first);
        // The same size class comes back; a larger one is a new buffer.
        assert_eq!(pool.take(&[1; 300]).unwrap().address, address);
        assert_eq!(pool.take(&[1; 4000]).unwrap().capacity, 4096);
        let allocated = hsa.stats().host_live;
        pool.give_back(second);
        pool.release_idle();
        assert_eq!(hsa.stats().host_live, allocated - 1);
    }
}
