//! The root module: a table of C functions, one per plugin operation.
//!
//! Plugin authors do not fill this table by hand: [`export_plugin!`](crate::export_plugin) builds
//! it from a [`Plugin`](crate::Plugin) implementation with [`PluginModule::for_plugin`]. The
//! field documentation below is the contract of each call as seen from the core; the same
//! contract, in Rust terms, is on the methods of [`Plugin`](crate::Plugin). The full guide for
//! plugin authors is `docs/plugin-abi.md` in the omptarget-rs repository.

use crate::logging::HostServices;
use crate::plugin::SlottedPlugin;
use crate::shims;
use crate::types::*;
use crate::version::{AbiVersion, ABI_VERSION};
use abi_stable::library::RootModule;
use abi_stable::sabi_types::VersionStrings;
use abi_stable::std_types::{RSlice, RStr, RVec};
use abi_stable::{declare_root_module_statics, StableAbi};

/// Everything a plugin offers, modelled on LLVM NextGen's `GenericPluginTy`/`GenericDeviceTy`.
///
/// # Versions
///
/// This is an abi_stable prefix type. The fields up to `unpin_memory` (marked
/// `#[sabi(last_prefix_field)]`) are ABI 1.0 and always present. Later minor versions only add
/// fields after it, never move or change one. Because of `#[sabi(missing_field(option))]`, the
/// accessors of [`PluginModuleRef`] for the added fields return `Option`. A newer core reads a
/// field that an older plugin lacks as `None` and falls back to the older behaviour. An older
/// core ignores fields it does not know. The plain C symbol
/// [`ABI_VERSION_SYMBOL`](crate::ABI_VERSION_SYMBOL) is checked before this table is looked at.
///
/// # Order of calls
///
/// The core calls `init` first, once, then `num_devices`. It calls `init_device(d)` before
/// anything else that uses device `d`, except `check_image`, `device_info` and `num_devices`,
/// which must also work on a device that is not initialised. Then come `load_image`, followed by
/// `get_kernel`/`get_global` for the image's entries. Then the memory, copy, queue and launch
/// calls: after queuing a copy of mapped data the core records an event, which constructs on
/// other queues wait for, and it polls `query_queue` for `nowait` constructs. `unload_image`
/// comes when the program unregisters its library, `deinit` once as the program exits (it must
/// release the initialised devices itself; no call follows). Plugins are never unloaded. The
/// current core never calls `deinit_device` or `sync_event`; they must work anyway (the
/// conformance checker tests them).
///
/// # Devices and errors
///
/// `device` is always the plugin's local number, `0..num_devices`. Every fallible function
/// returns `ErrorCode::INVALID_DEVICE` for a number outside that range. Error messages are shown
/// to users, with the operation and the global device number added by the core.
///
/// # Threading
///
/// Every function may be called from any thread, concurrently. Operations on one queue execute
/// in submission order. `QueueHandle::SYNC` means "complete before returning". With any other
/// queue, the host memory an operation reads or writes stays valid until `synchronize` on that
/// queue returns, and the plugin must not touch it after that.
#[repr(C)]
#[derive(StableAbi)]
#[sabi(kind(Prefix(prefix_ref = PluginModuleRef)))]
#[sabi(missing_field(option))]
pub struct PluginModule {
    /// The ABI version the plugin was built for (same value as the plain C symbol
    /// `omptarget_plugin_abi_version`, which is what the core checks).
    pub abi_version: AbiVersion,

