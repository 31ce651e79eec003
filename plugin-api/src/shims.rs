//! The C functions of [`PluginModule`](crate::PluginModule), generic over the plugin type.
//! Each one catches panics, so no unwinding crosses the library boundary.
//!
//! What every shim does:
//! - `init` installs the logging services, creates the instance on the first call (later calls
//!   reuse it) and returns its description.
//! - Every other shim fetches the instance. Before a successful `init` it fails with
//!   `ErrorCode::NOT_INITIALIZED` ("plugin used before its init call").
//! - It calls the [`Plugin`](crate::Plugin) method with Rust types (`&str`, `&[usize]`,
//!   `Option<i32>` for `check_image`'s negative device) and converts the result to
//!   [`PluginResult`].
//! - A panic becomes `ErrorCode::PANIC` with the message `plugin panicked: <payload>`. Catching it
//!   needs the plugin library to be built with `panic = "unwind"`.
//! - The shims without an error channel map failures to a value: `num_devices` returns 0, and
//!   `check_image` returns `compatible: false` with the error's message as the reason.
//!
//! The shims check nothing else (device numbers, handles): that is the plugin's job.

use crate::logging::{self, HostServices};
use crate::plugin::{Result, SlottedPlugin};
use crate::types::*;
use abi_stable::std_types::{RResult, RSlice, RStr, RVec};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// The text of a panic payload (`&str` or `String`).
fn panic_message(payload: Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic payload".to_string()
    }
}

/// Runs `f`, turning a panic into `ErrorCode::PANIC`.
fn guarded<T>(f: impl FnOnce() -> Result<T>) -> PluginResult<T> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(result) => result.into(),
        Err(payload) => RResult::RErr(PluginError::new(
            ErrorCode::PANIC,
            format!("plugin panicked: {}", panic_message(payload)),
        )),
    }
}

/// Runs `f` on the initialised plugin instance, with a panic guard (`NOT_INITIALIZED` before
/// `init`).
fn with<P: SlottedPlugin, T>(f: impl FnOnce(&P) -> Result<T>) -> PluginResult<T> {
    guarded(|| f(P::slot().get()?))
}

/// Installs the logger and `LIBOMPTARGET_INFO` services (first call only), creates the instance
/// if there is none yet, and returns its description.
pub extern "C" fn init<P: SlottedPlugin>(
    services: &HostServices,
) -> PluginResult<PluginDescription> {
    let services = *services;
    guarded(|| {
        logging::install(services);
        Ok(P::slot().get_or_init()?.describe())
    })
}

pub extern "C" fn deinit<P: SlottedPlugin>() -> PluginResult<()> {
    with::<P, _>(|p| p.deinit())
}

/// The device count; 0 before `init` or if the plugin panics.
pub extern "C" fn num_devices<P: SlottedPlugin>() -> i32 {
    with::<P, _>(|p| Ok(p.num_devices())).unwrap_or(0)
}

/// A negative `device` becomes `None`; a failure becomes "not compatible" with its message.
pub extern "C" fn check_image<P: SlottedPlugin>(
    device: i32,
    image: ImageRef<'_>,
) -> ImageCompatibility {
    let device = (device >= 0).then_some(device);
    match with::<P, _>(|p| Ok(p.check_image(device, image))) {
        RResult::ROk(answer) => answer,
        RResult::RErr(e) => ImageCompatibility::no(e.message.to_string()),
    }
}

pub extern "C" fn init_device<P: SlottedPlugin>(device: i32) -> PluginResult<()> {
    with::<P, _>(|p| p.init_device(device))
}

pub extern "C" fn deinit_device<P: SlottedPlugin>(device: i32) -> PluginResult<()> {
    with::<P, _>(|p| p.deinit_device(device))
}

pub extern "C" fn device_info<P: SlottedPlugin>(device: i32) -> PluginResult<DeviceInfo> {
    with::<P, _>(|p| p.device_info(device).map(RVec::from))
}

pub extern "C" fn load_image<P: SlottedPlugin>(
    device: i32,
    image: ImageRef<'_>,
) -> PluginResult<ImageHandle> {
    with::<P, _>(|p| p.load_image(device, image))
}

