//! The C library's memory-mapping calls, declared once for the modules that map memory
//! themselves (a plugin file read in place, the mapping table's slots grown in place).

use std::ffi::c_void;

extern "C" {
    pub fn mmap(
        addr: *mut c_void,
        len: usize,
        prot: i32,
        flags: i32,
        fd: i32,
        offset: i64,
    ) -> *mut c_void;
    pub fn mremap(old: *mut c_void, old_len: usize, new_len: usize, flags: i32, ...)
        -> *mut c_void;
    pub fn munmap(addr: *mut c_void, len: usize) -> i32;
    pub fn madvise(addr: *mut c_void, len: usize, advice: i32) -> i32;
}

pub const PROT_READ: i32 = 1;
pub const PROT_WRITE: i32 = 2;
pub const MAP_PRIVATE: i32 = 2;
pub const MAP_ANONYMOUS: i32 = 0x20;
pub const MREMAP_MAYMOVE: i32 = 1;
/// Fault the range in now, writable (Linux 5.14; older kernels refuse it).
pub const MADV_POPULATE_WRITE: i32 = 23;
pub const MAP_FAILED: *mut c_void = !0usize as *mut c_void;
