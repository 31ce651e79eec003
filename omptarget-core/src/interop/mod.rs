//! OpenMP interop objects (`#pragma omp interop`, OpenMP 5.1 §14.1): a device's foreign
//! runtime and native handles, for programs that call that runtime beside OpenMP.
//!
//! An object is created for a device (`init`, LLVM 22's `__tgt_interop_get`), used (`use`:
//! wait for the work the program queued on its `targetsync` handle) and destroyed (`destroy`,
//! `__tgt_interop_release`: wait, then free). A `targetsync` object owns one plugin queue,
//! whose native handle the program receives; waiting for it is the plugin's `synchronize`.
//! The handles come from the plugin's `interop_info` (ABI 1.2); a plugin without it gives
//! objects with no foreign runtime, whose handle properties answer `omp_irc_no_value`.
//!
//! Programs see `omp_interop_t`, an opaque pointer: ours is the address of an [`Interop`],
//! kept in a table of live objects so that every entry point can check what it is given.
//! Objects made implicitly (for a `dispatch` construct: LLVM 22's `implicit` flag) belong to
//! the runtime and to one host thread; `__tgt_target_sync` waits for that thread's ones.

pub(crate) mod properties;

use crate::device::Device;
use crate::error::{OffloadError, Result};
use crate::lock::lock;
use once_cell::sync::Lazy;
use plugin_api::{ForeignRuntime, InteropInfo, QueueHandle, Vendor};
use properties::{rc, Property, Value};
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::{Arc, Mutex};

/// What the object was made for.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum InteropKind {
    /// `init(target: obj)`: the device and its context.
    Target,
    /// `init(targetsync: obj)`: also a queue the program can put work on.
    TargetSync,
}

/// A `prefer_type` entry, or what was chosen from them.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub(crate) struct Preference {
    pub foreign_runtime: ForeignRuntime,
    pub inorder: bool,
    pub impl_attrs: i64,
}

/// `ompx_interop_cb_t`: called with the object and the registered data once the object's
/// work has completed.
pub(crate) type CompletionCallback = extern "C" fn(interop: *mut c_void, data: *mut c_void);

#[derive(Default)]
struct InteropState {
    /// Used since it was last waited for (implicit objects: `__tgt_target_sync` waits).
    dirty: bool,
    callbacks: Vec<(CompletionCallback, usize)>,
}

pub(crate) struct Interop {
    pub device_id: i32,
    pub kind: InteropKind,
    pub info: InteropInfo,
    /// The preference it was made for (compared when an implicit object is reused).
    pub preference: Preference,
    /// The plugin queue behind `targetsync`.
    queue: Option<QueueHandle>,
    /// The libomp thread number of the thread owning an implicit object.
    owner: Option<i32>,
    state: Mutex<InteropState>,
}

/// Live objects by the address handed to the program.
static LIVE: Lazy<Mutex<HashMap<usize, Arc<Interop>>>> = Lazy::new(Default::default);

/// An `omp_interop_t` value: the object's address.
pub(crate) fn handle_of(object: &Arc<Interop>) -> *mut c_void {
    Arc::as_ptr(object) as *mut c_void
}

/// The live object behind `handle`; `None` for a value we never handed out (or destroyed).
pub(crate) fn lookup(handle: *const c_void) -> Option<Arc<Interop>> {
    lock(&LIVE).get(&(handle as usize)).cloned()
}

/// The devices by OpenMP device number, as the runtime offers them: objects keep their
/// device's number, and a device is no longer offered once the runtime shut its plugins down.
pub(crate) trait Devices {
    fn device(&self, id: i64) -> Result<&Device>;
}

/// What `__tgt_interop_get` and `__tgt_interop_init` are asked for.
pub(crate) struct Request<'a> {
    /// An OpenMP device number; -1 (`omp_get_default_device`'s device) allowed.
    pub device: i64,
    pub kind: InteropKind,
    pub preferences: &'a [Preference],
    /// `Some(gtid)`: an implicit object owned by that host thread.
    pub implicit_owner: Option<i32>,
}

