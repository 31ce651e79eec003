//! A kernel dispatch packet: the checks the packet processor makes when it launches it
//! ([`launch`]: geometry within the agent's limits, group memory within what the agent has,
//! the kernel object, kernel arguments the agent can read), so a bad packet stops its queue
//! before anything behind it is taken; then the kernel's x86-64 twin ([`Launch::run`], on a
//! thread of its own), with the explicit arguments read from the kernarg segment at the offsets
//! the kernel's metadata gives: called once, or, for a kernel compiled GPU-style (flang's),
//! through the twin's host device runtime on a team of real threads per work-group.

use crate::agents::{AgentIndex, GROUP_MEMORY, WORKGROUP_MAX_DIM, WORKGROUP_MAX_SIZE};
use crate::runtime::Runtime;
use crate::status::{self, Error, Result};
use hsa_sys::*;

/// A dispatch ready to run.
pub struct Launch {
    call: offload_image::twin::TwinCall,
    /// Keeps the kernel (and its twin) loaded while it runs.
    kernel: std::sync::Arc<crate::code::Kernel>,
}

impl Launch {
    pub fn kernel(&self) -> &crate::code::Kernel {
        &self.kernel
    }

    pub fn run(self) {
        // SAFETY: the call is of the twin's kernel of this name, which takes one pointer-sized
        // value per explicit argument; `kernel` keeps the twin loaded.
        if let Err(why) = unsafe { self.call.run(self.kernel.function_name()) } {
            eprintln!("omptarget-emu (HSA): {why}");
        }
    }
}

