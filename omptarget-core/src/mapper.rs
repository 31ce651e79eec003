//! User-defined mappers (`declare mapper`). The compiler turns each mapper into a function that
//! reports the pieces of one list item through `__tgt_push_mapper_component`; the runtime then
//! maps those pieces in place of the item, as LLVM's `targetDataMapper` does.

use crate::abi::map_args::MapArg;
use crate::abi::map_type::MapType;
use std::ffi::c_void;

/// The signature clang gives mapper functions.
type MapperFunction = unsafe extern "C" fn(
    handle: *mut c_void,
    base: *mut c_void,
    begin: *mut c_void,
    size: i64,
    map_type: i64,
    name: *mut c_void,
);

/// The pieces one mapper call reports; its address is the `rt_mapper_handle`.
#[derive(Default)]
pub struct MapperComponents {
    pub components: Vec<MapArg>,
}

impl MapperComponents {
    pub fn push(&mut self, base: usize, begin: usize, size: i64, map_type: i64, name: usize) {
        self.components.push(MapArg {
            base,
            begin,
            size: size.max(0) as u64,
            map_type: MapType(map_type),
            name,
            mapper: 0,
        });
    }
}

/// Runs the mapper of `arg` and returns the pieces to map instead of it. Nested mappers are
/// called by the generated function itself, so the pieces carry no mappers.
pub fn expand(arg: &MapArg) -> Vec<MapArg> {
    let mut components = MapperComponents::default();
    // SAFETY: `arg.mapper` is the address of a compiler-generated mapper function (the
    // program's map arguments say so); the handle lives for the call.
    unsafe {
        let function = std::mem::transmute::<usize, MapperFunction>(arg.mapper);
        function(
            &mut components as *mut MapperComponents as *mut c_void,
            arg.base as *mut c_void,
            arg.begin as *mut c_void,
            arg.size as i64,
            arg.map_type.0,
            arg.name as *mut c_void,
        );
    }
    log::debug!(
        "mapper {:#x} gave {} components",
        arg.mapper,
        components.components.len()
    );
    components.components
}