/// Creates an object (or, for an implicit request, reuses the owner's compatible one).
/// `Ok(None)` is `omp_interop_none`: offloading is disabled or the device does not exist.
pub(crate) fn create(request: &Request<'_>, devices: &dyn Devices) -> Result<Option<Arc<Interop>>> {
    let device_id = match request.device {
        -1 => crate::host_openmp::default_device() as i64,
        id => id,
    };
    let Ok(device) = devices.device(device_id) else {
        log::debug!("no interop object: device {device_id} is not an offload device");
        return Ok(None);
    };
    device.initialize()?;
    let probe = device
        .plugin
        .interop_info(device.local, QueueHandle::SYNC)
        .transpose()
        .map_err(|e| device.plugin_error("creating an interop object", e))?;
    let preference = choose_preference(request.preferences, probe.as_ref());
    if let Some(owner) = request.implicit_owner {
        if let Some(reused) = reusable(device.id, request.kind, preference, owner) {
            lock(&reused.state).dirty = true;
            return Ok(Some(reused));
        }
    }
    let queue = match request.kind {
        InteropKind::Target => None,
        InteropKind::TargetSync => Some(
            device
                .plugin
                .create_queue(device.local)
                .map_err(|e| device.plugin_error("creating the interop object's queue", e))?,
        ),
    };
    let info = match device
        .plugin
        .interop_info(device.local, queue.unwrap_or(QueueHandle::SYNC))
    {
        // A plugin older than ABI 1.2: no foreign runtime.
        None => InteropInfo::none(Vendor::UNKNOWN),
        Some(Ok(info)) => info,
        Some(Err(e)) => {
            if let Some(q) = queue {
                let _ = device.plugin.release_queue(device.local, q);
            }
            return Err(device.plugin_error("creating an interop object", e));
        }
    };
    let object = Arc::new(Interop {
        device_id: device.id,
        kind: request.kind,
        info,
        preference,
        queue,
        owner: request.implicit_owner,
        state: Mutex::new(InteropState {
            dirty: request.implicit_owner.is_some(),
            callbacks: Vec::new(),
        }),
    });
    lock(&LIVE).insert(Arc::as_ptr(&object) as usize, object.clone());
    log::debug!(
        "created interop object {:p} ({:?}, {}) for device {}",
        Arc::as_ptr(&object),
        request.kind,
        info.foreign_runtime.name(),
        device.id
    );
    Ok(Some(object))
}

/// The first preference the device's foreign runtime satisfies; without one the device's own
/// runtime (the spec lets the implementation choose when none of the preferences can be met).
fn choose_preference(preferences: &[Preference], device: Option<&InteropInfo>) -> Preference {
    let runtime = device.map_or(ForeignRuntime::NONE, |i| i.foreign_runtime);
    preferences
        .iter()
        .find(|p| p.foreign_runtime == runtime)
        .copied()
        .unwrap_or(Preference {
            foreign_runtime: runtime,
            // Plugin queues run their work in order.
            inorder: true,
            impl_attrs: 0,
        })
}

fn reusable(
    device_id: i32,
    kind: InteropKind,
    preference: Preference,
    owner: i32,
) -> Option<Arc<Interop>> {
    lock(&LIVE)
        .values()
        .find(|o| {
            o.owner == Some(owner)
                && o.device_id == device_id
                && o.kind == kind
                && o.preference == preference
        })
        .cloned()
}

impl Interop {
    /// Waits for the work queued on the object's `targetsync` handle, then runs the completion
    /// callbacks registered so far.
    pub(crate) fn wait(&self, devices: &dyn Devices) -> Result<()> {
        if let Some(queue) = self.queue {
            let device = devices.device(self.device_id as i64)?;
            device
                .plugin
                .synchronize(device.local, queue)
                .map_err(|e| device.plugin_error("waiting for an interop object's queue", e))?;
        }
        let callbacks = {
            let mut state = lock(&self.state);
            state.dirty = false;
            std::mem::take(&mut state.callbacks)
        };
        let handle = self as *const Interop as *mut c_void;
        for (callback, data) in callbacks {
            callback(handle, data as *mut c_void);
        }
        Ok(())
    }

    /// `ompx_interop_add_completion_callback`: `callback` runs when the object is next waited
    /// for (a `use` without `nowait`, its destruction, or `__tgt_target_sync` for an implicit
    /// object).
    pub(crate) fn add_completion_callback(&self, callback: CompletionCallback, data: *mut c_void) {
        lock(&self.state).callbacks.push((callback, data as usize));
    }

    pub(crate) fn is_implicit(&self) -> bool {
        self.owner.is_some()
    }