pub fn launch(
    runtime: &Runtime,
    agent: AgentIndex,
    packet: &hsa_kernel_dispatch_packet_t,
) -> Result<Launch> {
    check_geometry(packet)?;
    if packet.group_segment_size > GROUP_MEMORY {
        eprintln!(
            "omptarget-emu (HSA): a dispatch with {} bytes of group memory; the agent has \
             {GROUP_MEMORY}",
            packet.group_segment_size
        );
        return Err(status::INVALID_ALLOCATION);
    }
    let Some(kernel) = runtime.code.kernel(packet.kernel_object) else {
        eprintln!(
            "omptarget-emu (HSA): dispatch of kernel object {:#x}, which no loaded executable \
             defines",
            packet.kernel_object
        );
        return Err(Error(HSA_STATUS_ERROR_INVALID_CODE_OBJECT));
    };
    if kernel.agent != agent {
        eprintln!(
            "omptarget-emu (HSA): kernel {} was loaded for agent {} but dispatched on a queue \
             of agent {}",
            kernel.name, kernel.agent, agent
        );
        return Err(Error(HSA_STATUS_ERROR_INVALID_CODE_OBJECT));
    }
    if packet.group_segment_size < kernel.group_size {
        eprintln!(
            "omptarget-emu (HSA): kernel {} dispatched with {} bytes of group memory; it needs \
             at least {}",
            kernel.name, packet.group_segment_size, kernel.group_size
        );
        return Err(status::INVALID_ALLOCATION);
    }
    if packet.private_segment_size < kernel.private_size && !kernel.dynamic_stack {
        return Err(status::INVALID_ALLOCATION);
    }
    let kernarg = packet.kernarg_address as usize;
    if kernel.kernarg_size > 0 {
        if kernarg == 0 || !kernarg.is_multiple_of(kernel.kernarg_align as usize) {
            return Err(status::INVALID_ARGUMENT);
        }
        if let Err(fault) = runtime
            .memory
            .check(agent, kernarg, kernel.kernarg_size as usize)
        {
            runtime.memory_fault(fault);
            return Err(Error(HSA_STATUS_ERROR_MEMORY_FAULT));
        }
    }
    // A pointer argument to the start of memory this agent was not given is the fault the
    // kernel would take on its first access. Only the start is judged: a mapped section's
    // kernel gets its array's base, which lies before the section and may fall inside any
    // other allocation (another GPU's, a host buffer) that the kernel never touches.
    //
    // On the APU a pointer into host memory HSA never saw (malloc, a stack, a global: readable
    // here, in no allocation, locked range or device variable) is judged too, as a whole array
    // a `requires unified_shared_memory` program passes: with XNACK off (and no SVM access
    // given to the agent there) the GPU's page tables lack it and it faults, page not present.
    // A section's base cannot be mistaken for one: it is a device address less the section's
    // offset, inside the arena the APU's allocations come from (`memory::Arena`), which is
    // never host memory. A pointer to nothing readable stays unjudged.
    let apu = runtime.system.profile.apu;
    for &offset in &kernel.pointer_args {
        // SAFETY: inside the kernarg segment, which the agent may read (checked above).
        let pointer =
            unsafe { std::ptr::read_unaligned((kernarg + offset as usize) as *const usize) };
        let block = runtime.memory.find(pointer);
        // The cheap checks first: the readability probe is a system call.
        let fault = match block {
            Some(block) => block.start == pointer && !block.reachable_by(agent),
            None => {
                apu && !runtime.memory.in_arena(pointer)
                    && !runtime.memory.reaches_host(agent, pointer)
                    && crate::host::readable(pointer)
            }
        };
        if fault {
            let unmapped = block.is_none();
            runtime.memory_fault(crate::memory::Fault {
                agent,
                address: pointer,
                unmapped,
            });
            return Err(Error(HSA_STATUS_ERROR_MEMORY_FAULT));
        }
    }
    let Some(entry) = kernel.entry else {
        eprintln!(
            "omptarget-emu (HSA): kernel {} has no x86-64 twin to run on the CPU; {}",
            kernel.name,
            offload_image::twin::how_to_build("amdgcn-amd-amdhsa", runtime.system.processor())
        );
        return Err(Error(HSA_STATUS_ERROR_INVALID_CODE_OBJECT));
    };
    let mut arguments = Vec::with_capacity(kernel.explicit_args.len());
    for &(offset, size) in &kernel.explicit_args {
        if size != 8 || offset % 8 != 0 || offset + size > kernel.kernarg_size {
            eprintln!(
                "omptarget-emu (HSA): kernel {} has arguments that are not 8-byte values; its \
                 twin cannot be called with them",
                kernel.name
            );
            return Err(status::Error(HSA_STATUS_ERROR_NOT_SUPPORTED));
        }
        // SAFETY: the kernarg segment holds `kernarg_size` bytes that this agent may read
        // (checked above); the argument lies inside it.
        arguments
            .push(unsafe { std::ptr::read_unaligned((kernarg + offset as usize) as *const usize) });
    }
    let group = [
        packet.workgroup_size_x,
        packet.workgroup_size_y,
        packet.workgroup_size_z,
    ];
    let grid = [packet.grid_size_x, packet.grid_size_y, packet.grid_size_z];
    let work_groups: u64 = (0..3)
        .map(|d| u64::from(grid[d]).div_ceil(u64::from(group[d])))
        .product();
    let group_threads: u64 = group.iter().map(|&g| u64::from(g)).product();
    let dynamic = packet.group_segment_size.saturating_sub(kernel.group_size);
    let call = entry
        .call(
            kernel.function_name(),
            arguments,
            (work_groups, group_threads),
            u64::from(dynamic),
            crate::agents::WAVEFRONT_SIZE,
        )
        .map_err(|why| {
            eprintln!("omptarget-emu (HSA): {why}");
            Error(HSA_STATUS_ERROR_INVALID_CODE_OBJECT)
        })?;
    Ok(Launch { call, kernel })
}

/// Dimensions 1 to 3; a work-group within the agent's limits; a grid of at least one
/// work-item in each used dimension and exactly one in each unused one.
fn check_geometry(packet: &hsa_kernel_dispatch_packet_t) -> Result<()> {
    let dimensions = (packet.setup >> HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS) & 3;
    let group = [
        packet.workgroup_size_x,
        packet.workgroup_size_y,
        packet.workgroup_size_z,
    ];
    let grid = [packet.grid_size_x, packet.grid_size_y, packet.grid_size_z];
    let threads: u32 = group.iter().map(|&g| g as u32).product();
    let fits = (0..3).all(|d| {
        let used = d < dimensions as usize;
        group[d] >= 1
            && group[d] <= WORKGROUP_MAX_DIM[d]
            && grid[d] >= 1
            && (used || (group[d] == 1 && grid[d] == 1))
    });
    if dimensions == 0 || !fits || threads > WORKGROUP_MAX_SIZE {
        eprintln!(
            "omptarget-emu (HSA): a dispatch with {dimensions} dimensions, work-group {group:?} \
             and grid {grid:?} is outside the agent's limits (work-group of at most \
             {WORKGROUP_MAX_SIZE} work-items)"
        );
        return Err(status::INVALID_ARGUMENT);
    }
    Ok(())
}
