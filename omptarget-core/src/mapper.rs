//! User-defined mappers (`declare mapper`). The compiler turns each mapper into a function that
//! reports the pieces of one list item through `__tgt_push_mapper_component`; the runtime then
//! maps those pieces in place of the item, as LLVM's `targetDataMapper` does.

use crate::abi::map_args::{MapArg, Mapper};
use crate::abi::map_type::MapType;
use crate::abi::source_location::VarName;
use std::ffi::c_void;

/// One reported piece, laid out as LLVM's `MapComponentInfoTy`.
#[repr(C)]
#[derive(Copy, Clone)]
struct Component {
    base: usize,
    begin: usize,
    size: i64,
    map_type: i64,
    name: usize,
}

/// The pieces one mapper call reports; its address is the `rt_mapper_handle`. Laid out as
/// LLVM's `MapperComponentsTy` (a libstdc++ `std::vector<MapComponentInfoTy>`: begin, end and
/// capacity pointers over malloc'd storage), because programs and LLVM's own tests pass such
/// a vector as the handle and destroy it themselves.
#[repr(C)]
pub(crate) struct MapperComponents {
    begin: *mut Component,
    end: *mut Component,
    capacity_end: *mut Component,
}

extern "C" {
    fn realloc(ptr: *mut std::ffi::c_void, size: usize) -> *mut std::ffi::c_void;
    fn free(ptr: *mut std::ffi::c_void);
}

impl Default for MapperComponents {
    fn default() -> Self {
        MapperComponents {
            begin: std::ptr::null_mut(),
            end: std::ptr::null_mut(),
            capacity_end: std::ptr::null_mut(),
        }
    }
}

impl MapperComponents {
    pub(crate) fn len(&self) -> usize {
        if self.begin.is_null() {
            return 0;
        }
        // SAFETY: begin and end delimit one allocation (the vector invariant).
        unsafe { self.end.offset_from(self.begin) as usize }
    }

    // Only the tests ask; the runtime reads `len`.
    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub(crate) fn push(
        &mut self,
        base: usize,
        begin: usize,
        size: i64,
        map_type: i64,
        name: usize,
    ) {
        if self.end == self.capacity_end {
            self.grow();
        }
        // SAFETY: after `grow`, end < capacity_end inside the allocation.
        unsafe {
            self.end.write(Component {
                base,
                begin,
                size,
                map_type,
                name,
            });
            self.end = self.end.add(1);
        }
    }

    fn grow(&mut self) {
        let len = self.len();
        let capacity = (len * 2).max(8);
        // SAFETY: `begin` is null or this vector's malloc'd storage; realloc keeps the
        // elements, and the vector's owner frees it with free (operator delete).
        let storage = unsafe {
            realloc(
                self.begin as *mut std::ffi::c_void,
                capacity * std::mem::size_of::<Component>(),
            )
        } as *mut Component;
        assert!(!storage.is_null(), "out of memory for mapper components");
        self.begin = storage;
        // SAFETY: both offsets lie within the new allocation.
        unsafe {
            self.end = storage.add(len);
            self.capacity_end = storage.add(capacity);
        }
    }

    /// The pieces as map arguments. Their names were pushed by the compiler's mapper
    /// functions (`__tgt_push_mapper_component`), or are null.
    pub(crate) fn to_args(&self) -> Vec<MapArg> {
        if self.begin.is_null() {
            return Vec::new();
        }
        // SAFETY: begin..end are initialised components (written by `push`).
        let components = unsafe { std::slice::from_raw_parts(self.begin, self.len()) };
        components
            .iter()
            .map(|c| MapArg {
                base: c.base,
                begin: c.begin,
                size: c.size.max(0) as u64,
                map_type: MapType(c.map_type),
                // SAFETY: a name the compiler's mapper pushed (see above).
                name: unsafe { VarName::from_compiler(c.name as *const c_void) },
                mapper: None,
            })
            .collect()
    }
}

impl Drop for MapperComponents {
    fn drop(&mut self) {
        if !self.begin.is_null() {
            // SAFETY: storage from realloc in `grow`, freed once.
            unsafe { free(self.begin as *mut std::ffi::c_void) };
        }
    }
}

/// Runs the mapper of `arg` and returns the pieces to map instead of it. Nested mappers are
/// called by the generated function itself, so the pieces carry no mappers.
pub(crate) fn expand(arg: &MapArg, mapper: Mapper) -> Vec<MapArg> {
    let mut components = MapperComponents::default();
    mapper.run(
        &mut components as *mut MapperComponents as *mut c_void,
        arg.base,
        arg.begin,
        arg.size,
        arg.map_type,
        arg.name,
    );
    log::debug!("mapper {mapper:?} gave {} components", components.len());
    components.to_args()
}

#[test]
fn components_grow_and_convert() {
    let mut c = MapperComponents::default();
    assert!(c.is_empty());
    for i in 0..20 {
        c.push(i, i + 1, 4, 0x3, 0);
    }
    assert_eq!(c.len(), 20);
    let args = c.to_args();
    assert_eq!((args[19].base, args[19].begin, args[19].size), (19, 20, 4));
    assert_eq!(std::mem::size_of::<Component>(), 40);
}
