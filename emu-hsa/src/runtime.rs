//! The emulated runtime's state, created by the first `hsa_init` and counted as HSA counts
//! it: every other entry point refuses to run while the count is zero.

use crate::agents::System;
use crate::code::Code;
use crate::memory::{Fault, Memory};
use crate::signals::Signals;
use crate::status::{self, Result};
use hsa_sys::*;
use std::sync::atomic::AtomicBool;
use std::sync::{Mutex, OnceLock};
use sync_util::lock;

type EventCallback =
    unsafe extern "C" fn(*const hsa_amd_event_t, *mut std::ffi::c_void) -> hsa_status_t;

pub struct Runtime {
    pub system: System,
    pub memory: Memory,
    pub signals: Signals,
    pub code: Code,
    /// `hsa_amd_register_system_event_handler`'s handlers and their data.
    pub event_handlers: Mutex<Vec<(EventCallback, usize)>>,
    /// `hsa_amd_profiling_async_copy_enable`: ROCr sets it on every agent at once, so one
    /// flag; read when a copy is submitted.
    pub copy_profiling: AtomicBool,
}

/// The HSA system clock (`HSA_SYSTEM_INFO_TIMESTAMP`) now: `CLOCK_MONOTONIC` in nanoseconds
/// (`agents::TIMESTAMP_FREQUENCY`). The agents' clocks are the same clock, so profiling stamps
/// need no translation. (ROCr reads `CLOCK_BOOTTIME`; monotonic here, so that a plugin that maps
/// the system clock onto the host's by calibration gets an exact answer to check it by.)
pub fn timestamp() -> u64 {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime fills the timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now) };
    now.tv_sec as u64 * 1_000_000_000 + now.tv_nsec as u64
}

static RUNTIME: OnceLock<Runtime> = OnceLock::new();
static REFERENCES: Mutex<u32> = Mutex::new(0);

/// `hsa_init`.
pub fn init() -> Result<()> {
    let mut references = lock(&REFERENCES);
    if *references == 0 && RUNTIME.get().is_none() {
        let delay = crate::config::get().init_delay_ms;
        if delay > 0 {
            std::thread::sleep(std::time::Duration::from_millis(delay));
        }
    }
    *references = references
        .checked_add(1)
        .ok_or(status::Error(HSA_STATUS_ERROR_REFCOUNT_OVERFLOW))?;
    RUNTIME.get_or_init(|| {
        let config = crate::config::get();
        let profile = crate::config::profile();
        Runtime {
            system: System {
                gpus: config.devices.min(62),
                device_memory: config.memory,
                profile,
            },
            memory: Memory::new(profile),
            signals: Signals::default(),
            code: Code::default(),
            event_handlers: Mutex::new(Vec::new()),
            copy_profiling: AtomicBool::new(false),
        }
    });
    Ok(())
}

/// `hsa_shut_down`. The state stays (threads of the program may still hold handles); only the
/// count drops.
pub fn shut_down() -> Result<()> {
    let mut references = lock(&REFERENCES);
    *references = references.checked_sub(1).ok_or(status::NOT_INITIALIZED)?;
    Ok(())
}

/// The runtime, if initialised.
pub fn get() -> Result<&'static Runtime> {
    if *lock(&REFERENCES) == 0 {
        return Err(status::NOT_INITIALIZED);
    }
    RUNTIME.get().ok_or(status::NOT_INITIALIZED)
}

/// The runtime for an entry point without a status to return (signal and queue index
/// operations): calling one before `hsa_init` is a program error that stops it here.
pub fn expect(function: &str) -> &'static Runtime {
    get().unwrap_or_else(|_| {
        eprintln!("omptarget-emu (HSA): {function} called while the runtime is not initialised");
        std::process::abort()
    })
}

impl Runtime {
    /// A GPU touched memory it may not: the system event handlers are told (they decide what
    /// happens, as on ROCm); with no handler the process stops with ROCm's message. A queue
    /// whose packet faulted is failed by its processor afterwards, so its error callback comes
    /// after the handlers. The event names the faulting page, as the GPU's does.
    pub fn memory_fault(&self, fault: Fault) {
        let event = hsa_amd_event_t {
            event_type: HSA_AMD_GPU_MEMORY_FAULT_EVENT,
            memory_fault: hsa_amd_gpu_memory_fault_info_t {
                agent: System::agent_handle(fault.agent),
                // The GPU reports the page, not the byte: LLVM's report of the closest
                // allocation says "might be by page" for this reason.
                virtual_address: (fault.address & !(crate::agents::GRANULE - 1)) as u64,
                fault_reason_mask: if fault.unmapped {
                    HSA_AMD_MEMORY_FAULT_PAGE_NOT_PRESENT
                } else {
                    HSA_AMD_MEMORY_FAULT_HOST_ONLY
                },
            },
        };
        crate::trace::calls().trace_line(|| {
            format!(
                "memory-fault agent={} address={:#x} reason={}",
                fault.agent,
                fault.address,
                if fault.unmapped {
                    "not-mapped"
                } else {
                    "not-granted"
                }
            )
        });
        let handlers = lock(&self.event_handlers).clone();
        if handlers.is_empty() {
            eprintln!(
                "Memory access fault by GPU node-{} (Agent handle: {:#x}) on address {:#x}. \
                 Reason: {}. (omptarget-emu (HSA))",
                fault.agent,
                System::agent_handle(fault.agent).handle,
                fault.address,
                if fault.unmapped {
                    "Page not present or supervisor privilege"
                } else {
                    "the memory was not made accessible to this agent (hsa_amd_agents_allow_access)"
                }
            );
            std::process::abort();
        }
        for (handler, data) in handlers {
            // SAFETY: a handler and its data as the program registered them; HSA calls them on
            // a runtime thread with an event that lives for the call.
            unsafe { handler(&event, data as *mut std::ffi::c_void) };
        }
    }
}
