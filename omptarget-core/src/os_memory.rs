//! The C library's memory-mapping calls, declared once for the modules that map memory
//! themselves (a plugin file read in place, the mapping table's slots grown in place), and the
//! faulting in of memory about to be written.

use std::ffi::c_void;

extern "C" {
    pub(crate) fn mmap(
        addr: *mut c_void,
        len: usize,
        prot: i32,
        flags: i32,
        fd: i32,
        offset: i64,
    ) -> *mut c_void;
    pub(crate) fn mremap(
        old: *mut c_void,
        old_len: usize,
        new_len: usize,
        flags: i32,
        ...
    ) -> *mut c_void;
    pub(crate) fn munmap(addr: *mut c_void, len: usize) -> i32;
    pub(crate) fn madvise(addr: *mut c_void, len: usize, advice: i32) -> i32;
}

pub(crate) const PROT_READ: i32 = 1;
pub(crate) const PROT_WRITE: i32 = 2;
pub(crate) const MAP_PRIVATE: i32 = 2;
pub(crate) const MAP_ANONYMOUS: i32 = 0x20;
pub(crate) const MREMAP_MAYMOVE: i32 = 1;
/// Fault the range in now, writable (Linux 5.14; older kernels refuse it).
const MADV_POPULATE_WRITE: i32 = 23;
pub(crate) const MAP_FAILED: *mut c_void = !0usize as *mut c_void;

const PAGE: usize = 4096;

/// Faults in, writable, the whole pages within `[start, start + len)` with one system call
/// instead of a trap per page when they are first written. Only advice: where the kernel
/// refuses it (before Linux 5.14), the pages fault in one by one as before. Contents are kept.
///
/// # Safety
/// The range must be memory mapped in this process.
pub(crate) unsafe fn populate_for_writing(start: usize, len: usize) {
    let first = start.next_multiple_of(PAGE);
    let end = (start + len) / PAGE * PAGE;
    if end > first {
        // SAFETY: whole pages inside the caller's mapped range; populating changes no contents.
        unsafe { madvise(first as *mut c_void, end - first, MADV_POPULATE_WRITE) };
    }
}
