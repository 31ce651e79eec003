//! Shared virtual memory: `hsa_amd_svm_attributes_set/get` as ROCr implements them over KFD's
//! SVM ranges. ROCr checks the attribute list first (an attribute given twice, or two for one
//! agent: `INCOMPATIBLE_ARGUMENTS`; an agent handle not its own: `INVALID_AGENT`; an attribute
//! the call does not take or a model that is not fine or coarse grained: `INVALID_ARGUMENT`),
//! then hands the page-aligned range to KFD, whose refusal is `HSA_STATUS_ERROR`: no SVM (the
//! discrete default profile), an empty or null range, a range with unmapped pages, or one over
//! memory HSA allocated or locked (KFD's own buffers). Each range keeps its attributes, as KFD
//! keeps them per range (split where a later call covers part of one); a range never set
//! answers KFD's defaults: fine grained, host access, migration granularity 9 (2 MiB), no
//! preferred location, and for each GPU access when XNACK is on, none when it is off.

use crate::agents::{AgentIndex, System};
use crate::status::{self, Error, Result};
use crate::svm_ranges::*;
use hsa_sys::*;

/// The agent of a handle in an attribute's value.
fn agent(system: &System, value: u64) -> Result<AgentIndex> {
    system
        .agent(hsa_agent_t { handle: value })
        .ok_or(status::INVALID_AGENT)
}

const INCOMPATIBLE: Error = Error(HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS);

/// KFD's part of a call: the page-aligned range, refused as KFD refuses it.
fn kfd_range(
    memory: &crate::memory::Memory,
    system: &System,
    ptr: usize,
    size: usize,
    setting: bool,
) -> Result<(usize, usize)> {
    if !system.profile.apu {
        return Err(status::GENERIC);
    }
    let start = ptr & !(PAGE - 1);
    let end = ptr
        .checked_add(size)
        .and_then(|e| e.checked_add(PAGE - 1))
        .ok_or(status::GENERIC)?
        & !(PAGE - 1);
    if start == 0 || end <= start || !crate::host::mapped(start, end - start) {
        return Err(status::GENERIC);
    }
    if memory.overlaps_hsa_memory(start, end, setting) {
        return Err(status::GENERIC);
    }
    Ok((start, end))
}

/// `hsa_amd_svm_attributes_set`.
pub fn set(
    memory: &crate::memory::Memory,
    system: &System,
    ptr: usize,
    size: usize,
    list: &[hsa_amd_svm_attribute_pair_t],
) -> Result<()> {
    let mut seen_attributes = 0u32;
    let mut seen_agents = Vec::new();
    let (mut set_flags, mut clear_flags) = (0u32, 0u32);
    let mut granularity = None;
    let mut preferred = None;
    let mut access = Vec::new();
    for pair in list {
        let attribute = u32::try_from(pair.attribute).map_err(|_| status::INVALID_ARGUMENT)?;
        let value = pair.value;
        let mut once = || {
            if seen_attributes & (1 << attribute) != 0 {
                return Err(INCOMPATIBLE);
            }
            seen_attributes |= 1 << attribute;
            Ok(())
        };
        let mut flag = |bit: u32, on: bool| {
            if on {
                set_flags |= bit
            } else {
                clear_flags |= bit
            }
        };
        match attribute {
            HSA_AMD_SVM_ATTRIB_GLOBAL_FLAG => {
                once()?;
                if value == u64::from(HSA_AMD_SVM_GLOBAL_FLAG_FINE_GRAINED) {
                    flag(COHERENT, true);
                } else if value == u64::from(HSA_AMD_SVM_GLOBAL_FLAG_COARSE_GRAINED) {
                    flag(COHERENT, false);
                } else {
                    return Err(status::INVALID_ARGUMENT);
                }
            }
            HSA_AMD_SVM_ATTRIB_READ_ONLY => {
                once()?;
                flag(GPU_RO, value != 0);
            }
            HSA_AMD_SVM_ATTRIB_HIVE_LOCAL => {
                once()?;
                flag(HIVE_LOCAL, value != 0);
            }
            HSA_AMD_SVM_ATTRIB_READ_MOSTLY => {
                once()?;
                flag(GPU_READ_MOSTLY, value != 0);
            }
            HSA_AMD_SVM_ATTRIB_GPU_EXEC => {
                once()?;
                flag(GPU_EXEC, value != 0);
            }
            HSA_AMD_SVM_ATTRIB_MIGRATION_GRANULARITY => {
                once()?;
                granularity = Some(value.min(MAX_GRANULARITY));
            }
            HSA_AMD_SVM_ATTRIB_PREFERRED_LOCATION => {
                once()?;
                // The null handle: no preferred location.
                preferred = Some(if value == 0 {
                    None
                } else {
                    Some(agent(system, value)?)
                });
            }
            HSA_AMD_SVM_ATTRIB_AGENT_ACCESSIBLE
            | HSA_AMD_SVM_ATTRIB_AGENT_ACCESSIBLE_IN_PLACE
            | HSA_AMD_SVM_ATTRIB_AGENT_NO_ACCESS => {
                let agent = agent(system, value)?;
                if seen_agents.contains(&agent) {
                    return Err(INCOMPATIBLE);
                }
                seen_agents.push(agent);
                let given = match attribute {
                    HSA_AMD_SVM_ATTRIB_AGENT_ACCESSIBLE => Access::Accessible,
                    HSA_AMD_SVM_ATTRIB_AGENT_ACCESSIBLE_IN_PLACE => Access::InPlace,
                    _ => Access::None,
                };
                if agent == 0 {
                    // The CPU's access is a flag of the range.
                    flag(HOST_ACCESS, given != Access::None);
                } else {
                    access.push((agent, given));
                }
            }
            _ => return Err(status::INVALID_ARGUMENT),
        }
    }
    // ROCr: host access granted by any CPU wins over one denied.
    if set_flags & HOST_ACCESS != 0 {
        clear_flags &= !HOST_ACCESS;
    }
    let (start, end) = kfd_range(memory, system, ptr, size, true)?;
    memory.with_svm(|ranges| {
        ranges.set(start, end, |a| {
            a.flags = (a.flags & !clear_flags) | set_flags;
            if let Some(g) = granularity {
                a.granularity = g;
            }
            if let Some(p) = preferred {
                a.preferred = p;
            }
            for &(agent, given) in &access {
                a.access.insert(agent, given);
            }
        })
    });
    Ok(())
}

