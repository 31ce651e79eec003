//! The parallel arrays of a mapping call (`args_base`, `args`, `arg_sizes`, `arg_types`,
//! `arg_mappers`) read into [`MapArg`] values.

use super::map_type::MapType;
use std::ffi::c_void;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MapArg {
    /// Base address (the variable, or the pointer for array sections).
    pub base: usize,
    /// First byte mapped.
    pub begin: usize,
    pub size: u64,
    pub map_type: MapType,
    /// A user-defined mapper was given.
    pub has_mapper: bool,
}

/// Reads `count` mapping arguments; null arrays read as zeros.
///
/// # Safety
/// Each non-null array must hold `count` elements.
pub unsafe fn read_map_args(
    count: i32,
    bases: *const *mut c_void,
    begins: *const *mut c_void,
    sizes: *const i64,
    types: *const i64,
    mappers: *const *const c_void,
) -> Vec<MapArg> {
    let count = count.max(0) as usize;
    // SAFETY (all reads): index < count and the arrays hold `count` elements (caller's promise).
    let at = |p: *const i64, i: usize| if p.is_null() { 0 } else { unsafe { *p.add(i) } };
    let ptr_at = |p: *const *mut c_void, i: usize| {
        if p.is_null() {
            0
        } else {
            unsafe { *p.add(i) as usize }
        }
    };
    (0..count)
        .map(|i| MapArg {
            base: ptr_at(bases, i),
            begin: ptr_at(begins, i),
            size: at(sizes, i).max(0) as u64,
            map_type: MapType(at(types, i)),
            has_mapper: !mappers.is_null() && unsafe { !(*mappers.add(i)).is_null() },
        })
        .collect()
}

/// One line per argument for debug output: `begin (size bytes, type 0x..)`.
pub fn describe(args: &[MapArg]) -> String {
    let parts: Vec<String> = args
        .iter()
        .map(|a| {
            format!(
                "{:#x} ({} bytes, base {:#x}, type {:#x})",
                a.begin, a.size, a.base, a.map_type.0
            )
        })
        .collect();
    parts.join(", ")
}
