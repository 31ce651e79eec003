//! An alternate signal stack for the threads that run kernels, so that a kernel overflowing
//! its stack is caught too (the handler cannot run on the stack that overflowed).

const SIZE: usize = 64 * 1024;

/// Gives the calling thread an alternate signal stack, unless it has one. The stack is never
/// freed: call this from threads that live as long as the process (the emulators' workers).
pub fn alternate_stack() {
    // SAFETY: sigaltstack with a null new stack only reads the current one into `current`.
    let mut current: libc::stack_t = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    if unsafe { libc::sigaltstack(std::ptr::null(), &mut current) } != 0
        || current.ss_flags & libc::SS_DISABLE == 0
    {
        return;
    }
    // SAFETY: sysconf has no preconditions.
    let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096);
    // SAFETY: a fresh private anonymous mapping; nothing else refers to it.
    let base = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            SIZE + page,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
            -1,
            0,
        )
    };
    if base == libc::MAP_FAILED {
        return;
    }
    // A guard page below the stack: an overflow of the handler faults instead of writing over
    // other memory.
    // SAFETY: the first page of the mapping just made.
    unsafe { libc::mprotect(base, page, libc::PROT_NONE) };
    let stack = libc::stack_t {
        // SAFETY: inside the mapping (page + SIZE bytes long).
        ss_sp: unsafe { base.cast::<u8>().add(page) }.cast(),
        ss_flags: 0,
        ss_size: SIZE,
    };
    // SAFETY: a valid stack of SIZE bytes that is never unmapped.
    unsafe { libc::sigaltstack(&stack, std::ptr::null_mut()) };
}
