//! The catcher on machine code of its own (a page made executable here): a fault in registered
//! code, or on a thread marked as running a kernel, is reported and parks the thread; any
//! other fault still kills the process (checked in a child process, which must die).

use super::*;
use std::os::unix::process::ExitStatusExt;
use std::process::Command;
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// `mov dword ptr [0], 42; ret`: a write through a null pointer.
const NULL_WRITE: &[u8] = &[0xc7, 0x04, 0x25, 0, 0, 0, 0, 0x2a, 0, 0, 0, 0xc3];
/// `ud2`: `__builtin_trap()`.
const TRAP: &[u8] = &[0x0f, 0x0b];
/// `xor ecx, ecx; xor edx, edx; mov eax, 1; div ecx; ret`: the division at offset 9.
const DIVIDE_BY_ZERO: &[u8] = &[0x31, 0xc9, 0x31, 0xd2, 0xb8, 1, 0, 0, 0, 0xf7, 0xf1, 0xc3];

/// Machine code in a page of its own: (its function, where it starts, where the page ends).
fn code(bytes: &[u8]) -> (extern "C" fn(), usize, usize) {
    // SAFETY: a fresh anonymous page, written then made executable; the transmuted pointer is
    // to code that follows the C calling convention (or faults before returning).
    unsafe {
        let page = libc::mmap(
            std::ptr::null_mut(),
            4096,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        assert_ne!(page, libc::MAP_FAILED);
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), page.cast::<u8>(), bytes.len());
        assert_eq!(
            libc::mprotect(page, 4096, libc::PROT_READ | libc::PROT_EXEC),
            0
        );
        let start = page as usize;
        (
            std::mem::transmute::<usize, extern "C" fn()>(start),
            start,
            start + 4096,
        )
    }
}

static FAULTS: Mutex<Vec<Fault>> = Mutex::new(Vec::new());
static REPORTED: Condvar = Condvar::new();

fn record(fault: &Fault) {
    sync_util::lock(&FAULTS).push(*fault);
    REPORTED.notify_all();
}

/// This process's test owner, with the catcher installed.
fn test_owner() -> Owner {
    static OWNER: OnceLock<Owner> = OnceLock::new();
    let owner = *OWNER.get_or_init(|| owner(record));
    assert!(install());
    owner
}

/// The fault reported at `instruction`, waiting up to ten seconds for it.
fn reported_at(instruction: usize) -> Fault {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut faults = sync_util::lock(&FAULTS);
    loop {
        if let Some(f) = faults.iter().find(|f| f.instruction == instruction) {
            return *f;
        }
        let left = deadline
            .checked_duration_since(Instant::now())
            .expect("no fault reported within ten seconds");
        faults = REPORTED.wait_timeout(faults, left).unwrap().0;
    }
}

/// Runs `function` on a thread of its own, which a caught fault parks for good.
fn on_a_thread(function: extern "C" fn(), kernel: Option<u64>) {
    let owner = test_owner();
    std::thread::spawn(move || {
        let _running = kernel.map(|k| Running::start(owner, k, None));
        function();
        panic!("the faulting code returned");
    });
}

#[test]
fn a_fault_in_registered_code_is_its_kernels() {
    let owner = test_owner();
    let (write, start, end) = code(NULL_WRITE);
    let twin = Code::range(owner, start, end, false);
    // This thread runs kernel 7 of that code; the fault happens on another, unmarked thread,
    // as on a libomp worker of the kernel.
    let _running = Running::start(owner, 7, Some(&twin));
    on_a_thread(write, None);
    let fault = reported_at(start);
    assert_eq!(
        (fault.signal, fault.address, fault.kernel, fault.trap),
        (libc::SIGSEGV, 0, 7, false)
    );
    assert_eq!(fault.code, 1 /* SEGV_MAPERR */);
    assert!(fault.error & 2 != 0, "a write: {fault:?}");
    assert_eq!(
        fault.describe(),
        format!("SIGSEGV writing address 0x0 (instruction {start:#x})")
    );
}

#[test]
fn a_fault_in_code_registered_always_is_its_owners_with_no_kernel_running() {
    let owner = test_owner();
    let (write, start, end) = code(NULL_WRITE);
    let _image = Code::range(owner, start, end, true);
    on_a_thread(write, None);
    let fault = reported_at(start);
    assert_eq!((fault.signal, fault.kernel), (libc::SIGSEGV, 0));
}

#[test]
fn a_fault_on_a_thread_running_a_kernel_is_caught_anywhere() {
    let (trap, start, _) = code(TRAP);
    on_a_thread(trap, Some(8));
    let fault = reported_at(start);
    assert_eq!(
        (fault.signal, fault.kernel, fault.trap),
        (libc::SIGILL, 8, true)
    );
    let (divide, start, _) = code(DIVIDE_BY_ZERO);
    on_a_thread(divide, Some(9));
    let fault = reported_at(start + 9);
    assert_eq!(
        (fault.signal, fault.code, fault.kernel),
        (libc::SIGFPE, 1 /* FPE_INTDIV */, 9)
    );
}

const CHILD: &str = "OMPTARGET_TEST_KERNEL_FAULTS_CHILD";

/// Runs test `name` alone in a child process (`case` in its environment), which must die:
/// its exit status.
fn child(name: &str, case: &str) -> std::process::ExitStatus {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            &format!("kernel_faults::tests::{name}"),
            "--nocapture",
        ])
        .env(CHILD, case)
        .output()
        .unwrap()
        .status
}

#[test]
fn a_fault_that_is_no_kernels_still_kills_the_process() {
    for case in ["elsewhere", "twin-code-outside-kernels"] {
        let status = child("child_faults_outside_kernels", case);
        assert_eq!(status.signal(), Some(libc::SIGSEGV), "{case}: {status:?}");
    }
    let status = child("child_faults_into_a_previous_handler", "1");
    assert_eq!(status.code(), Some(42), "{status:?}");
}

/// In the child: with the catcher installed and a kernel of other twin code running, a fault on
/// an unmarked thread elsewhere, or in registered twin code none of whose kernels runs (as a
/// twin's destructor at exit), is no kernel's.
#[test]
fn child_faults_outside_kernels() {
    let Some(case) = std::env::var_os(CHILD) else {
        return;
    };
    let owner = test_owner();
    let (_, start, end) = code(TRAP);
    let other = Code::range(owner, start, end, false);
    let _running = Running::start(owner, 3, Some(&other));
    let (write, start, end) = code(NULL_WRITE);
    let _twin =
        (case == "twin-code-outside-kernels").then(|| Code::range(owner, start, end, false));
    std::thread::spawn(move || write()).join().unwrap();
}

extern "C" fn exit_42(_signal: libc::c_int) {
    // SAFETY: _exit is async-signal-safe.
    unsafe { libc::_exit(42) };
}

/// In the child: a handler installed before the catcher still gets the faults that are no
/// kernel's.
#[test]
fn child_faults_into_a_previous_handler() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    // SAFETY: a plain handler for SIGILL, installed before the catcher.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = exit_42 as *const () as libc::sighandler_t;
        libc::sigemptyset(&mut action.sa_mask);
        assert_eq!(
            libc::sigaction(libc::SIGILL, &action, std::ptr::null_mut()),
            0
        );
    }
    test_owner();
    let (trap, _, _) = code(TRAP);
    trap();
}
