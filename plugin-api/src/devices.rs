//! The per-device half of a plugin, and the forwarding every plugin used to write by hand.
//!
//! Most [`Plugin`] methods name a device and do their work there. A plugin that implements
//! [`DevicePlugin`] (the plugin-wide methods, and a lookup from a device number to its
//! [`Device`]) gets [`Plugin`] for free: the blanket implementation below looks the device up,
//! applies the argument rules every plugin shares, and calls the device. The C ABI does not
//! change: this is only how a plugin is written.
//!
//! The shared argument rules, so that no device sees these cases:
//! - a copy of 0 bytes succeeds without reaching the device (after both devices are checked);
//! - a copy with a null address is `INVALID_ARGUMENT`;
//! - `free` of address 0 succeeds;
//! - page-locking a null pointer or 0 bytes is `INVALID_ARGUMENT`;
//! - a launch with kernel handle 0 is `INVALID_ARGUMENT`;
//! - a fill of 0 bytes succeeds without reaching the device; one at a null address, with a
//!   pattern other than 1, 2 or 4 bytes, or of a size that is not a whole number of patterns is
//!   `INVALID_ARGUMENT`.

use crate::plugin::{Plugin, Result};
use crate::types::*;

/// One device of a [`DevicePlugin`]. Every method may be called from any thread, concurrently;
/// the arguments already passed the rules in the module's documentation.
pub trait Device: Send + Sync + 'static {
    /// Loads an image: see [`Plugin::load_image`].
    fn load_image(&self, image: ImageRef<'_>) -> Result<ImageHandle>;
    /// See [`Plugin::unload_image`].
    fn unload_image(&self, image: ImageHandle) -> Result<()>;
    /// See [`Plugin::get_kernel`].
    fn get_kernel(&self, image: ImageHandle, name: &str) -> Result<KernelHandle>;
    /// See [`Plugin::get_global`].
    fn get_global(&self, image: ImageHandle, name: &str, size: u64) -> Result<GlobalInfo>;

    /// See [`Plugin::alloc`].
    fn alloc(&self, size: u64, host_ptr: usize, kind: AllocKind) -> Result<usize>;
    /// See [`Plugin::free`]; `ptr` is never 0.
    fn free(&self, ptr: usize, kind: AllocKind) -> Result<()>;

    /// See [`Plugin::create_queue`].
    fn create_queue(&self) -> Result<QueueHandle>;
    /// See [`Plugin::release_queue`].
    fn release_queue(&self, queue: QueueHandle) -> Result<()>;
    /// See [`Plugin::copy_to_device`]; `size` is never 0, the addresses never null.
    ///
    /// # Safety
    /// As [`Plugin::copy_to_device`].
    unsafe fn copy_to_device(
        &self,
        dst: usize,
        src: usize,
        size: u64,
        queue: QueueHandle,
    ) -> Result<()>;
    /// See [`Plugin::copy_from_device`]; `size` is never 0, the addresses never null.
    ///
    /// # Safety
    /// As [`Plugin::copy_from_device`].
    unsafe fn copy_from_device(
        &self,
        dst: usize,
        src: usize,
        size: u64,
        queue: QueueHandle,
    ) -> Result<()>;
    /// Copies to `target` (another device of the plugin, or this one); `queue` is this
    /// device's. See [`Plugin::copy_device_to_device`]; `size` is never 0.
    fn copy_to_peer(
        &self,
        src: usize,
        target: &Self,
        dst: usize,
        size: u64,
        queue: QueueHandle,
    ) -> Result<()>;
    /// See [`Plugin::launch_kernel`]; the kernel handle is never 0.
    fn launch_kernel(
        &self,
        kernel: KernelHandle,
        args: &[usize],
        config: &LaunchConfig,
        queue: QueueHandle,
    ) -> Result<()>;
    /// See [`Plugin::synchronize`].
    fn synchronize(&self, queue: QueueHandle) -> Result<()>;
    /// See [`Plugin::query_queue`].
    fn query_queue(&self, queue: QueueHandle) -> Result<bool>;

    /// See [`Plugin::create_event`].
    fn create_event(&self) -> Result<EventHandle>;
    /// See [`Plugin::record_event`].
    fn record_event(&self, event: EventHandle, queue: QueueHandle) -> Result<()>;
    /// See [`Plugin::wait_event`].
    fn wait_event(&self, event: EventHandle, queue: QueueHandle) -> Result<()>;
    /// See [`Plugin::sync_event`].
    fn sync_event(&self, event: EventHandle) -> Result<()>;
    /// See [`Plugin::destroy_event`].
    fn destroy_event(&self, event: EventHandle) -> Result<()>;

    /// See [`Plugin::pin_memory`]; `host_ptr` is never null, `size` never 0. Only called
    /// through [`DevicePlugin::pin_memory`]'s default: a plugin that page-locks for the whole
    /// process overrides that instead and may leave this default, which answers `UNSUPPORTED`.
    fn pin_memory(&self, host_ptr: usize, size: u64) -> Result<usize> {
        let _ = (host_ptr, size);
        Err(PluginError::unsupported(
            "this plugin cannot page-lock host memory",
        ))
    }
    /// See [`Plugin::unpin_memory`]; called as [`Device::pin_memory`] is. The default answers
    /// `UNSUPPORTED`.
    fn unpin_memory(&self, host_ptr: usize) -> Result<()> {
        let _ = host_ptr;
        Err(PluginError::unsupported(
            "this plugin cannot page-lock host memory",
        ))
    }

    /// See [`Plugin::memory_info`]. The default answers `UNSUPPORTED`.
    fn memory_info(&self) -> Result<MemoryInfo> {
        Err(PluginError::new(
            ErrorCode::UNSUPPORTED,
            "this plugin does not report free memory",
        ))
    }
    /// See [`Plugin::interop_info`]. The default answers "no foreign runtime".
    fn interop_info(&self, queue: QueueHandle) -> Result<InteropInfo> {
        let _ = queue;
        Ok(InteropInfo::none(Vendor::UNKNOWN))
    }
    /// See [`Plugin::launch_kernel_params`]; the kernel handle is never 0. The default
    /// answers `UNSUPPORTED`.
    fn launch_kernel_params(
        &self,
        kernel: KernelHandle,
        params: &[u8],
        config: &LaunchConfig,
        queue: QueueHandle,
    ) -> Result<()> {
        let _ = (kernel, params, config, queue);
        Err(PluginError::unsupported(
            "this plugin cannot launch kernel-language (CUDA/HIP) kernels",
        ))
    }
    /// See [`Plugin::set_indirect_calls`]. The default answers `UNSUPPORTED`.
    fn set_indirect_calls(&self, image: ImageHandle, calls: &[IndirectCall]) -> Result<()> {
        let _ = (image, calls);
        Err(PluginError::unsupported(
            "this plugin cannot translate host function pointers for `declare target indirect` \
             functions",
        ))
    }
    /// See [`Plugin::device_traits`]. The default promises nothing.
    fn traits(&self) -> DeviceTraits {
        DeviceTraits::NONE
    }
    /// See [`Plugin::is_accessible`]; `host_ptr` is never null and `size` never 0. The
    /// default answers no.
    fn is_accessible(&self, host_ptr: usize, size: u64) -> Result<bool> {
        let _ = (host_ptr, size);
        Ok(false)
    }
    /// See [`Plugin::prefault_host_memory`]. The default answers `UNSUPPORTED`.
    fn prefault_host_memory(&self, host_ptr: usize, size: u64) -> Result<()> {
        let _ = (host_ptr, size);
        Err(PluginError::unsupported(
            "this plugin cannot enter host memory in the device's page tables ahead of use",
        ))
    }
    /// See [`Plugin::start_work_timing`]. The default answers `UNSUPPORTED`.
    fn start_work_timing(&self) -> Result<()> {
        Err(PluginError::unsupported(
            "this plugin cannot time the work on its devices",
        ))
    }
    /// See [`Plugin::work_times`]. The default answers nothing.
    fn work_times(&self, queue: QueueHandle) -> Result<Vec<WorkTime>> {
        let _ = queue;
        Ok(Vec::new())
    }
    /// See [`Plugin::fill_memory`]; `dst` is never null, `pattern` is 1, 2 or 4 bytes and
    /// `size` a nonzero whole number of them. The default answers `UNSUPPORTED`.
    fn fill_memory(&self, dst: usize, pattern: &[u8], size: u64, queue: QueueHandle) -> Result<()> {
        let _ = (dst, pattern, size, queue);
        Err(PluginError::unsupported(
            "this plugin cannot fill device memory on the device",
        ))
    }
}

