//! Memory as HSA sees it: pool allocations (mapped anonymously, one mapping each), host ranges
//! locked with `hsa_amd_memory_lock`, and device variables placed in a twin's storage; which
//! agents may reach each (an agent its own pool, others once granted), and the checks a copy
//! engine makes before it touches a buffer.

use crate::agents::{AgentIndex, Pool, PoolKind, System, GRANULE};
use crate::config::Profile;
use crate::status::{self, Result};
use std::collections::BTreeMap;
use std::sync::Mutex;
use sync_util::lock;

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum BlockKind {
    /// From `hsa_amd_memory_pool_allocate`.
    Allocated(Pool),
    /// A host range locked for the GPUs; `count` locks of the same range.
    Locked { count: u32 },
    /// A device variable of a loaded code object that lives in its twin's storage.
    Variable { agent: AgentIndex },
}

#[derive(Copy, Clone, Debug)]
pub struct Block {
    pub start: usize,
    pub len: usize,
    pub kind: BlockKind,
    /// Agents granted access (bit per agent index) beyond what the kind allows by itself.
    pub granted: u64,
}

impl Block {
    /// Whether `agent` may touch this block.
    pub fn reachable_by(&self, agent: AgentIndex) -> bool {
        let granted = self.granted & (1 << agent) != 0;
        match self.kind {
            BlockKind::Allocated(pool) => pool.owner == agent || granted,
            BlockKind::Locked { .. } => agent == 0 || granted,
            BlockKind::Variable { agent: owner } => owner == agent || granted,
        }
    }
}

/// Why an agent could not touch an address.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Fault {
    pub agent: AgentIndex,
    pub address: usize,
    /// The address is in no allocation or locked range (else: not granted to the agent).
    pub unmapped: bool,
}

#[derive(Default)]
pub struct Memory {
    blocks: Mutex<BTreeMap<usize, Block>>,
    /// Bytes allocated from each GPU's pool, by agent index.
    used: Mutex<Vec<u64>>,
    profile: Profile,
    /// The APU's allocations: one reserved address range (see [`Arena`]).
    arena: Option<Arena>,
    /// Host ranges given SVM attributes (`hsa_amd_svm_attributes_set`).
    svm: Mutex<crate::svm_ranges::Ranges>,
}

/// The APU's pool allocations all lie in one reserved range, past a lead of addresses never
/// handed out. A mapped array section's kernel argument is its array's base, the section's
/// device address less the section's offset: with the lead, such a base lies in the arena (no
/// access, or another allocation) for any offset up to the lead's size, never in host memory,
/// so a GPU with XNACK off can be made to fault on a host pointer without faulting on bases.
struct Arena {
    start: usize,
    end: usize,
    /// Where the next allocation goes: addresses are not handed out twice except through
    /// `retired_memory`'s reuse of a freed allocation's exact range.
    next: Mutex<usize>,
}

/// The arena's reserved size and its lead (address space only: no memory is committed).
const ARENA_BYTES: usize = 1 << 40;
const ARENA_LEAD: usize = 64 << 30;

impl Arena {
    fn reserve() -> Option<Arena> {
        let start = reserve_no_access(ARENA_BYTES)?;
        Some(Arena {
            start,
            end: start + ARENA_BYTES,
            next: Mutex::new(start + ARENA_LEAD),
        })
    }

    fn contains(&self, address: usize) -> bool {
        (self.start..self.end).contains(&address)
    }

    /// `len` accessible bytes with their guard pages, from the arena.
    fn map(&self, len: usize) -> Option<usize> {
        let whole = guarded(len)?;
        let mut next = lock(&self.next);
        let at = *next;
        if at.checked_add(whole)? > self.end {
            return None;
        }
        let start = at + GUARD;
        // Pages of the arena's reservation never handed out before (the bump only moves
        // forward), which nothing refers to.
        if !open_for_access(start, len) {
            return None;
        }
        *next = at + whole;
        Some(start)
    }
}

fn round_up(size: usize) -> Option<usize> {
    size.checked_add(GRANULE - 1).map(|s| s & !(GRANULE - 1))
}

impl Memory {
    /// The memory of a system of `profile`: an APU's allocations lie in an arena.
    pub fn new(profile: Profile) -> Memory {
        Memory {
            profile,
            arena: if profile.apu { Arena::reserve() } else { None },
            ..Memory::default()
        }
    }

    /// Whether `address` is in the APU's arena of allocations (live or not).
    pub fn in_arena(&self, address: usize) -> bool {
        self.arena.as_ref().is_some_and(|a| a.contains(address))
    }

    /// Whether a GPU reaches host memory at `address` that HSA neither allocated nor locked:
    /// the access SVM attributes gave the agent there, else with XNACK on only.
    pub fn reaches_host(&self, agent: AgentIndex, address: usize) -> bool {
        match lock(&self.svm).access(agent, address) {
            Some(crate::svm_ranges::Access::None) => false,
            Some(_) => true,
            None => self.profile.xnack,
        }
    }

