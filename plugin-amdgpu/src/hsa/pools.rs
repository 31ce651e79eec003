//! The memory pools of an agent, and how much device memory it has.

use super::attributes;
use super::iterate;
use super::runtime::HsaRuntime;
use crate::hsa_interface::{Agent, HsaError, MemoryPool};
use hsa_sys::*;

/// Which memory segment a pool belongs to (`HSA_AMD_MEMORY_POOL_INFO_SEGMENT`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum PoolSegment {
    /// Memory any work-item can reach: device memory, host memory, kernel arguments.
    Global,
    /// Work-group local memory (LDS).
    Group,
    /// Per-work-item scratch.
    Private,
    Readonly,
    /// A segment these bindings do not know (the raw value).
    Other(u32),
}

impl PoolSegment {
    fn from_raw(segment: hsa_amd_segment_t) -> PoolSegment {
        match segment {
            HSA_AMD_SEGMENT_GLOBAL => PoolSegment::Global,
            HSA_AMD_SEGMENT_GROUP => PoolSegment::Group,
            HSA_AMD_SEGMENT_PRIVATE => PoolSegment::Private,
            HSA_AMD_SEGMENT_READONLY => PoolSegment::Readonly,
            other => PoolSegment::Other(other),
        }
    }
}

/// One memory pool and its attributes. The grain and kernarg flags are only meaningful for
/// [`PoolSegment::Global`] pools (false otherwise).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoolInfo {
    pub pool: MemoryPool,
    pub segment: PoolSegment,
    /// Coherent with the host and other agents while kernels run (host memory, typically).
    pub fine_grained: bool,
    /// Coherent only at dispatch boundaries (device memory, typically).
    pub coarse_grained: bool,
    /// Usable for kernel argument buffers.
    pub kernarg: bool,
    /// Bytes in the pool (`HSA_AMD_MEMORY_POOL_INFO_SIZE`).
    pub size: u64,
    /// `hsa_amd_memory_pool_allocate` may allocate from it.
    pub alloc_allowed: bool,
    /// Allocation sizes are rounded up to this (0 when allocation is not allowed).
    pub alloc_granule: u64,
    pub alloc_alignment: u64,
    /// Every agent may access allocations without `hsa_amd_agents_allow_access`.
    pub accessible_by_all: bool,
}

impl PoolInfo {
    /// A pool of the global segment: memory that is allocated and copied, not LDS or scratch.
    pub fn is_global(&self) -> bool {
        self.segment == PoolSegment::Global
    }
}

/// How much device memory an agent has.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct MemoryInfo {
    /// Size of the agent's largest coarse-grained global pool: its device memory. (Pools of
    /// one agent may share the same memory, so sizes are not added up.)
    pub total: u64,
    /// Free bytes (`HSA_AMD_AGENT_INFO_MEMORY_AVAIL`); `None` where the runtime does not
    /// report it (ROCm releases before 6.0).
    pub free: Option<u64>,
}

impl MemoryInfo {
    /// The free bytes, or the total where the runtime does not say.
    pub fn free_or_total(&self) -> u64 {
        self.free.unwrap_or(self.total)
    }
}

impl HsaRuntime {
    /// The device memory of `agent`, and how much of it is free where the runtime says.
    pub fn memory_info(&self, agent: Agent) -> Result<MemoryInfo, HsaError> {
        let library = self.library();
        let raw_agent = hsa_agent_t { handle: agent.0 };
        let mut total = 0;
        for pool in iterate::memory_pools(library, raw_agent)? {
            let info = pool_info(library, pool)?;
            if info.segment == PoolSegment::Global && info.coarse_grained {
                total = total.max(info.size);
            }
        }
        let free = attributes::agent(library, raw_agent, HSA_AMD_AGENT_INFO_MEMORY_AVAIL)
            .ok()
            .map(|value| value.u64());
        Ok(MemoryInfo { total, free })
    }
}

pub(crate) fn pool_info(
    library: &HsaLibrary,
    pool: hsa_amd_memory_pool_t,
) -> Result<PoolInfo, HsaError> {
    let query = |attribute| attributes::pool(library, pool, attribute);
    let segment = PoolSegment::from_raw(query(HSA_AMD_MEMORY_POOL_INFO_SEGMENT)?.u32());
    let flags = if segment == PoolSegment::Global {
        query(HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS)?.u32()
    } else {
        0
    };
    let alloc_allowed = query(HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED)?.bool();
    // Granule and alignment only mean something where allocating is allowed.
    let alloc_attribute = |attribute| -> Result<u64, HsaError> {
        match query(attribute) {
            Ok(value) => Ok(value.u64()),
            Err(error) if alloc_allowed => Err(error),
            Err(_) => Ok(0),
        }
    };
    Ok(PoolInfo {
        pool: MemoryPool(pool.handle),
        segment,
        fine_grained: flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED != 0,
        coarse_grained: flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED != 0,
        kernarg: flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT != 0,
        size: query(HSA_AMD_MEMORY_POOL_INFO_SIZE)?.u64(),
        alloc_allowed,
        alloc_granule: alloc_attribute(HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_GRANULE)?,
        alloc_alignment: alloc_attribute(HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALIGNMENT)?,
        accessible_by_all: query(HSA_AMD_MEMORY_POOL_INFO_ACCESSIBLE_BY_ALL)
            .map(|value| value.bool())
            .unwrap_or(false),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_decode_with_unknown_values_kept() {
        assert_eq!(PoolSegment::from_raw(0), PoolSegment::Global);
        assert_eq!(PoolSegment::from_raw(1), PoolSegment::Readonly);
        assert_eq!(PoolSegment::from_raw(2), PoolSegment::Private);
        assert_eq!(PoolSegment::from_raw(3), PoolSegment::Group);
        assert_eq!(PoolSegment::from_raw(9), PoolSegment::Other(9));
    }

    #[test]
    fn free_memory_falls_back_to_the_total() {
        let known = MemoryInfo {
            total: 64 << 30,
            free: Some(60 << 30),
        };
        assert_eq!(known.free_or_total(), 60 << 30);
        let unknown = MemoryInfo {
            total: 64 << 30,
            free: None,
        };
        assert_eq!(unknown.free_or_total(), 64 << 30);
    }
}
