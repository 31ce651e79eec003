//! What each agent (GPU or CPU) is: names, ISAs, limits, memory pools.

use super::attributes::{self, AttributeValue};
use super::iterate;
use super::pools::{pool_info, PoolInfo};
use super::runtime::HsaRuntime;
use crate::hsa_interface::{Agent, HsaError};
use hsa_sys::*;

/// One agent and its attributes. GPU agents report every field; a CPU agent may leave limits
/// that only apply to kernel agents at 0.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentInfo {
    pub agent: Agent,
    /// `HSA_AGENT_INFO_DEVICE` is `HSA_DEVICE_TYPE_GPU`.
    pub is_gpu: bool,
    /// `HSA_AGENT_INFO_NAME`: for a GPU its processor, e.g. `gfx90a`.
    pub name: String,
    /// `HSA_AMD_AGENT_INFO_PRODUCT_NAME`, e.g. `AMD Instinct MI210` (empty if not reported).
    pub product_name: String,
    /// `HSA_AGENT_INFO_VENDOR_NAME`, e.g. `AMD`.
    pub vendor: String,
    /// `HSA_AMD_AGENT_INFO_UUID`, e.g. `GPU-0123456789abcdef`; `GPU-XX` or empty when the agent
    /// has none.
    pub uuid: String,
    /// Full ISA names, e.g. `amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-`.
    pub isa_names: Vec<String>,
    /// `HSA_AGENT_INFO_NODE`: the topology node, as ROCm tools number agents.
    pub node: u32,
    pub compute_units: u32,
    pub wavefront_size: u32,
    pub workgroup_max_size: u32,
    pub workgroup_max_dim: [u16; 3],
    pub grid_max_size: u32,
    pub grid_max_dim: [u32; 3],
    /// Packets in the largest queue the agent supports.
    pub queue_max_size: u32,
    /// Queues the agent supports at once.
    pub queues_max: u32,
    pub max_clock_mhz: u32,
    /// Wavefronts a compute unit runs at once (hardware parallelism = this x compute units).
    pub max_waves_per_cu: u32,
    /// Ticks per second of the device's steady clock (`omp_get_wtick`); 0 if not reported.
    pub timestamp_frequency: u64,
    /// `HSA_AMD_AGENT_INFO_CHIP_ID`: the PCI device id (0 if not reported).
    pub chip_id: u32,
    pub pools: Vec<PoolInfo>,
}

impl AgentInfo {
    /// XNACK is on: the GPU retries accesses that fault, so its kernels reach pageable host
    /// memory. As LLVM reads it: the agent's first ISA name carries `xnack+`.
    pub fn xnack_enabled(&self) -> bool {
        self.isa_names
            .first()
            .is_some_and(|isa| isa.contains("xnack+"))
    }

    /// The GPU shares the host's memory (an MI300A). As LLVM tells: a gfx942 whose chip id is
    /// even (the MI300X, a discrete gfx942, has odd ids).
    pub fn is_apu(&self) -> bool {
        self.name == "gfx942" && self.chip_id & 1 == 0
    }
}

impl HsaRuntime {
    /// Every agent the runtime reports, in its order, with its attributes and memory pools.
    pub fn agents(&self) -> Result<Vec<AgentInfo>, HsaError> {
        let library = self.library();
        iterate::agents(library)?
            .into_iter()
            .map(|agent| agent_info(library, agent))
            .collect()
    }
}

fn agent_info(library: &HsaLibrary, agent: hsa_agent_t) -> Result<AgentInfo, HsaError> {
    let query = |attribute| attributes::agent(library, agent, attribute);
    let is_gpu = query(HSA_AGENT_INFO_DEVICE)?.u32() == HSA_DEVICE_TYPE_GPU;
    // Kernel-agent attributes are required of a GPU; a CPU agent may not report them.
    let limit = |attribute| -> Result<AttributeValue, HsaError> {
        match query(attribute) {
            Err(error) if is_gpu => Err(error),
            other => Ok(other.unwrap_or_else(|_| AttributeValue::zeroed())),
        }
    };
    let isa_names = match isa_names(library, agent) {
        Err(error) if is_gpu => return Err(error),
        other => other.unwrap_or_default(),
    };
    let pools = iterate::memory_pools(library, agent)?
        .into_iter()
        .map(|pool| pool_info(library, pool))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(AgentInfo {
        agent: Agent(agent.handle),
        is_gpu,
        name: query(HSA_AGENT_INFO_NAME)?.string(),
        product_name: query(HSA_AMD_AGENT_INFO_PRODUCT_NAME)
            .map(|v| v.string())
            .unwrap_or_default(),
        vendor: query(HSA_AGENT_INFO_VENDOR_NAME)?.string(),
        uuid: query(HSA_AMD_AGENT_INFO_UUID)
            .map(|v| v.string())
            .unwrap_or_default(),
        isa_names,
        node: query(HSA_AGENT_INFO_NODE).map(|v| v.u32()).unwrap_or(0),
        compute_units: limit(HSA_AMD_AGENT_INFO_COMPUTE_UNIT_COUNT)?.u32(),
        wavefront_size: limit(HSA_AGENT_INFO_WAVEFRONT_SIZE)?.u32(),
        workgroup_max_size: limit(HSA_AGENT_INFO_WORKGROUP_MAX_SIZE)?.u32(),
        workgroup_max_dim: limit(HSA_AGENT_INFO_WORKGROUP_MAX_DIM)?.u16x3(),
        grid_max_size: limit(HSA_AGENT_INFO_GRID_MAX_SIZE)?.u32(),
        grid_max_dim: limit(HSA_AGENT_INFO_GRID_MAX_DIM)?.dim3(),
        queue_max_size: limit(HSA_AGENT_INFO_QUEUE_MAX_SIZE)?.u32(),
        queues_max: limit(HSA_AGENT_INFO_QUEUES_MAX)?.u32(),
        // An AMD extension attribute, informational only: never fail over it.
        max_clock_mhz: query(HSA_AMD_AGENT_INFO_MAX_CLOCK_FREQUENCY)
            .map(|v| v.u32())
            .unwrap_or(0),
        max_waves_per_cu: query(HSA_AMD_AGENT_INFO_MAX_WAVES_PER_CU)
            .map(|v| v.u32())
            .unwrap_or(0),
        // Missing on older runtimes: omp_get_wtime on the device is then inaccurate (as LLVM).
        timestamp_frequency: query(HSA_AMD_AGENT_INFO_TIMESTAMP_FREQUENCY)
            .map(|v| v.u64())
            .unwrap_or(0),
        chip_id: query(HSA_AMD_AGENT_INFO_CHIP_ID)
            .map(|v| v.u32())
            .unwrap_or(0),
        pools,
    })
}

fn isa_names(library: &HsaLibrary, agent: hsa_agent_t) -> Result<Vec<String>, HsaError> {
    iterate::isas(library, agent)?
        .into_iter()
        .map(|isa| attributes::isa_name(library, isa))
        .collect()
}
