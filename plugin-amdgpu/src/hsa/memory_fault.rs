//! GPU memory faults: reported on stderr, then the process is aborted.
//!
//! A kernel that touches an address it may not reaches the runtime as a system event. The
//! faulting queue is dead and the state of device memory unknown, so, as LLVM's plugin does,
//! the handler reports the fault, with what the tracked allocations say about the address and
//! the kernels the faulting GPU launched last, and aborts rather than let the program run on
//! with results that will never arrive.

use super::attributes;
use super::error::check;
use super::runtime::HsaRuntime;
use crate::hsa_interface::HsaError;
use gpu_plugin::allocation_traces::AllocationTraces;
use gpu_plugin::launch_traces::LaunchTraces;
use hsa_sys::*;
use std::ffi::c_void;
use std::io::Write;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use sync_util::lock;

/// What a GPU agent's device knows for the report of its faults.
struct FaultContext {
    agent: u64,
    launches: Arc<LaunchTraces>,
    allocations: Arc<AllocationTraces>,
    /// XNACK is on: the GPU reaches pageable host memory.
    xnack: bool,
}

/// Each GPU agent's fault context.
static CONTEXTS: Mutex<Vec<FaultContext>> = Mutex::new(Vec::new());

/// From now on a memory fault by `agent` reports the kernels in `launches` and what
/// `allocations` say about the faulting address, and, where XNACK is off, that the GPU
/// cannot reach host memory nobody mapped for it.
pub fn report_faults_with(
    agent: u64,
    launches: &Arc<LaunchTraces>,
    allocations: &Arc<AllocationTraces>,
    xnack: bool,
) {
    let mut contexts = lock(&CONTEXTS);
    contexts.retain(|known| known.agent != agent);
    contexts.push(FaultContext {
        agent,
        launches: Arc::clone(launches),
        allocations: Arc::clone(allocations),
        xnack,
    });
}

/// The report of `agent`'s fault at `address` after its first line: the allocations at the
/// address, then the kernels the agent launched last (nothing if its device registered none).
fn fault_context(agent: u64, address: u64) -> String {
    let contexts = lock(&CONTEXTS);
    let Some(context) = contexts.iter().find(|known| known.agent == agent) else {
        return String::new();
    };
    let mut text = context.allocations.describe_address(address as usize);
    if !context.xnack {
        text.push_str(XNACK_OFF_HINT);
    }
    text.push_str(&context.launches.report());
    text
}

impl HsaRuntime {
    /// Registers the memory fault handler (`hsa_amd_register_system_event_handler`), once per
    /// runtime; later calls do nothing.
    pub fn register_memory_fault_handler(&self) -> Result<(), HsaError> {
        if self.fault_handler_registered.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        // The handler reads the faulting agent's node through the library; the runtime keeps
        // the handler for the life of the process, so the reference it holds is never given
        // back.
        let data = Arc::into_raw(self.library().clone()) as *mut c_void;
        // SAFETY: `on_system_event` matches the callback type and `data` stays valid forever
        // (the reference above is never released).
        let status = unsafe {
            (self.library().hsa_amd_register_system_event_handler)(Some(on_system_event), data)
        };
        if let Err(error) = check("hsa_amd_register_system_event_handler", status) {
            self.fault_handler_registered
                .store(false, Ordering::Release);
            // SAFETY: registration failed, so the runtime did not keep `data`: release it.
            drop(unsafe { Arc::from_raw(data as *const HsaLibrary) });
            return Err(error);
        }
        Ok(())
    }
}

/// Said with a fault on a GPU without XNACK: the usual cause of a fault on host memory.
const XNACK_OFF_HINT: &str = "This GPU cannot access pageable host memory (XNACK is off): a \
kernel that uses host memory the program did not map or allocate through OpenMP (as under \
`requires unified_shared_memory`) faults. HSA_XNACK=1 turns XNACK on where the system \
supports it.\n";

/// The system event handler: aborts on a memory fault, ignores every other event.
unsafe extern "C" fn on_system_event(
    event: *const hsa_amd_event_t,
    data: *mut c_void,
) -> hsa_status_t {
    let handled = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: the runtime passes a valid event for the duration of the call (or null,
        // checked).
        let Some(event) = (unsafe { event.as_ref() }) else {
            return;
        };
        if event.event_type != HSA_AMD_GPU_MEMORY_FAULT_EVENT {
            return;
        }
        let fault = event.memory_fault;
        // SAFETY: `data` is the never-released Arc<HsaLibrary> pointer given at registration.
        let library = unsafe { &*(data as *const HsaLibrary) };
        let node = attributes::agent(library, fault.agent, HSA_AGENT_INFO_NODE)
            .ok()
            .map(|value| value.u32());
        let message = memory_fault_message(
            node,
            fault.agent.handle,
            fault.virtual_address,
            fault.fault_reason_mask,
        );
        let context = fault_context(fault.agent.handle, fault.virtual_address);
        let _ = write!(std::io::stderr(), "{message}\n{context}");
        std::process::abort();
    }));
    // Only a panic while reporting gets here with a memory fault pending; abort all the same.
    if handled.is_err() {
        std::process::abort();
    }
    HSA_STATUS_SUCCESS
}

