//! Memory of the double: two pools of real heap memory, host memory locked at agent addresses
//! distinct from its host addresses, and asynchronous copies, each on its own thread, that
//! accept only ranges the GPU may use.

use super::profiling::system_ticks;
use super::{invalid, FaultOp, Inner, SoftwareHsa, DEVICE_POOL, GPU_AGENT, HOST_AGENT, HOST_POOL};
use crate::hsa_interface::{Agent, HsaError, HsaResult, MemoryPool, Signal};
use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::thread;
use std::time::Duration;
use sync_util::lock;

/// Agent addresses of locked host memory are the host address plus this.
const LOCK_ALIAS: usize = 1 << 60;
/// Alignment of pool allocations (a page, as HSA's).
const ALLOC_ALIGN: usize = 4096;

struct Allocation {
    size: usize,
    pool: MemoryPool,
    gpu_access: bool,
}

struct Locked {
    size: usize,
    count: usize,
}

/// What the pools handed out and what host memory is locked, by start address.
#[derive(Default)]
pub(super) struct Memory {
    allocations: BTreeMap<usize, Allocation>,
    locked: BTreeMap<usize, Locked>,
}

impl Memory {
    /// The host address behind `addr..addr+size` as the GPU sees it, if it may use that range.
    fn resolve(&self, addr: usize, size: usize) -> Result<usize, String> {
        let end = addr
            .checked_add(size)
            .ok_or_else(|| format!("range {addr:#x}+{size} overflows"))?;
        if let Some((&start, allocation)) = self.allocations.range(..=addr).next_back() {
            if end <= start + allocation.size {
                if allocation.pool == HOST_POOL && !allocation.gpu_access {
                    return Err(format!(
                        "host-pool memory {addr:#x}+{size} was not made accessible to the GPU"
                    ));
                }
                return Ok(addr);
            }
        }
        if addr >= LOCK_ALIAS {
            let host = addr - LOCK_ALIAS;
            if let Some((&start, locked)) = self.locked.range(..=host).next_back() {
                if host + size <= start + locked.size {
                    return Ok(host);
                }
            }
        }
        Err(format!(
            "{addr:#x}+{size} is neither pool memory nor the agent address of locked host memory"
        ))
    }

    /// Copies between two resolved ranges while the caller holds the memory lock, so neither
    /// can be freed meanwhile.
    fn copy(&self, dst: usize, src: usize, size: usize) -> Result<(), String> {
        let dst = self.resolve(dst, size)?;
        let src = self.resolve(src, size)?;
        // SAFETY: both ranges were just resolved to live pool allocations or locked host memory
        // (which the test keeps alive while locked), and the memory lock keeps pool memory from
        // being freed during the copy; `copy` allows overlap.
        unsafe { std::ptr::copy(src as *const u8, dst as *mut u8, size) };
        Ok(())
    }

    fn read(&self, addr: usize, len: usize) -> Result<Vec<u8>, String> {
        let src = self.resolve(addr, len)?;
        let mut out = vec![0u8; len];
        // SAFETY: as in `copy`; `out` has `len` bytes and is our own.
        unsafe { std::ptr::copy(src as *const u8, out.as_mut_ptr(), len) };
        Ok(out)
    }

    fn write(&self, addr: usize, bytes: &[u8]) -> Result<(), String> {
        let dst = self.resolve(addr, bytes.len())?;
        // SAFETY: as in `copy`; `bytes` is a live slice of its length.
        unsafe { std::ptr::copy(bytes.as_ptr(), dst as *mut u8, bytes.len()) };
        Ok(())
    }
}

/// For the double's counters.
impl Memory {
    /// Live allocations from `pool`.
    pub(super) fn live_in(&self, pool: MemoryPool) -> usize {
        self.allocations.values().filter(|a| a.pool == pool).count()
    }

    /// Lock calls not matched by an unlock yet.
    pub(super) fn locks_live(&self) -> usize {
        self.locked.values().map(|l| l.count).sum()
    }
}

impl Drop for Memory {
    fn drop(&mut self) {
        for (ptr, allocation) in std::mem::take(&mut self.allocations) {
            if let Ok(layout) = Layout::from_size_align(allocation.size, ALLOC_ALIGN) {
                // SAFETY: `ptr` came from `alloc_zeroed` with this very layout and was not freed
                // (freeing removes it from the map); no thread of the double runs any more.
                unsafe { dealloc(ptr as *mut u8, layout) };
            }
        }
    }
}

/// Reads and writes pool memory as a kernel would; for kernel closures and test checks. Holds
/// the double weakly, so closures holding it do not keep the double alive.
#[derive(Clone)]
pub struct DeviceMemory {
    inner: Weak<Inner>,
}

impl DeviceMemory {
    fn memory<T>(&self, f: impl FnOnce(&Memory) -> Result<T, String>) -> Result<T, String> {
        let inner = self.inner.upgrade().ok_or("the test double is gone")?;
        let memory = lock(&inner.memory);
        f(&memory)
    }

