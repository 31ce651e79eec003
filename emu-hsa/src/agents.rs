//! The emulated system: one CPU agent and `OMPTARGET_EMU_DEVICES` GPU agents of the profile's
//! model (`config::Profile`): MI210-like discrete GPUs (gfx90a) by default, MI300A-like APUs
//! (gfx942, whose GPU memory is the system's) under `OMPTARGET_EMU_PROFILE=mi300a`; their memory
//! pools and what each agent may access.

use crate::config::Profile;
use hsa_sys::*;

/// The default GPUs' processor and ISA (the target-ID features clang's default images accept).
pub const GPU_PROCESSOR: &str = "gfx90a";
pub const GPU_ISA_NAME: &str = "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-";
pub const COMPUTE_UNITS: u32 = 104;
/// The APU's processor; its ISA name carries the XNACK mode (`System::isa_name`).
pub const APU_PROCESSOR: &str = "gfx942";
/// An MI300A's compute units (228 over its six XCDs).
pub const APU_COMPUTE_UNITS: u32 = 228;
/// MI300A's PCI device id: even, which LLVM's plugins (before the memory-properties query)
/// took for the APU, where the MI300X is odd (0x74a1).
pub const APU_CHIP_ID: u32 = 0x74a0;
pub const WAVEFRONT_SIZE: u32 = 64;
pub const WORKGROUP_MAX_SIZE: u32 = 1024;
pub const WORKGROUP_MAX_DIM: [u16; 3] = [1024, 1024, 1024];
pub const GRID_MAX_SIZE: u32 = u32::MAX;
pub const GROUP_MEMORY: u32 = 64 * 1024;
pub const QUEUE_MIN_SIZE: u32 = 64;
pub const QUEUE_MAX_SIZE: u32 = 128 * 1024;
pub const QUEUES_MAX: u32 = 128;
/// Nanoseconds: the emulator's timestamps are `CLOCK_MONOTONIC`.
pub const TIMESTAMP_FREQUENCY: u64 = 1_000_000_000;
/// Allocation granule and alignment of every pool.
pub const GRANULE: usize = 4096;

/// Agent handles: small tagged numbers, so a handle from elsewhere is refused.
const AGENT_TAG: u64 = 0xa6e0_0000;
const POOL_TAG: u64 = 0x9001_0000;
const ISA_HANDLE: u64 = 0x15a0_0001;

/// Agent index 0 is the CPU; 1..=gpus are the GPUs.
pub type AgentIndex = usize;

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum PoolKind {
    /// The CPU's fine-grained system memory, also for kernel arguments.
    Kernarg,
    /// The CPU's fine-grained system memory.
    Fine,
    /// The CPU's coarse-grained system memory.
    HostCoarse,
    /// A GPU's own memory.
    Device,
    /// A GPU's group segment (LDS): listed with its size, never allocated from.
    Group,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Pool {
    pub owner: AgentIndex,
    pub kind: PoolKind,
}

pub struct System {
    pub gpus: usize,
    /// Each GPU pool's size in bytes.
    pub device_memory: u64,
    pub profile: Profile,
}

impl System {
    /// The GPUs' processor (`HSA_AGENT_INFO_NAME`).
    pub fn processor(&self) -> &'static str {
        if self.profile.apu {
            APU_PROCESSOR
        } else {
            GPU_PROCESSOR
        }
    }

    /// The GPUs' ISA name, as ROCm writes it: the target ID with the features the device has
    /// (an MI300A has SRAM ECC on; its XNACK as the process asked for it).
    pub fn isa_name(&self) -> &'static str {
        match (self.profile.apu, self.profile.xnack) {
            (false, _) => GPU_ISA_NAME,
            (true, true) => "amdgcn-amd-amdhsa--gfx942:sramecc+:xnack+",
            (true, false) => "amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-",
        }
    }

    pub fn compute_units(&self) -> u32 {
        if self.profile.apu {
            APU_COMPUTE_UNITS
        } else {
            COMPUTE_UNITS
        }
    }

    /// `HSA_AMD_AGENT_INFO_MEMORY_PROPERTIES` of a GPU: ROCr sets bit number
    /// `HSA_AMD_MEMORY_PROPERTY_AGENT_IS_APU` for an integrated GPU, nothing for a discrete one.
    pub fn memory_properties(&self) -> [u8; 8] {
        let mut bits = [0u8; 8];
        if self.profile.apu {
            let bit = HSA_AMD_MEMORY_PROPERTY_AGENT_IS_APU;
            bits[(bit / 8) as usize] |= 1 << (bit % 8);
        }
        bits
    }

    pub fn agents(&self) -> impl Iterator<Item = AgentIndex> {
        0..=self.gpus
    }

    pub fn is_gpu(&self, agent: AgentIndex) -> bool {
        (1..=self.gpus).contains(&agent)
    }

    pub fn agent_handle(agent: AgentIndex) -> hsa_agent_t {
        hsa_agent_t {
            handle: AGENT_TAG + agent as u64,
        }
    }

    /// The agent of `handle`, if it is one of ours.
    pub fn agent(&self, handle: hsa_agent_t) -> Option<AgentIndex> {
        let index = handle.handle.checked_sub(AGENT_TAG)? as usize;
        (index <= self.gpus).then_some(index)
    }

    /// The pools of `agent`, in the order the runtime lists them.
    pub fn pools_of(&self, agent: AgentIndex) -> Vec<Pool> {
        if agent == 0 {
            [PoolKind::Kernarg, PoolKind::Fine, PoolKind::HostCoarse]
                .into_iter()
                .map(|kind| Pool { owner: 0, kind })
                .collect()
        } else {
            [PoolKind::Device, PoolKind::Group]
                .into_iter()
                .map(|kind| Pool { owner: agent, kind })
                .collect()
        }
    }

    pub fn pool_handle(pool: Pool) -> hsa_amd_memory_pool_t {
        let kind = match pool.kind {
            PoolKind::Kernarg => 0,
            PoolKind::Fine => 1,
            PoolKind::HostCoarse => 2,
            PoolKind::Device => 3,
            PoolKind::Group => 4,
        };
        hsa_amd_memory_pool_t {
            handle: POOL_TAG + ((pool.owner as u64) << 4) + kind,
        }
    }

    pub fn pool(&self, handle: hsa_amd_memory_pool_t) -> Option<Pool> {
        let raw = handle.handle.checked_sub(POOL_TAG)?;
        let owner = (raw >> 4) as usize;
        let pool = Pool {
            owner,
            kind: match raw & 15 {
                0 => PoolKind::Kernarg,
                1 => PoolKind::Fine,
                2 => PoolKind::HostCoarse,
                3 => PoolKind::Device,
                4 => PoolKind::Group,
                _ => return None,
            },
        };
        (owner <= self.gpus && self.pools_of(owner).contains(&pool)).then_some(pool)
    }

    pub fn isa_handle() -> hsa_isa_t {
        hsa_isa_t { handle: ISA_HANDLE }
    }

    pub fn is_isa(handle: hsa_isa_t) -> bool {
        handle.handle == ISA_HANDLE
    }

    /// `HSA_AMD_AGENT_MEMORY_POOL_INFO_ACCESS`, as ROCm reports it: an agent reaches its own
    /// memory by default; GPUs reach system memory and each other's memory only once granted
    /// (`hsa_amd_agents_allow_access`); the CPU reaches GPU memory only once granted.
    pub fn access(&self, agent: AgentIndex, pool: Pool) -> hsa_amd_memory_pool_access_t {
        if pool.kind == PoolKind::Group && agent != pool.owner {
            HSA_AMD_MEMORY_POOL_ACCESS_NEVER_ALLOWED
        } else if agent == pool.owner {
            HSA_AMD_MEMORY_POOL_ACCESS_ALLOWED_BY_DEFAULT
        } else {
            HSA_AMD_MEMORY_POOL_ACCESS_DISALLOWED_BY_DEFAULT
        }
    }

    /// The size of `pool` in bytes.
    pub fn pool_size(&self, pool: Pool) -> u64 {
        match pool.kind {
            PoolKind::Device => self.device_memory,
            PoolKind::Group => GROUP_MEMORY as u64,
            _ => host_memory(),
        }
    }

    /// The agent's name: the processor for a GPU (as ROCm reports it), the CPU's model
    /// otherwise.
    pub fn name(&self, agent: AgentIndex) -> &'static str {
        if agent == 0 {
            "omptarget-emu CPU"
        } else {
            self.processor()
        }
    }

    /// What `HSA_AMD_AGENT_INFO_PRODUCT_NAME` says: nobody should mistake it for hardware.
    pub fn product_name(&self, agent: AgentIndex) -> &'static str {
        match (agent, self.profile.apu) {
            (0, _) => "omptarget-emu CPU (emulated HSA agent)",
            (_, false) => "omptarget-emu MI210-like GPU (emulated, runs kernels on the CPU)",
            (_, true) => "omptarget-emu MI300A (emulated HSA APU, not hardware)",
        }
    }
}