    /// Initialises the plugin: loads its driver and finds its devices. Called once, before
    /// anything else, with the core's logging and `LIBOMPTARGET_INFO` services (borrowed for the
    /// call; the shim keeps a copy). A plugin without a usable driver or device succeeds with
    /// zero devices and says why in `note`. An error makes the core skip the plugin, with the
    /// warning `initialisation failed: <message> (<code>)`.
    pub init: extern "C" fn(services: &HostServices) -> PluginResult<PluginDescription>,
    /// Releases everything; no other call follows. Not called by the current core (plugins
    /// stay loaded until the process exits).
    pub deinit: extern "C" fn() -> PluginResult<()>,
    /// Number of devices, at least 0. It never decreases, and stays the same for the life of the
    /// process unless `devices_may_appear` says otherwise. The core numbers devices after
    /// `init`. No error channel: the shim returns 0 if `init` has not
    /// succeeded or the plugin panics.
    pub num_devices: extern "C" fn() -> i32,
    /// Whether the plugin (`device` < 0: "some device of this plugin") or one device can run an
    /// image. No side effects; works on devices that are not initialised. The core asks with -1
    /// when a program registers its images (to warn when no plugin can run one) and with a
    /// device number to pick the image to load. The reason is shown to users. A bad device
    /// number or a panic gives `compatible: false` with the reason.
    pub check_image: extern "C" fn(device: i32, image: ImageRef<'_>) -> ImageCompatibility,

    /// Makes a device usable. The core calls it once per device, on first use, before any call
    /// below that names the device. If it fails, the core calls it again at the next use.
    /// Should be idempotent.
    pub init_device: extern "C" fn(device: i32) -> PluginResult<()>,
    /// Undoes `init_device`. Not called by the current core.
    pub deinit_device: extern "C" fn(device: i32) -> PluginResult<()>,
    /// Key/value properties, for `omptarget-info` and `__tgt_print_device_info`. Must work on a
    /// device that is not initialised. The core reads `compute unit kind` (see
    /// `Plugin::device_info`).
    pub device_info: extern "C" fn(device: i32) -> PluginResult<DeviceInfo>,

    /// Loads an image on a device and returns its handle. The bytes are only borrowed for the
    /// call: the plugin copies what it needs. Called at the device's first use after the program
    /// registered the image, once `check_image` said yes.
    pub load_image: extern "C" fn(device: i32, image: ImageRef<'_>) -> PluginResult<ImageHandle>,
    /// Unloads an image (runs its device-side destructors). Called when the program
    /// unregisters its library; the image's kernels are not used afterwards.
    pub unload_image: extern "C" fn(device: i32, image: ImageHandle) -> PluginResult<()>,
    /// Finds a kernel of a loaded image by its offload-entry name; `NOT_FOUND` if absent.
    pub get_kernel: extern "C" fn(
        device: i32,
        image: ImageHandle,
        name: RStr<'_>,
    ) -> PluginResult<KernelHandle>,
    /// Finds a global variable of a loaded image, returning its device address and size.
    /// `size` is the host's idea of its size (0: don't check). Returns `NOT_FOUND` if absent and
    /// `INVALID_ARGUMENT` if the sizes differ.
    pub get_global: extern "C" fn(
        device: i32,
        image: ImageHandle,
        name: RStr<'_>,
        size: u64,
    ) -> PluginResult<GlobalInfo>,

    /// Allocates `size` bytes of memory of `kind` and returns its address, never 0. `host_ptr`
    /// is the host data it will mirror (0 if none). It is only a hint: the core reuses small
    /// `DEFAULT` blocks for other data. An unknown `kind` is an error (`INVALID_ARGUMENT`).
    pub alloc: extern "C" fn(
        device: i32,
        size: u64,
        host_ptr: usize,
        kind: AllocKind,
    ) -> PluginResult<usize>,
    /// Frees an address returned by `alloc`. `kind` is the kind the caller says it allocated.
    pub free: extern "C" fn(device: i32, ptr: usize, kind: AllocKind) -> PluginResult<()>,

    /// Creates (or takes from a pool) a queue: an ordered stream of work. Never returns
    /// `QueueHandle::SYNC`. The core creates one per target construct.
    pub create_queue: extern "C" fn(device: i32) -> PluginResult<QueueHandle>,
    /// Returns a queue for reuse. The core synchronises the queue first, even after a failure,
    /// and ignores the result.
    pub release_queue: extern "C" fn(device: i32, queue: QueueHandle) -> PluginResult<()>,
    /// Copies `size` bytes of host memory at `src` to device memory at `dst` (possibly inside an
    /// allocation or a global). With a real queue the call may return before the copy has run.
    /// The host buffer stays valid until the queue is synchronised.
    pub copy_to_device: extern "C" fn(
        device: i32,
        dst: usize,
        src: usize,
        size: u64,
        queue: QueueHandle,
    ) -> PluginResult<()>,
    /// Copies `size` bytes of device memory at `src` to host memory at `dst`. With a real queue,
    /// the host buffer holds the data only once the queue is synchronised.
    pub copy_from_device: extern "C" fn(
        device: i32,
        dst: usize,
        src: usize,
        size: u64,
        queue: QueueHandle,
    ) -> PluginResult<()>,
    /// Copies between two devices of this plugin, possibly the same one; `queue` belongs to
    /// `src_device`. The current core only passes `QueueHandle::SYNC`.
    pub copy_device_to_device: extern "C" fn(
        src_device: i32,
        src: usize,
        dst_device: i32,
        dst: usize,
        size: u64,
        queue: QueueHandle,
    ) -> PluginResult<()>,
    /// Launches a kernel with one pointer-sized value per argument, already translated by the
    /// core (device addresses, by-value literals). With `config.kernel_args_version` >= 3 the
    /// plugin prepends the launch environment argument itself (see [`LaunchConfig`]).
    pub launch_kernel: extern "C" fn(
        device: i32,
        kernel: KernelHandle,
        args: RSlice<'_, usize>,
        config: &LaunchConfig,
        queue: QueueHandle,
    ) -> PluginResult<()>,
    /// Waits until everything submitted to `queue` has completed. Reports failures of that work
    /// here at the latest. `QueueHandle::SYNC`: returns `Ok` at once. The core calls it once, at
    /// the end of each construct.
    pub synchronize: extern "C" fn(device: i32, queue: QueueHandle) -> PluginResult<()>,
    /// Whether everything submitted to `queue` has completed, without waiting
    /// (`QueueHandle::SYNC`: true).
    pub query_queue: extern "C" fn(device: i32, queue: QueueHandle) -> PluginResult<bool>,

    /// Creates an event on a device, for use with that device's queues.
    pub create_event: extern "C" fn(device: i32) -> PluginResult<EventHandle>,
    /// Makes `event` complete when the work submitted to `queue` so far completes
    /// (`QueueHandle::SYNC`: at once).
    pub record_event:
        extern "C" fn(device: i32, event: EventHandle, queue: QueueHandle) -> PluginResult<()>,
    /// Makes later work on `queue` wait for `event`, without blocking the host
    /// (`QueueHandle::SYNC`: returns once `event` has completed).
    pub wait_event:
        extern "C" fn(device: i32, event: EventHandle, queue: QueueHandle) -> PluginResult<()>,
    /// Blocks the host until `event` completes.
    pub sync_event: extern "C" fn(device: i32, event: EventHandle) -> PluginResult<()>,
    /// Destroys (or returns to a pool) an event after its last use.
    pub destroy_event: extern "C" fn(device: i32, event: EventHandle) -> PluginResult<()>,

    /// Page-locks host memory for faster transfers; returns the address the device uses for it
    /// (possibly `host_ptr` itself). Backs `llvm_omp_target_lock_mem`.
    pub pin_memory: extern "C" fn(device: i32, host_ptr: usize, size: u64) -> PluginResult<usize>,
    /// Undoes `pin_memory` for the same `host_ptr`. Backs `llvm_omp_target_unlock_mem`.
    ///
    /// The last ABI 1.0 field: fields of later minor versions go after it.
    #[sabi(last_prefix_field)]
    pub unpin_memory: extern "C" fn(device: i32, host_ptr: usize) -> PluginResult<()>,

    // ---- ABI 1.1: optional; a core reads it through `PluginModuleRef::memory_info()`, which
    // is `None` for a plugin built for 1.0. ----
    /// Free and total memory of a device. Plugins built with plugin-api 1.1 or later always
    /// export it; one without the information answers `ErrorCode::UNSUPPORTED`.
    pub memory_info: extern "C" fn(device: i32) -> PluginResult<MemoryInfo>,

    // ---- ABI 1.2: optional; `None` for a plugin built for 1.0 or 1.1. ----
    /// The foreign runtime and native handles of a device's OpenMP interop objects, with the
    /// native handle of `queue` (see [`Plugin::interop_info`](crate::Plugin::interop_info)).
    pub interop_info: extern "C" fn(device: i32, queue: QueueHandle) -> PluginResult<InteropInfo>,
    /// Launches a kernel-language (CUDA/HIP) kernel with its compiler-laid-out parameter
    /// buffer and exact grid and block (see
    /// [`Plugin::launch_kernel_params`](crate::Plugin::launch_kernel_params)).
    pub launch_kernel_params: extern "C" fn(
        device: i32,
        kernel: KernelHandle,
        params: RSlice<'_, u8>,
        config: &LaunchConfig,
        queue: QueueHandle,
    ) -> PluginResult<()>,

    // ---- ABI 1.3: optional; `None` for a plugin built for 1.0 to 1.2. ----
    /// The `declare target indirect` functions of a loaded image, each host function address
    /// with its device function address (see
    /// [`Plugin::set_indirect_calls`](crate::Plugin::set_indirect_calls)). Called once, after
    /// `load_image` and the image's `get_global` calls, only for images that have such functions.
    pub set_indirect_calls: extern "C" fn(
        device: i32,
        image: ImageHandle,
        calls: RSlice<'_, IndirectCall>,
    ) -> PluginResult<()>,

    // ---- ABI 1.4: optional; `None` for a plugin built for 1.0 to 1.3. ----
    /// What the device's queues promise (see
    /// [`Plugin::device_traits`](crate::Plugin::device_traits)). Read once per device, after
    /// `init_device`.
    pub device_traits: extern "C" fn(device: i32) -> PluginResult<DeviceTraits>,

    // ---- ABI 1.5: optional; `None` for a plugin built for 1.0 to 1.4. ----
    /// From now on, the device times each copy and launch submitted to its queues, for
    /// `LIBOMPTARGET_PROFILE` (see [`Plugin::start_work_timing`](crate::Plugin::start_work_timing)).
    /// `UNSUPPORTED` where it cannot.
    pub start_work_timing: extern "C" fn(device: i32) -> PluginResult<()>,
    /// The device's timing of the work submitted to `queue` since it was created or last asked,
    /// in submission order (see [`Plugin::work_times`](crate::Plugin::work_times)).
    pub work_times: extern "C" fn(device: i32, queue: QueueHandle) -> PluginResult<RVec<WorkTime>>,
    /// Whether `num_devices` may still grow: the plugin found its devices only in part when it
    /// started (see [`Plugin::devices_may_appear`](crate::Plugin::devices_may_appear)).
    pub devices_may_appear: extern "C" fn() -> bool,

    // ---- ABI 1.6: optional; `None` for a plugin built for 1.0 to 1.5. ----
    /// Fills `size` bytes of device memory at `dst` with `pattern` repeated, on the device (see
    /// [`Plugin::fill_memory`](crate::Plugin::fill_memory)). Backs `omp_target_memset`.
    pub fill_memory: extern "C" fn(
        device: i32,
        dst: usize,
        pattern: RSlice<'_, u8>,
        size: u64,
        queue: QueueHandle,
    ) -> PluginResult<()>,

    // ---- ABI 1.7: optional; `None` for a plugin built for 1.0 to 1.6. ----
    /// Whether the device's kernels can use `size` host bytes at `host_ptr` in place (see
    /// [`Plugin::is_accessible`](crate::Plugin::is_accessible)). Backs
    /// `omp_target_is_accessible`.
    pub is_accessible: extern "C" fn(device: i32, host_ptr: usize, size: u64) -> PluginResult<bool>,
    /// Enters `size` host bytes at `host_ptr` in the device's page tables now (see
    /// [`Plugin::prefault_host_memory`](crate::Plugin::prefault_host_memory)).
    pub prefault_host_memory:
        extern "C" fn(device: i32, host_ptr: usize, size: u64) -> PluginResult<()>,
}

impl RootModule for PluginModuleRef {
    declare_root_module_statics! {PluginModuleRef}
    const BASE_NAME: &'static str = "omptarget_plugin";
    const NAME: &'static str = "omptarget_plugin";
    // abi_stable refuses a library whose major version differs; keep it equal to the ABI major.
    const VERSION_STRINGS: VersionStrings = VersionStrings::new("1.7.0");
}

impl PluginModule {
    /// The module of a plugin implementation, leaked for the life of the process (plugin
    /// libraries are never unloaded). Each field is the matching shim of the crate's private
    /// `shims` module: it finds the instance, calls the [`Plugin`](crate::Plugin) method, turns
    /// a panic into `ErrorCode::PANIC` and converts the result. Called by the root module
    /// function that [`export_plugin!`](crate::export_plugin) generates.
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
            memory_info: shims::memory_info::<P>,
            interop_info: shims::interop_info::<P>,
            launch_kernel_params: shims::launch_kernel_params::<P>,
            set_indirect_calls: shims::set_indirect_calls::<P>,
            device_traits: shims::device_traits::<P>,
            start_work_timing: shims::start_work_timing::<P>,
            work_times: shims::work_times::<P>,
            devices_may_appear: shims::devices_may_appear::<P>,
            fill_memory: shims::fill_memory::<P>,
            is_accessible: shims::is_accessible::<P>,
            prefault_host_memory: shims::prefault_host_memory::<P>,
        }
        .leak_into_prefix()
    }
}
