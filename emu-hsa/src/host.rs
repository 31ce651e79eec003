//! What the process's own address space holds, for the rules of an APU: whether an address is
//! readable host memory (a GPU with XNACK off faults on it unless HSA mapped it for the GPU), and
//! whether a range lies in mappings (KFD's SVM calls refuse a range with a hole).

/// Whether the byte at `address` is readable memory of this process. A one-byte
/// `process_vm_readv` of our own memory: the kernel checks the page, nothing can fault here.
pub fn readable(address: usize) -> bool {
    if address == 0 {
        return false;
    }
    let mut byte = 0u8;
    let local = libc::iovec {
        iov_base: (&mut byte as *mut u8).cast(),
        iov_len: 1,
    };
    let remote = libc::iovec {
        iov_base: address as *mut libc::c_void,
        iov_len: 1,
    };
    // SAFETY: reads one byte of this process into `byte`; the kernel checks the source and
    // fails with EFAULT where it is not readable.
    let read = unsafe { libc::process_vm_readv(libc::getpid(), &local, 1, &remote, 1, 0) };
    if read == 1 {
        return true;
    }
    let errno = std::io::Error::last_os_error().raw_os_error();
    if errno == Some(libc::EFAULT) {
        return false;
    }
    // The call itself is refused (a sandbox): the mappings' list says instead.
    mappings()
        .iter()
        .any(|m| m.readable && (m.start..m.end).contains(&address))
}

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

struct Mapping {
    start: usize,
    end: usize,
    readable: bool,
}

/// `/proc/self/maps`, in address order.
fn mappings() -> Vec<Mapping> {
    let text = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    text.lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let (start, end) = fields.next()?.split_once('-')?;
            let permissions = fields.next()?;
            Some(Mapping {
                start: usize::from_str_radix(start, 16).ok()?,
                end: usize::from_str_radix(end, 16).ok()?,
                readable: permissions.starts_with('r'),
            })
        })
        .collect()
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
