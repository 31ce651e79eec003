//! `hsa_amd_memory_async_copy`: a copy engine of the GPU involved (the destination agent's
//! when it is a GPU, else the source agent's) waits for the dependency signals, checks that its agent may reach both buffers, copies and
//! decrements the completion signal. Copies run concurrently with each other and with kernels.
//! A copy submitted with copy profiling on writes when it started (its dependencies met) and
//! completed into its completion signal, where ROCr's engines write them.
//!
//! SDMA engines, as ROCr numbers and hands them out (`GpuAgent::DmaCopyOnEngine`,
//! `DmaCopyStatus`): each emulated GPU (an MI210, gfx90a, outside any xGMI hive) has two, engine
//! 1 (`HSA_AMD_SDMA_ENGINE_0`, the host-to-device one) and engine 2 (`HSA_AMD_SDMA_ENGINE_1`,
//! the device-to-host one); the engine of a copy is that of the GPU that runs it, the source's
//! when it is a GPU, else the destination's. `hsa_amd_memory_async_copy` takes engine 1 for
//! host to device, engine 2 for device to host and between GPUs, and a blit kernel (no engine)
//! within one GPU. `hsa_amd_memory_async_copy_on_engine` takes the engine named, refusing an id
//! that is not one bit or names no engine, and (gfx90a's RAS limit) engine 1 for anything but a
//! copy from the host to the GPU; within one GPU it takes engine 2 when forced onto SDMA, else a
//! blit kernel. `hsa_amd_memory_copy_engine_status` lists the engines that may run a copy of
//! that direction and are free (no copy pending on them).

use crate::agents::AgentIndex;
use crate::runtime::Runtime;
use crate::signals::Signal;
use crate::status::{self, Result};
use hsa_sys::*;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use sync_util::lock;

/// SDMA engines per emulated GPU (no xGMI engines).
pub const SDMA_ENGINES: u32 = 2;
/// ROCr's `BlitHostToDev`: the engine `HSA_AMD_SDMA_ENGINE_0` names.
const HOST_TO_DEVICE: u32 = 1;
/// ROCr's `BlitDevToHost`: the engine `HSA_AMD_SDMA_ENGINE_1` names.
const DEVICE_TO_HOST: u32 = 2;

/// Copies submitted and not completed, per (GPU, SDMA engine).
static PENDING: Mutex<Option<HashMap<(AgentIndex, u32), usize>>> = Mutex::new(None);

fn change_pending(key: (AgentIndex, u32), change: impl FnOnce(&mut usize)) {
    let mut pending = lock(&PENDING);
    change(
        pending
            .get_or_insert_with(HashMap::new)
            .entry(key)
            .or_insert(0),
    );
}

fn is_free(gpu: AgentIndex, engine: u32) -> bool {
    lock(&PENDING)
        .as_ref()
        .and_then(|pending| pending.get(&(gpu, engine)))
        .is_none_or(|&n| n == 0)
}

/// The GPU whose engines run a copy (ROCr: the source when it is a GPU, else the destination).
fn copy_gpu(runtime: &Runtime, dst_agent: AgentIndex, src_agent: AgentIndex) -> AgentIndex {
    if runtime.system.is_gpu(src_agent) {
        src_agent
    } else {
        dst_agent
    }
}

/// The engine `hsa_amd_memory_async_copy` runs a copy on: (GPU, engine), or `None` for a blit
/// kernel (within one GPU) or a copy between host buffers.
pub fn default_engine(
    runtime: &Runtime,
    dst_agent: AgentIndex,
    src_agent: AgentIndex,
) -> Option<(AgentIndex, u32)> {
    let (dst_gpu, src_gpu) = (
        runtime.system.is_gpu(dst_agent),
        runtime.system.is_gpu(src_agent),
    );
    let engine = match (src_gpu, dst_gpu) {
        (false, false) => return None,
        (true, true) if dst_agent == src_agent => return None,
        (false, true) => HOST_TO_DEVICE,
        _ => DEVICE_TO_HOST,
    };
    Some((copy_gpu(runtime, dst_agent, src_agent), engine))
}

/// The engine `hsa_amd_memory_async_copy_on_engine` runs a copy on for `engine_id` (an
/// `hsa_amd_sdma_engine_id_t` bit), by ROCr's rules; `INVALID_ARGUMENT` for an id it refuses.
pub fn chosen_engine(
    runtime: &Runtime,
    dst_agent: AgentIndex,
    src_agent: AgentIndex,
    engine_id: u32,
    force_sdma: bool,
) -> Result<Option<(AgentIndex, u32)>> {
    if !engine_id.is_power_of_two() {
        return Err(status::INVALID_ARGUMENT);
    }
    let engine = engine_id.trailing_zeros() + 1;
    let (dst_gpu, src_gpu) = (
        runtime.system.is_gpu(dst_agent),
        runtime.system.is_gpu(src_agent),
    );
    if !dst_gpu && !src_gpu {
        return Err(status::INVALID_AGENT);
    }
    let same_gpu = dst_agent == src_agent;
    let host_to_device = !src_gpu && dst_gpu;
    if engine > SDMA_ENGINES || (engine == HOST_TO_DEVICE && !host_to_device && !same_gpu) {
        return Err(status::INVALID_ARGUMENT);
    }
    let gpu = copy_gpu(runtime, dst_agent, src_agent);
    Ok(match (same_gpu, force_sdma) {
        (true, false) => None,
        (true, true) => Some((gpu, DEVICE_TO_HOST)),
        (false, _) => Some((gpu, engine)),
    })
}

