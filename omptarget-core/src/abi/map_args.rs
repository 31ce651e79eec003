//! The parallel arrays of a mapping call (`args_base`, `args`, `arg_sizes`, `arg_types`,
//! `arg_names`, `arg_mappers`) read into [`MapArg`] values.

use super::map_type::MapType;
use super::source_location::VarName;
use std::ffi::c_void;

/// The signature clang gives the functions it generates for `declare mapper`.
pub(crate) type MapperFunction = unsafe extern "C" fn(
    handle: *mut c_void,
    base: *mut c_void,
    begin: *mut c_void,
    size: i64,
    map_type: i64,
    name: *mut c_void,
);

/// A user-defined mapper, as the compiler passes it in `arg_mappers`.
#[derive(Copy, Clone, Debug)]
pub(crate) struct Mapper(MapperFunction);

// Compared by address, for tests of argument reading.
impl PartialEq for Mapper {
    fn eq(&self, other: &Mapper) -> bool {
        self.0 as usize == other.0 as usize
    }
}
impl Eq for Mapper {}

impl Mapper {
    /// # Safety
    /// `function` must be null or a function of clang's mapper signature.
    unsafe fn from_compiler(function: *const c_void) -> Option<Mapper> {
        if function.is_null() {
            return None;
        }
        // SAFETY: a non-null function pointer of this signature (caller's promise).
        Some(Mapper(unsafe {
            std::mem::transmute::<*const c_void, MapperFunction>(function)
        }))
    }

    /// Runs the mapper on one list item; it reports the pieces through `handle`.
    pub(crate) fn run(
        self,
        handle: *mut c_void,
        base: usize,
        begin: usize,
        size: u64,
        map_type: MapType,
        name: VarName,
    ) {
        // SAFETY: a compiler-generated mapper (`from_compiler`'s contract) called as clang's
        // code calls it: with the runtime's component handle and the list item's arguments.
        unsafe {
            (self.0)(
                handle,
                base as *mut c_void,
                begin as *mut c_void,
                size as i64,
                map_type.0,
                name.as_ptr(),
            )
        }
    }
}

/// One list item of a construct. Made from the compiler's arguments (or a mapper's pieces),
/// so `begin..begin + size` is the item's host storage, which OpenMP requires to stay valid
/// while the construct runs: the copies of its data rely on that.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct MapArg {
    /// Base address (the variable, or the pointer for array sections).
    pub base: usize,
    /// First byte mapped.
    pub begin: usize,
    /// Bytes mapped; for `NON_CONTIG` entries, the number of dimensions.
    pub size: u64,
    pub map_type: MapType,
    /// The variable's name, for diagnostics.
    pub name: VarName,
    /// The list item's user-defined mapper (`declare mapper`), if any.
    pub mapper: Option<Mapper>,
}

/// A construct's map arguments; most constructs have a few, kept inline (no allocation).
pub(crate) type MapArgs = smallvec::SmallVec<[MapArg; 4]>;

/// Reads `count` mapping arguments into `args`; null arrays read as zeros. Filled in place:
/// returned, the inline arguments (some 200 bytes) were copied.
///
/// # Safety
/// Each non-null array must hold `count` elements, as the compiler passes them: names null or
/// `map_var_info_t` strings, mappers null or mapper functions.
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
            // SAFETY: the compiler's name and mapper of this argument (caller's promise).
            name: unsafe { VarName::from_compiler(ptr_at(names as *const *mut c_void, i) as _) },
            // SAFETY: as above.
            mapper: unsafe { Mapper::from_compiler(ptr_at(mappers as *const *mut c_void, i) as _) },
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