    pub(crate) fn with_svm<T>(&self, body: impl FnOnce(&mut crate::svm_ranges::Ranges) -> T) -> T {
        body(&mut lock(&self.svm))
    }

    /// Whether `[start, end)` overlaps memory KFD would have as its own buffers: pool
    /// allocations (and, for a `setting` call, locked ranges too).
    pub fn overlaps_hsa_memory(&self, start: usize, end: usize, setting: bool) -> bool {
        let blocks = lock(&self.blocks);
        blocks
            .range(..end)
            .filter(|(_, b)| b.start + b.len > start)
            .any(|(_, b)| match b.kind {
                BlockKind::Allocated(_) => true,
                BlockKind::Locked { .. } => setting,
                BlockKind::Variable { .. } => false,
            })
    }

    fn map(&self, len: usize) -> Option<usize> {
        let from_arena = self.arena.as_ref().and_then(|arena| {
            let whole = guarded(len)?;
            omptarget_emu_support::retired_memory::reuse(whole, GUARD..GUARD + len)
                .map(|start| start + GUARD)
                .or_else(|| arena.map(len))
        });
        from_arena.or_else(|| map(len))
    }

    /// `hsa_amd_memory_pool_allocate`.
    pub fn allocate(&self, system: &System, pool: Pool, size: usize) -> Result<usize> {
        if size == 0 || pool.kind == PoolKind::Group {
            return Err(status::INVALID_ALLOCATION);
        }
        let len = round_up(size).ok_or(status::INVALID_ALLOCATION)?;
        if len as u64 > system.pool_size(pool) {
            return Err(status::INVALID_ALLOCATION);
        }
        if pool.kind == PoolKind::Device {
            let mut used = lock(&self.used);
            if used.len() <= pool.owner {
                used.resize(pool.owner + 1, 0);
            }
            if used[pool.owner] + len as u64 > system.device_memory {
                return Err(status::OUT_OF_RESOURCES);
            }
            used[pool.owner] += len as u64;
        }
        let start = self.map(len).ok_or_else(|| {
            self.release_use(pool, len);
            status::OUT_OF_RESOURCES
        })?;
        lock(&self.blocks).insert(
            start,
            Block {
                start,
                len,
                kind: BlockKind::Allocated(pool),
                granted: 0,
            },
        );
        Ok(start)
    }

    fn release_use(&self, pool: Pool, len: usize) {
        if pool.kind == PoolKind::Device {
            let mut used = lock(&self.used);
            used[pool.owner] = used[pool.owner].saturating_sub(len as u64);
        }
    }

    /// `hsa_amd_memory_pool_free`: `ptr` must be what an allocation returned.
    pub fn free(&self, ptr: usize) -> Result<()> {
        let block = {
            let mut blocks = lock(&self.blocks);
            match blocks.get(&ptr) {
                Some(Block {
                    kind: BlockKind::Allocated(_),
                    ..
                }) => blocks.remove(&ptr).unwrap(),
                _ => return Err(status::INVALID_ARGUMENT),
            }
        };
        if let BlockKind::Allocated(pool) = block.kind {
            self.release_use(pool, block.len);
        }
        unmap(block.start, block.len);
        Ok(())
    }

    /// `hsa_amd_agents_allow_access`: `ptr` must be what an allocation returned.
    pub fn allow_access(&self, agents: &[AgentIndex], ptr: usize) -> Result<()> {
        let mut blocks = lock(&self.blocks);
        let block = blocks.get_mut(&ptr).ok_or(status::INVALID_ARGUMENT)?;
        if !matches!(block.kind, BlockKind::Allocated(_)) {
            return Err(status::INVALID_ARGUMENT);
        }
        for &agent in agents {
            block.granted |= 1 << agent;
        }
        Ok(())
    }

    /// `hsa_amd_memory_lock`: host memory that HSA did not allocate, for `gpus`. Locking the
    /// same range again counts; a range overlapping another block is refused.
    pub fn lock(&self, start: usize, len: usize, gpus: &[AgentIndex]) -> Result<usize> {
        if start == 0 || len == 0 {
            return Err(status::INVALID_ARGUMENT);
        }
        let end = start.checked_add(len).ok_or(status::INVALID_ARGUMENT)?;
        let granted = gpus.iter().fold(0u64, |bits, &a| bits | 1 << a);
        let mut blocks = lock(&self.blocks);
        if let Some(block) = blocks.get_mut(&start) {
            if let BlockKind::Locked { count } = &mut block.kind {
                if block.len == len {
                    *count += 1;
                    block.granted |= granted;
                    return Ok(start);
                }
            }
            return Err(status::INVALID_ARGUMENT);
        }
        if overlaps(&blocks, start, end) {
            return Err(status::INVALID_ARGUMENT);
        }
        blocks.insert(
            start,
            Block {
                start,
                len,
                kind: BlockKind::Locked { count: 1 },
                granted,
            },
        );
        Ok(start)
    }

