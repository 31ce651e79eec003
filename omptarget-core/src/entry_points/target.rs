//! Kernel launches: `__tgt_target_kernel` and the older `__tgt_target*` forms, which forward to it.

use super::{guard, OFFLOAD_FAIL, OFFLOAD_SUCCESS};
use crate::abi::kernel_args::{read_kernel_args, KernelArgsV1, KernelRequest};
use crate::abi::map_args::{read_map_args, MapArgs};
use crate::abi::source_location::Ident;
use crate::data_ops;
use crate::error::{OffloadError, Result};
use crate::observe::ompt::{self, TargetKind};
use crate::queue::ConstructQueue;
use crate::record_replay;
use crate::runtime::{Runtime, Target};
use plugin_api::LaunchConfig;
use std::cell::Cell;
use std::ffi::c_void;

thread_local! {
    /// Trip count pushed by `__kmpc_push_target_tripcount` for the next legacy launch.
    static PUSHED_TRIPCOUNT: Cell<u64> = const { Cell::new(0) };
}

/// `defer`: libomp's handle slot of the `nowait` task running the construct, where the
/// construct is left when its device work is still running at the end (`crate::nowait`).
fn launch(
    runtime: &Runtime,
    loc: *const Ident,
    region_id: usize,
    device: &'static crate::device::Device,
    request: &KernelRequest,
    defer: Option<*mut *mut c_void>,
) -> Result<()> {
    // SAFETY: `arg_ptrs` holds `num_args` addresses (read again by `read_map_args` below).
    unsafe { super::prefetch_mappings(device, request.num_args, request.arg_ptrs as *const _) };
    runtime.prepare(device)?;
    // Reported to a tool from here to the end of the construct, whatever its outcome.
    let _construct = ompt::ConstructScope::begin(TargetKind::Target, device.id);
    let kernel = device.kernel(region_id).ok_or_else(|| {
        let registry = runtime.registry.read().unwrap();
        OffloadError::new(device.missing_kernel_reason(&registry, region_id))
    })?;
    let mut args = MapArgs::new();
    // SAFETY: the arrays come from the compiler with `num_args` elements each.
    unsafe {
        read_map_args(
            &mut args,
            request.num_args as i32,
            request.arg_base_ptrs as *const *mut c_void,
            request.arg_ptrs as *const *mut c_void,
            request.arg_sizes,
            request.arg_types,
            request.arg_names,
            request.arg_mappers,
        )
    };
    if crate::observe::info::enabled(crate::observe::info::KERNEL_ARGS) {
        crate::observe::info::kernel_arguments(device.id, loc, "Entering OpenMP kernel", &args);
    }
    log::debug!(
        "launching kernel {region_id:#x} on device {} (KernelArgs v{}, teams {:?}, threads {:?}): {}",
        device.id,
        request.version,
        request.num_teams,
        request.thread_limit,
        crate::abi::map_args::describe(&args)
    );
    let mut queue = ConstructQueue::new(device);
    let before = |e: OffloadError| {
        e.with_context("Call to targetDataBegin failed, abort target.")
            .with_context("Failed to process data before launching the kernel.")
    };
    data_ops::begin(&mut queue, &args, &mut data_ops::DeviceBases::new()).map_err(before)?;
    let values = data_ops::kernel_arguments(&mut queue, &args).map_err(before)?;
    let config = LaunchConfig {
        num_teams: request.num_teams,
        thread_limit: request.thread_limit,
        dyn_shared_mem: request.dyn_cgroup_mem,
        tripcount: request.tripcount,
        kernel_args_version: request.version,
        flags: kernel.launch_flags(request.flags),
    };
    let recording = device.record_replay().filter(|r| r.is_recording());
    let recorded = match recording {
        Some(r) => Some(record_replay::record_inputs(
            r,
            device,
            queue.handle()?,
            region_id,
            &values,
            &config,
        )?),
        None => None,
    };
    {
        let _submit = ompt::Submit::begin(request.num_teams[0]);
        queue
            .launch(kernel.handle, &values, &config)
            .map_err(|e| e.with_context("Executing target region abort target."))?;
    }
    if let (Some(r), Some(name)) = (recording, &recorded) {
        record_replay::record_output(r, device, queue.handle()?, name)?;
    }
    data_ops::end(&mut queue, &args).map_err(|e| {
        e.with_context("Call to targetDataEnd failed, abort target.")
            .with_context("Failed to process data after launching the kernel.")
    })?;
    // SAFETY: `defer` is the running task's slot, taken by `target_kernel`.
    unsafe { crate::nowait::finish_or_defer(&mut queue, defer, loc) }
}