    pub fn read(&self, addr: usize, len: usize) -> Result<Vec<u8>, String> {
        self.memory(|memory| memory.read(addr, len))
    }

    pub fn write(&self, addr: usize, bytes: &[u8]) -> Result<(), String> {
        self.memory(|memory| memory.write(addr, bytes))
    }

    pub fn read_u64(&self, addr: usize) -> Result<u64, String> {
        let bytes = self.read(addr, 8)?;
        let mut word = [0u8; 8];
        word.copy_from_slice(&bytes);
        Ok(u64::from_ne_bytes(word))
    }

    pub fn write_u64(&self, addr: usize, value: u64) -> Result<(), String> {
        self.write(addr, &value.to_ne_bytes())
    }
}

/// Memory and copy controls for tests.
impl SoftwareHsa {
    /// Access to the double's memory, for kernels and checks.
    pub fn memory(&self) -> DeviceMemory {
        DeviceMemory {
            inner: Arc::downgrade(&self.inner),
        }
    }

    /// Async copies wait a random time up to `max` before they start.
    pub fn set_copy_jitter(&self, max: Duration) {
        let micros = u64::try_from(max.as_micros()).unwrap_or(u64::MAX);
        self.inner.jitter_us.store(micros, Ordering::Relaxed);
    }

    /// Makes every copy take `duration` once started (between its profiling stamps).
    pub fn set_copy_duration(&self, duration: Duration) {
        self.inner
            .copy_us
            .store(duration.as_micros() as u64, Ordering::Relaxed);
    }
}

/// `hsa_amd_memory_*` and `hsa_amd_agents_allow_access`.
impl Inner {
    pub(super) fn async_copy(
        self: &Arc<Self>,
        dst: usize,
        src: usize,
        size: usize,
        deps: &[Signal],
        completion: Signal,
    ) -> HsaResult<()> {
        self.check_fault(FaultOp::AsyncCopy)?;
        self.check_signals(deps)?;
        self.check_signals(&[completion])?;
        {
            let memory = lock(&self.memory);
            memory
                .resolve(dst, size)
                .and_then(|_| memory.resolve(src, size))
                .map_err(|why| invalid(format!("async copy rejected: {why}")))?;
        }
        self.counters.async_copies.fetch_add(1, Ordering::Relaxed);
        let deps = deps.to_vec();
        // As ROCr: copy profiling is read when the copy is submitted; the signal's copy
        // stamps are cleared then, and written by the copy.
        let profiled = self.copy_profiling.load(Ordering::SeqCst);
        if profiled {
            if let Some(state) = self.signal(completion) {
                lock(&state.stamps).copy = Some((0, 0));
            }
        }
        let copy = self.spawn("swhsa-copy", move |inner| {
            thread::sleep(inner.jitter());
            for dep in deps {
                if !inner.wait_until_zero(dep, || false) {
                    return;
                }
            }
            let start = system_ticks();
            thread::sleep(Duration::from_micros(inner.copy_us.load(Ordering::Relaxed)));
            let copied = lock(&inner.memory).copy(dst, src, size);
            if let Err(why) = copied {
                inner.record_misuse(format!("async copy found its memory gone: {why}"));
            }
            if profiled {
                if let Some(state) = inner.signal(completion) {
                    lock(&state.stamps).copy = Some((start, system_ticks()));
                }
            }
            inner.change_signal(completion, "copy completion", |v| v - 1);
        })?;
        let mut threads = lock(&self.threads);
        threads.retain(|thread| !thread.is_finished());
        threads.push(copy);
        Ok(())
    }

    pub(super) fn allocate(&self, pool: MemoryPool, size: usize) -> HsaResult<usize> {
        self.check_fault(FaultOp::Allocate)?;
        let counter = match pool {
            DEVICE_POOL => &self.counters.device_allocations,
            HOST_POOL => &self.counters.host_allocations,
            _ => return Err(invalid(format!("unknown memory pool {:#x}", pool.0))),
        };
        if size == 0 {
            return Err(invalid("allocation of 0 bytes"));
        }
        let layout = Layout::from_size_align(size, ALLOC_ALIGN)
            .map_err(|_| invalid(format!("allocation of {size} bytes is too large")))?;
        // SAFETY: `layout` has a non-zero size.
        let ptr = unsafe { alloc_zeroed(layout) } as usize;
        if ptr == 0 {
            return Err(HsaError::new(
                HsaError::STATUS_OUT_OF_RESOURCES,
                format!("out of memory allocating {size} bytes"),
            ));
        }
        let allocation = Allocation {
            size,
            pool,
            gpu_access: pool == DEVICE_POOL,
        };
        lock(&self.memory).allocations.insert(ptr, allocation);
        counter.fetch_add(1, Ordering::Relaxed);
        Ok(ptr)
    }

