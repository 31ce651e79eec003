//! Pageable host memory handed to a kernel on a device that cannot reach it
//! (`OMPTARGET_EMU_PROFILE=h100`). An H100 without HMM has no translation for the host's
//! pageable pages: the kernel's first access to one stops it with `CUDA_ERROR_ILLEGAL_ADDRESS`.
//! Kernels here run on the CPU, where such memory is in reach, so the launch judges its
//! arguments instead, and a kernel given pageable memory faults (see `faults::unreachable`).
//!
//! The rule. The driver does not know which parameters are pointers: a cubin records only each
//! parameter's offset and size (an OpenMP kernel's are all 8-byte values, pointers and
//! by-value scalars alike) and the twin carries no types. So every 8-byte parameter value is
//! judged, and it is pageable host memory when it lies
//! - in no range the driver knows (the address book: device and managed allocations, module
//!   variables, mapped virtual memory, page-locked host memory allocated or registered), in no
//!   device's reserved range and in no `cuMemAddressReserve` reservation; and
//! - inside a readable mapping of the process (`/proc/self/maps`: heap, stacks, the program's
//!   and libraries' globals, anonymous mappings), other than the kernels' twin images (device
//!   code and variables) and the kernel's vdso pages.
//!
//! A whole malloc'd, stack or global array passed to a kernel (a `requires
//! unified_shared_memory` program) faults. A mapped section's kernel argument is its array's
//! base pointer, which lies at or before the section, maybe outside any allocation: for device
//! memory it never faults, since the devices' ranges are reserved at 32 TiB and up, below
//! every mapping of an x86-64 PIE program (executable, heap, libraries, stacks: 85 TiB and
//! up), and a base would need an offset of some 32 TiB to reach the low mappings of a non-PIE
//! executable (4 MiB). Where a device's range could not be placed there, the check is off for
//! the process (one line on stderr). What it cannot tell: a by-value scalar whose bits equal an
//! address of host memory, and a pointer the kernel never dereferences, fault as well.

use crate::driver::Driver;
use omptarget_emu_support::process_memory;
use std::ops::Range;
use std::sync::OnceLock;

/// The name of a twin image's in-memory file (`offload_image::twin::load_for`).
const TWIN_FILE: &str = "omptarget-emu-twin";

/// The first argument of `arguments` that points into pageable host memory, if any.
pub fn first_pageable(driver: &Driver, arguments: &[usize]) -> Option<usize> {
    if !placed_below_the_host(driver) {
        return None;
    }
    let unknown: Vec<usize> = arguments
        .iter()
        .copied()
        .filter(|&value| value != 0 && !known_to_the_driver(driver, value))
        .collect();
    if unknown.is_empty() {
        return None;
    }
    let host = host_mappings();
    unknown
        .into_iter()
        .find(|value| host.iter().any(|range| range.contains(value)))
}

fn known_to_the_driver(driver: &Driver, address: usize) -> bool {
    driver.book.find(address, 0).is_some()
        || driver.devices.iter().any(|d| d.memory.contains(address))
        || crate::vmm::reserved(address)
}

/// Whether every device's range is at its hint (see the module's rule); said once if not.
fn placed_below_the_host(driver: &Driver) -> bool {
    static PLACED: OnceLock<bool> = OnceLock::new();
    *PLACED.get_or_init(|| {
        let placed = driver.devices.iter().all(|d| d.memory.at_hint());
        if !placed {
            eprintln!(
                "omptarget-emu (CUDA): a device's memory range is not at its usual address; \
                 kernels given pageable host memory are not judged in this process"
            );
        }
        placed
    })
}

/// The readable mappings of the process that are host memory.
fn host_mappings() -> Vec<Range<usize>> {
    process_memory::mappings()
        .into_iter()
        .filter(is_host_memory)
        .map(|m| m.start..m.end)
        .collect()
}

/// Whether a mapping is host memory: readable, and neither a twin image (device code and
/// variables) nor the kernel's vdso pages.
fn is_host_memory(m: &process_memory::Mapping) -> bool {
    let device_side = m.path.contains(TWIN_FILE)
        || matches!(
            m.path.as_str(),
            "[vdso]" | "[vvar]" | "[vvar_vclock]" | "[vsyscall]"
        );
    m.readable && !device_side
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_lines_are_read_as_host_memory_or_not() {
        let host_mapping = |line: &str| {
            process_memory::parse(line)
                .filter(is_host_memory)
                .map(|m| m.start..m.end)
        };
        assert_eq!(
            host_mapping("55d0a0000000-55d0a0021000 rw-p 00000000 00:00 0    [heap]"),
            Some(0x55d0a0000000..0x55d0a0021000)
        );
        assert_eq!(
            host_mapping("7ffc10000000-7ffc10021000 rw-p 00000000 00:00 0"),
            Some(0x7ffc10000000..0x7ffc10021000)
        );
        assert_eq!(
            host_mapping("200000000000-200400000000 ---p 00000000 00:00 0"),
            None,
            "no access"
        );
        let twin = format!(
            "7f0000000000-7f0000001000 rw-p 00001000 00:01 42   /memfd:{}3 (deleted)",
            TWIN_FILE
        );
        assert_eq!(host_mapping(&twin), None, "a twin image is device memory");
        assert_eq!(
            host_mapping("7ffff7fc1000-7ffff7fc3000 r-xp 00000000 00:00 0   [vdso]"),
            None
        );
    }

    #[test]
    fn this_process_s_heap_and_stack_are_host_memory() {
        let heap = Box::new(7u64);
        let stack = 7u64;
        let host = host_mappings();
        for address in [&*heap as *const u64 as usize, &stack as *const u64 as usize] {
            assert!(host.iter().any(|r| r.contains(&address)), "{address:#x}");
        }
        assert!(!host.iter().any(|r| r.contains(&0x2000_0000_0000)));
    }
}