/// `nowait`: the construct may complete after returning (the `_nowait` entry point; the
/// compiler's NoWait flag, bit 0 of the kernel arguments' flags, says so as well).
fn target_kernel(
    loc: *const Ident,
    device_id: i64,
    num_teams: i32,
    thread_limit: i32,
    region: *mut c_void,
    args: *const KernelArgsV1,
    nowait: bool,
) -> i32 {
    let runtime = Runtime::get();
    let _span = super::construct_span("target", loc, device_id);
    let Target::Device(device) = runtime.target(device_id, loc) else {
        return OFFLOAD_FAIL; // the program runs its host version
    };
    // SAFETY: `args` is the compiler's KernelArgsTy (or null, which is refused).
    // (A match, not combinators: the request is read in place, never moved.)
    let outcome = match unsafe { read_kernel_args(args, num_teams, thread_limit) } {
        Err(e) => Err(OffloadError::new(e.to_string())),
        Ok(request) => {
            // With a tool attached, the construct completes in its task, so that all its
            // events fall between its begin and end on its thread (LLVM's deferred ends report
            // the last data operations after the construct's end, on another thread).
            // A device whose queues complete on submission has nothing left to poll for.
            let nowait = nowait || request.flags & NOWAIT_FLAG != 0;
            if nowait {
                crate::host_openmp::note_nowait_construct();
            }
            let deferrable =
                nowait && !device.queues_complete_on_submission() && ompt::tool().is_none();
            let defer = if deferrable {
                crate::host_openmp::target_task_handle_slot()
            } else {
                None
            };
            launch(runtime, loc, region as usize, device, &request, defer)
        }
    };
    match outcome {
        Ok(()) => {
            runtime.construct_succeeded(loc);
            OFFLOAD_SUCCESS
        }
        Err(e) => {
            runtime.report_failure(&e, loc);
            OFFLOAD_FAIL
        }
    }
}

/// Launches the kernel of a target region; non-zero means "run the host version".
#[no_mangle]
pub extern "C" fn __tgt_target_kernel(
    loc: *const Ident,
    device_id: i64,
    num_teams: i32,
    thread_limit: i32,
    host_ptr: *mut c_void,
    args: *const KernelArgsV1,
) -> i32 {
    guard("__tgt_target_kernel", OFFLOAD_FAIL, || {
        target_kernel(
            loc,
            device_id,
            num_teams,
            thread_limit,
            host_ptr,
            args,
            false,
        )
    })
}

/// `KernelArgsTy::Flags.NoWait`.
const NOWAIT_FLAG: u64 = 1;

/// The `nowait` form: libomp runs it inside a task, which it runs again to poll
/// `__tgt_target_nowait_query` when the construct is still running at the end.
#[no_mangle]
pub extern "C" fn __tgt_target_kernel_nowait(
    loc: *const Ident,
    device_id: i64,
    num_teams: i32,
    thread_limit: i32,
    host_ptr: *mut c_void,
    args: *const KernelArgsV1,
    _dep_num: i32,
    _dep_list: *mut c_void,
    _noalias_dep_num: i32,
    _noalias_dep_list: *mut c_void,
) -> i32 {
    guard("__tgt_target_kernel_nowait", OFFLOAD_FAIL, || {
        target_kernel(
            loc,
            device_id,
            num_teams,
            thread_limit,
            host_ptr,
            args,
            true,
        )
    })
}

/// The legacy entry points describe the launch with separate arguments: build a version 1 block.
#[allow(clippy::too_many_arguments)]
fn legacy(
    loc: *const Ident,
    device_id: i64,
    host_ptr: *mut c_void,
    arg_num: i32,
    bases: *mut *mut c_void,
    args: *mut *mut c_void,
    sizes: *const i64,
    types: *const i64,
    mappers: *const *const c_void,
    num_teams: i32,
    thread_limit: i32,
) -> i32 {
    let block = KernelArgsV1 {
        version: 1,
        num_args: arg_num.max(0) as u32,
        arg_base_ptrs: bases,
        arg_ptrs: args,
        arg_sizes: sizes,
        arg_types: types,
        arg_names: std::ptr::null(),
        arg_mappers: mappers,
        tripcount: PUSHED_TRIPCOUNT.try_with(|t| t.replace(0)).unwrap_or(0),
        flags: 0,
    };
    // -1 teams (no teams construct) is read by read_kernel_args as one team.
    target_kernel(
        loc,
        device_id,
        num_teams.max(-1),
        thread_limit.max(0),
        host_ptr,
        &block,
        false,
    )
}

// The older entry points, each forwarding to `legacy`. `names` are debug names, unused here;
// the dependence lists of the `nowait` forms were already honoured by libomp's task.

#[no_mangle]
pub extern "C" fn __tgt_target(
    device_id: i64,
    host_ptr: *mut c_void,
    arg_num: i32,
    bases: *mut *mut c_void,
    args: *mut *mut c_void,
    sizes: *const i64,
    types: *const i64,
) -> i32 {
    guard("__tgt_target", OFFLOAD_FAIL, || {
        legacy(
            std::ptr::null(),
            device_id,
            host_ptr,
            arg_num,
            bases,
            args,
            sizes,
            types,
            std::ptr::null(),
            0,
            0,
        )
    })
}

#[no_mangle]
pub extern "C" fn __tgt_target_nowait(
    device_id: i64,
    host_ptr: *mut c_void,
    arg_num: i32,
    bases: *mut *mut c_void,
    args: *mut *mut c_void,
    sizes: *const i64,
    types: *const i64,
    _dep_num: i32,
    _deps: *mut c_void,
    _noalias_num: i32,
    _noalias: *mut c_void,
) -> i32 {
    guard("__tgt_target_nowait", OFFLOAD_FAIL, || {
        legacy(
            std::ptr::null(),
            device_id,
            host_ptr,
            arg_num,
            bases,
            args,
            sizes,
            types,
            std::ptr::null(),
            0,
            0,
        )
    })
}