/// `hsa_amd_svm_attributes_get`: answers in place, as ROCr does (an access query's answer
/// replaces its `attribute`).
pub fn get(
    memory: &crate::memory::Memory,
    system: &System,
    ptr: usize,
    size: usize,
    list: &mut [hsa_amd_svm_attribute_pair_t],
) -> Result<()> {
    let mut asks_kfd = false;
    for pair in list.iter() {
        match u32::try_from(pair.attribute).map_err(|_| status::INVALID_ARGUMENT)? {
            HSA_AMD_SVM_ATTRIB_GLOBAL_FLAG
            | HSA_AMD_SVM_ATTRIB_READ_ONLY
            | HSA_AMD_SVM_ATTRIB_HIVE_LOCAL
            | HSA_AMD_SVM_ATTRIB_READ_MOSTLY
            | HSA_AMD_SVM_ATTRIB_MIGRATION_GRANULARITY
            | HSA_AMD_SVM_ATTRIB_PREFERRED_LOCATION => asks_kfd = true,
            // ROCr's own record of prefetches; no prefetch is ever made here.
            HSA_AMD_SVM_ATTRIB_PREFETCH_LOCATION => {}
            HSA_AMD_SVM_ATTRIB_ACCESS_QUERY => {
                agent(system, pair.value)?;
                asks_kfd = true;
            }
            _ => return Err(status::INVALID_ARGUMENT),
        }
    }
    let found = if asks_kfd {
        let (start, end) = kfd_range(memory, system, ptr, size, false)?;
        memory.with_svm(|ranges| ranges.within(start, end))
    } else {
        Vec::new()
    };
    // Flags set in every range, and flags clear in every range.
    let all_set = found.iter().fold(u32::MAX, |f, a| f & a.flags);
    let all_clear = found.iter().fold(u32::MAX, |f, a| f & !a.flags);
    let default_access = if system.profile.xnack {
        Access::Accessible
    } else {
        Access::None
    };
    for pair in list.iter_mut() {
        match pair.attribute as u32 {
            HSA_AMD_SVM_ATTRIB_GLOBAL_FLAG => {
                pair.value = u64::from(if all_set & COHERENT != 0 {
                    HSA_AMD_SVM_GLOBAL_FLAG_FINE_GRAINED
                } else if all_clear & COHERENT != 0 {
                    HSA_AMD_SVM_GLOBAL_FLAG_COARSE_GRAINED
                } else {
                    HSA_AMD_SVM_GLOBAL_FLAG_INDETERMINATE
                })
            }
            HSA_AMD_SVM_ATTRIB_READ_ONLY => pair.value = u64::from(all_set & GPU_RO),
            HSA_AMD_SVM_ATTRIB_HIVE_LOCAL => pair.value = u64::from(all_set & HIVE_LOCAL),
            HSA_AMD_SVM_ATTRIB_READ_MOSTLY => pair.value = u64::from(all_set & GPU_READ_MOSTLY),
            HSA_AMD_SVM_ATTRIB_MIGRATION_GRANULARITY => {
                pair.value = found.iter().map(|a| a.granularity).min().unwrap_or(0)
            }
            HSA_AMD_SVM_ATTRIB_PREFERRED_LOCATION => {
                let first = found.first().and_then(|a| a.preferred);
                let uniform = found.iter().all(|a| a.preferred == first);
                pair.value = match first {
                    Some(agent) if uniform => System::agent_handle(agent).handle,
                    _ => 0,
                };
            }
            HSA_AMD_SVM_ATTRIB_PREFETCH_LOCATION => pair.value = 0,
            HSA_AMD_SVM_ATTRIB_ACCESS_QUERY => {
                let agent = agent(system, pair.value)?;
                if agent == 0 {
                    // ROCr leaves the attribute as it is when the host has no access.
                    if all_set & HOST_ACCESS != 0 {
                        pair.attribute = u64::from(HSA_AMD_SVM_ATTRIB_AGENT_ACCESSIBLE);
                    }
                } else {
                    let of =
                        |a: &Attributes| a.access.get(&agent).copied().unwrap_or(default_access);
                    let answer = if found.iter().all(|a| of(a) == Access::Accessible) {
                        HSA_AMD_SVM_ATTRIB_AGENT_ACCESSIBLE
                    } else if found.iter().all(|a| of(a) == Access::InPlace) {
                        HSA_AMD_SVM_ATTRIB_AGENT_ACCESSIBLE_IN_PLACE
                    } else {
                        HSA_AMD_SVM_ATTRIB_AGENT_NO_ACCESS
                    };
                    pair.attribute = u64::from(answer);
                }
            }
            _ => {}
        }
    }
    Ok(())
}
