//! Kernel faults: a kernel that runs as host code and faults (a write through a null pointer,
//! `__builtin_trap()`, a division by zero) must end as a faulting kernel ends on a GPU,
//! reported with what is known of it, instead of killing the process with a bare signal. Its
//! users: the driver emulators (a GPU kernel's x86-64 twin faults; the driver reports it and the
//! process goes on) and the host plugin (a host device's kernel faults; the plugin names the
//! kernel, then the process dies of the signal as it would have).
//!
//! One catcher per process (per copy of this crate): [`install`] handles SIGSEGV, SIGBUS, SIGILL
//! and SIGFPE, keeping the handlers that were there. A fault belongs to a kernel when the
//! faulting thread is marked as running one ([`Running`]) or when the faulting instruction lies
//! in a registered object's code ([`Code`]); any other fault goes on to the previous handler (the
//! default one kills the process, as before). The handler only reads tables of atomics, records
//! the fault in a fixed slot, wakes the watcher thread through a pipe and parks the faulting
//! thread for good: the kernel never finishes, as on a GPU. The watcher hands the fault to the
//! owner of the kernel ([`owner`]), in an ordinary thread.

mod alt_stack;
mod handler;
mod objects;
mod slots;
mod tables;
mod watcher;

#[cfg(test)]
mod tests;

pub use alt_stack::alternate_stack;
pub use tables::{Code, Running};

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

/// A user of the catcher that runs kernels and is told of their faults (an emulator, the host
/// plugin).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Owner(u8);

/// A fault of a kernel, as the handler saw it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Fault {
    /// `SIGSEGV`, `SIGBUS`, `SIGILL` or `SIGFPE`.
    pub signal: i32,
    /// The signal's `si_code` (`SEGV_MAPERR`, `ILL_ILLOPN`, `FPE_INTDIV`, ...).
    pub code: i32,
    /// The signal's `si_addr`: the address touched (SIGSEGV, SIGBUS) or the instruction's.
    pub address: usize,
    /// Where the faulting instruction is (0 where the architecture's context is not read).
    pub instruction: usize,
    /// The x86 page-fault error code (bit 1: a write, bit 4: an instruction fetch).
    pub error: u64,
    /// The kernel, as its owner named it to [`Running::start`].
    pub kernel: u64,
    /// SIGILL at `ud2`: what `__builtin_trap()` compiles to on x86-64.
    pub trap: bool,
}

impl Fault {
    /// A memory access fault (SIGSEGV or SIGBUS).
    pub fn is_memory(&self) -> bool {
        self.signal == libc::SIGSEGV || self.signal == libc::SIGBUS
    }

    /// For messages: `SIGSEGV writing address 0x0 (instruction 0x7f...)`.
    pub fn describe(&self) -> String {
        let name = match self.signal {
            libc::SIGSEGV => "SIGSEGV",
            libc::SIGBUS => "SIGBUS",
            libc::SIGILL if self.trap => "SIGILL (a trap instruction)",
            libc::SIGILL => "SIGILL",
            libc::SIGFPE => "SIGFPE",
            _ => "signal",
        };
        let what = if !self.is_memory() {
            String::new()
        } else if self.error & 2 != 0 {
            format!(" writing address {:#x}", self.address)
        } else {
            format!(" at address {:#x}", self.address)
        };
        format!("{name}{what} (instruction {:#x})", self.instruction)
    }
}

/// What an owner does with a fault of one of its kernels (on the watcher thread). It may end
/// the process ([`die_of`]).
pub type Report = fn(&Fault);

const MAX_OWNERS: usize = 4;
static REPORTS: [OnceLock<Report>; MAX_OWNERS] = [const { OnceLock::new() }; MAX_OWNERS];
static OWNERS: AtomicUsize = AtomicUsize::new(0);

/// Registers an owner, once per process: `report` gets its kernels' faults.
pub fn owner(report: Report) -> Owner {
    let index = OWNERS.fetch_add(1, Ordering::AcqRel);
    assert!(
        index < MAX_OWNERS,
        "more kernel-fault owners than {MAX_OWNERS}"
    );
    let _ = REPORTS[index].set(report);
    Owner(index as u8 + 1)
}

/// Hands a recorded fault to its owner.
fn report(owner: u8, fault: &Fault) {
    let report = (owner as usize)
        .checked_sub(1)
        .and_then(|i| REPORTS.get(i))
        .and_then(OnceLock::get);
    match report {
        Some(report) => report(fault),
        None => eprintln!(
            "omptarget: a kernel faulted ({}) with no owner to report it",
            fault.describe()
        ),
    }
}

/// Ends the process with `fault`'s signal, as it would have ended without the catcher (its
/// status says the signal; a core file is written where the system writes one). For an owner
/// whose kernels' faults end the program, once they are reported.
pub fn die_of(fault: &Fault) -> ! {
    // SAFETY: restoring the default action and raising the signal are plain libc calls; the
    // default action of these four signals ends the process.
    unsafe {
        libc::signal(fault.signal, libc::SIG_DFL);
        libc::raise(fault.signal);
    }
    // Only a signal the process blocks gets here.
    std::process::abort()
}

/// Installs the catcher, once (and its watcher again in a forked child); cheap after that, so
/// emulators call it at every launch. Answers whether faults are caught.
pub fn install() -> bool {
    handler::install() && watcher::start()
}
