//! A host device's kernel that faults. A fault whose instruction lies in a loaded image's code
//! is caught (`host_os::kernel_faults`), reported with the kernel launched last, and the
//! process then dies of the signal, as it would have without the catcher: the faulting thread
//! may hold the program's locks and its kernel will never finish, so going on is not safe.
//! (LLVM's host plugin lets the signal end the process without a word.)

use host_os::kernel_faults::{self, Code, Fault, Owner};
use offload_image::kernel_names::pretty_kernel_name;
use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

/// The entry address of the kernel launched last on any host device (0: none yet). One store
/// per launch; the report names the kernel from it.
static LAST_LAUNCH: AtomicUsize = AtomicUsize::new(0);

/// Notes a launch of the kernel at `entry`.
#[inline]
pub fn launched(entry: usize) {
    LAST_LAUNCH.store(entry, Ordering::Relaxed);
}

fn owner() -> Owner {
    static OWNER: OnceLock<Owner> = OnceLock::new();
    *OWNER.get_or_init(|| kernel_faults::owner(report))
}

/// Catches faults in the code of the loaded image that holds `kernel` while the answer lives;
/// `None` where the catcher cannot be installed (faults then end the process as before).
pub fn watch_image_of(kernel: usize) -> Option<Code> {
    if !kernel_faults::install() {
        return None;
    }
    // Launches mark no threads (they must cost nothing more): every fault in the image's code
    // is a kernel's.
    Code::register_always(owner(), kernel)
}

/// On the catcher's watcher thread: says what faulted, then ends the process with the signal.
fn report(fault: &Fault) {
    let last = LAST_LAUNCH.load(Ordering::Relaxed);
    let kernel = host_os::symbol_at(last)
        .map(|name| format!("OFFLOAD ERROR: Kernel '{}'\n", pretty_kernel_name(&name)))
        .unwrap_or_default();
    let cause = if fault.trap {
        "execution interrupted by hardware trap instruction".to_string()
    } else {
        fault.describe()
    };
    let _ = write!(
        std::io::stderr(),
        "OFFLOAD ERROR: a kernel on a host device faulted; the kernel launched last:\n\
         {kernel}OFFLOAD ERROR: {cause}\n"
    );
    kernel_faults::die_of(fault)
}
