//! Kernel faults, as the driver reports them: a twin that faults (caught by `emu-support`'s
//! `kernel_faults`) makes the error of its context sticky, as on hardware: SIGSEGV and SIGBUS
//! are `CUDA_ERROR_ILLEGAL_ADDRESS`, SIGILL (a trap) `CUDA_ERROR_ILLEGAL_INSTRUCTION`, the
//! error reported for a device-side `trap` on NVIDIA GPUs (not yet seen on the project's H100),
//! and anything else (a division by zero, which a GPU would not even fault on)
//! `CUDA_ERROR_LAUNCH_FAILED`. The kernel's stream stops waiting for it; every later call on the
//! context returns the error.

use crate::driver;
use crate::status::{self, Error};
use crate::streams::Stream;
use offload_image::twin::Twin;
use omptarget_emu_support::kernel_faults::{self, Code, Fault, Owner, Running};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use sync_util::lock;

/// A kernel running now, by its launch number.
struct Launch {
    device: usize,
    stream: Weak<Stream>,
    kernel: String,
    /// Its fault was reported already (several of its threads may fault).
    faulted: bool,
}

static LAUNCHES: Mutex<BTreeMap<u64, Launch>> = Mutex::new(BTreeMap::new());
static NEXT: AtomicU64 = AtomicU64::new(1);

fn owner() -> Owner {
    static OWNER: OnceLock<Owner> = OnceLock::new();
    *OWNER.get_or_init(|| kernel_faults::owner(report))
}

/// At each launch: the catcher is installed (once).
pub fn prepare() {
    owner();
    kernel_faults::install();
}

/// Registers a module's twin code (found from one of its kernels), so that a fault in it on a
/// thread that the emulator did not start (libomp's) is the kernel's.
pub fn register(twin: &Twin, kernels: impl IntoIterator<Item = impl AsRef<str>>) -> Option<Code> {
    let entry = kernels.into_iter().find_map(|k| twin.symbol(k.as_ref()))?;
    Code::register(owner(), entry)
}

/// Runs kernel `kernel` of `device` (its twin's code `code`) on `stream`'s worker, marked as
/// running, so that a fault in it is reported for that stream.
pub fn run(
    device: usize,
    stream: Weak<Stream>,
    kernel: &str,
    code: Option<&Code>,
    call: impl FnOnce(),
) {
    let launch = NEXT.fetch_add(1, Ordering::Relaxed);
    lock(&LAUNCHES).insert(
        launch,
        Launch {
            device,
            stream,
            kernel: kernel.to_owned(),
            faulted: false,
        },
    );
    {
        let _running = Running::start(owner(), launch, code);
        call();
    }
    lock(&LAUNCHES).remove(&launch);
}

/// A kernel given pageable host memory on a device that cannot reach it (see `pageable`): it
/// would fault on its first access, so it is reported as a fault at that address instead of
/// running, on the kernel's stream, which `Stream::abandon` counts as done.
pub fn unreachable(device: usize, stream: &Arc<Stream>, kernel: &str, address: usize) {
    let Ok(driver) = driver::get() else {
        return;
    };
    let error = status::ILLEGAL_ADDRESS;
    eprintln!(
        "omptarget-emu (CUDA): kernel {kernel} faulted on device {device}: it was given \
         {address:#x}, pageable host memory, which this device cannot access (no pageable \
         memory access); the context's error is now {} (sticky, as on a GPU)",
        status::describe(error.0)
    );
    crate::trace::calls().trace_line(|| {
        format!(
            "kernel-fault kernel={kernel} device={device} address={address:#x} \
             pageable-host-memory -> {}",
            status::describe(error.0)
        )
    });
    driver.kernel_faulted(device, error, Some(stream));
}

/// The driver's error for a fault.
pub fn error_of(fault: &Fault) -> Error {
    match fault.signal {
        libc::SIGSEGV | libc::SIGBUS => status::ILLEGAL_ADDRESS,
        libc::SIGILL => status::ILLEGAL_INSTRUCTION,
        _ => status::LAUNCH_FAILED,
    }
}

/// On the catcher's watcher thread: the fault becomes its context's sticky error.
fn report(fault: &Fault) {
    let error = error_of(fault);
    let launch = lock(&LAUNCHES).get_mut(&fault.kernel).map(|launch| {
        let first = !std::mem::replace(&mut launch.faulted, true);
        (
            first,
            launch.device,
            launch.stream.clone(),
            launch.kernel.clone(),
        )
    });
    let Ok(driver) = driver::get() else {
        return;
    };
    match launch {
        Some((false, ..)) => {}
        Some((true, device, stream, kernel)) => {
            eprintln!(
                "omptarget-emu (CUDA): kernel {kernel} faulted on device {device}: {}; the \
                 context's error is now {} (sticky, as on a GPU)",
                fault.describe(),
                status::describe(error.0)
            );
            crate::trace::calls().trace_line(|| {
                format!(
                    "kernel-fault kernel={kernel} device={device} signal={} address={:#x} \
                     instruction={:#x} -> {}",
                    fault.signal,
                    fault.address,
                    fault.instruction,
                    status::describe(error.0)
                )
            });
            driver.kernel_faulted(device, error, stream.upgrade().as_ref());
        }
        // Every launch is known while it runs, and its thread never returns from a fault.
        None => eprintln!(
            "omptarget-emu (CUDA): a kernel of no known launch faulted: {}",
            fault.describe()
        ),
    }
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
    fn faults_are_the_drivers_errors() {
        assert_eq!(
            error_of(&fault(libc::SIGSEGV, false)),
            status::ILLEGAL_ADDRESS
        );
        assert_eq!(
            error_of(&fault(libc::SIGBUS, false)),
            status::ILLEGAL_ADDRESS
        );
        assert_eq!(
            error_of(&fault(libc::SIGILL, true)),
            status::ILLEGAL_INSTRUCTION
        );
        assert_eq!(error_of(&fault(libc::SIGFPE, false)), status::LAUNCH_FAILED);
    }
}
