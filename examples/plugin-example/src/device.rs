//! One simulated device and the per-device calls of the plugin ABI ([`Device`]): each goes to
//! the device's memory, images or queues. plugin-api has already found the device and applied
//! the rules every plugin shares, so no call here sees a copy of 0 bytes, a null copy address,
//! a `free` of 0, a null or empty pin or kernel handle 0. A vendor keeps the structure and
//! replaces the copies and the launch with driver calls (`cuMemcpyAsync`, `cuLaunchKernel`).

use crate::image::Images;
use crate::launch;
use crate::memory::DeviceMemory;
use crate::queue::{Job, Queues};
use plugin_api::*;

type Result<T> = std::result::Result<T, PluginError>;

pub struct ExampleDevice {
    /// The device's number, for messages.
    id: i32,
    pub(crate) memory: DeviceMemory,
    pub(crate) images: Images,
    pub(crate) queues: Queues,
}

impl ExampleDevice {
    pub fn new(id: i32) -> ExampleDevice {
        ExampleDevice {
            id,
            memory: DeviceMemory::new(id),
            images: Images::new(id),
            queues: Queues::new(id),
        }
    }
}

/// A queued memory copy. The caller checked the device ranges; host ranges only the program
/// knows.
///
/// # Safety
/// Host ranges must stay valid until the queue is synchronised (the copy calls' contract).
unsafe fn copy_job(dst: usize, src: usize, size: u64) -> Result<Job> {
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

impl Device for ExampleDevice {
    fn load_image(&self, image: ImageRef<'_>) -> Result<ImageHandle> {
        self.images.load(&image)
    }

    fn unload_image(&self, image: ImageHandle) -> Result<()> {
        self.memory.remove_globals(image);
        self.images.unload(image)
    }

    fn get_kernel(&self, image: ImageHandle, name: &str) -> Result<KernelHandle> {
        self.images.kernel(image, name)
    }

    fn get_global(&self, image: ImageHandle, name: &str, size: u64) -> Result<GlobalInfo> {
        let global = self.images.global(image, name, size)?;
        // Globals are device memory too: copies to and from them are allowed from now on.
        self.memory.add_global(global.address, global.size, image);
        Ok(global)
    }

    fn alloc(&self, size: u64, _host_ptr: usize, kind: AllocKind) -> Result<usize> {
        self.memory.alloc(size, kind)
    }

    fn free(&self, ptr: usize, kind: AllocKind) -> Result<()> {
        self.memory.free(ptr, kind)
    }

    fn create_queue(&self) -> Result<QueueHandle> {
        self.queues.create()
    }

    fn release_queue(&self, queue: QueueHandle) -> Result<()> {
        self.queues.release(queue)
    }

    unsafe fn copy_to_device(
        &self,
        dst: usize,
        src: usize,
        size: u64,
        queue: QueueHandle,
    ) -> Result<()> {
        self.memory.check(dst, size)?;
        // SAFETY: the host range is the caller's to keep valid (this method's contract).
        self.queues
            .submit(queue, unsafe { copy_job(dst, src, size) }?)
    }

    unsafe fn copy_from_device(
        &self,
        dst: usize,
        src: usize,
        size: u64,
        queue: QueueHandle,
    ) -> Result<()> {
        self.memory.check(src, size)?;
        // SAFETY: as above.
        self.queues
            .submit(queue, unsafe { copy_job(dst, src, size) }?)
    }

    /// Runs on this (the source) device's queue, as the ABI asks.
    fn copy_to_peer(
        &self,
        src: usize,
        target: &ExampleDevice,
        dst: usize,
        size: u64,
        queue: QueueHandle,
    ) -> Result<()> {
        self.memory.check(src, size)?;
        target.memory.check(dst, size)?;
        // SAFETY: both ranges were checked against live device allocations above.
        self.queues
            .submit(queue, unsafe { copy_job(dst, src, size) }?)
    }

    fn launch_kernel(
        &self,
        kernel: KernelHandle,
        args: &[usize],
        config: &LaunchConfig,
        queue: QueueHandle,
    ) -> Result<()> {
        let kernel = self.images.kernel_entry(kernel)?;
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
                self.id,
                &format!(
                    "Launching kernel {} on example device {} (teams {:?}, threads {:?})",
                    kernel.name, self.id, config.num_teams, config.thread_limit
                ),
            );
        }
        self.queues.submit(
            queue,
            Box::new(move || {
                // SAFETY: the address is a kernel symbol of an image loaded on this device (from
                // the kernel table), and clang's x86-64 kernels take one pointer-sized value per
                // argument. The core keeps the image loaded while work is queued.
                unsafe { launch::invoke(kernel.address, &values) }
            }),
        )
    }

    fn synchronize(&self, queue: QueueHandle) -> Result<()> {
        self.queues.synchronize(queue)
    }

    fn query_queue(&self, queue: QueueHandle) -> Result<bool> {
        self.queues.query(queue)
    }

    fn create_event(&self) -> Result<EventHandle> {
        self.queues.create_event()
    }

    fn record_event(&self, event: EventHandle, queue: QueueHandle) -> Result<()> {
        self.queues.record_event(event, queue)
    }

    fn wait_event(&self, event: EventHandle, queue: QueueHandle) -> Result<()> {
        self.queues.wait_event(event, queue)
    }

    fn sync_event(&self, event: EventHandle) -> Result<()> {
        self.queues.sync_event(event)
    }

    fn destroy_event(&self, event: EventHandle) -> Result<()> {
        self.queues.destroy_event(event)
    }

    /// Pinned ranges are kept per device here. A driver whose page-locking is the process's
    /// (one table for all devices) implements `DevicePlugin::pin_memory` instead.
    fn pin_memory(&self, host_ptr: usize, size: u64) -> Result<usize> {
        self.memory.pin(host_ptr, size)
    }

    fn unpin_memory(&self, host_ptr: usize) -> Result<()> {
        self.memory.unpin(host_ptr)
    }

    // The optional calls keep `Device`'s defaults: no free-memory report, no foreign runtime,
    // no kernel-language launches or indirect calls, no device timing, and no `traits`
    // (our queues really are asynchronous).
}
