//! A loaded, initialised plugin, with its calls in Rust form.

use plugin_api::abi_stable::std_types::{RSlice, RStr};
use plugin_api::*;

type Result<T> = std::result::Result<T, PluginError>;

/// Whether `bytes` is an LLVM IR (bitcode) image, which clang builds with
/// `-fopenmp-target-jit` and LLVM's runtime compiles when it loads it. No plugin here can: the
/// first time an image is refused for it, the user is told why, once.
fn refuse_llvm_ir(bytes: &[u8]) -> bool {
    if !offload_image::llvm_ir::is_bitcode(bytes) {
        return false;
    }
    static TOLD: std::sync::Mutex<Vec<usize>> = std::sync::Mutex::new(Vec::new());
    let mut told = TOLD.lock().unwrap_or_else(|e| e.into_inner());
    if !told.contains(&(bytes.as_ptr() as usize)) {
        told.push(bytes.as_ptr() as usize);
        log::warn!("{}", offload_image::llvm_ir::NOT_SUPPORTED);
    }
    true
}

pub struct PluginLibrary {
    pub name: String,
    pub location: String,
    pub abi_version: AbiVersion,
    pub description: PluginDescription,
    module: PluginModuleRef,
}

fn image_ref<'a>(bytes: &'a [u8], triple: &'a str, arch: &'a str) -> ImageRef<'a> {
    ImageRef {
        bytes: RSlice::from_slice(bytes),
        triple: RStr::from_str(triple),
        arch: RStr::from_str(arch),
    }
}

impl PluginLibrary {
    pub(crate) fn new(
        name: String,
        location: String,
        abi_version: AbiVersion,
        description: PluginDescription,
        module: PluginModuleRef,
    ) -> Self {
        PluginLibrary {
            name,
            location,
            abi_version,
            description,
            module,
        }
    }

    pub fn num_devices(&self) -> i32 {
        (self.module.num_devices())().max(0)
    }

    /// `device` < 0 asks about the plugin as a whole. An LLVM IR image is refused here for
    /// every plugin: none can compile it (see [`refuse_llvm_ir`]).
    pub fn check_image(
        &self,
        device: i32,
        bytes: &[u8],
        triple: &str,
        arch: &str,
    ) -> ImageCompatibility {
        if refuse_llvm_ir(bytes) {
            return ImageCompatibility::no(offload_image::llvm_ir::REFUSED);
        }
        (self.module.check_image())(device, image_ref(bytes, triple, arch))
    }

    pub fn init_device(&self, device: i32) -> Result<()> {
        (self.module.init_device())(device).into_result()
    }

    pub fn deinit_device(&self, device: i32) -> Result<()> {
        (self.module.deinit_device())(device).into_result()
    }

    pub fn device_info(&self, device: i32) -> Result<Vec<InfoEntry>> {
        (self.module.device_info())(device)
            .into_result()
            .map(|v| v.into_vec())
    }

    pub fn load_image(
        &self,
        device: i32,
        bytes: &[u8],
        triple: &str,
        arch: &str,
    ) -> Result<ImageHandle> {
        if refuse_llvm_ir(bytes) {
            return Err(PluginError::unsupported(
                offload_image::llvm_ir::NOT_SUPPORTED,
            ));
        }
        (self.module.load_image())(device, image_ref(bytes, triple, arch)).into_result()
    }

    pub fn unload_image(&self, device: i32, image: ImageHandle) -> Result<()> {
        (self.module.unload_image())(device, image).into_result()
    }

    pub fn get_kernel(&self, device: i32, image: ImageHandle, name: &str) -> Result<KernelHandle> {
        (self.module.get_kernel())(device, image, RStr::from_str(name)).into_result()
    }

    pub fn get_global(
        &self,
        device: i32,
        image: ImageHandle,
        name: &str,
        size: u64,
    ) -> Result<GlobalInfo> {
        (self.module.get_global())(device, image, RStr::from_str(name), size).into_result()
    }

