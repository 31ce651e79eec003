//! The [`Plugin`] implementation: every call checks its device number, then goes to that
//! device's memory, images or queues. This file is mostly what a vendor keeps.

use crate::image::{self, Images};
use crate::launch;
use crate::memory::DeviceMemory;
use crate::queue::{Job, Queues};
use plugin_api::*;

type Result<T> = std::result::Result<T, PluginError>;

/// Number of simulated devices, 1 to [`MAX_DEVICES`] (default 1).
pub const NUM_DEVICES_VAR: &str = "LIBOMPTARGET_EXAMPLE_NUM_DEVICES";
const MAX_DEVICES: i32 = 8;

struct Device {
    memory: DeviceMemory,
    images: Images,
    queues: Queues,
}

pub struct ExamplePlugin {
    devices: Vec<Device>,
}

/// A real plugin asks its driver how many devices there are; ours asks the environment.
fn device_count() -> i32 {
    let Ok(text) = std::env::var(NUM_DEVICES_VAR) else {
        return 1;
    };
    match text.trim().parse::<i32>() {
        Ok(n) if (1..=MAX_DEVICES).contains(&n) => n,
        _ => {
            log::warn!(
                "{NUM_DEVICES_VAR}='{text}' is not a number from 1 to {MAX_DEVICES}; using 1"
            );
            1
        }
    }
}

/// A queued memory copy. Both ranges were checked by the caller, except host ranges, which
/// only the program knows; the contract keeps them valid until the queue is synchronised.
fn copy_job(dst: usize, src: usize, size: u64) -> Result<Job> {
    if size == 0 {
        return Ok(Box::new(|| Ok(()))); // nothing to copy, whatever the addresses
    }
    if dst == 0 || src == 0 {
        return Err(PluginError::invalid_argument("copy with a null address"));
    }
    let len = usize::try_from(size)
        .map_err(|_| PluginError::invalid_argument(format!("copy of {size} bytes")))?;
    Ok(Box::new(move || {
        // SAFETY: the device side was checked against live allocations and globals, the host
        // side is the core's to keep valid (see above); `copy` tolerates overlap, which a
        // device-to-device copy within one allocation may have.
        unsafe { std::ptr::copy(src as *const u8, dst as *mut u8, len) };
        Ok(())
    }))
}

impl Device {
    fn new(id: i32) -> Device {
        Device {
            memory: DeviceMemory::new(id),
            images: Images::new(id),
            queues: Queues::new(id),
        }
    }
}

impl ExamplePlugin {
    fn device(&self, device: i32) -> Result<&Device> {
        usize::try_from(device)
            .ok()
            .and_then(|i| self.devices.get(i))
            .ok_or_else(|| {
                PluginError::new(
                    ErrorCode::INVALID_DEVICE,
                    format!(
                        "example device {device} does not exist (there are {})",
                        self.devices.len()
                    ),
                )
            })
    }
}

impl Plugin for ExamplePlugin {
    fn init() -> Result<Self> {
        let count = device_count();
        log::debug!("example plugin: {count} simulated devices");
        Ok(ExamplePlugin {
            devices: (0..count).map(Device::new).collect(),
        })
    }

    fn describe(&self) -> PluginDescription {
        PluginDescription {
            name: "example".into(),
            num_devices: self.num_devices(),
            note: format!(
                "{} simulated accelerator(s) running x86_64 images ({NUM_DEVICES_VAR})",
                self.devices.len()
            )
            .into(),
        }
    }

    fn num_devices(&self) -> i32 {
        self.devices.len() as i32
    }

    fn check_image(&self, device: Option<i32>, image: ImageRef<'_>) -> ImageCompatibility {
        match device.map(|d| self.device(d)) {
            Some(Err(e)) => ImageCompatibility::no(e.message.to_string()),
            _ => image::check(&image),
        }
    }

    fn init_device(&self, device: i32) -> Result<()> {
        self.device(device).map(drop)
    }

    fn deinit_device(&self, device: i32) -> Result<()> {
        self.device(device).map(drop)
    }

