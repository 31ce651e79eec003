//! The root module: a table of C functions, one per plugin operation.

use crate::logging::HostServices;
use crate::plugin::SlottedPlugin;
use crate::shims;
use crate::types::*;
use crate::version::{AbiVersion, ABI_VERSION};
use abi_stable::library::RootModule;
use abi_stable::sabi_types::VersionStrings;
use abi_stable::std_types::{RSlice, RStr};
use abi_stable::{declare_root_module_statics, StableAbi};

/// Everything a plugin offers, modelled on LLVM NextGen's `GenericPluginTy`/`GenericDeviceTy`.
///
/// Fields up to `unpin_memory` are ABI 1.0 and always present. Fields added in later minor
/// versions go after it and are read through the `Option`-returning accessors of
/// [`PluginModuleRef`], so that an older plugin keeps working with a newer core.
///
/// Threading: every function may be called from any thread, concurrently. Operations on one
/// queue execute in submission order; `QueueHandle::SYNC` means "complete before returning".
#[repr(C)]
#[derive(StableAbi)]
#[sabi(kind(Prefix(prefix_ref = PluginModuleRef)))]
#[sabi(missing_field(option))]
pub struct PluginModule {
    /// The ABI version the plugin was built for (same value as the plain C symbol).
    pub abi_version: AbiVersion,