    /// `hsa_amd_memory_unlock`: `start` must be what a lock was given.
    pub fn unlock(&self, start: usize) -> Result<()> {
        let mut blocks = lock(&self.blocks);
        match blocks.get_mut(&start).map(|b| &mut b.kind) {
            Some(BlockKind::Locked { count }) if *count > 1 => *count -= 1,
            Some(BlockKind::Locked { .. }) => {
                blocks.remove(&start);
            }
            _ => return Err(status::INVALID_ARGUMENT),
        }
        Ok(())
    }

    /// Records a device variable that lives outside the pools (in a twin's storage).
    pub fn add_variable(&self, agent: AgentIndex, start: usize, len: usize) {
        let mut blocks = lock(&self.blocks);
        // The twin is loaded once in the process, so each GPU's executable places the same
        // variable at the same address: every agent that loaded it reaches it.
        if let Some(block) = blocks.get_mut(&start) {
            if matches!(block.kind, BlockKind::Variable { .. }) {
                block.granted |= 1 << agent;
            }
            return;
        }
        if len == 0 || overlaps(&blocks, start, start + len) {
            return;
        }
        blocks.insert(
            start,
            Block {
                start,
                len: len.max(1),
                kind: BlockKind::Variable { agent },
                granted: 0,
            },
        );
    }

    /// The block holding `address`.
    pub fn find(&self, address: usize) -> Option<Block> {
        let blocks = lock(&self.blocks);
        let (_, block) = blocks.range(..=address).next_back()?;
        (address < block.start + block.len).then_some(*block)
    }

    /// Whether `agent` may touch `[address, address + len)`. The CPU reaches every host
    /// address; a GPU only blocks it was given.
    pub fn check(
        &self,
        agent: AgentIndex,
        address: usize,
        len: usize,
    ) -> std::result::Result<(), Fault> {
        if agent == 0 && self.find(address).is_none_or(|b| b.reachable_by(0)) {
            return Ok(());
        }
        let fault = |unmapped| Fault {
            agent,
            address,
            unmapped,
        };
        let Some(block) = self.find(address) else {
            // Host memory HSA never saw: an APU's GPU reaches it as its page tables allow.
            if agent != 0
                && self.profile.apu
                && crate::host::readable(address)
                && self.reaches_host(agent, address)
            {
                return Ok(());
            }
            return Err(fault(true));
        };
        if address.saturating_add(len) > block.start + block.len {
            return Err(Fault {
                agent,
                address: block.start + block.len,
                unmapped: true,
            });
        }
        if block.reachable_by(agent) {
            Ok(())
        } else {
            Err(fault(false))
        }
    }
}

fn overlaps(blocks: &BTreeMap<usize, Block>, start: usize, end: usize) -> bool {
    blocks
        .range(..end)
        .next_back()
        .is_some_and(|(_, b)| b.start + b.len > start)
}

/// A guard page, never accessible, on either side of every mapping: on a GPU nothing is mapped
/// next to an allocation, so a kernel that runs off either end faults there instead of writing
/// into whatever mapping the host kernel placed beside it.
const GUARD: usize = 4096;

/// `len` bytes with their guard pages: the whole mapping's length.
fn guarded(len: usize) -> Option<usize> {
    len.checked_add(2 * GUARD)
}

fn map(len: usize) -> Option<usize> {
    let whole = guarded(len)?;
    if let Some(start) = omptarget_emu_support::retired_memory::reuse(whole, GUARD..GUARD + len) {
        return Some(start + GUARD);
    }
    let start = reserve_no_access(whole)? + GUARD;
    // The middle of the mapping just made (the guards stay without access).
    if !open_for_access(start, len) {
        // SAFETY: the mapping just made, whole.
        unsafe { libc::munmap((start - GUARD) as *mut libc::c_void, whole) };
        return None;
    }
    Some(start)
}

/// A freed allocation and its guard pages stay reserved with no access for a while, so that a
/// kernel writing after the free faults as on a GPU.
/// Makes `len` bytes at `start`, part of a no-access reservation of ours that nothing refers
/// to yet, readable and writable. Whether it could.
fn open_for_access(start: usize, len: usize) -> bool {
    // SAFETY: the caller's contract: pages of our own reservation, not in use.
    let opened = unsafe {
        libc::mprotect(
            start as *mut libc::c_void,
            len,
            libc::PROT_READ | libc::PROT_WRITE,
        )
    };
    opened == 0
}