    fn device_info(&self, device: i32) -> Result<Vec<InfoEntry>> {
        let dev = self.device(device)?;
        Ok(vec![
            InfoEntry::new("name", "Example simulated accelerator"),
            InfoEntry::new("kind", "simulated"),
            // Read by the core and reported to OMPT tools: LLVM's name for x86-64 images.
            InfoEntry::new("compute unit kind", "generic-64bit"),
            InfoEntry::new("image format", "x86-64 ELF shared object"),
            InfoEntry::new("loaded images", dev.images.count()),
            InfoEntry::new("live allocations", dev.memory.live_allocations()),
            InfoEntry::new("queue threads", dev.queues.threads_started()),
        ])
    }

    fn load_image(&self, device: i32, image: ImageRef<'_>) -> Result<ImageHandle> {
        self.device(device)?.images.load(&image)
    }

    fn unload_image(&self, device: i32, image: ImageHandle) -> Result<()> {
        let dev = self.device(device)?;
        dev.memory.remove_globals(image);
        dev.images.unload(image)
    }

    fn get_kernel(&self, device: i32, image: ImageHandle, name: &str) -> Result<KernelHandle> {
        self.device(device)?.images.kernel(image, name)
    }

    fn get_global(
        &self,
        device: i32,
        image: ImageHandle,
        name: &str,
        size: u64,
    ) -> Result<GlobalInfo> {
        let dev = self.device(device)?;
        let global = dev.images.global(image, name, size)?;
        // Globals are device memory too: copies to and from them are allowed from now on.
        dev.memory.add_global(global.address, global.size, image);
        Ok(global)
    }

    fn alloc(&self, device: i32, size: u64, _host_ptr: usize, kind: AllocKind) -> Result<usize> {
        self.device(device)?.memory.alloc(size, kind)
    }

    fn free(&self, device: i32, ptr: usize, kind: AllocKind) -> Result<()> {
        self.device(device)?.memory.free(ptr, kind)
    }

    fn create_queue(&self, device: i32) -> Result<QueueHandle> {
        self.device(device)?.queues.create()
    }

    fn release_queue(&self, device: i32, queue: QueueHandle) -> Result<()> {
        self.device(device)?.queues.release(queue)
    }

    fn copy_to_device(
        &self,
        device: i32,
        dst: usize,
        src: usize,
        size: u64,
        queue: QueueHandle,
    ) -> Result<()> {
        let dev = self.device(device)?;
        dev.memory.check(dst, size)?;
        dev.queues.submit(queue, copy_job(dst, src, size)?)
    }

    fn copy_from_device(
        &self,
        device: i32,
        dst: usize,
        src: usize,
        size: u64,
        queue: QueueHandle,
    ) -> Result<()> {
        let dev = self.device(device)?;
        dev.memory.check(src, size)?;
        dev.queues.submit(queue, copy_job(dst, src, size)?)
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
        let (from, to) = (self.device(src_device)?, self.device(dst_device)?);
        from.memory.check(src, size)?;
        to.memory.check(dst, size)?;
        from.queues.submit(queue, copy_job(dst, src, size)?)
    }

    fn launch_kernel(
        &self,
        device: i32,
        kernel: KernelHandle,
        args: &[usize],
        config: &LaunchConfig,
        queue: QueueHandle,
    ) -> Result<()> {
        let dev = self.device(device)?;
        let kernel = dev.images.kernel_entry(kernel)?;
        // From KernelArgsTy version 3 on, kernels expect the launch environment first. x86-64
        // kernels never read it, so it is null; a GPU plugin passes its device-side copy.
        let mut values = Vec::with_capacity(args.len() + 1);
        if config.kernel_args_version >= 3 {
            values.push(0);
        }
        values.extend_from_slice(args); // copied: `args` is only borrowed for this call
        if values.len() > launch::MAX_ARGS {
            return Err(launch::too_many(values.len()));
        }
        if info::enabled(info::PLUGIN_KERNEL) {
            info::line(
                device,
                &format!(
                    "Launching kernel {} on example device {device} (teams {:?}, threads {:?})",
                    kernel.name, config.num_teams, config.thread_limit
                ),
            );
        }
        dev.queues.submit(
            queue,
            Box::new(move || {
                // SAFETY: the address is a kernel symbol of an image loaded on this device (from
                // the kernel table), and clang's x86-64 kernels take one pointer-sized value per
                // argument. The core keeps the image loaded while work is queued.
                unsafe { launch::invoke(kernel.address, &values) }
            }),
        )
    }

