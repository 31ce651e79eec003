//! Which SDMA engine a copy asks for (`LIBOMPTARGET_AMDGPU_USE_MULTIPLE_SDMA_ENGINES`).

use crate::hsa_interface::{Agent, HsaInterface, SdmaEngine};
use std::sync::atomic::{AtomicU32, Ordering};

/// `HSA_AMD_SDMA_ENGINE_0` and `HSA_AMD_SDMA_ENGINE_1`, the engines LLVM alternates between.
const TWO_ENGINES: u32 = 0b11;

/// `LIBOMPTARGET_AMDGPU_USE_MULTIPLE_SDMA_ENGINES` (LLVM's `hsa_utils::asyncMemCopy`): copies
/// alternate between SDMA engines `HSA_AMD_SDMA_ENGINE_0` and `_1`
/// (`hsa_amd_memory_async_copy_on_engine`, forced onto SDMA also within one GPU) instead of
/// leaving the engine to the runtime.
///
/// Unlike LLVM, which names the engines blindly, each copy first asks the runtime which of the
/// two may take it now (`hsa_amd_memory_copy_engine_status`): an engine that cannot (on an MI200
/// only engine 0 copies from the host; an engine busy) gives its turn to the other, and with
/// neither, or a runtime without these calls (before ROCm 5.7), the runtime picks as it does by
/// default. (LLVM's builds against its own copy of the HSA headers, as Debian's, fail every
/// copy instead: "async copy on selected SDMA requires ROCm 5.7".)
pub(crate) struct CopyEngines {
    enabled: bool,
    /// The engine whose turn it is.
    next: AtomicU32,
}

impl CopyEngines {
    pub(crate) fn new(enabled: bool) -> CopyEngines {
        CopyEngines {
            enabled,
            next: AtomicU32::new(hsa_sys::HSA_AMD_SDMA_ENGINE_0),
        }
    }

    /// The engine a copy from `src_agent` to `dst_agent` asks for, if it names one.
    pub(super) fn choose<H: HsaInterface>(
        &self,
        hsa: &H,
        dst_agent: Agent,
        src_agent: Agent,
        host_agent: Agent,
    ) -> Option<SdmaEngine> {
        if !self.enabled {
            return None;
        }
        // The runtime lists no engine for a copy within one GPU (a blit kernel's by default):
        // that GPU's engines from the host stand for them.
        let from = if dst_agent == src_agent {
            host_agent
        } else {
            src_agent
        };
        let usable = match hsa.copy_engine_status(dst_agent, from) {
            Ok(mask) => mask & TWO_ENGINES,
            Err(err) => {
                log::debug!("no SDMA engine named for a copy: {err}");
                0
            }
        };
        if usable == 0 {
            return None;
        }
        let turn = self.next.fetch_xor(TWO_ENGINES, Ordering::Relaxed);
        let id = if turn & usable != 0 {
            turn
        } else {
            usable & usable.wrapping_neg()
        };
        Some(SdmaEngine {
            id,
            force_sdma: true,
        })
    }
}
