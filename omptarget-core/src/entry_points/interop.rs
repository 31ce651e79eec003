//! The interop entry points: what clang emits for `#pragma omp interop` (LLVM 19's
//! `__tgt_interop_init/use/destroy`, which clang-22 still emits), LLVM 22's
//! `__tgt_interop_get/use60/release`, `__tgt_target_sync` (libomp 22 calls it at taskwait and
//! barriers), the property routines libomp forwards to us (`omp_get_interop_*`) and
//! `ompx_interop_add_completion_callback`. The logic is in `crate::interop`.

use super::{guard, OFFLOAD_FAIL, OFFLOAD_SUCCESS};
use crate::abi::interop::{
    DependencePack, InteropContext, InteropSpec, INTEROP_TYPE_TARGET, INTEROP_TYPE_TARGETSYNC,
    LEGACY_INTEROP_TYPE_TARGETSYNC,
};
use crate::abi::source_location::Ident;
use crate::config::OffloadPolicySetting;
use crate::error::OffloadError;
use crate::host_openmp;
use crate::interop::properties::{rc, Property, PropertyType, Value};
use crate::interop::{self, InteropKind, Preference, Request};
use crate::observe::logging;
use crate::runtime::Runtime;
use plugin_api::ForeignRuntime;
use std::ffi::{c_char, c_void};

// ---- creating, using and destroying ----

/// `#pragma omp interop init(...)` as clang emits it: `interop_type` 2 is `targetsync`, 1
/// `target`; `*interop_ptr` receives the object or `omp_interop_none`.
#[no_mangle]
pub extern "C" fn __tgt_interop_init(
    loc: *const Ident,
    gtid: i32,
    interop_ptr: *mut *mut c_void,
    interop_type: i32,
    device_id: i32,
    ndeps: i32,
    deps: *const c_void,
    _have_nowait: i32,
) {
    guard("__tgt_interop_init", (), || {
        if interop_ptr.is_null() {
            logging::failure_message("__tgt_interop_init: no interop variable given");
            return;
        }
        let kind = if interop_type == LEGACY_INTEROP_TYPE_TARGETSYNC {
            InteropKind::TargetSync
        } else {
            InteropKind::Target
        };
        let pack = DependencePack::from_list(ndeps, deps);
        let created = get(loc, gtid, kind, device_id as i64, &[], None, &pack);
        // SAFETY: clang passes the address of the program's omp_interop_t variable.
        unsafe { *interop_ptr = created };
    })
}

/// `#pragma omp interop use(obj)`: waits for the dependences, then (without `nowait`) for the
/// work queued on the object's `targetsync` handle.
#[no_mangle]
pub extern "C" fn __tgt_interop_use(
    loc: *const Ident,
    gtid: i32,
    interop_ptr: *mut *mut c_void,
    _device_id: i32,
    ndeps: i32,
    deps: *const c_void,
    have_nowait: i32,
) {
    guard("__tgt_interop_use", (), || {
        let Some(handle) = read_variable("__tgt_interop_use", interop_ptr) else {
            return;
        };
        let pack = DependencePack::from_list(ndeps, deps);
        use_object(loc, gtid, handle, have_nowait != 0, &pack);
    })
}

/// `#pragma omp interop destroy(obj)`: waits for the dependences and the object's queue,
/// frees the object and sets the variable to `omp_interop_none`.
#[no_mangle]
pub extern "C" fn __tgt_interop_destroy(
    loc: *const Ident,
    gtid: i32,
    interop_ptr: *mut *mut c_void,
    _device_id: i32,
    ndeps: i32,
    deps: *const c_void,
    _have_nowait: i32,
) {
    guard("__tgt_interop_destroy", (), || {
        let Some(handle) = read_variable("__tgt_interop_destroy", interop_ptr) else {
            return;
        };
        let pack = DependencePack::from_list(ndeps, deps);
        if release(loc, gtid, handle, &pack) == OFFLOAD_SUCCESS {
            // SAFETY: read_variable checked the pointer; it is the program's variable.
            unsafe { *interop_ptr = std::ptr::null_mut() };
        }
    })
}

