//! The watcher thread: woken through a pipe by the signal handler (write(2) is
//! async-signal-safe), it hands each recorded fault to its owner in an ordinary thread, where
//! the emulator may lock, allocate and call the program's callbacks.
//!
//! One watcher per process: a forked child has none until it installs the catcher again (its
//! next launch), and until then its faults are not caught (the handler sees the process id).

use std::fs::File;
use std::io::Read;
use std::os::fd::FromRawFd;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Mutex;

/// The pipe's write end, for the handler.
static WAKE: AtomicI32 = AtomicI32::new(-1);
/// The process whose watcher runs (0: none yet).
static WATCHED: AtomicI32 = AtomicI32::new(0);

fn pid() -> i32 {
    // SAFETY: getpid has no preconditions and is async-signal-safe.
    unsafe { libc::getpid() }
}

/// Whether this process has a watcher. Async-signal-safe.
pub fn active() -> bool {
    WATCHED.load(Ordering::Acquire) == pid()
}

/// Wakes the watcher. Async-signal-safe; never blocks (the pipe's write end is non-blocking: a
/// full pipe already has a wake-up in it).
pub fn wake() {
    let byte = 1u8;
    // SAFETY: writes one byte from a live local to a file descriptor this module owns.
    unsafe { libc::write(WAKE.load(Ordering::Acquire), (&byte as *const u8).cast(), 1) };
}

/// Starts this process's watcher, once.
pub fn start() -> bool {
    if active() {
        return true;
    }
    static STARTING: Mutex<()> = Mutex::new(());
    let _one = sync_util::lock(&STARTING);
    if active() {
        return true;
    }
    let mut ends = [-1; 2];
    // SAFETY: pipe2 fills the two-element array it is given.
    if unsafe { libc::pipe2(ends.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        eprintln!(
            "omptarget: no pipe for the kernel-fault watcher ({}); a faulting kernel kills \
             the process",
            std::io::Error::last_os_error()
        );
        return false;
    }
    // SAFETY: the write end was just created; making it non-blocking has no other effect.
    unsafe { libc::fcntl(ends[1], libc::F_SETFL, libc::O_NONBLOCK) };
    // SAFETY: the read end was just created and is owned by nobody else.
    let mut wakes = unsafe { File::from_raw_fd(ends[0]) };
    let started = std::thread::Builder::new()
        .name("emu-kernel-faults".into())
        .spawn(move || {
            let mut buffer = [0u8; 64];
            loop {
                match wakes.read(&mut buffer) {
                    Ok(0) => return,
                    Ok(_) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(_) => return,
                }
                for (owner, fault) in super::slots::take() {
                    super::report(owner, &fault);
                }
            }
        });
    if let Err(e) = started {
        eprintln!(
            "omptarget: no kernel-fault watcher thread ({e}); a faulting kernel kills the process"
        );
        // SAFETY: the write end is ours and unused (the read end closes with the thread's
        // closure).
        unsafe { libc::close(ends[1]) };
        return false;
    }
    let old = WAKE.swap(ends[1], Ordering::AcqRel);
    if old >= 0 {
        // A forked child's copy of its parent's pipe, which no watcher reads.
        // SAFETY: the descriptor is this module's, no longer published.
        unsafe { libc::close(old) };
    }
    WATCHED.store(pid(), Ordering::Release);
    true
}
