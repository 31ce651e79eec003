//! The two calls user-defined mapper functions make back into the runtime.

use super::guard;
use crate::mapper::MapperComponents;
use std::ffi::c_void;

/// How many components the mapper call has reported so far (the generated code numbers the
/// `MEMBER_OF` fields of nested pieces from it).
#[no_mangle]
pub extern "C" fn __tgt_mapper_num_components(handle: *mut c_void) -> i64 {
    guard("__tgt_mapper_num_components", 0, || {
        if handle.is_null() {
            return 0;
        }
        // SAFETY: the handle is the `MapperComponents` the runtime passed to the mapper.
        let components = unsafe { &*(handle as *const MapperComponents) };
        components.len() as i64
    })
}

#[no_mangle]
pub extern "C" fn __tgt_push_mapper_component(
    handle: *mut c_void,
    base: *mut c_void,
    begin: *mut c_void,
    size: i64,
    map_type: i64,
    name: *mut c_void,
) {
    guard("__tgt_push_mapper_component", (), || {
        if handle.is_null() {
            return crate::observe::logging::failure_message(
                "__tgt_push_mapper_component called without a mapper handle",
            );
        }
        // SAFETY: the handle is the `MapperComponents` the runtime passed to the mapper, used
        // by the one thread running that mapper.
        let components = unsafe { &mut *(handle as *mut MapperComponents) };
        components.push(base as usize, begin as usize, size, map_type, name as usize);
    })
}