    fn synchronize(&self, device: i32, queue: QueueHandle) -> Result<()> {
        self.device(device)?.queues.synchronize(queue)
    }

    fn query_queue(&self, device: i32, queue: QueueHandle) -> Result<bool> {
        self.device(device)?.queues.query(queue)
    }

    fn create_event(&self, device: i32) -> Result<EventHandle> {
        self.device(device)?.queues.create_event()
    }

    fn record_event(&self, device: i32, event: EventHandle, queue: QueueHandle) -> Result<()> {
        self.device(device)?.queues.record_event(event, queue)
    }

    fn wait_event(&self, device: i32, event: EventHandle, queue: QueueHandle) -> Result<()> {
        self.device(device)?.queues.wait_event(event, queue)
    }

    fn sync_event(&self, device: i32, event: EventHandle) -> Result<()> {
        self.device(device)?.queues.sync_event(event)
    }

    fn destroy_event(&self, device: i32, event: EventHandle) -> Result<()> {
        self.device(device)?.queues.destroy_event(event)
    }

    fn pin_memory(&self, device: i32, host_ptr: usize, size: u64) -> Result<usize> {
        self.device(device)?.memory.pin(host_ptr, size)
    }

    fn unpin_memory(&self, device: i32, host_ptr: usize) -> Result<()> {
        self.device(device)?.memory.unpin(host_ptr)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plugin(devices: i32) -> ExamplePlugin {
        ExamplePlugin {
            devices: (0..devices).map(Device::new).collect(),
        }
    }

    #[test]
    fn device_numbers_are_checked() {
        let p = plugin(2);
        let e = p.alloc(2, 8, 0, AllocKind::DEFAULT).unwrap_err();
        assert_eq!(e.code, ErrorCode::INVALID_DEVICE);
        assert!(e.message.contains("device 2") && e.message.contains("there are 2"));
        assert_eq!(
            p.synchronize(-1, QueueHandle::SYNC).unwrap_err().code,
            ErrorCode::INVALID_DEVICE
        );
        assert!(
            !p.check_image(
                Some(7),
                ImageRef {
                    bytes: Default::default(),
                    triple: Default::default(),
                    arch: Default::default(),
                }
            )
            .compatible
        );
        let info = p.device_info(1).unwrap();
        assert!(info
            .iter()
            .any(|i| i.key == "compute unit kind" && i.value == "generic-64bit"));
    }

    #[test]
    fn copies_round_trip_through_device_memory_asynchronously() {
        let p = plugin(2);
        let q = p.create_queue(0).unwrap();
        let d0 = p.alloc(0, 16, 0, AllocKind::DEFAULT).unwrap();
        let d1 = p.alloc(1, 16, 0, AllocKind::DEVICE).unwrap();
        let input = *b"sixteen bytes!!!";
        let mut output = [0u8; 16];
        let (inp, out) = (input.as_ptr() as usize, output.as_mut_ptr() as usize);
        p.copy_to_device(0, d0, inp, 16, q).unwrap();
        p.copy_device_to_device(0, d0, 1, d1, 16, q).unwrap();
        p.synchronize(0, q).unwrap();
        p.copy_from_device(1, out, d1, 16, QueueHandle::SYNC)
            .unwrap();
        assert_eq!(output, input);
        // Out of bounds, on the wrong device, or freed: refused before anything is queued.
        assert!(p.copy_to_device(0, d0 + 8, inp, 16, q).is_err());
        assert!(p.copy_to_device(0, d1, inp, 16, q).is_err());
        p.free(0, d0, AllocKind::DEFAULT).unwrap();
        assert!(p.copy_from_device(0, out, d0, 1, q).is_err());
        assert_eq!(
            p.free(0, d0, AllocKind::DEFAULT).unwrap_err().code,
            ErrorCode::INVALID_ARGUMENT
        );
        p.release_queue(0, q).unwrap();
    }
}