pub extern "C" fn unload_image<P: SlottedPlugin>(
    device: i32,
    image: ImageHandle,
) -> PluginResult<()> {
    with::<P, _>(|p| p.unload_image(device, image))
}

pub extern "C" fn get_kernel<P: SlottedPlugin>(
    device: i32,
    image: ImageHandle,
    name: RStr<'_>,
) -> PluginResult<KernelHandle> {
    with::<P, _>(|p| p.get_kernel(device, image, name.as_str()))
}

pub extern "C" fn get_global<P: SlottedPlugin>(
    device: i32,
    image: ImageHandle,
    name: RStr<'_>,
    size: u64,
) -> PluginResult<GlobalInfo> {
    with::<P, _>(|p| p.get_global(device, image, name.as_str(), size))
}

pub extern "C" fn alloc<P: SlottedPlugin>(
    device: i32,
    size: u64,
    host_ptr: usize,
    kind: AllocKind,
) -> PluginResult<usize> {
    with::<P, _>(|p| p.alloc(device, size, host_ptr, kind))
}

pub extern "C" fn free<P: SlottedPlugin>(
    device: i32,
    ptr: usize,
    kind: AllocKind,
) -> PluginResult<()> {
    with::<P, _>(|p| p.free(device, ptr, kind))
}

pub extern "C" fn create_queue<P: SlottedPlugin>(device: i32) -> PluginResult<QueueHandle> {
    with::<P, _>(|p| p.create_queue(device))
}

pub extern "C" fn release_queue<P: SlottedPlugin>(
    device: i32,
    queue: QueueHandle,
) -> PluginResult<()> {
    with::<P, _>(|p| p.release_queue(device, queue))
}

pub extern "C" fn copy_to_device<P: SlottedPlugin>(
    device: i32,
    dst: usize,
    src: usize,
    size: u64,
    queue: QueueHandle,
) -> PluginResult<()> {
    // SAFETY: the core passes a host buffer readable for `size` bytes until the copy is
    // complete (the module's contract, `Plugin::copy_to_device`).
    with::<P, _>(|p| unsafe { p.copy_to_device(device, dst, src, size, queue) })
}

pub extern "C" fn copy_from_device<P: SlottedPlugin>(
    device: i32,
    dst: usize,
    src: usize,
    size: u64,
    queue: QueueHandle,
) -> PluginResult<()> {
    // SAFETY: the core passes a host buffer writable for `size` bytes until the copy is
    // complete (the module's contract, `Plugin::copy_from_device`).
    with::<P, _>(|p| unsafe { p.copy_from_device(device, dst, src, size, queue) })
}

pub extern "C" fn copy_device_to_device<P: SlottedPlugin>(
    src_device: i32,
    src: usize,
    dst_device: i32,
    dst: usize,
    size: u64,
    queue: QueueHandle,
) -> PluginResult<()> {
    with::<P, _>(|p| p.copy_device_to_device(src_device, src, dst_device, dst, size, queue))
}

pub extern "C" fn launch_kernel<P: SlottedPlugin>(
    device: i32,
    kernel: KernelHandle,
    args: RSlice<'_, usize>,
    config: &LaunchConfig,
    queue: QueueHandle,
) -> PluginResult<()> {
    with::<P, _>(|p| p.launch_kernel(device, kernel, args.as_slice(), config, queue))
}

pub extern "C" fn synchronize<P: SlottedPlugin>(
    device: i32,
    queue: QueueHandle,
) -> PluginResult<()> {
    with::<P, _>(|p| p.synchronize(device, queue))
}

pub extern "C" fn query_queue<P: SlottedPlugin>(
    device: i32,
    queue: QueueHandle,
) -> PluginResult<bool> {
    with::<P, _>(|p| p.query_queue(device, queue))
}

pub extern "C" fn create_event<P: SlottedPlugin>(device: i32) -> PluginResult<EventHandle> {
    with::<P, _>(|p| p.create_event(device))
}

