//! Running native code that arrives as bytes: an image loaded from an in-memory file (no
//! temporary files), its symbols, and calling a kernel whose argument count is known only at
//! run time. Used by the host plugin and by the GPU driver emulators, which run a GPU kernel
//! through its x86-64 twin.

use std::ffi::{c_char, c_int, c_uint, c_void, CString};
use std::fs::File;
use std::io::Write;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

extern "C" {
    fn memfd_create(name: *const c_char, flags: c_uint) -> c_int;
}

const MFD_CLOEXEC: c_uint = 1;

/// An in-memory file holding `bytes`, so images are loaded without touching the disk.
pub fn memory_file(name: &str, bytes: &[u8]) -> std::io::Result<OwnedFd> {
    let cname = CString::new(name).unwrap_or_default();
    // SAFETY: `cname` is a valid NUL-terminated string; memfd_create has no other preconditions.
    let fd = unsafe { memfd_create(cname.as_ptr(), MFD_CLOEXEC) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `fd` was just returned by memfd_create and is owned by nobody else.
    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut file = File::from(owned.try_clone()?);
    file.write_all(bytes)?;
    Ok(owned)
}

/// Path under which the dynamic loader can open a file descriptor.
pub fn fd_path(fd: &OwnedFd) -> String {
    format!("/proc/self/fd/{}", fd.as_raw_fd())
}

/// Opens a shared object privately (its symbols do not leak into the global scope, so several
/// devices can load the same image).
pub fn open_library(path: &str) -> Result<libloading::os::unix::Library, libloading::Error> {
    use libloading::os::unix::{Library, RTLD_LOCAL, RTLD_NOW};
    // SAFETY: loading a device image runs its initialisers; they are the program's own
    // compiler-generated code, which is what offloading to the host means.
    unsafe { Library::open(Some(path), RTLD_NOW | RTLD_LOCAL) }
}

/// Address of a symbol in a loaded library.
pub fn symbol_address(library: &libloading::os::unix::Library, name: &str) -> Option<usize> {
    let cname = CString::new(name).ok()?;
    // SAFETY: we only read the symbol's address, never call or dereference it here.
    let symbol = unsafe { library.get::<*mut c_void>(cname.as_bytes_with_nul()) }.ok()?;
    let address = symbol.into_raw() as usize;
    (address != 0).then_some(address)
}

/// Calls the function at `function` with `args` as its integer/pointer arguments, following the
/// x86-64 System V convention: six in registers, the rest on the stack. Kernels take any number
/// of pointer-sized arguments, so no fixed Rust signature fits.
///
/// # Safety
/// `function` must be a C function taking exactly `args.len()` pointer-sized integer arguments.
#[cfg(target_arch = "x86_64")]
pub unsafe fn call_with_args(function: usize, args: &[usize]) {
    let reg = |i: usize| args.get(i).copied().unwrap_or(0);
    let stack_args = &args[args.len().min(6)..];
    // SAFETY: the asm saves rsp in callee-saved r12, reserves 16-byte aligned space for the
    // stack arguments, copies them, calls, and restores rsp; every caller-saved register is
    // declared clobbered through clobber_abi. The callee's contract is the caller's duty.
    unsafe {
        std::arch::asm!(
            "mov r12, rsp",
            "lea r11, [rax*8 + 15]",
            "and r11, -16",
            "sub rsp, r11",
            "and rsp, -16",
            "2:",
            "test rax, rax",
            "jz 3f",
            "dec rax",
            "mov r11, [r10 + rax*8]",
            "mov [rsp + rax*8], r11",
            "jmp 2b",
            "3:",
            "call r13",
            "mov rsp, r12",
            in("rdi") reg(0),
            in("rsi") reg(1),
            in("rdx") reg(2),
            in("rcx") reg(3),
            in("r8") reg(4),
            in("r9") reg(5),
            inout("r10") stack_args.as_ptr() => _,
            inout("rax") stack_args.len() => _,
            inout("r13") function => _,
            out("r12") _,
            clobber_abi("C"),
        );
    }
}

#[cfg(not(target_arch = "x86_64"))]
pub unsafe fn call_with_args(_function: usize, _args: &[usize]) {
    unreachable!("x86-64 kernels are only called on x86-64 (the host plugin refuses other images)")
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    static SUM: AtomicUsize = AtomicUsize::new(0);

    extern "C" fn nine(
        a: usize,
        b: usize,
        c: usize,
        d: usize,
        e: usize,
        f: usize,
        g: usize,
        h: usize,
        i: usize,
    ) {
        SUM.store(
            a + 2 * b + 3 * c + 4 * d + 5 * e + 6 * f + 7 * g + 8 * h + 9 * i,
            Ordering::SeqCst,
        );
    }

    extern "C" fn two(a: usize, b: usize) {
        SUM.store(a * 100 + b, Ordering::SeqCst);
    }

    #[test]
    fn passes_register_and_stack_arguments_in_order() {
        let args: Vec<usize> = (1..=9).collect();
        // SAFETY: `nine` takes nine usize arguments.
        unsafe { call_with_args(nine as *const () as usize, &args) };
        assert_eq!(
            SUM.load(Ordering::SeqCst),
            (1..=9).map(|i| i * i).sum::<usize>()
        );
        // SAFETY: `two` takes two usize arguments.
        unsafe { call_with_args(two as *const () as usize, &[7, 3]) };
        assert_eq!(SUM.load(Ordering::SeqCst), 703);
    }

    #[test]
    fn memory_file_holds_bytes() {
        let fd = memory_file("t", b"hello").unwrap();
        assert_eq!(std::fs::read(fd_path(&fd)).unwrap(), b"hello");
    }
}
