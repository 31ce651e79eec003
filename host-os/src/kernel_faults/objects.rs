//! The executable segments of a loaded object, found from an address in it (at load time,
//! outside the signal handler).

use std::ops::Range;

struct Search {
    address: usize,
    found: Vec<Range<usize>>,
}

/// The executable `PT_LOAD` segments of the loaded object whose segments hold `address`; none
/// when no loaded object holds it.
pub fn executable_ranges(address: usize) -> Vec<Range<usize>> {
    extern "C" fn visit(
        info: *mut libc::dl_phdr_info,
        _size: usize,
        data: *mut libc::c_void,
    ) -> libc::c_int {
        // SAFETY: dl_iterate_phdr passes a valid record, and `data` is the `Search` below.
        let (info, search) = unsafe { (&*info, &mut *(data as *mut Search)) };
        if info.dlpi_phdr.is_null() {
            return 0;
        }
        // SAFETY: the loader's record holds `dlpi_phnum` program headers at `dlpi_phdr`.
        let headers =
            unsafe { std::slice::from_raw_parts(info.dlpi_phdr, info.dlpi_phnum as usize) };
        let segment = |h: &libc::Elf64_Phdr| {
            let start = (info.dlpi_addr as usize).wrapping_add(h.p_vaddr as usize);
            start..start.wrapping_add(h.p_memsz as usize)
        };
        let loads = headers.iter().filter(|h| h.p_type == libc::PT_LOAD);
        if !loads.clone().any(|h| segment(h).contains(&search.address)) {
            return 0;
        }
        search.found = loads
            .filter(|h| h.p_flags & libc::PF_X != 0)
            .map(segment)
            .collect();
        1
    }
    let mut search = Search {
        address,
        found: Vec::new(),
    };
    // SAFETY: the callback only reads the loader's records and writes `search`, which outlives
    // the call.
    unsafe { libc::dl_iterate_phdr(Some(visit), &mut search as *mut Search as *mut libc::c_void) };
    search.found
}