/// A plugin written as its plugin-wide methods plus a [`Device`] per device number. The
/// methods mean what [`Plugin`]'s of the same name do.
pub trait DevicePlugin: Sized + Send + Sync + 'static {
    /// The plugin's device.
    type Device: Device;

    /// See [`Plugin::init`].
    fn init() -> Result<Self>;
    /// See [`Plugin::may_run_target`].
    fn may_run_target(triple: &str) -> TargetClaim {
        let _ = triple;
        TargetClaim::UNKNOWN
    }
    /// See [`Plugin::deinit`].
    fn deinit(&self) -> Result<()> {
        Ok(())
    }
    /// See [`Plugin::describe`].
    fn describe(&self) -> PluginDescription;
    /// See [`Plugin::num_devices`].
    fn num_devices(&self) -> i32;
    /// See [`Plugin::devices_may_appear`]. The default answers no.
    fn devices_may_appear(&self) -> bool {
        false
    }
    /// See [`Plugin::check_image`].
    fn check_image(&self, device: Option<i32>, image: ImageRef<'_>) -> ImageCompatibility;
    /// See [`Plugin::init_device`].
    fn init_device(&self, device: i32) -> Result<()>;
    /// See [`Plugin::deinit_device`]. The default does nothing for a valid device.
    fn deinit_device(&self, device: i32) -> Result<()> {
        self.device(device).map(|_| ())
    }
    /// See [`Plugin::device_info`].
    fn device_info(&self, device: i32) -> Result<Vec<InfoEntry>>;
    /// The started device `device`: `INVALID_DEVICE` for a number out of range (see
    /// [`no_such_device`]), `NOT_INITIALIZED` before its `init_device`.
    fn device(&self, device: i32) -> Result<&Self::Device>;
    /// See [`Plugin::pin_memory`], for plugins whose page-locking is the process's rather
    /// than a device's (a table shared by the devices). The default asks the device.
    fn pin_memory(&self, device: &Self::Device, host_ptr: usize, size: u64) -> Result<usize> {
        device.pin_memory(host_ptr, size)
    }
    /// Undoes [`DevicePlugin::pin_memory`]. The default asks the device.
    fn unpin_memory(&self, device: &Self::Device, host_ptr: usize) -> Result<()> {
        device.unpin_memory(host_ptr)
    }
}