#[no_mangle]
pub extern "C" fn __tgt_target_mapper(
    loc: *const Ident,
    device_id: i64,
    host_ptr: *mut c_void,
    arg_num: i32,
    bases: *mut *mut c_void,
    args: *mut *mut c_void,
    sizes: *const i64,
    types: *const i64,
    _names: *const c_void,
    mappers: *const *const c_void,
) -> i32 {
    guard("__tgt_target_mapper", OFFLOAD_FAIL, || {
        legacy(
            loc, device_id, host_ptr, arg_num, bases, args, sizes, types, mappers, 0, 0,
        )
    })
}

#[no_mangle]
pub extern "C" fn __tgt_target_nowait_mapper(
    loc: *const Ident,
    device_id: i64,
    host_ptr: *mut c_void,
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
) -> i32 {
    guard("__tgt_target_nowait_mapper", OFFLOAD_FAIL, || {
        legacy(
            loc, device_id, host_ptr, arg_num, bases, args, sizes, types, mappers, 0, 0,
        )
    })
}

#[no_mangle]
pub extern "C" fn __tgt_target_teams(
    device_id: i64,
    host_ptr: *mut c_void,
    arg_num: i32,
    bases: *mut *mut c_void,
    args: *mut *mut c_void,
    sizes: *const i64,
    types: *const i64,
    num_teams: i32,
    thread_limit: i32,
) -> i32 {
    guard("__tgt_target_teams", OFFLOAD_FAIL, || {
        legacy(
            std::ptr::null(),
            device_id,
            host_ptr,
            arg_num,
            bases,
            args,
            sizes,
            types,
            std::ptr::null(),
            num_teams,
            thread_limit,
        )
    })
}

#[no_mangle]
pub extern "C" fn __tgt_target_teams_nowait(
    device_id: i64,
    host_ptr: *mut c_void,
    arg_num: i32,
    bases: *mut *mut c_void,
    args: *mut *mut c_void,
    sizes: *const i64,
    types: *const i64,
    num_teams: i32,
    thread_limit: i32,
    _dep_num: i32,
    _deps: *mut c_void,
    _noalias_num: i32,
    _noalias: *mut c_void,
) -> i32 {
    guard("__tgt_target_teams_nowait", OFFLOAD_FAIL, || {
        legacy(
            std::ptr::null(),
            device_id,
            host_ptr,
            arg_num,
            bases,
            args,
            sizes,
            types,
            std::ptr::null(),
            num_teams,
            thread_limit,
        )
    })
}

#[no_mangle]
pub extern "C" fn __tgt_target_teams_mapper(
    loc: *const Ident,
    device_id: i64,
    host_ptr: *mut c_void,
    arg_num: i32,
    bases: *mut *mut c_void,
    args: *mut *mut c_void,
    sizes: *const i64,
    types: *const i64,
    _names: *const c_void,
    mappers: *const *const c_void,
    num_teams: i32,
    thread_limit: i32,
) -> i32 {
    guard("__tgt_target_teams_mapper", OFFLOAD_FAIL, || {
        legacy(
            loc,
            device_id,
            host_ptr,
            arg_num,
            bases,
            args,
            sizes,
            types,
            mappers,
            num_teams,
            thread_limit,
        )
    })
}

#[no_mangle]
pub extern "C" fn __tgt_target_teams_nowait_mapper(
    loc: *const Ident,
    device_id: i64,
    host_ptr: *mut c_void,
    arg_num: i32,
    bases: *mut *mut c_void,
    args: *mut *mut c_void,
    sizes: *const i64,
    types: *const i64,
    _names: *const c_void,
    mappers: *const *const c_void,
    num_teams: i32,
    thread_limit: i32,
    _dep_num: i32,
    _deps: *mut c_void,
    _noalias_num: i32,
    _noalias: *mut c_void,
) -> i32 {
    guard("__tgt_target_teams_nowait_mapper", OFFLOAD_FAIL, || {
        legacy(
            loc,
            device_id,
            host_ptr,
            arg_num,
            bases,
            args,
            sizes,
            types,
            mappers,
            num_teams,
            thread_limit,
        )
    })
}

/// Trip count hint for the next legacy launch on this thread.
#[no_mangle]
pub extern "C" fn __kmpc_push_target_tripcount(_device_id: i64, loop_tripcount: u64) {
    // try_with: never panics, even during thread teardown.
    let _ = PUSHED_TRIPCOUNT.try_with(|t| t.set(loop_tripcount));
}

#[no_mangle]
pub extern "C" fn __kmpc_push_target_tripcount_mapper(
    _loc: *const Ident,
    _device_id: i64,
    loop_tripcount: u64,
) {
    // try_with: never panics, even during thread teardown.
    let _ = PUSHED_TRIPCOUNT.try_with(|t| t.set(loop_tripcount));
}