/// LLVM 22: an object of `interop_type` (0 `target`, 1 `targetsync`) for `device_num`,
/// choosing among `num_prefers` `prefer_type` entries; null is `omp_interop_none`.
#[no_mangle]
pub extern "C" fn __tgt_interop_get(
    loc: *const Ident,
    interop_type: i32,
    device_num: i64,
    num_prefers: i32,
    prefers: *const InteropSpec,
    ctx: *const InteropContext,
    deps: *const DependencePack,
) -> *mut c_void {
    guard("__tgt_interop_get", std::ptr::null_mut(), || {
        let kind = match interop_type {
            INTEROP_TYPE_TARGET => InteropKind::Target,
            INTEROP_TYPE_TARGETSYNC => InteropKind::TargetSync,
            other => {
                logging::failure_message(&format!(
                    "__tgt_interop_get: unknown interop type {other}"
                ));
                return std::ptr::null_mut();
            }
        };
        let preferences = read_preferences(num_prefers, prefers);
        let context = read_context(ctx);
        let implicit_owner = context.implicit().then_some(context.gtid);
        let pack = read_pack(deps);
        get(
            loc,
            context.gtid,
            kind,
            device_num,
            &preferences,
            implicit_owner,
            &pack,
        )
    })
}

/// LLVM 22's `use`; `OFFLOAD_FAIL` for `omp_interop_none` or an unknown object.
#[no_mangle]
pub extern "C" fn __tgt_interop_use60(
    loc: *const Ident,
    interop: *mut c_void,
    ctx: *const InteropContext,
    deps: *const DependencePack,
) -> i32 {
    guard("__tgt_interop_use60", OFFLOAD_FAIL, || {
        if interop.is_null() || offloading_disabled() {
            return OFFLOAD_FAIL;
        }
        let context = read_context(ctx);
        use_object(
            loc,
            context.gtid,
            interop,
            context.nowait(),
            &read_pack(deps),
        )
    })
}

/// LLVM 22's `destroy`; the program's variable is its own business here.
#[no_mangle]
pub extern "C" fn __tgt_interop_release(
    loc: *const Ident,
    interop: *mut c_void,
    ctx: *const InteropContext,
    deps: *const DependencePack,
) -> i32 {
    guard("__tgt_interop_release", OFFLOAD_FAIL, || {
        if interop.is_null() || offloading_disabled() {
            return OFFLOAD_FAIL;
        }
        let context = read_context(ctx);
        release(loc, context.gtid, interop, &read_pack(deps))
    })
}

/// Called by libomp 22 at a thread's synchronisation points (taskwait, barrier): waits for
/// the implicit interop objects that thread used since their last wait.
#[no_mangle]
pub extern "C" fn __tgt_target_sync(
    _loc: *const Ident,
    gtid: i32,
    _current_task: *mut c_void,
    _event: *mut c_void,
) {
    guard("__tgt_target_sync", (), || {
        if let Err(e) = interop::sync_thread(gtid, Runtime::get()) {
            report("__tgt_target_sync", &e);
        }
    })
}

/// `ompx_interop_add_completion_callback`: `callback(interop, data)` runs once the object's
/// work has completed (at its next wait). Returns an `omp_interop_rc_t`.
#[no_mangle]
pub extern "C" fn ompx_interop_add_completion_callback(
    interop: *mut c_void,
    callback: Option<interop::CompletionCallback>,
    data: *mut c_void,
) -> i32 {
    guard("ompx_interop_add_completion_callback", rc::OTHER, || {
        let Some(callback) = callback else {
            return rc::OTHER;
        };
        if interop.is_null() || offloading_disabled() {
            return rc::OTHER;
        }
        match interop::lookup(interop) {
            Some(object) => {
                object.add_completion_callback(callback, data);
                rc::SUCCESS
            }
            None => {
                report(
                    "ompx_interop_add_completion_callback",
                    &interop::unknown_object(interop),
                );
                rc::OTHER
            }
        }
    })
}

// ---- properties (libomp's omp_get_interop_* forward here) ----

