//! The signal handler. Async-signal-safe: it reads atomics, the signal's context and (for a
//! SIGILL) the two bytes of the faulting instruction, writes a slot and one byte to a pipe, and
//! parks; nothing allocates, locks or formats. A fault that is no kernel's goes to the handler
//! that was installed before (the default one: the process dies of the signal, as before).

use super::{slots, tables, watcher, Fault};
use std::cell::UnsafeCell;
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Once;

const SIGNALS: [libc::c_int; 4] = [libc::SIGSEGV, libc::SIGBUS, libc::SIGILL, libc::SIGFPE];

/// The handlers installed before ours, by `SIGNALS` index: written once, before ours is
/// installed for that signal, then only read (by the handler).
struct Previous(UnsafeCell<[MaybeUninit<libc::sigaction>; 4]>);

// SAFETY: written only inside `INSTALL` before the handler that reads an entry is installed
// (the sigaction call orders the write before any delivery), read-only afterwards.
unsafe impl Sync for Previous {}

static PREVIOUS: Previous = Previous(UnsafeCell::new([MaybeUninit::uninit(); 4]));
static INSTALL: Once = Once::new();
static INSTALLED: AtomicBool = AtomicBool::new(false);

/// Installs the handler for the four signals, once per process.
pub fn install() -> bool {
    INSTALL.call_once(|| {
        for (index, &signal) in SIGNALS.iter().enumerate() {
            // SAFETY: both structures are plain C data; zeroed is a valid empty sigaction, and
            // each libc call gets valid pointers. PREVIOUS[index] is written before the handler
            // that may read it is installed, and nowhere else.
            unsafe {
                let previous = &mut (*PREVIOUS.0.get())[index];
                if libc::sigaction(signal, std::ptr::null(), previous.as_mut_ptr()) != 0 {
                    return;
                }
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = on_signal as *const () as libc::sighandler_t;
                action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
                libc::sigemptyset(&mut action.sa_mask);
                if libc::sigaction(signal, &action, std::ptr::null_mut()) != 0 {
                    return;
                }
            }
        }
        INSTALLED.store(true, Ordering::Release);
    });
    INSTALLED.load(Ordering::Acquire)
}

extern "C" fn on_signal(
    signal: libc::c_int,
    info: *mut libc::siginfo_t,
    context: *mut libc::c_void,
) {
    // SAFETY: the kernel passes a valid siginfo for an SA_SIGINFO handler.
    let (code, address) = unsafe { ((*info).si_code, (*info).si_addr() as usize) };
    let (instruction, error) = registers(context);
    // A signal sent by kill or raise (si_code <= 0) is not a fault of the thread.
    let owner = if code > 0 && watcher::active() {
        tables::attribute(instruction)
    } else {
        None
    };
    let Some((owner, kernel)) = owner else {
        return chain(signal, info, context);
    };
    let fault = Fault {
        signal,
        code,
        address,
        instruction,
        error,
        kernel,
        trap: signal == libc::SIGILL && is_trap(instruction),
    };
    slots::record(owner, &fault);
    watcher::wake();
    park()
}

/// The faulting instruction's address and the page-fault error code.
#[cfg(target_arch = "x86_64")]
fn registers(context: *mut libc::c_void) -> (usize, u64) {
    // SAFETY: an SA_SIGINFO handler's third argument is the interrupted ucontext.
    let registers = unsafe { &(*(context as *const libc::ucontext_t)).uc_mcontext.gregs };
    (
        registers[libc::REG_RIP as usize] as usize,
        registers[libc::REG_ERR as usize] as u64,
    )
}

#[cfg(not(target_arch = "x86_64"))]
fn registers(_context: *mut libc::c_void) -> (usize, u64) {
    (0, 0)
}

/// Whether the instruction at `instruction` is `ud2` (`__builtin_trap()` on x86-64).
fn is_trap(instruction: usize) -> bool {
    if cfg!(not(target_arch = "x86_64")) || instruction == 0 {
        return false;
    }
    // SAFETY: a SIGILL's instruction was fetched from there, so its bytes are mapped (x86
    // executable pages are readable); ud2 is two bytes long.
    let bytes = unsafe { std::ptr::read_volatile(instruction as *const [u8; 2]) };
    bytes == [0x0f, 0x0b]
}

/// Parks the thread for good: the faulting kernel never finishes, as on a GPU.
fn park() -> ! {
    // SAFETY: sigfillset fills a local set; sigsuspend with every signal blocked only returns
    // for a signal that cannot be blocked, which ends the thread's process anyway.
    unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        loop {
            libc::sigsuspend(&all);
        }
    }
}

/// Hands a fault that is no kernel's to the handler installed before ours.
fn chain(signal: libc::c_int, info: *mut libc::siginfo_t, context: *mut libc::c_void) {
    let Some(index) = SIGNALS.iter().position(|&s| s == signal) else {
        return;
    };
    // SAFETY: PREVIOUS[index] was written before this handler was installed for `signal`.
    let previous = unsafe { (*PREVIOUS.0.get())[index].assume_init_ref() };
    let sent = {
        // SAFETY: as in on_signal.
        let code = unsafe { (*info).si_code };
        code <= 0
    };
    match previous.sa_sigaction {
        libc::SIG_IGN if sent => {}
        libc::SIG_DFL | libc::SIG_IGN => {
            // Back to what was there; a fault then recurs when the instruction runs again and
            // takes the default action (a hardware fault is never ignored); a sent signal is
            // sent again.
            // SAFETY: `previous` is a valid sigaction; raise is async-signal-safe.
            unsafe {
                libc::sigaction(signal, previous, std::ptr::null_mut());
                if sent {
                    libc::raise(signal);
                }
            }
        }
        handler if previous.sa_flags & libc::SA_SIGINFO != 0 => {
            // SAFETY: an SA_SIGINFO handler takes these three arguments; they are the ones
            // the kernel gave us.
            let handler: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
                unsafe { std::mem::transmute(handler) };
            handler(signal, info, context);
        }
        handler => {
            // SAFETY: a plain handler takes the signal number.
            let handler: extern "C" fn(libc::c_int) = unsafe { std::mem::transmute(handler) };
            handler(signal);
        }
    }
}