/// The reasons in `mask` (`HSA_AMD_MEMORY_FAULT_*` bits), in words.
pub fn fault_reasons(mask: u32) -> Vec<String> {
    const REASONS: [(u32, &str); 8] = [
        (
            HSA_AMD_MEMORY_FAULT_PAGE_NOT_PRESENT,
            "page not present or supervisor privilege",
        ),
        (
            HSA_AMD_MEMORY_FAULT_READ_ONLY,
            "write access to a read-only page",
        ),
        (
            HSA_AMD_MEMORY_FAULT_NX,
            "execute access to a page marked NX",
        ),
        (
            HSA_AMD_MEMORY_FAULT_HOST_ONLY,
            "GPU access to a host-only page",
        ),
        (HSA_AMD_MEMORY_FAULT_DRAMECC, "DRAM ECC failure"),
        (
            HSA_AMD_MEMORY_FAULT_IMPRECISE,
            "imprecise fault (the exact address is unknown)",
        ),
        (
            HSA_AMD_MEMORY_FAULT_SRAMECC,
            "SRAM ECC failure (registers; no fault address)",
        ),
        (
            HSA_AMD_MEMORY_FAULT_HANG,
            "GPU reset after an unspecified hang",
        ),
    ];
    let mut reasons: Vec<String> = REASONS
        .iter()
        .filter(|(bit, _)| mask & bit != 0)
        .map(|(_, reason)| reason.to_string())
        .collect();
    let known = REASONS.iter().fold(0, |all, (bit, _)| all | bit);
    if mask & !known != 0 || mask == 0 {
        reasons.push(format!("unknown reason bits {:#x}", mask & !known));
    }
    reasons
}

/// The fatal message for a memory fault by the GPU at topology `node` (when known), in LLVM
/// 22's words, which its sanitizer tests check.
pub fn memory_fault_message(node: Option<u32>, agent: u64, address: u64, reasons: u32) -> String {
    let gpu = match node {
        Some(node) => format!("GPU node {node}"),
        None => "GPU".to_string(),
    };
    format!(
        "OFFLOAD ERROR: memory access fault by {gpu} (agent {agent:#x}) at virtual address \
         {address:#x}. Reasons: {}",
        fault_reasons(reasons).join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reason_bits_decode_as_llvm_does() {
        assert_eq!(
            fault_reasons(HSA_AMD_MEMORY_FAULT_PAGE_NOT_PRESENT | HSA_AMD_MEMORY_FAULT_READ_ONLY),
            [
                "page not present or supervisor privilege",
                "write access to a read-only page"
            ]
        );
        assert_eq!(
            fault_reasons(1 << 2),
            ["execute access to a page marked NX"]
        );
        assert_eq!(fault_reasons(1 << 3), ["GPU access to a host-only page"]);
        assert_eq!(fault_reasons(1 << 4), ["DRAM ECC failure"]);
        assert!(fault_reasons(1 << 5)[0].starts_with("imprecise"));
        assert!(fault_reasons(1 << 6)[0].starts_with("SRAM ECC"));
        assert_eq!(
            fault_reasons(1 << 31),
            ["GPU reset after an unspecified hang"]
        );
        assert_eq!(fault_reasons(0), ["unknown reason bits 0x0"]);
        assert_eq!(
            fault_reasons(HSA_AMD_MEMORY_FAULT_NX | 1 << 12),
            [
                "execute access to a page marked NX",
                "unknown reason bits 0x1000"
            ]
        );
    }

    #[test]
    fn the_message_names_gpu_address_and_reasons() {
        let message = memory_fault_message(Some(2), 0x5555_0000, 0x7f00_dead_b000, 1);
        assert_eq!(
            message,
            "OFFLOAD ERROR: memory access fault by GPU node 2 (agent 0x55550000) at virtual \
             address 0x7f00deadb000. Reasons: page not present or supervisor privilege"
        );
        assert!(memory_fault_message(None, 1, 2, 1 << 4).contains("by GPU (agent 0x1)"));
    }
}