    pub fn alloc(&self, device: i32, size: u64, host_ptr: usize, kind: AllocKind) -> Result<usize> {
        (self.module.alloc())(device, size, host_ptr, kind).into_result()
    }

    pub fn free(&self, device: i32, ptr: usize, kind: AllocKind) -> Result<()> {
        (self.module.free())(device, ptr, kind).into_result()
    }

    pub fn create_queue(&self, device: i32) -> Result<QueueHandle> {
        (self.module.create_queue())(device).into_result()
    }

    pub fn release_queue(&self, device: i32, queue: QueueHandle) -> Result<()> {
        (self.module.release_queue())(device, queue).into_result()
    }

    /// # Safety
    /// `src` must be readable for `size` bytes until the copy is complete on `queue`.
    pub unsafe fn copy_to_device(
        &self,
        device: i32,
        dst: usize,
        src: usize,
        size: u64,
        queue: QueueHandle,
    ) -> Result<()> {
        (self.module.copy_to_device())(device, dst, src, size, queue).into_result()
    }

    /// # Safety
    /// `dst` must be writable for `size` bytes, and not otherwise used, until the copy is
    /// complete on `queue`.
    pub unsafe fn copy_from_device(
        &self,
        device: i32,
        dst: usize,
        src: usize,
        size: u64,
        queue: QueueHandle,
    ) -> Result<()> {
        (self.module.copy_from_device())(device, dst, src, size, queue).into_result()
    }

    pub fn copy_device_to_device(
        &self,
        src_device: i32,
        src: usize,
        dst_device: i32,
        dst: usize,
        size: u64,
        queue: QueueHandle,
    ) -> Result<()> {
        (self.module.copy_device_to_device())(src_device, src, dst_device, dst, size, queue)
            .into_result()
    }

    pub fn launch_kernel(
        &self,
        device: i32,
        kernel: KernelHandle,
        args: &[usize],
        config: &LaunchConfig,
        queue: QueueHandle,
    ) -> Result<()> {
        (self.module.launch_kernel())(device, kernel, RSlice::from_slice(args), config, queue)
            .into_result()
    }

    pub fn synchronize(&self, device: i32, queue: QueueHandle) -> Result<()> {
        (self.module.synchronize())(device, queue).into_result()
    }

    pub fn query_queue(&self, device: i32, queue: QueueHandle) -> Result<bool> {
        (self.module.query_queue())(device, queue).into_result()
    }

    pub fn create_event(&self, device: i32) -> Result<EventHandle> {
        (self.module.create_event())(device).into_result()
    }

    pub fn record_event(&self, device: i32, event: EventHandle, queue: QueueHandle) -> Result<()> {
        (self.module.record_event())(device, event, queue).into_result()
    }

    pub fn wait_event(&self, device: i32, event: EventHandle, queue: QueueHandle) -> Result<()> {
        (self.module.wait_event())(device, event, queue).into_result()
    }

    pub fn sync_event(&self, device: i32, event: EventHandle) -> Result<()> {
        (self.module.sync_event())(device, event).into_result()
    }

    pub fn destroy_event(&self, device: i32, event: EventHandle) -> Result<()> {
        (self.module.destroy_event())(device, event).into_result()
    }

    /// Free and total memory of a device; `None` for a plugin built for ABI 1.0, which lacks
    /// the call.
    pub fn memory_info(&self, device: i32) -> Option<Result<MemoryInfo>> {
        let call = self.module.memory_info()?;
        Some(call(device).into_result())
    }

    /// The foreign runtime and native handles of the device's interop objects, with `queue`'s
    /// native handle; `None` for a plugin older than ABI 1.2, which lacks the call.
    pub fn interop_info(&self, device: i32, queue: QueueHandle) -> Option<Result<InteropInfo>> {
        let call = self.module.interop_info()?;
        Some(call(device, queue).into_result())
    }

