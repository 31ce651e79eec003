//! The process's own address space, as the emulators' rules for host memory need it: its
//! mappings (`/proc/self/maps`, in address order) and whether a byte is readable.

/// One mapping of the process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mapping {
    pub start: usize,
    pub end: usize,
    pub readable: bool,
    /// The file or pseudo-file mapped (`[heap]`, `[vdso]`, a path); empty when anonymous.
    pub path: String,
}

/// The process's mappings, in address order (none where `/proc` cannot be read).
pub fn mappings() -> Vec<Mapping> {
    std::fs::read_to_string("/proc/self/maps")
        .map(|maps| maps.lines().filter_map(parse).collect())
        .unwrap_or_default()
}

/// One line of `/proc/self/maps`: `start-end perms offset dev inode [path]`.
pub fn parse(line: &str) -> Option<Mapping> {
    let mut fields = line.split_whitespace();
    let (start, end) = fields.next()?.split_once('-')?;
    let readable = fields.next()?.starts_with('r');
    let path = fields.nth(3).unwrap_or("").to_string();
    Some(Mapping {
        start: usize::from_str_radix(start, 16).ok()?,
        end: usize::from_str_radix(end, 16).ok()?,
        readable,
        path,
    })
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_read_with_their_access_and_path() {
        let heap = parse("55d0a0000000-55d0a0021000 rw-p 00000000 00:00 0    [heap]").unwrap();
        assert_eq!((heap.start, heap.end), (0x55d0a0000000, 0x55d0a0021000));
        assert!(heap.readable);
        assert_eq!(heap.path, "[heap]");
        let reserved = parse("200000000000-200400000000 ---p 00000000 00:00 0").unwrap();
        assert!(!reserved.readable);
        assert_eq!(reserved.path, "");
        assert_eq!(parse("garbage"), None);
    }

    #[test]
    fn the_heap_and_the_stack_are_readable_and_address_zero_is_not() {
        let heap = Box::new(7u64);
        let stack = 7u64;
        for address in [&*heap as *const u64 as usize, &stack as *const u64 as usize] {
            assert!(readable(address));
            assert!(mappings()
                .iter()
                .any(|m| (m.start..m.end).contains(&address)));
        }
        assert!(!readable(0));
        assert!(!readable(8));
    }
}