    pub(super) fn free(&self, ptr: usize) -> HsaResult<()> {
        let allocation = lock(&self.memory)
            .allocations
            .remove(&ptr)
            .ok_or_else(|| invalid(format!("freeing {ptr:#x}, not a pool allocation")))?;
        let layout = Layout::from_size_align(allocation.size, ALLOC_ALIGN)
            .map_err(|_| invalid("corrupt allocation record"))?;
        // SAFETY: `ptr` came from `alloc_zeroed` with this layout and is freed once: it was
        // just removed from the map, and copies resolve addresses under the same lock.
        unsafe { dealloc(ptr as *mut u8, layout) };
        Ok(())
    }

    pub(super) fn allow_access(&self, agents: &[Agent], ptr: usize) -> HsaResult<()> {
        self.check_fault(FaultOp::AllowAccess)?;
        let mut memory = lock(&self.memory);
        let allocation = memory
            .allocations
            .get_mut(&ptr)
            .ok_or_else(|| invalid(format!("allow_access on {ptr:#x}, not a pool allocation")))?;
        if agents.contains(&GPU_AGENT) {
            allocation.gpu_access = true;
        }
        Ok(())
    }

    pub(super) fn lock_host_memory(&self, ptr: usize, size: usize) -> HsaResult<usize> {
        self.check_fault(FaultOp::LockHostMemory)?;
        if ptr == 0 || size == 0 || ptr >= LOCK_ALIAS {
            return Err(invalid(format!("cannot lock {ptr:#x}+{size}")));
        }
        let mut memory = lock(&self.memory);
        let locked = memory
            .locked
            .entry(ptr)
            .or_insert(Locked { size, count: 0 });
        locked.size = locked.size.max(size);
        locked.count += 1;
        self.counters.locks.fetch_add(1, Ordering::Relaxed);
        Ok(ptr + LOCK_ALIAS)
    }

    /// As ROCr's `FillMemory`: aligned words the GPU may use, written before returning.
    pub(super) fn fill(&self, ptr: usize, value: u32, count: usize) -> HsaResult<()> {
        if ptr == 0 || !ptr.is_multiple_of(4) {
            return Err(invalid(format!(
                "fill from {ptr:#x}, which is not 4-byte aligned"
            )));
        }
        let len = count
            .checked_mul(4)
            .ok_or_else(|| invalid(format!("fill of {count} words overflows")))?;
        let memory = lock(&self.memory);
        let host = memory.resolve(ptr, len).map_err(invalid)?;
        // SAFETY: `count` aligned words of live memory (just resolved, kept alive by the memory
        // lock held here).
        unsafe { std::slice::from_raw_parts_mut(host as *mut u32, count) }.fill(value);
        Ok(())
    }

    pub(super) fn unlock_host_memory(&self, ptr: usize) -> HsaResult<()> {
        let mut memory = lock(&self.memory);
        let locked = memory
            .locked
            .get_mut(&ptr)
            .ok_or_else(|| invalid(format!("unlocking {ptr:#x}, which is not locked")))?;
        locked.count -= 1;
        if locked.count == 0 {
            memory.locked.remove(&ptr);
        }
        self.counters.unlocks.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    fn jitter(&self) -> Duration {
        let max = self.jitter_us.load(Ordering::Relaxed);
        if max == 0 {
            return Duration::ZERO;
        }
        // splitmix64 over a shared counter: cheap and good enough to shuffle timings.
        let mut x = self
            .rng
            .fetch_add(0x9e37_79b9_7f4a_7c15, Ordering::Relaxed)
            .wrapping_add(0x9e37_79b9_7f4a_7c15);
        x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        x ^= x >> 31;
        Duration::from_micros(x % (max + 1))
    }
}

/// ROCr's refusals of `hsa_amd_memory_async_copy_on_engine` for the double's GPU (gfx90a, two
/// SDMA engines): an id that is not one bit or names no engine, and engine 1 for a copy that
/// is not from the host to the GPU (nor within the GPU).
pub(super) fn check_engine(dst_agent: Agent, src_agent: Agent, id: u32) -> HsaResult<()> {
    let host_to_gpu = src_agent == HOST_AGENT && dst_agent == GPU_AGENT;
    let within_gpu = src_agent == dst_agent;
    if !matches!(id, 1 | 2) || (id == 1 && !host_to_gpu && !within_gpu) {
        return Err(invalid(format!(
            "SDMA engine id {id:#x} cannot copy from agent {:#x} to agent {:#x}",
            src_agent.0, dst_agent.0
        )));
    }
    Ok(())
}

/// `hsa_amd_memory_copy_engine_status` for the double's GPU: engines 1 and 2 from the host,
/// engine 2 towards it; a copy within the GPU has none (`INVALID_AGENT`).
pub(super) fn engine_status(dst_agent: Agent, src_agent: Agent) -> HsaResult<u32> {
    if dst_agent == src_agent {
        return Err(HsaError::new(
            hsa_sys::HSA_STATUS_ERROR_INVALID_AGENT,
            "a copy within one agent runs on no SDMA engine",
        ));
    }
    Ok(if src_agent == HOST_AGENT { 0b11 } else { 0b10 })
}