    /// Launches a kernel-language kernel with its parameter buffer; `None` for a plugin older
    /// than ABI 1.2, which lacks the call.
    pub(crate) fn launch_kernel_params(
        &self,
        device: i32,
        kernel: KernelHandle,
        params: &[u8],
        config: &LaunchConfig,
        queue: QueueHandle,
    ) -> Option<Result<()>> {
        let call = self.module.launch_kernel_params()?;
        Some(call(device, kernel, RSlice::from_slice(params), config, queue).into_result())
    }

    /// Gives the plugin an image's `declare target indirect` functions; `None` for a plugin
    /// older than ABI 1.3, which lacks the call.
    pub(crate) fn set_indirect_calls(
        &self,
        device: i32,
        image: ImageHandle,
        calls: &[IndirectCall],
    ) -> Option<Result<()>> {
        let call = self.module.set_indirect_calls()?;
        Some(call(device, image, RSlice::from_slice(calls)).into_result())
    }

    /// What the device's queues promise; nothing for a plugin older than ABI 1.4, which lacks
    /// the call, or one that fails to answer.
    pub fn device_traits(&self, device: i32) -> DeviceTraits {
        let Some(call) = self.module.device_traits() else {
            return DeviceTraits::NONE;
        };
        call(device).into_result().unwrap_or(DeviceTraits::NONE)
    }

    /// Starts the device's own timing of queued work; `None` for a plugin older than ABI 1.5,
    /// which lacks the call.
    pub(crate) fn start_work_timing(&self, device: i32) -> Option<Result<()>> {
        let call = self.module.start_work_timing()?;
        Some(call(device).into_result())
    }

    /// The device's timing of the work on `queue` since the last call; nothing for a plugin
    /// older than ABI 1.5.
    pub(crate) fn work_times(&self, device: i32, queue: QueueHandle) -> Result<Vec<WorkTime>> {
        let Some(call) = self.module.work_times() else {
            return Ok(Vec::new());
        };
        call(device, queue).into_result().map(|v| v.into_vec())
    }

    /// Fills device memory with a repeated pattern on the device; `None` for a plugin older
    /// than ABI 1.6, which lacks the call.
    pub fn fill_memory(
        &self,
        device: i32,
        dst: usize,
        pattern: &[u8],
        size: u64,
        queue: QueueHandle,
    ) -> Option<Result<()>> {
        let call = self.module.fill_memory()?;
        Some(call(device, dst, RSlice::from_slice(pattern), size, queue).into_result())
    }

    /// Whether the device's kernels can use a host range in place (plugin ABI 1.7); no for an
    /// older plugin.
    pub(crate) fn is_accessible(&self, device: i32, host_ptr: usize, size: u64) -> Result<bool> {
        let Some(call) = self.module.is_accessible() else {
            return Ok(false);
        };
        call(device, host_ptr, size).into_result()
    }

    /// Enters a host range in the device's page tables now; `None` for a plugin older than
    /// ABI 1.7.
    pub(crate) fn prefault_host_memory(
        &self,
        device: i32,
        host_ptr: usize,
        size: u64,
    ) -> Option<Result<()>> {
        let call = self.module.prefault_host_memory()?;
        Some(call(device, host_ptr, size).into_result())
    }

    /// Whether the plugin may still find devices (plugin ABI 1.5); no for an older plugin.
    pub(crate) fn devices_may_appear(&self) -> bool {
        self.module.devices_may_appear().is_some_and(|call| call())
    }

    /// Releases the whole plugin; no call may follow.
    pub fn deinit(&self) -> Result<()> {
        (self.module.deinit())().into_result()
    }

    pub fn pin_memory(&self, device: i32, host_ptr: usize, size: u64) -> Result<usize> {
        (self.module.pin_memory())(device, host_ptr, size).into_result()
    }

    pub fn unpin_memory(&self, device: i32, host_ptr: usize) -> Result<()> {
        (self.module.unpin_memory())(device, host_ptr).into_result()
    }
}