/// The error for a device number out of range, worded the same by every plugin.
pub fn no_such_device(plugin: &str, device: i32, count: usize) -> PluginError {
    PluginError::new(
        ErrorCode::INVALID_DEVICE,
        format!("{plugin} device {device} does not exist (there are {count})"),
    )
}

/// `items[device]`, or [`no_such_device`].
pub fn device_at<'a, T>(plugin: &str, items: &'a [T], device: i32) -> Result<&'a T> {
    usize::try_from(device)
        .ok()
        .and_then(|i| items.get(i))
        .ok_or_else(|| no_such_device(plugin, device, items.len()))
}

fn check_copy(dst: usize, src: usize) -> Result<()> {
    if dst == 0 || src == 0 {
        return Err(PluginError::invalid_argument("copy with a null address"));
    }
    Ok(())
}

/// The shape every fill must have, checked before a device sees it.
pub fn check_fill(dst: usize, pattern: &[u8], size: u64) -> Result<()> {
    if ![1, 2, 4].contains(&pattern.len()) {
        return Err(PluginError::invalid_argument(format!(
            "a fill pattern is 1, 2 or 4 bytes, not {}",
            pattern.len()
        )));
    }
    if !size.is_multiple_of(pattern.len() as u64) {
        return Err(PluginError::invalid_argument(format!(
            "{size} bytes are not a whole number of {}-byte patterns",
            pattern.len()
        )));
    }
    if dst == 0 && size != 0 {
        return Err(PluginError::invalid_argument(
            "cannot fill at a null address",
        ));
    }
    Ok(())
}

