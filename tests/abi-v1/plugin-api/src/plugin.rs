//! The safe, Rust-side interface a plugin implements.

use crate::types::*;
use std::sync::OnceLock;

pub type Result<T> = std::result::Result<T, PluginError>;

/// A device plugin. One instance per process, created by `init` on the core's first call.
///
/// Every method may be called concurrently from several threads. `device` is always in
/// `0..num_devices()` when the core calls (the shims do not check it: plugins must, and return
/// `ErrorCode::INVALID_DEVICE`). Addresses are plain integers: host addresses come from the
/// program, device addresses from `alloc` or `get_global`.
pub trait Plugin: Sized + Send + Sync + 'static {
    /// Loads the driver and discovers devices. Missing drivers are not an error: return a plugin
    /// with zero devices and a note saying why.
    fn init() -> Result<Self>;
    fn deinit(&self) -> Result<()> {
        Ok(())
    }
    fn describe(&self) -> PluginDescription;
    fn num_devices(&self) -> i32;
    /// `device` is `None` for "any device of this plugin".
    fn check_image(&self, device: Option<i32>, image: ImageRef<'_>) -> ImageCompatibility;

    fn init_device(&self, device: i32) -> Result<()>;
    fn deinit_device(&self, device: i32) -> Result<()>;
    /// Properties shown by `omptarget-info`. Keys the core reads: `compute unit kind` (the
    /// device's architecture as LLVM's plugins name it: `generic-64bit`, `sm_90`, `gfx90a`),
    /// reported to OMPT tools at device initialisation.
    fn device_info(&self, device: i32) -> Result<Vec<InfoEntry>>;

    fn load_image(&self, device: i32, image: ImageRef<'_>) -> Result<ImageHandle>;
    fn unload_image(&self, device: i32, image: ImageHandle) -> Result<()>;
    fn get_kernel(&self, device: i32, image: ImageHandle, name: &str) -> Result<KernelHandle>;
    fn get_global(
        &self,
        device: i32,
        image: ImageHandle,
        name: &str,
        size: u64,
    ) -> Result<GlobalInfo>;

    fn alloc(&self, device: i32, size: u64, host_ptr: usize, kind: AllocKind) -> Result<usize>;
    fn free(&self, device: i32, ptr: usize, kind: AllocKind) -> Result<()>;

    fn create_queue(&self, device: i32) -> Result<QueueHandle>;
    fn release_queue(&self, device: i32, queue: QueueHandle) -> Result<()>;
    fn copy_to_device(
        &self,
        device: i32,
        dst: usize,
        src: usize,
        size: u64,
        queue: QueueHandle,
    ) -> Result<()>;
    fn copy_from_device(
        &self,
        device: i32,
        dst: usize,
        src: usize,
        size: u64,
        queue: QueueHandle,
    ) -> Result<()>;
    fn copy_device_to_device(
        &self,
        src_device: i32,
        src: usize,
        dst_device: i32,
        dst: usize,
        size: u64,
        queue: QueueHandle,
    ) -> Result<()>;
    fn launch_kernel(
        &self,
        device: i32,
        kernel: KernelHandle,
        args: &[usize],
        config: &LaunchConfig,
        queue: QueueHandle,
    ) -> Result<()>;
    fn synchronize(&self, device: i32, queue: QueueHandle) -> Result<()>;
    fn query_queue(&self, device: i32, queue: QueueHandle) -> Result<bool>;

    fn create_event(&self, device: i32) -> Result<EventHandle>;
    fn record_event(&self, device: i32, event: EventHandle, queue: QueueHandle) -> Result<()>;
    fn wait_event(&self, device: i32, event: EventHandle, queue: QueueHandle) -> Result<()>;
    fn sync_event(&self, device: i32, event: EventHandle) -> Result<()>;
    fn destroy_event(&self, device: i32, event: EventHandle) -> Result<()>;

    fn pin_memory(&self, device: i32, host_ptr: usize, size: u64) -> Result<usize>;
    fn unpin_memory(&self, device: i32, host_ptr: usize) -> Result<()>;
}

/// Where a plugin library keeps its one instance.
pub struct PluginSlot<P> {
    instance: OnceLock<P>,
}

impl<P: Plugin> PluginSlot<P> {
    pub const fn new() -> Self {
        PluginSlot {
            instance: OnceLock::new(),
        }
    }

    pub fn get(&self) -> Result<&P> {
        self.instance.get().ok_or_else(|| {
            PluginError::new(
                ErrorCode::NOT_INITIALIZED,
                "plugin used before its init call",
            )
        })
    }

    /// Creates the instance on the first call; later calls return the same one.
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

/// Implemented by [`export_plugin!`](crate::export_plugin): gives the shims the plugin's slot.
pub trait SlottedPlugin: Plugin {
    fn slot() -> &'static PluginSlot<Self>;
}
