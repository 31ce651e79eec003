//! Memory an emulated driver took back stays reserved, with no access, for a while: a GPU
//! faults on a freed allocation until its addresses are handed out again, which takes many
//! allocations. Unmapped at once, the host kernel would place the next mappings (a launch's
//! arguments, a queue) in the freed range, and a kernel writing after a free would write into
//! them instead of faulting. Retired ranges keep no memory; the oldest are unmapped once the
//! retired address space or their number passes a bound. As a GPU's allocator hands a freed
//! block out again, a new allocation of a retired range's exact length takes the range retired
//! last ([`reuse`]): freeing and allocating again gives the same address, as on a GPU.

use std::collections::VecDeque;
use std::sync::Mutex;
use sync_util::lock;

/// The most address space kept retired.
const MAX_BYTES: usize = 64 << 30;
/// The most ranges kept retired (each is a mapping of its own; the kernel limits their count).
const MAX_RANGES: usize = 4096;

struct Retired {
    ranges: VecDeque<(usize, usize)>,
    bytes: usize,
}

static RETIRED: Mutex<Retired> = Mutex::new(Retired {
    ranges: VecDeque::new(),
    bytes: 0,
});

/// Takes back `start..start + len`, a whole mapping of the caller's that nothing uses any
/// more: its pages are dropped and any access faults from now on.
pub fn retire(start: usize, len: usize) {
    if !sys::replace_with_no_access(start, len) {
        sys::unmap(start, len);
        return;
    }
    let mut retired = lock(&RETIRED);
    retired.ranges.push_back((start, len));
    retired.bytes += len;
    while retired.bytes > MAX_BYTES || retired.ranges.len() > MAX_RANGES {
        let Some((start, len)) = retired.ranges.pop_front() else {
            break;
        };
        retired.bytes -= len;
        sys::unmap(start, len);
    }
}

/// A retired range of exactly `len` bytes, the one retired last, the bytes `accessible` of it
/// (offsets) made readable and writable again (zero-filled; the rest, guards, stay without
/// access) for a new allocation; `None` when there is none.
pub fn reuse(len: usize, accessible: std::ops::Range<usize>) -> Option<usize> {
    let mut retired = lock(&RETIRED);
    let at = retired.ranges.iter().rposition(|&(_, l)| l == len)?;
    let (start, _) = retired.ranges.remove(at)?;
    retired.bytes -= len;
    drop(retired);
    let end = accessible.end.min(len);
    let begin = accessible.start.min(end);
    if sys::make_accessible(start + begin, end - begin) {
        Some(start)
    } else {
        sys::unmap(start, len);
        None
    }
}

mod sys {
    /// Read and write access to a retired range (whose pages were dropped: it reads zeros).
    pub fn make_accessible(start: usize, len: usize) -> bool {
        // SAFETY: a retired range, taken out of the list, which nothing else refers to.
        unsafe {
            libc::mprotect(
                start as *mut libc::c_void,
                len,
                libc::PROT_READ | libc::PROT_WRITE,
            ) == 0
        }
    }

    /// Maps `start..start + len` anew with no access and no memory behind it.
    pub fn replace_with_no_access(start: usize, len: usize) -> bool {
        // SAFETY: the range is a whole mapping of the caller's that nothing refers to any
        // more (`retire`'s contract); MAP_FIXED replaces exactly it.
        let address = unsafe {
            libc::mmap(
                start as *mut libc::c_void,
                len,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE | libc::MAP_FIXED,
                -1,
                0,
            )
        };
        address as usize == start
    }

    pub fn unmap(start: usize, len: usize) {
        // SAFETY: a retired range (or one about to be), which nothing refers to.
        unsafe { libc::munmap(start as *mut libc::c_void, len) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether `address` is mapped at all (`msync` fails with ENOMEM on unmapped pages).
    fn mapped(address: usize) -> bool {
        // SAFETY: msync only asks the kernel about the page.
        unsafe { libc::msync(address as *mut libc::c_void, 4096, libc::MS_ASYNC) == 0 }
    }

    #[test]
    fn a_retired_range_stays_reserved_until_the_bound() {
        let len = 1 << 20;
        // SAFETY: a fresh anonymous mapping.
        let start = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        } as usize;
        // SAFETY: inside the mapping just made.
        unsafe { *(start as *mut u8) = 1 };
        retire(start, len);
        assert!(mapped(start), "still reserved");
        let retired = lock(&RETIRED);
        assert!(retired.ranges.contains(&(start, len)));
        assert!(retired.ranges.len() <= MAX_RANGES && retired.bytes <= MAX_BYTES);
        drop(retired);
        // The same length again: the same range, accessible and zeroed.
        let again = reuse(len, 0..len).expect("the retired range");
        assert_eq!(again, start);
        // SAFETY: accessible again, `len` bytes.
        assert_eq!(unsafe { *(again as *const u8) }, 0);
        // SAFETY: as above.
        unsafe { libc::munmap(again as *mut libc::c_void, len) };
    }
}