fn check_kernel(kernel: KernelHandle) -> Result<()> {
    if kernel.0 == 0 {
        return Err(PluginError::invalid_argument("null kernel handle"));
    }
    Ok(())
}

impl<P: DevicePlugin> Plugin for P {
    fn init() -> Result<Self> {
        <P as DevicePlugin>::init()
    }
    fn may_run_target(triple: &str) -> TargetClaim {
        <P as DevicePlugin>::may_run_target(triple)
    }
    fn deinit(&self) -> Result<()> {
        DevicePlugin::deinit(self)
    }
    fn describe(&self) -> PluginDescription {
        DevicePlugin::describe(self)
    }
    fn num_devices(&self) -> i32 {
        DevicePlugin::num_devices(self)
    }
    fn devices_may_appear(&self) -> bool {
        DevicePlugin::devices_may_appear(self)
    }
    fn check_image(&self, device: Option<i32>, image: ImageRef<'_>) -> ImageCompatibility {
        DevicePlugin::check_image(self, device, image)
    }
    fn init_device(&self, device: i32) -> Result<()> {
        DevicePlugin::init_device(self, device)
    }
    fn deinit_device(&self, device: i32) -> Result<()> {
        DevicePlugin::deinit_device(self, device)
    }
    fn device_info(&self, device: i32) -> Result<Vec<InfoEntry>> {
        DevicePlugin::device_info(self, device)
    }

    fn load_image(&self, device: i32, image: ImageRef<'_>) -> Result<ImageHandle> {
        self.device(device)?.load_image(image)
    }
    fn unload_image(&self, device: i32, image: ImageHandle) -> Result<()> {
        self.device(device)?.unload_image(image)
    }
    fn get_kernel(&self, device: i32, image: ImageHandle, name: &str) -> Result<KernelHandle> {
        self.device(device)?.get_kernel(image, name)
    }
    fn get_global(
        &self,
        device: i32,
        image: ImageHandle,
        name: &str,
        size: u64,
    ) -> Result<GlobalInfo> {
        self.device(device)?.get_global(image, name, size)
    }

    fn alloc(&self, device: i32, size: u64, host_ptr: usize, kind: AllocKind) -> Result<usize> {
        self.device(device)?.alloc(size, host_ptr, kind)
    }
    fn free(&self, device: i32, ptr: usize, kind: AllocKind) -> Result<()> {
        let device = self.device(device)?;
        if ptr == 0 {
            return Ok(());
        }
        device.free(ptr, kind)
    }

