//! Kernel faults, as ROCm reports them: a twin that faults (caught by `emu-support`'s
//! `kernel_faults`) stops its queue. SIGSEGV and SIGBUS are a GPU memory fault: the system
//! event handlers get `HSA_AMD_GPU_MEMORY_FAULT_EVENT` with the address (page not present), as
//! for the faults the emulator finds itself ([`Runtime::memory_fault`]), then the queue's error
//! callback `HSA_STATUS_ERROR_MEMORY_FAULT`. A trap (`__builtin_trap()`, SIGILL at `ud2`) is
//! `HSA_STATUS_ERROR_EXCEPTION`, which ROCm's trap handler reports for `s_trap`; another
//! SIGILL `HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION`; anything else (a division by zero, which a
//! GPU would not even fault on) `HSA_STATUS_ERROR_EXCEPTION`. The dispatch's completion signal
//! is never decremented.

use crate::agents::AgentIndex;
use crate::dispatch::Launch;
use crate::fault_owner;
use crate::memory;
use crate::runtime::{self, Runtime};
use crate::status::Status;
use hsa_sys::*;
use omptarget_emu_support::kernel_faults::{self, Fault, Running};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use sync_util::lock;

/// The queue of a dispatch, as a fault stops it (implemented by `queues::Queue`; a trait, so
/// that the queues may call this module without it calling back into them).
pub trait FaultedQueue: Send + Sync {
    /// Puts the queue in its error state with `status`, for its error callback.
    fn kernel_faulted(&self, status: Status);
}

/// A dispatch running now, by its number.
struct Dispatch {
    queue: Weak<dyn FaultedQueue>,
    agent: AgentIndex,
    kernel: String,
    /// Its fault was reported already (several of its threads may fault).
    faulted: bool,
}

static DISPATCHES: Mutex<BTreeMap<u64, Dispatch>> = Mutex::new(BTreeMap::new());
static NEXT: AtomicU64 = AtomicU64::new(1);

/// At each dispatch: faults are reported here, and the catcher is installed (once).
pub fn prepare() {
    fault_owner::set_report(report);
    kernel_faults::install();
}

/// Runs a dispatch of `queue` marked as running, so that a fault in it is reported for it.
pub fn run(queue: &Arc<impl FaultedQueue + 'static>, agent: AgentIndex, launch: Launch) {
    let dispatch = NEXT.fetch_add(1, Ordering::Relaxed);
    let queue: Arc<dyn FaultedQueue> = queue.clone();
    lock(&DISPATCHES).insert(
        dispatch,
        Dispatch {
            queue: Arc::downgrade(&queue),
            agent,
            kernel: launch.kernel().name.clone(),
            faulted: false,
        },
    );
    {
        let code = launch.kernel().code.clone();
        let _running = Running::start(fault_owner::owner(), dispatch, code.as_deref());
        launch.run();
    }
    lock(&DISPATCHES).remove(&dispatch);
}

/// The queue's error for a fault.
pub fn status_of(fault: &Fault) -> Status {
    match fault.signal {
        libc::SIGSEGV | libc::SIGBUS => HSA_STATUS_ERROR_MEMORY_FAULT,
        libc::SIGILL if !fault.trap => HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION,
        _ => HSA_STATUS_ERROR_EXCEPTION,
    }
}

/// On the catcher's watcher thread: the fault stops the dispatch's queue.
fn report(fault: &Fault) {
    let dispatch = lock(&DISPATCHES).get_mut(&fault.kernel).map(|dispatch| {
        let first = !std::mem::replace(&mut dispatch.faulted, true);
        (
            first,
            dispatch.queue.clone(),
            dispatch.agent,
            dispatch.kernel.clone(),
        )
    });
    let status = status_of(fault);
    match dispatch {
        Some((false, ..)) => {}
        Some((true, queue, agent, kernel)) => {
            eprintln!(
                "omptarget-emu (HSA): kernel {kernel} faulted on agent {agent}: {}; its queue \
                 reports {}",
                fault.describe(),
                crate::status::describe(status)
            );
            if let (Some(queue), Ok(runtime)) = (queue.upgrade(), runtime::get()) {
                stop(runtime, &*queue, agent, fault, status);
            }
        }
        // Every dispatch is known while it runs, and its thread never returns from a fault.
        None => eprintln!(
            "omptarget-emu (HSA): a kernel of no known dispatch faulted: {}",
            fault.describe()
        ),
    }
}

/// Reports the fault as ROCm does, then puts the queue in the error state.
fn stop(
    runtime: &Runtime,
    queue: &dyn FaultedQueue,
    agent: AgentIndex,
    fault: &Fault,
    status: Status,
) {
    if fault.is_memory() {
        runtime.memory_fault(memory::Fault {
            agent,
            address: fault.address,
            unmapped: true,
        });
    }
    queue.kernel_faulted(status);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fault(signal: i32, trap: bool) -> Fault {
        Fault {
            signal,
            code: 1,
            address: 0,
            instruction: 0,
            error: 0,
            kernel: 1,
            trap,
        }
    }

    #[test]
    fn faults_are_hsas_statuses() {
        assert_eq!(
            status_of(&fault(libc::SIGSEGV, false)),
            HSA_STATUS_ERROR_MEMORY_FAULT
        );
        assert_eq!(
            status_of(&fault(libc::SIGBUS, false)),
            HSA_STATUS_ERROR_MEMORY_FAULT
        );
        assert_eq!(
            status_of(&fault(libc::SIGILL, true)),
            HSA_STATUS_ERROR_EXCEPTION
        );
        assert_eq!(
            status_of(&fault(libc::SIGILL, false)),
            HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION
        );
        assert_eq!(
            status_of(&fault(libc::SIGFPE, false)),
            HSA_STATUS_ERROR_EXCEPTION
        );
    }
}
