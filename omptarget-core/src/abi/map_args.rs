//! The parallel arrays of a mapping call (`args_base`, `args`, `arg_sizes`, `arg_types`,
//! `arg_names`, `arg_mappers`) read into [`MapArg`] values.

use super::map_type::MapType;
use std::ffi::c_void;

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct MapArg {
    /// Base address (the variable, or the pointer for array sections).
    pub base: usize,
    /// First byte mapped.
    pub begin: usize,
    /// Bytes mapped; for `NON_CONTIG` entries, the number of dimensions.
    pub size: u64,
    pub map_type: MapType,
    /// The compiler's `map_var_info_t` string (0: none), for diagnostics.
    pub name: usize,
    /// A user-defined mapper function (`declare mapper`), 0 when none.
    pub mapper: usize,
}

/// A construct's map arguments; most constructs have a few, kept inline (no allocation).
pub(crate) type MapArgs = smallvec::SmallVec<[MapArg; 4]>;

/// Reads `count` mapping arguments into `args`; null arrays read as zeros. Filled in place:
/// returned, the inline arguments (some 200 bytes) were copied.
///
/// # Safety
/// Each non-null array must hold `count` elements.
#[allow(clippy::too_many_arguments)] // the compiler's six arrays, their count, and the output
pub(crate) unsafe fn read_map_args(
    args: &mut MapArgs,
    count: i32,
    bases: *const *mut c_void,
    begins: *const *mut c_void,
    sizes: *const i64,
    types: *const i64,
    names: *const *const c_void,
    mappers: *const *const c_void,
) {
    let count = count.max(0) as usize;
    if count == 0 {
        // Regions without captures are common; collecting nothing still costs a reservation.
        return;
    }
    let at = |p: *const i64, i: usize| {
        if p.is_null() {
            0
        } else {
            // SAFETY: index < count and the arrays hold `count` elements (caller's promise).
            unsafe { *p.add(i) }
        }
    };
    let ptr_at = |p: *const *mut c_void, i: usize| {
        if p.is_null() {
            0
        } else {
            // SAFETY: as above.
            unsafe { *p.add(i) as usize }
        }
    };
    // Pushed one by one: `collect` into a SmallVec measured about 60 instructions more per
    // construct (callgrind, `bench/programs/mappings.c`).
    if count > args.inline_size() {
        args.reserve_exact(count);
    }
    for i in 0..count {
        args.push(MapArg {
            base: ptr_at(bases, i),
            begin: ptr_at(begins, i),
            size: at(sizes, i).max(0) as u64,
            map_type: MapType(at(types, i)),
            name: ptr_at(names as *const *mut c_void, i),
            mapper: ptr_at(mappers as *const *mut c_void, i),
        });
    }
}

/// One dimension of a non-contiguous `target update` (`__tgt_target_non_contig`): elements
/// `offset..offset+count`, each `stride` bytes apart.
#[repr(C)]
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct NonContigDim {
    pub offset: u64,
    pub count: u64,
    pub stride: u64,
}

/// The dimension descriptors of a `NON_CONTIG` argument (`begin` points at them, `size` is
/// their count).
///
/// # Safety
/// `arg.begin` must point to `arg.size` descriptors.
pub(crate) unsafe fn non_contig_dims(arg: &MapArg) -> Vec<NonContigDim> {
    if arg.begin == 0 {
        return Vec::new();
    }
    // SAFETY: caller's promise.
    unsafe { std::slice::from_raw_parts(arg.begin as *const NonContigDim, arg.size as usize) }
        .to_vec()
}

/// One line per argument for debug output: `begin (size bytes, type 0x..)`.
pub(crate) fn describe(args: &[MapArg]) -> String {
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