    fn create_queue(&self, device: i32) -> Result<QueueHandle> {
        self.device(device)?.create_queue()
    }
    fn release_queue(&self, device: i32, queue: QueueHandle) -> Result<()> {
        self.device(device)?.release_queue(queue)
    }
    unsafe fn copy_to_device(
        &self,
        device: i32,
        dst: usize,
        src: usize,
        size: u64,
        queue: QueueHandle,
    ) -> Result<()> {
        let device = self.device(device)?;
        if size == 0 {
            return Ok(());
        }
        check_copy(dst, src)?;
        // SAFETY: the caller's promise, passed on.
        unsafe { device.copy_to_device(dst, src, size, queue) }
    }
    unsafe fn copy_from_device(
        &self,
        device: i32,
        dst: usize,
        src: usize,
        size: u64,
        queue: QueueHandle,
    ) -> Result<()> {
        let device = self.device(device)?;
        if size == 0 {
            return Ok(());
        }
        check_copy(dst, src)?;
        // SAFETY: the caller's promise, passed on.
        unsafe { device.copy_from_device(dst, src, size, queue) }
    }
    fn copy_device_to_device(
        &self,
        src_device: i32,
        src: usize,
        dst_device: i32,
        dst: usize,
        size: u64,
        queue: QueueHandle,
    ) -> Result<()> {
        let source = self.device(src_device)?;
        let target = self.device(dst_device)?;
        if size == 0 {
            return Ok(());
        }
        check_copy(dst, src)?;
        source.copy_to_peer(src, target, dst, size, queue)
    }
    fn launch_kernel(
        &self,
        device: i32,
        kernel: KernelHandle,
        args: &[usize],
        config: &LaunchConfig,
        queue: QueueHandle,
    ) -> Result<()> {
        let device = self.device(device)?;
        check_kernel(kernel)?;
        device.launch_kernel(kernel, args, config, queue)
    }
    fn synchronize(&self, device: i32, queue: QueueHandle) -> Result<()> {
        self.device(device)?.synchronize(queue)
    }
    fn query_queue(&self, device: i32, queue: QueueHandle) -> Result<bool> {
        self.device(device)?.query_queue(queue)
    }

    fn create_event(&self, device: i32) -> Result<EventHandle> {
        self.device(device)?.create_event()
    }
    fn record_event(&self, device: i32, event: EventHandle, queue: QueueHandle) -> Result<()> {
        self.device(device)?.record_event(event, queue)
    }
    fn wait_event(&self, device: i32, event: EventHandle, queue: QueueHandle) -> Result<()> {
        self.device(device)?.wait_event(event, queue)
    }
    fn sync_event(&self, device: i32, event: EventHandle) -> Result<()> {
        self.device(device)?.sync_event(event)
    }
    fn destroy_event(&self, device: i32, event: EventHandle) -> Result<()> {
        self.device(device)?.destroy_event(event)
    }

    fn pin_memory(&self, device: i32, host_ptr: usize, size: u64) -> Result<usize> {
        let device = self.device(device)?;
        if host_ptr == 0 {
            return Err(PluginError::invalid_argument(
                "cannot page-lock a null pointer",
            ));
        }
        if size == 0 {
            return Err(PluginError::invalid_argument("cannot page-lock 0 bytes"));
        }
        DevicePlugin::pin_memory(self, device, host_ptr, size)
    }
    fn unpin_memory(&self, device: i32, host_ptr: usize) -> Result<()> {
        let device = self.device(device)?;
        DevicePlugin::unpin_memory(self, device, host_ptr)
    }

