//! C strings at addresses a program hands over (offload entry names), read without trusting the
//! address: a damaged program's pointer gives an error, not a fault in the runtime.

use std::ffi::{c_char, c_int, c_void, CStr};
use std::ops::Range;

/// Longer than any name clang makes: a longer "string" is not one.
const MAX_LEN: usize = 1 << 16;
const PAGE: usize = 4096;

/// The readable loaded segments of every object in the process, where names normally are.
pub(crate) struct LoadedMemory {
    ranges: Vec<Range<usize>>,
}

#[repr(C)]
struct ProgramHeader {
    p_type: u32,
    p_flags: u32,
    p_offset: u64,
    p_vaddr: u64,
    p_paddr: u64,
    p_filesz: u64,
    p_memsz: u64,
    p_align: u64,
}

/// The head of glibc's `struct dl_phdr_info` (the fields after these are not read).
#[repr(C)]
struct ObjectInfo {
    base: usize,
    name: *const c_char,
    headers: *const ProgramHeader,
    count: u16,
}

#[repr(C)]
struct IoVec {
    base: *mut c_void,
    len: usize,
}

extern "C" {
    fn dl_iterate_phdr(
        callback: extern "C" fn(*mut ObjectInfo, usize, *mut c_void) -> c_int,
        data: *mut c_void,
    ) -> c_int;
    fn process_vm_readv(
        pid: c_int,
        local: *const IoVec,
        local_count: usize,
        remote: *const IoVec,
        remote_count: usize,
        flags: usize,
    ) -> isize;
    fn getpid() -> c_int;
}

extern "C" fn add_object(info: *mut ObjectInfo, _size: usize, data: *mut c_void) -> c_int {
    const PT_LOAD: u32 = 1;
    const PF_R: u32 = 4;
    // SAFETY: glibc passes a valid object description for the call, and `data` is the
    // `Vec` that `snapshot` passed, borrowed by nothing else meanwhile.
    let (info, ranges) = unsafe { (&*info, &mut *data.cast::<Vec<Range<usize>>>()) };
    for i in 0..usize::from(info.count) {
        // SAFETY: the object has `count` program headers at `headers`.
        let header = unsafe { &*info.headers.add(i) };
        if header.p_type == PT_LOAD && header.p_flags & PF_R != 0 {
            let start = info.base.wrapping_add(header.p_vaddr as usize);
            ranges.push(start..start.saturating_add(header.p_memsz as usize));
        }
    }
    0
}

impl LoadedMemory {
    pub(crate) fn snapshot() -> LoadedMemory {
        let mut ranges: Vec<Range<usize>> = Vec::new();
        // SAFETY: the callback only reads the descriptions glibc passes and pushes to `ranges`.
        unsafe { dl_iterate_phdr(add_object, (&mut ranges as *mut Vec<Range<usize>>).cast()) };
        LoadedMemory { ranges }
    }

    /// The string at `address`, or `None` where no string can be read there: read within the
    /// loaded segment that holds it; elsewhere (heap, stack) through the kernel, which reports
    /// an unmapped address instead of faulting.
    pub(crate) fn c_string(&self, address: usize) -> Option<String> {
        if let Some(range) = self.ranges.iter().find(|r| r.contains(&address)) {
            let len = (range.end - address).min(MAX_LEN);
            // SAFETY: the bytes lie in a readable segment of a loaded object, which stays
            // loaded while the program registers its images.
            let bytes = unsafe { std::slice::from_raw_parts(address as *const u8, len) };
            let end = bytes.iter().position(|&b| b == 0)?;
            return Some(String::from_utf8_lossy(&bytes[..end]).into_owned());
        }
        read_probed(address)
    }
}

/// Reads a C string page by page through `process_vm_readv` on this process. Where the kernel
/// refuses the call itself (a seccomp filter), the address is trusted, as LLVM's runtime does.
fn read_probed(address: usize) -> Option<String> {
    let mut bytes = Vec::new();
    let mut at = address;
    while bytes.len() < MAX_LEN {
        let chunk = PAGE - at % PAGE;
        let start = bytes.len();
        bytes.resize(start + chunk, 0);
        let local = IoVec {
            base: bytes[start..].as_mut_ptr().cast(),
            len: chunk,
        };
        let remote = IoVec {
            base: at as *mut c_void,
            len: chunk,
        };
        // SAFETY: the kernel copies at most `chunk` bytes into our buffer of that size, and
        // reports an unreadable source instead of faulting.
        let read = unsafe { process_vm_readv(getpid(), &local, 1, &remote, 1, 0) };
        if read < 0 {
            let error = std::io::Error::last_os_error().raw_os_error();
            const EFAULT: i32 = 14;
            if error == Some(EFAULT) {
                return None;
            }
            // SAFETY: the call cannot be made here; the program's pointer is trusted.
            let name = unsafe { CStr::from_ptr(address as *const c_char) };
            return Some(name.to_string_lossy().into_owned());
        }
        bytes.truncate(start + read as usize);
        if let Some(end) = bytes[start..].iter().position(|&b| b == 0) {
            bytes.truncate(start + end);
            return Some(String::from_utf8_lossy(&bytes).into_owned());
        }
        if (read as usize) < chunk {
            return None;
        }
        at += chunk;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_strings_where_they_are_and_refuses_wild_addresses() {
        let memory = LoadedMemory::snapshot();
        let literal = c"__omp_offloading_fe00_1_main_l3";
        assert_eq!(
            memory.c_string(literal.as_ptr() as usize).as_deref(),
            Some("__omp_offloading_fe00_1_main_l3")
        );
        // On the heap: read through the kernel.
        let heap = std::ffi::CString::new("g_table").unwrap();
        assert_eq!(
            memory.c_string(heap.as_ptr() as usize).as_deref(),
            Some("g_table")
        );
        // Nothing mapped there.
        assert_eq!(memory.c_string(0x10), None);
        assert_eq!(memory.c_string(0x7fff_dead_0000_0000usize), None);
    }
}