/// `hsa_amd_memory_copy_engine_status`: the `hsa_amd_sdma_engine_id_t` bits of the engines that
/// may copy from `src_agent` to `dst_agent` and have no copy pending; `OUT_OF_RESOURCES` when
/// there is none, `INVALID_AGENT` for one agent (a blit kernel's copy) or no GPU.
pub fn engine_status(
    runtime: &Runtime,
    dst_agent: AgentIndex,
    src_agent: AgentIndex,
) -> Result<u32> {
    let (dst_gpu, src_gpu) = (
        runtime.system.is_gpu(dst_agent),
        runtime.system.is_gpu(src_agent),
    );
    if dst_agent == src_agent || (!dst_gpu && !src_gpu) {
        return Err(status::INVALID_AGENT);
    }
    let gpu = copy_gpu(runtime, dst_agent, src_agent);
    let mut mask = 0;
    // gfx90a: engine 1 copies from the host only.
    if !src_gpu && is_free(gpu, HOST_TO_DEVICE) {
        mask |= HSA_AMD_SDMA_ENGINE_0;
    }
    if is_free(gpu, DEVICE_TO_HOST) {
        mask |= HSA_AMD_SDMA_ENGINE_1;
    }
    if mask == 0 {
        Err(status::OUT_OF_RESOURCES)
    } else {
        Ok(mask)
    }
}

pub struct Copy {
    pub dst: usize,
    pub src: usize,
    pub size: usize,
    /// The agent whose engine copies.
    pub engine: AgentIndex,
    /// The SDMA engine that runs it (GPU, engine), if one does.
    pub sdma: Option<(AgentIndex, u32)>,
    pub dependencies: Vec<Arc<Signal>>,
    pub completion: Arc<Signal>,
    /// Copy profiling was on when the copy was submitted.
    pub profiled: bool,
}

/// The engine's agent: the destination's GPU, else the source's, else the CPU.
pub fn engine(runtime: &Runtime, dst_agent: AgentIndex, src_agent: AgentIndex) -> AgentIndex {
    if runtime.system.is_gpu(dst_agent) {
        dst_agent
    } else if runtime.system.is_gpu(src_agent) {
        src_agent
    } else {
        0
    }
}

pub fn start(runtime: &'static Runtime, copy: Copy) -> Result<()> {
    if let Some(sdma) = copy.sdma {
        change_pending(sdma, |n| *n += 1);
    }
    if copy.profiled {
        // ROCr's `async_copy_agent(agent)` at submission: the signal now answers for a copy of
        // this engine, its engine stamps cleared (`CopyPrep`).
        let engine = copy.engine;
        copy.completion.change_stamps(|stamps| {
            stamps.copy_agent = Some(engine);
            stamps.sdma = (0, 0);
        });
    }
    let sdma = copy.sdma;
    std::thread::Builder::new()
        .name("emu-hsa-copy".into())
        .spawn(move || run(runtime, copy))
        .map(drop)
        .map_err(|_| {
            if let Some(sdma) = sdma {
                change_pending(sdma, |n| *n -= 1);
            }
            status::OUT_OF_RESOURCES
        })
}

fn run(runtime: &Runtime, copy: Copy) {
    for signal in &copy.dependencies {
        signal.wait(HSA_SIGNAL_CONDITION_EQ, 0, None);
    }
    // The engine starts the copy now; the delay stands for its work.
    let start = crate::runtime::timestamp();
    let delay = crate::config::get().delay_us;
    if delay > 0 {
        std::thread::sleep(std::time::Duration::from_micros(delay));
    }
    for address in [copy.src, copy.dst] {
        if let Err(fault) = runtime.memory.check(copy.engine, address, copy.size) {
            // The copy never completes, as on hardware.
            runtime.memory_fault(fault);
            return;
        }
    }
    // SAFETY: both buffers hold `size` bytes that the engine's agent may reach (checked
    // above, against live allocations and locked ranges); `copy` handles overlap.
    unsafe { std::ptr::copy(copy.src as *const u8, copy.dst as *mut u8, copy.size) };
    if let Some(sdma) = copy.sdma {
        change_pending(sdma, |n| *n -= 1);
    }
    crate::trace::calls().trace_line(|| {
        let shown = if copy.size <= omptarget_emu_support::calls::SHOWN_BYTES {
            // SAFETY: the destination holds the `size` bytes just copied.
            let bytes = unsafe { std::slice::from_raw_parts(copy.dst as *const u8, copy.size) };
            omptarget_emu_support::calls::shown_bytes(bytes)
        } else {
            String::new()
        };
        let engine = match copy.sdma {
            Some((_, engine)) => format!(" sdma={engine}"),
            None => String::new(),
        };
        format!(
            "copy-done dst={:#x} src={:#x} size={}{engine}{shown}",
            copy.dst, copy.src, copy.size
        )
    });
    if copy.profiled {
        let end = crate::runtime::timestamp();
        let by_gpu = runtime.system.is_gpu(copy.engine);
        copy.completion.change_stamps(|stamps| {
            // A GPU's engine writes the SDMA stamps; a copy the CPU runs writes the signal's
            // own (ROCr's `CpuAgent::DmaCopy`).
            if by_gpu {
                stamps.sdma = (start, end);
            } else {
                stamps.packet = (start, end);
            }
        });
    }
    copy.completion.subtract(1);
}