    fn memory_info(&self, device: i32) -> Result<MemoryInfo> {
        self.device(device)?.memory_info()
    }
    fn interop_info(&self, device: i32, queue: QueueHandle) -> Result<InteropInfo> {
        self.device(device)?.interop_info(queue)
    }
    fn launch_kernel_params(
        &self,
        device: i32,
        kernel: KernelHandle,
        params: &[u8],
        config: &LaunchConfig,
        queue: QueueHandle,
    ) -> Result<()> {
        let device = self.device(device)?;
        check_kernel(kernel)?;
        device.launch_kernel_params(kernel, params, config, queue)
    }
    fn set_indirect_calls(
        &self,
        device: i32,
        image: ImageHandle,
        calls: &[IndirectCall],
    ) -> Result<()> {
        self.device(device)?.set_indirect_calls(image, calls)
    }
    fn device_traits(&self, device: i32) -> Result<DeviceTraits> {
        Ok(self.device(device)?.traits())
    }
    fn start_work_timing(&self, device: i32) -> Result<()> {
        self.device(device)?.start_work_timing()
    }
    fn work_times(&self, device: i32, queue: QueueHandle) -> Result<Vec<WorkTime>> {
        self.device(device)?.work_times(queue)
    }
    fn fill_memory(
        &self,
        device: i32,
        dst: usize,
        pattern: &[u8],
        size: u64,
        queue: QueueHandle,
    ) -> Result<()> {
        let device = self.device(device)?;
        check_fill(dst, pattern, size)?;
        if size == 0 {
            return Ok(());
        }
        device.fill_memory(dst, pattern, size, queue)
    }
    fn is_accessible(&self, device: i32, host_ptr: usize, size: u64) -> Result<bool> {
        let device = self.device(device)?;
        if host_ptr == 0 || size == 0 {
            return Ok(false);
        }
        device.is_accessible(host_ptr, size)
    }
    fn prefault_host_memory(&self, device: i32, host_ptr: usize, size: u64) -> Result<()> {
        let device = self.device(device)?;
        if size == 0 {
            return Ok(());
        }
        if host_ptr == 0 {
            return Err(PluginError::new(
                ErrorCode::INVALID_ARGUMENT,
                "prefault_host_memory of a null host address",
            ));
        }
        device.prefault_host_memory(host_ptr, size)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Counts the calls that reach it; everything else succeeds.
    #[derive(Default)]
    struct Counted {
        calls: AtomicUsize,
    }

    impl Counted {
        fn hit<T>(&self, value: T) -> Result<T> {
            self.calls.fetch_add(1, Ordering::Relaxed);
            Ok(value)
        }
    }

    impl Device for Counted {
        fn load_image(&self, _: ImageRef<'_>) -> Result<ImageHandle> {
            self.hit(ImageHandle(1))
        }
        fn unload_image(&self, _: ImageHandle) -> Result<()> {
            self.hit(())
        }
        fn get_kernel(&self, _: ImageHandle, _: &str) -> Result<KernelHandle> {
            self.hit(KernelHandle(1))
        }
        fn get_global(&self, _: ImageHandle, _: &str, size: u64) -> Result<GlobalInfo> {
            self.hit(GlobalInfo { address: 1, size })
        }
        fn alloc(&self, _: u64, _: usize, _: AllocKind) -> Result<usize> {
            self.hit(1)
        }
        fn free(&self, _: usize, _: AllocKind) -> Result<()> {
            self.hit(())
        }
        fn create_queue(&self) -> Result<QueueHandle> {
            self.hit(QueueHandle(1))
        }
        fn release_queue(&self, _: QueueHandle) -> Result<()> {
            self.hit(())
        }
        unsafe fn copy_to_device(&self, _: usize, _: usize, _: u64, _: QueueHandle) -> Result<()> {
            self.hit(())
        }
        unsafe fn copy_from_device(
            &self,
            _: usize,
            _: usize,
            _: u64,
            _: QueueHandle,
        ) -> Result<()> {
            self.hit(())
        }
        fn copy_to_peer(&self, _: usize, _: &Self, _: usize, _: u64, _: QueueHandle) -> Result<()> {
            self.hit(())
        }
        fn launch_kernel(
            &self,
            _: KernelHandle,
            _: &[usize],
            _: &LaunchConfig,
            _: QueueHandle,
        ) -> Result<()> {
            self.hit(())
        }
        fn synchronize(&self, _: QueueHandle) -> Result<()> {
            self.hit(())
        }
        fn query_queue(&self, _: QueueHandle) -> Result<bool> {
            self.hit(true)
        }
        fn create_event(&self) -> Result<EventHandle> {
            self.hit(EventHandle(1))
        }
        fn record_event(&self, _: EventHandle, _: QueueHandle) -> Result<()> {
            self.hit(())
        }
        fn wait_event(&self, _: EventHandle, _: QueueHandle) -> Result<()> {
            self.hit(())
        }
        fn sync_event(&self, _: EventHandle) -> Result<()> {
            self.hit(())
        }
        fn destroy_event(&self, _: EventHandle) -> Result<()> {
            self.hit(())
        }
        fn pin_memory(&self, host_ptr: usize, _: u64) -> Result<usize> {
            self.hit(host_ptr)
        }
        fn unpin_memory(&self, _: usize) -> Result<()> {
            self.hit(())
        }
    }

    /// Two devices.
    struct Pair {
        devices: [Counted; 2],
    }

    impl DevicePlugin for Pair {
        type Device = Counted;
        fn init() -> Result<Self> {
            Ok(Pair {
                devices: Default::default(),
            })
        }
        fn describe(&self) -> PluginDescription {
            PluginDescription {
                name: "pair".into(),
                num_devices: 2,
                note: "".into(),
            }
        }
        fn num_devices(&self) -> i32 {
            2
        }
        fn check_image(&self, _: Option<i32>, _: ImageRef<'_>) -> ImageCompatibility {
            ImageCompatibility::yes()
        }
        fn init_device(&self, device: i32) -> Result<()> {
            self.device(device).map(|_| ())
        }
        fn device_info(&self, device: i32) -> Result<Vec<InfoEntry>> {
            self.device(device).map(|_| Vec::new())
        }
        fn device(&self, device: i32) -> Result<&Counted> {
            device_at("pair", &self.devices, device)
        }
    }

    fn calls(plugin: &Pair) -> usize {
        plugin
            .devices
            .iter()
            .map(|d| d.calls.load(Ordering::Relaxed))
            .sum()
    }

    fn code<T: std::fmt::Debug>(result: Result<T>) -> ErrorCode {
        result.expect_err("an error").code
    }

    const Q: QueueHandle = QueueHandle(1);

    #[test]
    fn device_numbers_out_of_range_name_the_plugin_and_the_count() {
        let plugin = <Pair as Plugin>::init().unwrap();
        for device in [-1, 2, i32::MAX] {
            let e = Plugin::create_queue(&plugin, device).unwrap_err();
            assert_eq!(e.code, ErrorCode::INVALID_DEVICE);
            assert_eq!(
                e.message.as_str(),
                format!("pair device {device} does not exist (there are 2)")
            );
            assert_eq!(
                code(Plugin::free(&plugin, device, 0, AllocKind::DEVICE)),
                e.code
            );
            // SAFETY: a refused device: nothing is copied.
            let copied = unsafe { Plugin::copy_to_device(&plugin, device, 1, 1, 0, Q) };
            assert_eq!(code(copied), e.code);
            assert_eq!(
                code(Plugin::copy_device_to_device(
                    &plugin, 0, 1, device, 1, 0, Q
                )),
                e.code
            );
            assert_eq!(code(Plugin::device_traits(&plugin, device)), e.code);
        }
        assert_eq!(calls(&plugin), 0);
    }

    #[test]
    fn empty_copies_succeed_without_reaching_the_device() {
        let plugin = <Pair as Plugin>::init().unwrap();
        // SAFETY: empty copies touch no memory.
        unsafe { Plugin::copy_to_device(&plugin, 0, 0, 0, 0, Q) }.unwrap();
        // SAFETY: as above.
        unsafe { Plugin::copy_from_device(&plugin, 1, 0, 0, 0, Q) }.unwrap();
        Plugin::copy_device_to_device(&plugin, 0, 0, 1, 0, 0, Q).unwrap();
        assert_eq!(calls(&plugin), 0);
    }

    #[test]
    fn copies_with_a_null_address_are_refused() {
        let plugin = <Pair as Plugin>::init().unwrap();
        let invalid = ErrorCode::INVALID_ARGUMENT;
        // SAFETY: refused before any memory is touched.
        let to = unsafe { Plugin::copy_to_device(&plugin, 0, 0, 8, 4, Q) };
        assert_eq!(code(to), invalid);
        // SAFETY: as above.
        let from = unsafe { Plugin::copy_from_device(&plugin, 0, 8, 0, 4, Q) };
        assert_eq!(code(from), invalid);
        assert_eq!(
            code(Plugin::copy_device_to_device(&plugin, 0, 8, 1, 0, 4, Q)),
            invalid
        );
        assert_eq!(calls(&plugin), 0);
        Plugin::copy_device_to_device(&plugin, 0, 8, 1, 16, 4, Q).unwrap();
        assert_eq!(plugin.devices[0].calls.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn freeing_address_0_succeeds_without_reaching_the_device() {
        let plugin = <Pair as Plugin>::init().unwrap();
        Plugin::free(&plugin, 0, 0, AllocKind::DEVICE).unwrap();
        assert_eq!(calls(&plugin), 0);
        Plugin::free(&plugin, 0, 8, AllocKind::DEVICE).unwrap();
        assert_eq!(calls(&plugin), 1);
    }

    #[test]
    fn pins_of_null_or_nothing_and_launches_of_kernel_0_are_refused() {
        let plugin = <Pair as Plugin>::init().unwrap();
        let invalid = ErrorCode::INVALID_ARGUMENT;
        assert_eq!(code(Plugin::pin_memory(&plugin, 0, 0, 8)), invalid);
        assert_eq!(code(Plugin::pin_memory(&plugin, 0, 8, 0)), invalid);
        let config = LaunchConfig::default();
        let kernel = KernelHandle(0);
        assert_eq!(
            code(Plugin::launch_kernel(&plugin, 0, kernel, &[], &config, Q)),
            invalid
        );
        assert_eq!(
            code(Plugin::launch_kernel_params(
                &plugin,
                0,
                kernel,
                &[],
                &config,
                Q
            )),
            invalid
        );
        assert_eq!(calls(&plugin), 0);
        assert_eq!(Plugin::pin_memory(&plugin, 0, 8, 8).unwrap(), 8);
        assert_eq!(calls(&plugin), 1);
    }

    #[test]
    fn fills_of_a_bad_shape_are_refused_and_empty_ones_do_nothing() {
        let plugin = <Pair as Plugin>::init().unwrap();
        let invalid = ErrorCode::INVALID_ARGUMENT;
        assert_eq!(
            code(Plugin::fill_memory(&plugin, 0, 0, &[1], 8, Q)),
            invalid
        );
        assert_eq!(code(Plugin::fill_memory(&plugin, 0, 8, &[], 8, Q)), invalid);
        assert_eq!(
            code(Plugin::fill_memory(&plugin, 0, 8, &[1; 3], 9, Q)),
            invalid
        );
        assert_eq!(
            code(Plugin::fill_memory(&plugin, 0, 8, &[1; 8], 8, Q)),
            invalid
        );
        assert_eq!(
            code(Plugin::fill_memory(&plugin, 0, 8, &[1; 4], 6, Q)),
            invalid
        );
        assert_eq!(
            code(Plugin::fill_memory(&plugin, 2, 8, &[1], 8, Q)),
            ErrorCode::INVALID_DEVICE
        );
        Plugin::fill_memory(&plugin, 0, 8, &[1; 2], 0, Q).unwrap();
        assert_eq!(calls(&plugin), 0);
        // A device that cannot fill says so; the core then copies a pattern buffer.
        assert_eq!(
            code(Plugin::fill_memory(&plugin, 1, 8, &[1; 2], 4, Q)),
            ErrorCode::UNSUPPORTED
        );
    }

    #[test]
    fn optional_calls_answer_as_the_plugin_defaults_do() {
        let plugin = <Pair as Plugin>::init().unwrap();
        let config = LaunchConfig::default();
        let kernel = KernelHandle(1);
        let unsupported = ErrorCode::UNSUPPORTED;
        assert_eq!(code(Plugin::memory_info(&plugin, 1)), unsupported);
        assert_eq!(
            code(Plugin::launch_kernel_params(
                &plugin,
                1,
                kernel,
                &[],
                &config,
                Q
            )),
            unsupported
        );
        let calls = [IndirectCall { host: 1, device: 2 }];
        assert_eq!(
            code(Plugin::set_indirect_calls(
                &plugin,
                1,
                ImageHandle(1),
                &calls
            )),
            unsupported
        );
        let interop = Plugin::interop_info(&plugin, 1, Q).unwrap();
        assert_eq!(interop.foreign_runtime, ForeignRuntime::NONE);
        assert_eq!(
            Plugin::device_traits(&plugin, 1).unwrap(),
            DeviceTraits::NONE
        );
    }
}