pub extern "C" fn record_event<P: SlottedPlugin>(
    device: i32,
    event: EventHandle,
    queue: QueueHandle,
) -> PluginResult<()> {
    with::<P, _>(|p| p.record_event(device, event, queue))
}

pub extern "C" fn wait_event<P: SlottedPlugin>(
    device: i32,
    event: EventHandle,
    queue: QueueHandle,
) -> PluginResult<()> {
    with::<P, _>(|p| p.wait_event(device, event, queue))
}

pub extern "C" fn sync_event<P: SlottedPlugin>(
    device: i32,
    event: EventHandle,
) -> PluginResult<()> {
    with::<P, _>(|p| p.sync_event(device, event))
}

pub extern "C" fn destroy_event<P: SlottedPlugin>(
    device: i32,
    event: EventHandle,
) -> PluginResult<()> {
    with::<P, _>(|p| p.destroy_event(device, event))
}

pub extern "C" fn pin_memory<P: SlottedPlugin>(
    device: i32,
    host_ptr: usize,
    size: u64,
) -> PluginResult<usize> {
    with::<P, _>(|p| p.pin_memory(device, host_ptr, size))
}

pub extern "C" fn unpin_memory<P: SlottedPlugin>(device: i32, host_ptr: usize) -> PluginResult<()> {
    with::<P, _>(|p| p.unpin_memory(device, host_ptr))
}

pub extern "C" fn memory_info<P: SlottedPlugin>(device: i32) -> PluginResult<MemoryInfo> {
    with::<P, _>(|p| p.memory_info(device))
}

pub extern "C" fn interop_info<P: SlottedPlugin>(
    device: i32,
    queue: QueueHandle,
) -> PluginResult<InteropInfo> {
    with::<P, _>(|p| p.interop_info(device, queue))
}

pub extern "C" fn launch_kernel_params<P: SlottedPlugin>(
    device: i32,
    kernel: KernelHandle,
    params: RSlice<'_, u8>,
    config: &LaunchConfig,
    queue: QueueHandle,
) -> PluginResult<()> {
    with::<P, _>(|p| p.launch_kernel_params(device, kernel, params.as_slice(), config, queue))
}

pub extern "C" fn set_indirect_calls<P: SlottedPlugin>(
    device: i32,
    image: ImageHandle,
    calls: RSlice<'_, IndirectCall>,
) -> PluginResult<()> {
    with::<P, _>(|p| p.set_indirect_calls(device, image, calls.as_slice()))
}

pub extern "C" fn device_traits<P: SlottedPlugin>(device: i32) -> PluginResult<DeviceTraits> {
    with::<P, _>(|p| p.device_traits(device))
}

pub extern "C" fn start_work_timing<P: SlottedPlugin>(device: i32) -> PluginResult<()> {
    with::<P, _>(|p| p.start_work_timing(device))
}

pub extern "C" fn work_times<P: SlottedPlugin>(
    device: i32,
    queue: QueueHandle,
) -> PluginResult<RVec<WorkTime>> {
    with::<P, _>(|p| p.work_times(device, queue).map(RVec::from))
}

pub extern "C" fn devices_may_appear<P: SlottedPlugin>() -> bool {
    with::<P, _>(|p| Ok(p.devices_may_appear())).unwrap_or(false)
}

pub extern "C" fn fill_memory<P: SlottedPlugin>(
    device: i32,
    dst: usize,
    pattern: RSlice<'_, u8>,
    size: u64,
    queue: QueueHandle,
) -> PluginResult<()> {
    with::<P, _>(|p| p.fill_memory(device, dst, pattern.as_slice(), size, queue))
}

pub extern "C" fn is_accessible<P: SlottedPlugin>(
    device: i32,
    host_ptr: usize,
    size: u64,
) -> PluginResult<bool> {
    with::<P, _>(|p| p.is_accessible(device, host_ptr, size))
}

pub extern "C" fn prefault_host_memory<P: SlottedPlugin>(
    device: i32,
    host_ptr: usize,
    size: u64,
) -> PluginResult<()> {
    with::<P, _>(|p| p.prefault_host_memory(device, host_ptr, size))
}