#[no_mangle]
pub extern "C" fn omp_get_interop_int(
    interop: *const c_void,
    property: i32,
    err: *mut i32,
) -> isize {
    guard("omp_get_interop_int", 0, || {
        match read_property(interop, property, PropertyType::Int, err) {
            Some(Value::Int(v)) => v,
            _ => 0,
        }
    })
}

#[no_mangle]
pub extern "C" fn omp_get_interop_ptr(
    interop: *const c_void,
    property: i32,
    err: *mut i32,
) -> *mut c_void {
    guard(
        "omp_get_interop_ptr",
        std::ptr::null_mut(),
        || match read_property(interop, property, PropertyType::Ptr, err) {
            Some(Value::Ptr(p)) => p as *mut c_void,
            _ => std::ptr::null_mut(),
        },
    )
}

#[no_mangle]
pub extern "C" fn omp_get_interop_str(
    interop: *const c_void,
    property: i32,
    err: *mut i32,
) -> *const c_char {
    guard(
        "omp_get_interop_str",
        std::ptr::null(),
        || match read_property(interop, property, PropertyType::Str, err) {
            Some(Value::Str(s)) => s.as_ptr(),
            _ => std::ptr::null(),
        },
    )
}

/// The property's name (`"fr_id"`, ...); null for `omp_interop_none` or an unknown id.
#[no_mangle]
pub extern "C" fn omp_get_interop_name(interop: *const c_void, property: i32) -> *const c_char {
    guard("omp_get_interop_name", std::ptr::null(), || {
        match (interop.is_null(), Property::from_id(property)) {
            (false, Some(p)) => p.name().as_ptr(),
            _ => std::ptr::null(),
        }
    })
}

/// A description of the property's C type, naming the foreign runtime's own type for the
/// native handles; null for `omp_interop_none`, an unknown object or id.
#[no_mangle]
pub extern "C" fn omp_get_interop_type_desc(
    interop: *const c_void,
    property: i32,
) -> *const c_char {
    guard("omp_get_interop_type_desc", std::ptr::null(), || {
        let (Some(object), Some(p)) = (interop::lookup(interop), Property::from_id(property))
        else {
            return std::ptr::null();
        };
        p.type_desc(object.info.foreign_runtime).as_ptr()
    })
}

// ---- helpers ----

fn offloading_disabled() -> bool {
    Runtime::get().policy == OffloadPolicySetting::Disabled
}

fn report(entry_point: &str, error: &OffloadError) {
    logging::failure_message(&format!("{entry_point}: {error}"));
}

/// Creates an object after the dependences of a `targetsync` request; null on failure or for
/// `omp_interop_none`.
fn get(
    loc: *const Ident,
    gtid: i32,
    kind: InteropKind,
    device: i64,
    preferences: &[Preference],
    implicit_owner: Option<i32>,
    deps: &DependencePack,
) -> *mut c_void {
    if offloading_disabled() {
        return std::ptr::null_mut();
    }
    if kind == InteropKind::TargetSync {
        wait_for(loc, gtid, deps);
    }
    let request = Request {
        device,
        kind,
        preferences,
        implicit_owner,
    };
    match interop::create(&request, Runtime::get()) {
        Ok(Some(object)) => interop::handle_of(&object),
        Ok(None) => std::ptr::null_mut(),
        Err(e) => {
            report("interop init", &e);
            std::ptr::null_mut()
        }
    }
}

fn use_object(
    loc: *const Ident,
    gtid: i32,
    handle: *mut c_void,
    nowait: bool,
    deps: &DependencePack,
) -> i32 {
    let Some(object) = interop::lookup(handle) else {
        report("interop use", &interop::unknown_object(handle));
        return OFFLOAD_FAIL;
    };
    // As LLVM: with dependences the use waits for them, and then for the queue, even when
    // nowait was asked for (the dependences of later tasks must see the work done).
    let nowait = nowait && deps.is_empty();
    if object.kind == InteropKind::TargetSync {
        wait_for(loc, gtid, deps);
    }
    match interop::use_object(&object, nowait, Runtime::get()) {
        Ok(()) => OFFLOAD_SUCCESS,
        Err(e) => {
            report("interop use", &e);
            OFFLOAD_FAIL
        }
    }
}