/// The machine's memory, as the system pools report it.
fn host_memory() -> u64 {
    // SAFETY: sysconf only reads system configuration.
    let (pages, page) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    (pages.max(0) as u64).saturating_mul(page.max(0) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_round_trip_and_foreign_ones_are_refused() {
        let system = System {
            gpus: 2,
            device_memory: 1 << 30,
            profile: Profile::default(),
        };
        for agent in system.agents() {
            assert_eq!(system.agent(System::agent_handle(agent)), Some(agent));
            for pool in system.pools_of(agent) {
                assert_eq!(system.pool(System::pool_handle(pool)), Some(pool));
            }
        }
        assert_eq!(system.agent(hsa_agent_t { handle: 3 }), None);
        assert_eq!(system.agent(System::agent_handle(3)), None);
        assert_eq!(system.pool(hsa_amd_memory_pool_t { handle: 7 }), None);
        let gpu1 = system.pools_of(1)[0];
        assert_eq!(
            system.access(1, gpu1),
            HSA_AMD_MEMORY_POOL_ACCESS_ALLOWED_BY_DEFAULT
        );
        assert_eq!(
            system.access(2, gpu1),
            HSA_AMD_MEMORY_POOL_ACCESS_DISALLOWED_BY_DEFAULT
        );
        assert_eq!(
            system.access(1, system.pools_of(0)[0]),
            HSA_AMD_MEMORY_POOL_ACCESS_DISALLOWED_BY_DEFAULT
        );
    }

    #[test]
    fn the_apu_profile_is_a_gfx942_with_the_apu_bit_and_its_xnack_mode() {
        let mut system = System {
            gpus: 1,
            device_memory: 1 << 30,
            profile: Profile::default(),
        };
        assert_eq!(system.isa_name(), GPU_ISA_NAME);
        assert_eq!(system.memory_properties(), [0; 8]);
        system.profile = Profile {
            apu: true,
            xnack: true,
        };
        assert_eq!(system.name(1), "gfx942");
        assert!(system.isa_name().ends_with("gfx942:sramecc+:xnack+"));
        assert!(hsa_flag_isset64(
            &system.memory_properties(),
            HSA_AMD_MEMORY_PROPERTY_AGENT_IS_APU
        ));
        system.profile.xnack = false;
        assert!(system.isa_name().ends_with("gfx942:sramecc+:xnack-"));
    }
}
