//! `target data`, `target enter/exit data` and `target update`: the
//! `__tgt_target_data_{begin,end,update}` families, with and without mappers and `nowait`.

use super::guard;
use crate::abi::map_args::read_map_args;
use crate::abi::source_location::Ident;
use crate::data_ops;
use crate::error::{OffloadError, Result};
use crate::queue::ConstructQueue;
use crate::runtime::{Runtime, Target};
use std::ffi::c_void;

#[derive(Copy, Clone, Debug)]
enum DataOp {
    Begin,
    End,
    Update,
}

#[allow(clippy::too_many_arguments)]
fn data_construct(
    op: DataOp,
    loc: *const Ident,
    device_id: i64,
    arg_num: i32,
    bases: *mut *mut c_void,
    args: *mut *mut c_void,
    sizes: *const i64,
    types: *const i64,
    mappers: *const *const c_void,
) {
    let runtime = Runtime::get();
    let Target::Device(device) = runtime.target(device_id, loc) else {
        return; // host data needs no mapping
    };
    // SAFETY: the compiler passes `arg_num` elements in each array.
    let map_args = unsafe { read_map_args(arg_num, bases, args, sizes, types, mappers) };
    log::debug!(
        "{op:?} on device {}: {}",
        device.id,
        crate::abi::map_args::describe(&map_args)
    );
    let outcome: Result<()> = runtime.prepare(device).and_then(|_| {
        let mut queue = ConstructQueue::new(device)?;
        match op {
            DataOp::Begin => {
                for (index, device_base) in data_ops::begin(&mut queue, &map_args)? {
                    // SAFETY: `index` < arg_num; `use_device_ptr` results go back into args_base.
                    unsafe { *bases.add(index) = device_base as *mut c_void };
                }
            }
            DataOp::End => data_ops::end(&mut queue, &map_args)?,
            DataOp::Update => data_ops::update(&mut queue, &map_args)?,
        }
        queue.finish()
    });
    if let Err(e) = outcome {
        let what = match op {
            DataOp::Begin => "mapping data to the device",
            DataOp::End => "unmapping data from the device",
            DataOp::Update => "updating data",
        };
        runtime.report_failure(&OffloadError::new(format!("{what} failed: {e}")), loc);
    }
}

macro_rules! data_entry_points {
    ($op:expr, $plain:ident, $plain_nowait:ident, $mapper:ident, $mapper_nowait:ident) => {
        #[no_mangle]
        pub extern "C" fn $plain(
            device_id: i64,
            arg_num: i32,
            bases: *mut *mut c_void,
            args: *mut *mut c_void,
            sizes: *const i64,
            types: *const i64,
        ) {
            guard(stringify!($plain), (), || {
                data_construct(
                    $op,
                    std::ptr::null(),
                    device_id,
                    arg_num,
                    bases,
                    args,
                    sizes,
                    types,
                    std::ptr::null(),
                )
            })
        }

        #[no_mangle]
        pub extern "C" fn $plain_nowait(
            device_id: i64,
            arg_num: i32,
            bases: *mut *mut c_void,
            args: *mut *mut c_void,
            sizes: *const i64,
            types: *const i64,
            _dep_num: i32,
            _deps: *mut c_void,
            _noalias_num: i32,
            _noalias: *mut c_void,
        ) {
            guard(stringify!($plain_nowait), (), || {
                data_construct(
                    $op,
                    std::ptr::null(),
                    device_id,
                    arg_num,
                    bases,
                    args,
                    sizes,
                    types,
                    std::ptr::null(),
                )
            })
        }

        #[no_mangle]
        pub extern "C" fn $mapper(
            loc: *const Ident,
            device_id: i64,
            arg_num: i32,
            bases: *mut *mut c_void,
            args: *mut *mut c_void,
            sizes: *const i64,
            types: *const i64,
            _names: *const c_void,
            mappers: *const *const c_void,
        ) {
            guard(stringify!($mapper), (), || {
                data_construct(
                    $op, loc, device_id, arg_num, bases, args, sizes, types, mappers,
                )
            })
        }

        /// libomp runs `nowait` data constructs inside a deferred task, so they complete here.
        #[no_mangle]
        pub extern "C" fn $mapper_nowait(
            loc: *const Ident,
            device_id: i64,
            arg_num: i32,
            bases: *mut *mut c_void,
            args: *mut *mut c_void,
            sizes: *const i64,
            types: *const i64,
            _names: *const c_void,
            mappers: *const *const c_void,
            _dep_num: i32,
            _deps: *mut c_void,
            _noalias_num: i32,
            _noalias: *mut c_void,
        ) {
            guard(stringify!($mapper_nowait), (), || {
                data_construct(
                    $op, loc, device_id, arg_num, bases, args, sizes, types, mappers,
                )
            })
        }
    };
}

data_entry_points!(
    DataOp::Begin,
    __tgt_target_data_begin,
    __tgt_target_data_begin_nowait,
    __tgt_target_data_begin_mapper,
    __tgt_target_data_begin_nowait_mapper
);
data_entry_points!(
    DataOp::End,
    __tgt_target_data_end,
    __tgt_target_data_end_nowait,
    __tgt_target_data_end_mapper,
    __tgt_target_data_end_nowait_mapper
);
data_entry_points!(
    DataOp::Update,
    __tgt_target_data_update,
    __tgt_target_data_update_nowait,
    __tgt_target_data_update_mapper,
    __tgt_target_data_update_nowait_mapper
);