fn release(loc: *const Ident, gtid: i32, handle: *mut c_void, deps: &DependencePack) -> i32 {
    if let Some(object) = interop::lookup(handle) {
        if object.kind == InteropKind::TargetSync {
            wait_for(loc, gtid, deps);
        }
    }
    match interop::release(handle, Runtime::get()) {
        Ok(()) => OFFLOAD_SUCCESS,
        Err(e) => {
            report("interop destroy", &e);
            OFFLOAD_FAIL
        }
    }
}

fn wait_for(loc: *const Ident, gtid: i32, deps: &DependencePack) {
    if deps.is_empty() {
        return;
    }
    // SAFETY: the compiler's dependence arrays with their counts, and the caller's thread
    // number, as libomp's __kmpc_omp_wait_deps expects them.
    unsafe {
        host_openmp::wait_for_dependences(
            loc as *const c_void,
            gtid,
            deps.ndeps.max(0),
            deps.deps,
            deps.ndeps_noalias.max(0),
            deps.noalias,
        )
    }
}

/// The object in the program's `omp_interop_t` variable; `None` (after a message for a null
/// variable) when there is nothing to do.
fn read_variable(entry_point: &str, interop_ptr: *mut *mut c_void) -> Option<*mut c_void> {
    if interop_ptr.is_null() {
        logging::failure_message(&format!("{entry_point}: no interop variable given"));
        return None;
    }
    // SAFETY: clang passes the address of the program's omp_interop_t variable.
    let handle = unsafe { *interop_ptr };
    // omp_interop_none: nothing to use or destroy.
    (!handle.is_null()).then_some(handle)
}

fn read_preferences(count: i32, prefers: *const InteropSpec) -> Vec<Preference> {
    if prefers.is_null() || count <= 0 {
        return Vec::new();
    }
    // SAFETY: the compiler passes `count` interop_spec_t records.
    let specs = unsafe { std::slice::from_raw_parts(prefers, count as usize) };
    specs
        .iter()
        .map(|s| Preference {
            foreign_runtime: ForeignRuntime(s.fr_id),
            inorder: s.inorder(),
            impl_attrs: s.impl_attrs,
        })
        .collect()
}

fn read_context(ctx: *const InteropContext) -> InteropContext {
    if ctx.is_null() {
        return InteropContext {
            version: 0,
            flags: 0,
            gtid: -1,
        };
    }
    // SAFETY: the compiler passes a valid interop_ctx_t.
    unsafe { *ctx }
}

fn read_pack(deps: *const DependencePack) -> DependencePack {
    if deps.is_null() {
        return DependencePack::from_list(0, std::ptr::null());
    }
    // SAFETY: the compiler passes a valid dep_pack_t.
    unsafe { *deps }
}

/// A property routine's answer: the value, with `*err` set to `omp_irc_success`, or `None`
/// with the reason in `*err`.
fn read_property(
    interop: *const c_void,
    property: i32,
    wanted: PropertyType,
    err: *mut i32,
) -> Option<Value> {
    let answer = property_value(interop, property, wanted);
    if !err.is_null() {
        let code = match answer {
            Ok(_) => rc::SUCCESS,
            Err(code) => code,
        };
        // SAFETY: the program passes a valid int pointer or null.
        unsafe { *err = code };
    }
    answer.ok()
}

fn property_value(
    interop: *const c_void,
    property: i32,
    wanted: PropertyType,
) -> std::result::Result<Value, i32> {
    if interop.is_null() {
        return Err(rc::EMPTY);
    }
    let property = Property::from_id(property).ok_or(rc::OUT_OF_RANGE)?;
    let object = interop::lookup(interop).ok_or_else(|| {
        report("omp_get_interop_*", &interop::unknown_object(interop));
        rc::OTHER
    })?;
    if property.value_type() != wanted {
        return Err(property.type_mismatch_code());
    }
    object.property(property)
}
