//! The emulator's identity with the kernel-fault catcher, apart from the fault reporting
//! (`faults`) so that loading code (`code`) can register a twin without depending on queues and
//! the runtime: the report goes through a function `faults` sets before any dispatch runs.

use offload_image::twin::Twin;
use omptarget_emu_support::kernel_faults::{self, Code, Fault, Owner};
use std::sync::OnceLock;

static REPORT: OnceLock<fn(&Fault)> = OnceLock::new();

fn report(fault: &Fault) {
    match REPORT.get() {
        Some(report) => report(fault),
        // A fault needs a running dispatch, and each dispatch sets the report first.
        None => eprintln!(
            "omptarget-emu (HSA): a kernel faulted before any dispatch: {}",
            fault.describe()
        ),
    }
}

/// This emulator as the catcher knows it.
pub fn owner() -> Owner {
    static OWNER: OnceLock<Owner> = OnceLock::new();
    *OWNER.get_or_init(|| kernel_faults::owner(report))
}

/// Where faults go (`faults::report`); the first setting stays.
pub fn set_report(report: fn(&Fault)) {
    let _ = REPORT.set(report);
}

/// Registers a loaded twin's code (found from one of its kernels), so that a fault in it on a
/// thread that the emulator did not start (libomp's) is the kernel's.
pub fn register<'k>(twin: &Twin, kernels: impl IntoIterator<Item = &'k str>) -> Option<Code> {
    let entry = kernels.into_iter().find_map(|k| twin.symbol(k))?;
    Code::register(owner(), entry)
}