    /// A property's value, or the return code saying why there is none.
    pub(crate) fn property(&self, property: Property) -> std::result::Result<Value, i32> {
        let pointer = |p: usize| {
            if p == 0 {
                Err(rc::NO_VALUE)
            } else {
                Ok(Value::Ptr(p))
            }
        };
        match property {
            Property::FrId => Ok(Value::Int(self.info.foreign_runtime.0 as isize)),
            Property::FrName => Ok(Value::Str(self.info.foreign_runtime.c_name())),
            Property::Vendor => Ok(Value::Int(self.info.vendor.0 as isize)),
            Property::VendorName => Ok(Value::Str(self.info.vendor.c_name())),
            Property::DeviceNum => Ok(Value::Int(self.device_id as isize)),
            Property::Platform => pointer(self.info.platform),
            Property::Device => pointer(self.info.device),
            Property::DeviceContext => pointer(self.info.context),
            Property::TargetSync if self.kind == InteropKind::TargetSync => {
                pointer(self.info.targetsync)
            }
            Property::TargetSync => Err(rc::NO_VALUE),
        }
    }
}

/// `use`: waits for the construct's dependences (the caller did), then, unless `nowait`, for
/// the object's queue. With `nowait` nothing is left to order: the program's later native work
/// on an in-order queue runs after its earlier work anyway.
pub(crate) fn use_object(object: &Interop, nowait: bool, devices: &dyn Devices) -> Result<()> {
    if nowait {
        lock(&object.state).dirty = true;
        return Ok(());
    }
    object.wait(devices)
}

/// `destroy`/`__tgt_interop_release`: waits for the object's queue, runs the callbacks, gives
/// the queue back and forgets the object. Fails for an object we do not know.
pub(crate) fn release(handle: *const c_void, devices: &dyn Devices) -> Result<()> {
    let object = lock(&LIVE)
        .remove(&(handle as usize))
        .ok_or_else(|| unknown_object(handle))?;
    let waited = object.wait(devices);
    if let Some(queue) = object.queue {
        let device = devices.device(object.device_id as i64)?;
        if let Err(e) = device.plugin.release_queue(device.local, queue) {
            log::warn!("releasing an interop object's queue failed: {e}");
        }
    }
    waited
}

/// `__tgt_target_sync`: at a synchronisation point of host thread `gtid` (taskwait, barrier),
/// waits for the implicit objects it used since their last wait.
pub(crate) fn sync_thread(gtid: i32, devices: &dyn Devices) -> Result<()> {
    let owned: Vec<Arc<Interop>> = lock(&LIVE)
        .values()
        .filter(|o| o.owner == Some(gtid) && lock(&o.state).dirty)
        .cloned()
        .collect();
    owned.iter().try_for_each(|o| o.wait(devices))
}

/// At shutdown: waits for and releases the implicit objects, which belong to the runtime (as
/// LLVM does; the program's own objects are its to destroy).
pub(crate) fn release_implicit_objects(devices: &dyn Devices) {
    let implicit: Vec<usize> = lock(&LIVE)
        .iter()
        .filter(|(_, o)| o.is_implicit())
        .map(|(&handle, _)| handle)
        .collect();
    for handle in implicit {
        if let Err(e) = release(handle as *const c_void, devices) {
            log::warn!("releasing an implicit interop object at shutdown: {e}");
        }
    }
}

pub(crate) fn unknown_object(handle: *const c_void) -> OffloadError {
    OffloadError::new(format!(
        "{handle:p} is not an interop object of this runtime (never created, or destroyed)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(runtime: ForeignRuntime) -> InteropInfo {
        InteropInfo {
            foreign_runtime: runtime,
            ..Default::default()
        }
    }

    #[test]
    fn the_first_satisfiable_preference_wins() {
        let hip = Preference {
            foreign_runtime: ForeignRuntime::HIP,
            inorder: false,
            impl_attrs: 1,
        };
        let cuda = Preference {
            foreign_runtime: ForeignRuntime::CUDA,
            inorder: true,
            impl_attrs: 7,
        };
        let chosen = choose_preference(&[hip, cuda], Some(&info(ForeignRuntime::CUDA)));
        assert_eq!(chosen, cuda);
        // None satisfiable: the device's own runtime.
        let chosen = choose_preference(&[hip], Some(&info(ForeignRuntime::HSA)));
        assert_eq!(chosen.foreign_runtime, ForeignRuntime::HSA);
        let chosen = choose_preference(&[], None);
        assert_eq!(chosen.foreign_runtime, ForeignRuntime::NONE);
    }
}
