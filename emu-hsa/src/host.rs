//! What the process's own address space holds, for the rules of an APU: whether an address is
//! readable host memory (a GPU with XNACK off faults on it unless HSA mapped it for the GPU), and
//! whether a range lies in mappings (KFD's SVM calls refuse a range with a hole).

use omptarget_emu_support::process_memory::mappings;
pub use omptarget_emu_support::process_memory::readable;

/// Whether every page of `[start, start + len)` lies in some mapping of the process.
pub fn mapped(start: usize, len: usize) -> bool {
    let Some(end) = start.checked_add(len) else {
        return false;
    };
    let mut at = start;
    for m in mappings() {
        if m.end <= at {
            continue;
        }
        if m.start > at {
            return false;
        }
        at = m.end;
        if at >= end {
            return true;
        }
    }
    at >= end
}

#[cfg(test)]
mod tests {
    use super::*;

    static GLOBAL: [u64; 4] = [1, 2, 3, 4];

    #[test]
    fn heap_stack_and_globals_are_readable_and_nothing_else_is() {
        let heap = Box::new([0u8; 64]);
        let stack = [0u8; 16];
        assert!(readable(heap.as_ptr() as usize));
        assert!(readable(stack.as_ptr() as usize));
        assert!(readable(GLOBAL.as_ptr() as usize));
        assert!(!readable(0));
        assert!(!readable(8));
        assert!(mapped(heap.as_ptr() as usize, 64));
        assert!(!mapped(8, 8));
        // A reserved page without access is mapped, yet not readable.
        // SAFETY: a fresh private mapping without access, unmapped below.
        let page = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                4096,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        assert_ne!(page, libc::MAP_FAILED);
        assert!(!readable(page as usize));
        assert!(mapped(page as usize, 4096));
        // SAFETY: the mapping made above.
        unsafe { libc::munmap(page, 4096) };
    }
}
