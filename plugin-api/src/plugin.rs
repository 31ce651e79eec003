//! The safe, Rust-side interface a plugin implements.
//!
//! Implement [`Plugin`] and call [`export_plugin!`](crate::export_plugin) once. The generated C
//! functions (the fields of [`PluginModule`](crate::PluginModule)) look up the single instance in
//! its [`PluginSlot`], call the method, catch panics and convert the result.

use crate::types::*;
use std::sync::OnceLock;

/// What every fallible [`Plugin`] method returns; the shims convert it to [`PluginResult`].
pub type Result<T> = std::result::Result<T, PluginError>;

/// A device plugin. One instance per process, created by `init` on the core's first call, kept
/// in a static and never dropped (do not rely on `Drop` at exit).
///
/// # Contract
///
/// - Every method may be called from any thread, concurrently.
/// - `device` is a local device number. The core passes numbers in `0..num_devices()`, but the
///   shims do not check it: a method must check it and return `ErrorCode::INVALID_DEVICE`.
/// - Addresses are plain integers. Host addresses come from the program; device addresses come
///   from `alloc`, `get_global` or `pin_memory`. The core adds offsets to device addresses
///   (copies and kernel arguments may point inside an allocation).
/// - Handles are opaque `u64`s the plugin chooses, valid on the device that made them.
///   `QueueHandle(0)` is [`QueueHandle::SYNC`].
/// - Borrowed arguments (image bytes, names, argument slices, the launch configuration) are only
///   valid during the call: copy what you keep.
/// - Error messages are shown to users: name what failed and why.
/// - A panic is caught and reported as `ErrorCode::PANIC`, provided the library is built with
///   `panic = "unwind"`.
///
/// The order in which the core calls the methods is described on
/// [`PluginModule`](crate::PluginModule).
pub trait Plugin: Sized + Send + Sync + 'static {
    /// Loads the driver and discovers devices. Missing drivers or devices are not an error:
    /// return a plugin with zero devices and a note saying why. Keep it cheap: every program
    /// that links the runtime pays for it, even one that never offloads. An error makes the core
    /// skip the plugin.
    ///
    /// Called by the first `init` call, which also installs the logger (so `log` macros work
    /// here). If two threads raced, one instance would be dropped; the core does not race.
    fn init() -> Result<Self>;

    /// ABI 1.4: whether images built for `triple` (the offload container's target triple, such
    /// as `nvptx64-nvidia-cuda`) may run on this plugin's devices, answered before `init`
    /// (through the plain C function `omptarget_plugin_may_run_target`, before the core even
    /// checks the function table): touch no driver and keep no state. The core starts a plugin only when a registered image
    /// may run on it (as LLVM's runtime), so a program without images for it never pays for its
    /// driver. `UNKNOWN` (the default) makes the core start the plugin and ask `check_image`.
    fn may_run_target(triple: &str) -> TargetClaim {
        let _ = triple;
        TargetClaim::UNKNOWN
    }
    /// Releases everything; no call follows. Not called by the current core. The default does
    /// nothing.
    fn deinit(&self) -> Result<()> {
        Ok(())
    }
    /// The description `init` returns to the core. `num_devices` must equal
    /// [`Plugin::num_devices`]. `name` is informative: the core names the plugin after its file.
    fn describe(&self) -> PluginDescription;
    /// Number of devices. It never decreases; it stays the same for the life of the process
    /// unless [`Plugin::devices_may_appear`] says that devices may still appear.
    fn num_devices(&self) -> i32;
    /// Whether `device` (`None`: "any device of this plugin", a format check) can run `image`.
    /// No side effects; must work before `init_device`. The reason is shown to users: name the
    /// image's architecture and the device's. Answer "no" for an invalid device.
    fn check_image(&self, device: Option<i32>, image: ImageRef<'_>) -> ImageCompatibility;

    /// Makes a device usable (context, pools). Called once per device before the calls that use
    /// it, again after a failure; should be idempotent.
    fn init_device(&self, device: i32) -> Result<()>;
    /// Undoes `init_device`. Not called by the current core.
    fn deinit_device(&self, device: i32) -> Result<()>;
    /// Properties shown by `omptarget-info` and `__tgt_print_device_info`; must work before
    /// `init_device`. Keys the core reads: `compute unit kind` (the device's architecture as
    /// LLVM's plugins name it: `generic-64bit`, `sm_90`, `gfx90a`), reported to OMPT tools at
    /// device initialisation, and [`PAGEABLE_MEMORY_ACCESS`](crate::PAGEABLE_MEMORY_ACCESS).
    /// The bundled plugins also give `name`, `kind` and `memory bytes`.
    fn device_info(&self, device: i32) -> Result<Vec<InfoEntry>>;

    /// Loads an image on a device: copy what you keep (the bytes are borrowed), do the
    /// device-side set-up the image needs, return a handle. Errors: `INVALID_ARGUMENT`
    /// (malformed), `UNSUPPORTED` (another architecture), `OUT_OF_MEMORY`, `FAILED`.
    fn load_image(&self, device: i32, image: ImageRef<'_>) -> Result<ImageHandle>;
    /// Unloads an image (running its device-side destructors). `INVALID_ARGUMENT` for an
    /// unknown handle.
    fn unload_image(&self, device: i32, image: ImageHandle) -> Result<()>;
    /// Finds a kernel by its offload-entry name; `NOT_FOUND` if the image has none.
    fn get_kernel(&self, device: i32, image: ImageHandle, name: &str) -> Result<KernelHandle>;
    /// Finds a global variable: its device address and size. `size` is the host's size, 0 for
    /// "don't check". `NOT_FOUND` if absent, `INVALID_ARGUMENT` if the sizes differ.
    fn get_global(
        &self,
        device: i32,
        image: ImageHandle,
        name: &str,
        size: u64,
    ) -> Result<GlobalInfo>;

    /// Allocates `size` bytes of `kind` and returns the address (never 0). `host_ptr` is a hint
    /// (0 if none). `OUT_OF_MEMORY` when exhausted. For a kind you do not know, return an error:
    /// later minor versions may add kinds.
    fn alloc(&self, device: i32, size: u64, host_ptr: usize, kind: AllocKind) -> Result<usize>;
    /// Frees an address returned by `alloc`; `INVALID_ARGUMENT` for an unknown one.
    fn free(&self, device: i32, ptr: usize, kind: AllocKind) -> Result<()>;

    /// Creates a queue (an ordered stream of work). Never returns [`QueueHandle::SYNC`].
    fn create_queue(&self, device: i32) -> Result<QueueHandle>;
    /// Takes a queue back for reuse. The core synchronises it first and ignores the result.
    fn release_queue(&self, device: i32, queue: QueueHandle) -> Result<()>;
    /// Copies `size` bytes from host `src` to device `dst` on `queue`.
    ///
    /// # Safety
    /// `src` is readable for `size` bytes until the copy is complete: with a real queue, until
    /// the queue is synchronised. The core promises it for every call.
    unsafe fn copy_to_device(
        &self,
        device: i32,
        dst: usize,
        src: usize,
        size: u64,
        queue: QueueHandle,
    ) -> Result<()>;
    /// Copies `size` bytes from device `src` to host `dst` on `queue`. With a real queue, the
    /// data is in `dst` once the queue is synchronised.
    ///
    /// # Safety
    /// `dst` is writable for `size` bytes, and nothing else uses it, until the copy is
    /// complete. The core promises it for every call.
    unsafe fn copy_from_device(
        &self,
        device: i32,
        dst: usize,
        src: usize,
        size: u64,
        queue: QueueHandle,
    ) -> Result<()>;
    /// Copies between two devices of this plugin (possibly the same one); `queue` belongs to
    /// `src_device`.
    fn copy_device_to_device(
        &self,
        src_device: i32,
        src: usize,
        dst_device: i32,
        dst: usize,
        size: u64,
        queue: QueueHandle,
    ) -> Result<()>;
    /// Launches `kernel` on `queue`, one pointer-sized value per argument. For
    /// `config.kernel_args_version` >= 3, prepend the launch environment argument (see
    /// [`LaunchConfig`]).
    fn launch_kernel(
        &self,
        device: i32,
        kernel: KernelHandle,
        args: &[usize],
        config: &LaunchConfig,
        queue: QueueHandle,
    ) -> Result<()>;
    /// Waits until everything submitted to `queue` has completed; reports the failures of that
    /// work. `SYNC`: `Ok` at once.
    fn synchronize(&self, device: i32, queue: QueueHandle) -> Result<()>;
    /// Whether everything submitted to `queue` has completed, without waiting. `SYNC`: true.
    /// `true` means what a `synchronize` returning `Ok` would: the work's failures reported
    /// (as an error) and its completion handled, so the core does not synchronise after it.
    fn query_queue(&self, device: i32, queue: QueueHandle) -> Result<bool>;

    /// Creates an event for use with this device's queues.
    fn create_event(&self, device: i32) -> Result<EventHandle>;
    /// `event` completes when the work submitted to `queue` so far completes (`SYNC`: at once).
    fn record_event(&self, device: i32, event: EventHandle, queue: QueueHandle) -> Result<()>;
    /// Later work on `queue` waits for `event`; the host does not block (`SYNC`: returns once
    /// `event` has completed).
    fn wait_event(&self, device: i32, event: EventHandle, queue: QueueHandle) -> Result<()>;
    /// Blocks the host until `event` completes.
    fn sync_event(&self, device: i32, event: EventHandle) -> Result<()>;
    /// Destroys an event after its last use.
    fn destroy_event(&self, device: i32, event: EventHandle) -> Result<()>;

    /// Page-locks `size` bytes of host memory; returns the address the device uses for it
    /// (possibly `host_ptr` itself).
    fn pin_memory(&self, device: i32, host_ptr: usize, size: u64) -> Result<usize>;
    /// Undoes `pin_memory` for the same `host_ptr`.
    fn unpin_memory(&self, device: i32, host_ptr: usize) -> Result<()>;

    /// ABI 1.1: free and total memory of `device`, shown by `omptarget-info`. The default
    /// answers `ErrorCode::UNSUPPORTED`.
    fn memory_info(&self, device: i32) -> Result<MemoryInfo> {
        let _ = device;
        Err(PluginError::new(
            ErrorCode::UNSUPPORTED,
            "this plugin does not report free memory",
        ))
    }

    /// ABI 1.2: the foreign runtime and native handles an OpenMP interop object of `device`
    /// carries (`#pragma omp interop`, `omp_get_interop_ptr`), with `queue`'s native handle as
    /// `targetsync` (`QueueHandle::SYNC`: none). The core creates one queue per `targetsync`
    /// interop object and calls `synchronize` on it where the program must wait for the work
    /// it submitted to that native handle: `synchronize` must then also wait for work the
    /// program queued there itself. The default answers "no foreign runtime" (the core then
    /// gives interop objects without native handles).
    fn interop_info(&self, device: i32, queue: QueueHandle) -> Result<InteropInfo> {
        let _ = queue;
        if !(0..self.num_devices()).contains(&device) {
            return Err(PluginError::new(
                ErrorCode::INVALID_DEVICE,
                format!("no device {device}"),
            ));
        }
        Ok(InteropInfo::none(Vendor::UNKNOWN))
    }

    /// ABI 1.2: launches a kernel-language (CUDA/HIP) kernel, LLVM 22's `llvmLaunchKernel`.
    /// `params` is the kernel's parameter buffer, laid out by the compiler as the kernel
    /// language does (no implicit launch environment); `config.num_teams` and
    /// `config.thread_limit` are the exact grid and block dimensions (0 counts as 1). The
    /// default answers `UNSUPPORTED`.
    fn launch_kernel_params(
        &self,
        device: i32,
        kernel: KernelHandle,
        params: &[u8],
        config: &LaunchConfig,
        queue: QueueHandle,
    ) -> Result<()> {
        let _ = (device, kernel, params, config, queue);
        Err(PluginError::unsupported(
            "this plugin cannot launch kernel-language (CUDA/HIP) kernels",
        ))
    }

    /// ABI 1.3: the `declare target indirect` functions of a loaded image. A program calls
    /// them through host function pointers; a GPU plugin gives the device runtime the table it
    /// translates those pointers with (LLVM's `__llvm_omp_indirect_call_lookup` reads it from
    /// the device environment). `calls` is never empty. The default answers `UNSUPPORTED`,
    /// which the core reports as a warning; a plugin whose device code can call host function
    /// pointers as they are returns `Ok`.
    fn set_indirect_calls(
        &self,
        device: i32,
        image: ImageHandle,
        calls: &[IndirectCall],
    ) -> Result<()> {
        let _ = (device, image, calls);
        Err(PluginError::unsupported(
            "this plugin cannot translate host function pointers for `declare target indirect` \
             functions",
        ))
    }

    /// ABI 1.4: what `device`'s queues promise ([`DeviceTraits`]). The core reads it once,
    /// when the device starts. The default promises nothing, which is always correct; a plugin
    /// whose queues run work before returning (the host plugin) answers
    /// `QUEUES_COMPLETE_ON_SUBMISSION` and saves the core an event per transfer.
    fn device_traits(&self, device: i32) -> Result<DeviceTraits> {
        if !(0..self.num_devices()).contains(&device) {
            return Err(PluginError::new(
                ErrorCode::INVALID_DEVICE,
                format!("no device {device}"),
            ));
        }
        Ok(DeviceTraits::NONE)
    }

    /// ABI 1.5: from now on, time each copy and launch submitted to `device`'s queues on the
    /// device itself (CUDA events, HSA profiling), for `LIBOMPTARGET_PROFILE`. The core calls it
    /// once per device, after `init_device`, only when profiling is on. The default answers
    /// `UNSUPPORTED`: the core then shows no device-side spans for the device (unless its queues
    /// complete work on submission, where the submission's own span is the device's timing).
    fn start_work_timing(&self, device: i32) -> Result<()> {
        let _ = device;
        Err(PluginError::unsupported(
            "this plugin cannot time the work on its devices",
        ))
    }

    /// ABI 1.5: the device's timing of the work submitted to `queue` since the queue was
    /// created or last asked, in submission order: one [`WorkTime`] per successful
    /// `copy_to_device`, `copy_from_device`, `copy_device_to_device` (on the source device's
    /// queue), `launch_kernel` and `launch_kernel_params` submitted after `start_work_timing`.
    /// The core asks once the queue's work has completed (after `synchronize`, or a
    /// `query_queue` that answered true) and before `release_queue`, which discards what was not
    /// asked for. The default answers nothing.
    fn work_times(&self, device: i32, queue: QueueHandle) -> Result<Vec<WorkTime>> {
        let _ = (device, queue);
        Ok(Vec::new())
    }

    /// ABI 1.5: whether more devices may still appear, so that `num_devices` can grow (the MPI
    /// plugin of a program that initialises MPI after the runtime started: its remote devices
    /// are known once the program has). The core asks after `init`. While the answer is yes, it
    /// asks `num_devices` again before it answers `omp_get_num_devices`, and before a construct
    /// for a device number it does not have, and numbers the new devices after every device it
    /// numbered so far. The default answers no.
    fn devices_may_appear(&self) -> bool {
        false
    }

    /// ABI 1.6: fills `size` bytes of device memory at `dst` with `pattern` repeated, on the
    /// device and without a host buffer (LLVM's `dataFill`; backs `omp_target_memset`).
    /// `pattern` is 1, 2 or 4 bytes and `size` a whole number of patterns (the core passes
    /// nothing else). With a real queue the fill runs in order with the queue's other work; it
    /// is not one of the operations [`Plugin::work_times`] reports. The default answers
    /// `UNSUPPORTED`, and so may a plugin for a pattern length or an address it cannot fill:
    /// the core then copies a host buffer holding the pattern instead.
    fn fill_memory(
        &self,
        device: i32,
        dst: usize,
        pattern: &[u8],
        size: u64,
        queue: QueueHandle,
    ) -> Result<()> {
        let _ = (device, dst, pattern, size, queue);
        Err(PluginError::unsupported(
            "this plugin cannot fill device memory on the device",
        ))
    }

    /// ABI 1.7: whether kernels on `device` can read and write the `size` host bytes at
    /// `host_ptr` in place, as they are now (`omp_target_is_accessible`): pageable memory on a
    /// device that reaches the host's page tables (an APU with XNACK, HMM or ATS), memory
    /// page-locked or allocated for the device. `host_ptr` is never null and `size` never 0.
    /// The default answers no, which is always safe: the program then maps the data.
    fn is_accessible(&self, device: i32, host_ptr: usize, size: u64) -> Result<bool> {
        let _ = (device, host_ptr, size);
        Ok(false)
    }

    /// ABI 1.7: makes the device's page tables hold the `size` host bytes at `host_ptr` now,
    /// before a kernel touches them (`OMPX_EAGER_ZERO_COPY_MAPS`: a zero-copy map that would
    /// otherwise fault each page in, or cannot fault at all without XNACK). The core calls it
    /// for each zero-copy map when the program asked for eager maps. The default answers
    /// `UNSUPPORTED`, and the core then leaves the pages to be faulted in.
    fn prefault_host_memory(&self, device: i32, host_ptr: usize, size: u64) -> Result<()> {
        let _ = (device, host_ptr, size);
        Err(PluginError::unsupported(
            "this plugin cannot enter host memory in the device's page tables ahead of use",
        ))
    }
}

/// Where a plugin library keeps its one instance. [`export_plugin!`](crate::export_plugin)
/// declares it as a static; plugins do not use it directly.
pub struct PluginSlot<P> {
    instance: OnceLock<P>,
}

impl<P: Plugin> PluginSlot<P> {
    /// An empty slot, for a `static`.
    pub const fn new() -> Self {
        PluginSlot {
            instance: OnceLock::new(),
        }
    }

    /// The instance, or `ErrorCode::NOT_INITIALIZED` before a successful `init`.
    pub fn get(&self) -> Result<&P> {
        self.instance.get().ok_or_else(|| {
            PluginError::new(
                ErrorCode::NOT_INITIALIZED,
                "plugin used before its init call",
            )
        })
    }

    /// Creates the instance with [`Plugin::init`] on the first call; later calls return the same
    /// one. A failed `init` leaves the slot empty.
    pub fn get_or_init(&self) -> Result<&P> {
        if let Some(p) = self.instance.get() {
            return Ok(p);
        }
        let created = P::init()?;
        // A racing init may have won; either instance is equivalent, keep the winner.
        Ok(self.instance.get_or_init(|| created))
    }
}

impl<P: Plugin> Default for PluginSlot<P> {
    fn default() -> Self {
        Self::new()
    }
}

/// [`Plugin::may_run_target`] behind the plain C function that
/// [`export_plugin!`](crate::export_plugin) exports; a panic or a triple that is not UTF-8
/// answers `UNKNOWN`. Not for plugins to call.
///
/// # Safety
/// `triple` points at `len` readable bytes (or `len` is 0).
#[doc(hidden)]
pub unsafe fn may_run_target_of<P: Plugin>(triple: *const u8, len: usize) -> TargetClaim {
    let bytes = if len == 0 || triple.is_null() {
        &[][..]
    } else {
        // SAFETY: the caller passes `len` readable bytes.
        unsafe { std::slice::from_raw_parts(triple, len) }
    };
    let Ok(triple) = std::str::from_utf8(bytes) else {
        return TargetClaim::UNKNOWN;
    };
    std::panic::catch_unwind(|| P::may_run_target(triple)).unwrap_or(TargetClaim::UNKNOWN)
}

/// Implemented by [`export_plugin!`](crate::export_plugin): gives the shims the plugin's slot.
pub trait SlottedPlugin: Plugin {
    /// The plugin type's one static slot.
    fn slot() -> &'static PluginSlot<Self>;
}
