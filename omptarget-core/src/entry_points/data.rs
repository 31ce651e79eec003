//! `target data`, `target enter/exit data` and `target update`: the
//! `__tgt_target_data_{begin,end,update}` families, with and without mappers and `nowait`.

use super::guard;
use crate::abi::map_args::{read_map_args, MapArgs};
use crate::abi::source_location::Ident;
use crate::data_ops;
use crate::error::Result;
use crate::observe::ompt::{self, TargetKind};
use crate::queue::ConstructQueue;
use crate::runtime::{Runtime, Target};
use std::ffi::c_void;

#[derive(Copy, Clone, Debug)]
enum DataOp {
    Begin,
    End,
    Update,
}

impl DataOp {
    /// The construct as OMPT names it (`target data` reports as enter and exit data).
    fn tool_kind(self) -> TargetKind {
        match self {
            DataOp::Begin => TargetKind::EnterData,
            DataOp::End => TargetKind::ExitData,
            DataOp::Update => TargetKind::Update,
        }
    }

    /// LLVM's `LIBOMPTARGET_INFO` wording for the construct.
    fn region(self, nowait: bool) -> &'static str {
        match (self, nowait) {
            (DataOp::Begin, false) => "Entering OpenMP data region with being_mapper",
            (DataOp::Begin, true) => "Entering OpenMP data region with being_nowait_mapper",
            (DataOp::End, false) => "Exiting OpenMP data region with end_mapper",
            (DataOp::End, true) => "Exiting OpenMP data region with end_nowait_mapper",
            (DataOp::Update, false) => {
                "Updating data within the OpenMP data region with update_mapper"
            }
            (DataOp::Update, true) => {
                "Updating data within the OpenMP data region with update_nowait_mapper"
            }
        }
    }
}

/// The arrays of one data construct, as the compiler passes them.
struct DataArgs {
    arg_num: i32,
    bases: *mut *mut c_void,
    args: *mut *mut c_void,
    sizes: *const i64,
    types: *const i64,
    names: *const *const c_void,
    mappers: *const *const c_void,
}

fn data_construct(op: DataOp, nowait: bool, loc: *const Ident, device_id: i64, a: DataArgs) {
    let runtime = Runtime::get();
    let kind = match op {
        DataOp::Begin => "target data begin",
        DataOp::End => "target data end",
        DataOp::Update => "target update",
    };
    let _span = super::construct_span(kind, loc, device_id);
    let Target::Device(device) = runtime.target(device_id, loc) else {
        return; // host data needs no mapping
    };
    // SAFETY: the compiler passes `arg_num` addresses in `args`.
    unsafe { super::prefetch_mappings(device, a.arg_num.max(0) as usize, a.args as *const _) };
    let bases = a.bases;
    let mut map_args = MapArgs::new();
    // SAFETY: the compiler passes `arg_num` elements in each array.
    unsafe {
        read_map_args(
            &mut map_args,
            a.arg_num,
            a.bases,
            a.args,
            a.sizes,
            a.types,
            a.names,
            a.mappers,
        )
    };
    if crate::observe::info::enabled(crate::observe::info::KERNEL_ARGS) {
        crate::observe::info::kernel_arguments(device.id, loc, op.region(nowait), &map_args);
    }
    log::debug!(
        "{op:?} on device {}: {}",
        device.id,
        crate::abi::map_args::describe(&map_args)
    );
    if nowait {
        crate::host_openmp::note_nowait_construct();
    }
    // A `nowait` construct runs in its own task (the compiler makes one); as for target
    // regions, work still running at its end is left to the task's queries, so that the
    // helper thread runs other tasks meanwhile (LLVM's `TaskAsyncInfoWrapperTy`). Not with a
    // tool attached (its events must fall inside the construct) nor where there is nothing to
    // poll for.
    let defer = if nowait && !device.queues_complete_on_submission() && ompt::tool().is_none() {
        crate::host_openmp::target_task_handle_slot()
    } else {
        None
    };
    let outcome: Result<()> = runtime.prepare(device).and_then(|_| {
        let _construct = ompt::ConstructScope::begin(op.tool_kind(), device.id);
        let mut queue = ConstructQueue::new(device);
        match op {
            DataOp::Begin => {
                let mut returned = data_ops::DeviceBases::new();
                data_ops::begin(&mut queue, &map_args, &mut returned)?;
                // By reference: SmallVec's owning iterator costs more than the loop's body.
                for &(index, device_base) in returned.iter() {
                    // SAFETY: `index` < arg_num; `use_device_ptr` results go back into args_base.
                    unsafe { *bases.add(index) = device_base as *mut c_void };
                }
            }
            DataOp::End => data_ops::end(&mut queue, &map_args)?,
            DataOp::Update => data_ops::update(&mut queue, &map_args)?,
        }
        // Finished where it is: moving the queue (some 300 bytes) into `finish` copies it.
        // SAFETY: `defer` is libomp's handle slot of this construct's task, or None.
        unsafe { crate::nowait::finish_or_defer(&mut queue, defer, loc) }
    });
    match outcome {
        Ok(()) => runtime.construct_succeeded(loc),
        Err(e) => runtime.report_failure(&e, loc),
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
            // LLVM's plain forms are the mapper forms without names or mappers.
            $mapper(
                std::ptr::null(),
                device_id,
                arg_num,
                bases,
                args,
                sizes,
                types,
                std::ptr::null(),
                std::ptr::null(),
            )
        }

        #[no_mangle]
        pub extern "C" fn $plain_nowait(
            device_id: i64,
            arg_num: i32,
            bases: *mut *mut c_void,
            args: *mut *mut c_void,
            sizes: *const i64,
            types: *const i64,
            dep_num: i32,
            deps: *mut c_void,
            noalias_num: i32,
            noalias: *mut c_void,
        ) {
            $mapper_nowait(
                std::ptr::null(),
                device_id,
                arg_num,
                bases,
                args,
                sizes,
                types,
                std::ptr::null(),
                std::ptr::null(),
                dep_num,
                deps,
                noalias_num,
                noalias,
            )
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
            names: *const *const c_void,
            mappers: *const *const c_void,
        ) {
            guard(stringify!($mapper), (), || {
                data_construct(
                    $op,
                    false,
                    loc,
                    device_id,
                    DataArgs {
                        arg_num,
                        bases,
                        args,
                        sizes,
                        types,
                        names,
                        mappers,
                    },
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
            names: *const *const c_void,
            mappers: *const *const c_void,
            _dep_num: i32,
            _deps: *mut c_void,
            _noalias_num: i32,
            _noalias: *mut c_void,
        ) {
            guard(stringify!($mapper_nowait), (), || {
                data_construct(
                    $op,
                    true,
                    loc,
                    device_id,
                    DataArgs {
                        arg_num,
                        bases,
                        args,
                        sizes,
                        types,
                        names,
                        mappers,
                    },
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
