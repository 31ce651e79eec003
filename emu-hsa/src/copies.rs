//! `hsa_amd_memory_async_copy`: a copy engine of the GPU involved (the destination agent's
//! when it is a GPU, else the source agent's) waits for the dependency signals, checks that its agent may reach both buffers, copies and
//! decrements the completion signal. Copies run concurrently with each other and with kernels.
//! A copy submitted with copy profiling on writes when it started (its dependencies met) and
//! completed into its completion signal, where ROCr's engines write them.

use crate::agents::AgentIndex;
use crate::runtime::Runtime;
use crate::signals::Signal;
use crate::status::{self, Result};
use hsa_sys::*;
use std::sync::Arc;

pub struct Copy {
    pub dst: usize,
    pub src: usize,
    pub size: usize,
    /// The agent whose engine copies.
    pub engine: AgentIndex,
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
    if copy.profiled {
        // ROCr's `async_copy_agent(agent)` at submission: the signal now answers for a copy of
        // this engine, its engine stamps cleared (`CopyPrep`).
        let engine = copy.engine;
        copy.completion.change_stamps(|stamps| {
            stamps.copy_agent = Some(engine);
            stamps.sdma = (0, 0);
        });
    }
    std::thread::Builder::new()
        .name("emu-hsa-copy".into())
        .spawn(move || run(runtime, copy))
        .map(drop)
        .map_err(|_| status::OUT_OF_RESOURCES)
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
    crate::trace::calls().trace_line(|| {
        let shown = if copy.size <= omptarget_emu_support::calls::SHOWN_BYTES {
            // SAFETY: the destination holds the `size` bytes just copied.
            let bytes = unsafe { std::slice::from_raw_parts(copy.dst as *const u8, copy.size) };
            omptarget_emu_support::calls::shown_bytes(bytes)
        } else {
            String::new()
        };
        format!(
            "copy-done dst={:#x} src={:#x} size={}{shown}",
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