/// `len` bytes of fresh address space without access, where the kernel chooses.
fn reserve_no_access(len: usize) -> Option<usize> {
    // SAFETY: an anonymous private mapping with no access at an address of the kernel's
    // choosing; nothing else refers to it until it is returned.
    let address = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_NONE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    (address != libc::MAP_FAILED).then_some(address as usize)
}

fn unmap(start: usize, len: usize) {
    if let Some(whole) = guarded(len) {
        omptarget_emu_support::retired_memory::retire(start - GUARD, whole);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn system() -> System {
        System {
            gpus: 2,
            device_memory: 1 << 20,
            profile: Default::default(),
        }
    }

    #[test]
    fn device_memory_is_counted_and_reachable_only_by_its_gpu_until_granted() {
        let (system, memory) = (system(), Memory::default());
        let pool = system.pools_of(1)[0];
        let a = memory.allocate(&system, pool, 512 << 10).unwrap();
        assert_eq!(
            memory.allocate(&system, pool, 768 << 10),
            Err(status::OUT_OF_RESOURCES)
        );
        assert!(memory.check(1, a + 100, 1000).is_ok());
        assert!(!memory.check(2, a, 8).unwrap_err().unmapped);
        assert!(
            memory
                .check(1, a + (512 << 10) - 4, 8)
                .unwrap_err()
                .unmapped
        );
        memory.allow_access(&[2], a).unwrap();
        assert!(memory.check(2, a, 8).is_ok());
        assert_eq!(
            memory.allow_access(&[2], a + 8),
            Err(status::INVALID_ARGUMENT)
        );
        assert_eq!(memory.free(a + 8), Err(status::INVALID_ARGUMENT));
        memory.free(a).unwrap();
        assert!(memory.check(1, a, 8).unwrap_err().unmapped);
        memory.allocate(&system, pool, 1 << 20).unwrap();
    }

    #[test]
    fn an_apus_gpu_reaches_host_memory_with_xnack_or_svm_access_only() {
        let apu = |xnack| Profile { apu: true, xnack };
        let heap = Box::new([0u8; 64]);
        let at = heap.as_ptr() as usize;
        let on = Memory::new(apu(true));
        assert!(on.check(1, at, 64).is_ok());
        assert!(
            on.check(1, 8, 8).unwrap_err().unmapped,
            "nothing mapped there"
        );
        let off = Memory::new(apu(false));
        assert!(off.check(1, at, 64).unwrap_err().unmapped);
        let system = System {
            gpus: 1,
            device_memory: 1 << 20,
            profile: apu(false),
        };
        let device = off.allocate(&system, system.pools_of(1)[0], 4096).unwrap();
        assert!(off.in_arena(device) && off.in_arena(device - (1 << 30)));
        assert!(!off.in_arena(at));
        off.free(device).unwrap();
        assert!(!Memory::new(Profile::default()).in_arena(device));
    }

    #[test]
    fn a_twin_variable_is_reached_by_every_gpu_that_loaded_it() {
        let memory = Memory::default();
        let variable = [0u64; 4];
        let at = variable.as_ptr() as usize;
        memory.add_variable(1, at, 32);
        assert!(memory.check(1, at, 32).is_ok());
        assert!(!memory.check(2, at, 8).unwrap_err().unmapped);
        // The second GPU's executable places the same twin variable.
        memory.add_variable(2, at, 32);
        assert!(memory.check(2, at + 24, 8).is_ok());
        assert!(memory.check(1, at, 32).is_ok());
    }

    #[test]
    fn host_memory_reaches_gpus_only_locked_or_granted() {
        let (system, memory) = (system(), Memory::default());
        let buffer = vec![0u8; 8192];
        let at = buffer.as_ptr() as usize;
        assert!(memory.check(0, at, 10).is_ok());
        assert!(memory.check(1, at, 10).unwrap_err().unmapped);
        assert_eq!(memory.lock(at, 4096, &[1]), Ok(at));
        assert!(memory.check(1, at, 10).is_ok());
        assert!(memory.check(2, at, 10).is_err());
        assert_eq!(
            memory.lock(at + 16, 64, &[1]),
            Err(status::INVALID_ARGUMENT)
        );
        assert_eq!(memory.lock(at, 4096, &[2]), Ok(at));
        memory.unlock(at).unwrap();
        assert!(memory.check(2, at, 10).is_ok());
        memory.unlock(at).unwrap();
        assert_eq!(memory.unlock(at), Err(status::INVALID_ARGUMENT));
        let host = memory
            .allocate(&system, system.pools_of(0)[1], 100)
            .unwrap();
        assert!(memory.check(1, host, 100).is_err());
        assert_eq!(memory.lock(host, 100, &[1]), Err(status::INVALID_ARGUMENT));
        memory.allow_access(&[1, 2], host).unwrap();
        assert!(memory.check(2, host, 100).is_ok());
    }
}