    /// Initialises the plugin (loads its driver). Called once, before anything else. A plugin
    /// without a usable driver succeeds with zero devices and says why in the description.
    pub init: extern "C" fn(services: &HostServices) -> PluginResult<PluginDescription>,
    /// Releases everything; no other call follows.
    pub deinit: extern "C" fn() -> PluginResult<()>,
    pub num_devices: extern "C" fn() -> i32,
    /// Whether the plugin (`device` < 0) or one device can run an image.
    pub check_image: extern "C" fn(device: i32, image: ImageRef<'_>) -> ImageCompatibility,

    pub init_device: extern "C" fn(device: i32) -> PluginResult<()>,
    pub deinit_device: extern "C" fn(device: i32) -> PluginResult<()>,
    /// Key/value properties; the core reads `compute unit kind` (see `Plugin::device_info`).
    pub device_info: extern "C" fn(device: i32) -> PluginResult<DeviceInfo>,

    /// Loads an image; the plugin copies what it needs, the bytes are only borrowed.
    pub load_image: extern "C" fn(device: i32, image: ImageRef<'_>) -> PluginResult<ImageHandle>,
    pub unload_image: extern "C" fn(device: i32, image: ImageHandle) -> PluginResult<()>,
    pub get_kernel: extern "C" fn(
        device: i32,
        image: ImageHandle,
        name: RStr<'_>,
    ) -> PluginResult<KernelHandle>,
    /// Finds a global variable; `size` is the host's idea of its size (0: don't check).
    pub get_global: extern "C" fn(
        device: i32,
        image: ImageHandle,
        name: RStr<'_>,
        size: u64,
    ) -> PluginResult<GlobalInfo>,

    /// Allocates `size` bytes; `host_ptr` is the host data it will mirror (0 if none).
    pub alloc: extern "C" fn(
        device: i32,
        size: u64,
        host_ptr: usize,
        kind: AllocKind,
    ) -> PluginResult<usize>,
    pub free: extern "C" fn(device: i32, ptr: usize, kind: AllocKind) -> PluginResult<()>,

    pub create_queue: extern "C" fn(device: i32) -> PluginResult<QueueHandle>,
    /// Returns a queue for reuse; it must have been synchronised.
    pub release_queue: extern "C" fn(device: i32, queue: QueueHandle) -> PluginResult<()>,
    /// Copies host memory at `src` to device memory at `dst`. With a real queue the host buffer
    /// must stay valid until the queue is synchronised.
    pub copy_to_device: extern "C" fn(
        device: i32,
        dst: usize,
        src: usize,
        size: u64,
        queue: QueueHandle,
    ) -> PluginResult<()>,
    pub copy_from_device: extern "C" fn(
        device: i32,
        dst: usize,
        src: usize,
        size: u64,
        queue: QueueHandle,
    ) -> PluginResult<()>,
    /// Copies between two devices of this plugin; `queue` belongs to `src_device`.
    pub copy_device_to_device: extern "C" fn(
        src_device: i32,
        src: usize,
        dst_device: i32,
        dst: usize,
        size: u64,
        queue: QueueHandle,
    ) -> PluginResult<()>,
    /// Launches a kernel with one pointer-sized value per argument.
    pub launch_kernel: extern "C" fn(
        device: i32,
        kernel: KernelHandle,
        args: RSlice<'_, usize>,
        config: &LaunchConfig,
        queue: QueueHandle,
    ) -> PluginResult<()>,
    /// Waits until everything submitted to `queue` has completed.
    pub synchronize: extern "C" fn(device: i32, queue: QueueHandle) -> PluginResult<()>,
    /// Whether everything submitted to `queue` has completed, without waiting.
    pub query_queue: extern "C" fn(device: i32, queue: QueueHandle) -> PluginResult<bool>,

    pub create_event: extern "C" fn(device: i32) -> PluginResult<EventHandle>,
    /// Makes `event` complete when the work submitted to `queue` so far completes.
    pub record_event:
        extern "C" fn(device: i32, event: EventHandle, queue: QueueHandle) -> PluginResult<()>,
    /// Makes later work on `queue` wait for `event`.
    pub wait_event:
        extern "C" fn(device: i32, event: EventHandle, queue: QueueHandle) -> PluginResult<()>,
    /// Blocks the host until `event` completes.
    pub sync_event: extern "C" fn(device: i32, event: EventHandle) -> PluginResult<()>,
    pub destroy_event: extern "C" fn(device: i32, event: EventHandle) -> PluginResult<()>,

    /// Page-locks host memory for faster transfers; returns the device-accessible address.
    pub pin_memory: extern "C" fn(device: i32, host_ptr: usize, size: u64) -> PluginResult<usize>,
    #[sabi(last_prefix_field)]
    pub unpin_memory: extern "C" fn(device: i32, host_ptr: usize) -> PluginResult<()>,
}

impl RootModule for PluginModuleRef {
    declare_root_module_statics! {PluginModuleRef}
    const BASE_NAME: &'static str = "omptarget_plugin";
    const NAME: &'static str = "omptarget_plugin";
    // abi_stable refuses a library whose major version differs; keep it equal to the ABI major.
    const VERSION_STRINGS: VersionStrings = VersionStrings::new("1.0.0");
}

impl PluginModule {
    /// The module of a plugin implementation, leaked for the life of the process (plugin
    /// libraries are never unloaded).
    pub fn for_plugin<P: SlottedPlugin>() -> PluginModuleRef {
        use abi_stable::prefix_type::PrefixTypeTrait;
        PluginModule {
            abi_version: ABI_VERSION,
            init: shims::init::<P>,
            deinit: shims::deinit::<P>,
            num_devices: shims::num_devices::<P>,
            check_image: shims::check_image::<P>,
            init_device: shims::init_device::<P>,
            deinit_device: shims::deinit_device::<P>,
            device_info: shims::device_info::<P>,
            load_image: shims::load_image::<P>,
            unload_image: shims::unload_image::<P>,
            get_kernel: shims::get_kernel::<P>,
            get_global: shims::get_global::<P>,
            alloc: shims::alloc::<P>,
            free: shims::free::<P>,
            create_queue: shims::create_queue::<P>,
            release_queue: shims::release_queue::<P>,
            copy_to_device: shims::copy_to_device::<P>,
            copy_from_device: shims::copy_from_device::<P>,
            copy_device_to_device: shims::copy_device_to_device::<P>,
            launch_kernel: shims::launch_kernel::<P>,
            synchronize: shims::synchronize::<P>,
            query_queue: shims::query_queue::<P>,
            create_event: shims::create_event::<P>,
            record_event: shims::record_event::<P>,
            wait_event: shims::wait_event::<P>,
            sync_event: shims::sync_event::<P>,
            destroy_event: shims::destroy_event::<P>,
            pin_memory: shims::pin_memory::<P>,
            unpin_memory: shims::unpin_memory::<P>,
        }
        .leak_into_prefix()
    }
}
