//! A plugin as a vendor would have built it against the released ABI 1.0: one "device" whose
//! memory is host memory owned by the plugin, synchronous copies, no device images. It exists
//! to prove that newer runtimes keep loading and using plugins built for 1.0.

use plugin_api::*;
use std::collections::BTreeMap;
use std::sync::Mutex;

type Result<T> = std::result::Result<T, PluginError>;

/// Everything completes before returning, so one queue handle and one event handle serve all.
const ONLY_QUEUE: QueueHandle = QueueHandle(1);
const ONLY_EVENT: EventHandle = EventHandle(1);

pub struct FrozenV1Plugin {
    /// Start address -> the buffer behind it.
    memory: Mutex<BTreeMap<usize, Box<[u8]>>>,
}

impl FrozenV1Plugin {
    fn check_device(&self, device: i32) -> Result<()> {
        if device == 0 {
            Ok(())
        } else {
            Err(PluginError::new(
                ErrorCode::INVALID_DEVICE,
                format!("frozen-v1 device {device} does not exist (there is 1)"),
            ))
        }
    }

    /// Checks a queue handle: the synchronous queue, or the one queue `create_queue` gives out.
    fn check_queue(&self, device: i32, queue: QueueHandle) -> Result<()> {
        self.check_device(device)?;
        if queue == QueueHandle::SYNC || queue == ONLY_QUEUE {
            Ok(())
        } else {
            Err(PluginError::invalid_argument(format!(
                "queue {} is not a queue of the frozen-v1 device",
                queue.0
            )))
        }
    }

    /// Checks an event handle: the one event `create_event` gives out.
    fn check_event(&self, device: i32, event: EventHandle) -> Result<()> {
        self.check_device(device)?;
        if event == ONLY_EVENT {
            Ok(())
        } else {
            Err(PluginError::invalid_argument(format!(
                "event {} is not an event of the frozen-v1 device",
                event.0
            )))
        }
    }

    /// Checks that `[address, address + size)` lies inside one allocation.
    fn check_range(&self, address: usize, size: u64) -> Result<()> {
        let memory = self.memory.lock().unwrap_or_else(|e| e.into_inner());
        let inside = memory
            .range(..=address)
            .next_back()
            .is_some_and(|(start, buffer)| address - start + size as usize <= buffer.len());
        if inside {
            Ok(())
        } else {
            Err(PluginError::invalid_argument(format!(
                "{address:#x}+{size} is not inside an allocation of the frozen-v1 device"
            )))
        }
    }

    fn copy(
        &self,
        device: i32,
        dst: usize,
        src: usize,
        size: u64,
        device_side: usize,
    ) -> Result<()> {
        self.check_device(device)?;
        if size == 0 {
            return Ok(());
        }
        self.check_range(device_side, size)?;
        if dst == 0 || src == 0 {
            return Err(PluginError::invalid_argument("copy with a null address"));
        }
        // SAFETY: the device side lies in one of our buffers (checked above); the host side is
        // the caller's buffer of `size` bytes, as the ABI requires; they cannot overlap.
        unsafe { std::ptr::copy_nonoverlapping(src as *const u8, dst as *mut u8, size as usize) };
        Ok(())
    }
}

impl Plugin for FrozenV1Plugin {
    fn init() -> Result<Self> {
        Ok(FrozenV1Plugin {
            memory: Mutex::new(BTreeMap::new()),
        })
    }

    fn describe(&self) -> PluginDescription {
        PluginDescription {
            name: "frozen-v1".into(),
            num_devices: 1,
            note: "built against the frozen plugin ABI 1.0 (tests/abi-v1)".into(),
        }
    }

    fn num_devices(&self) -> i32 {
        1
    }

    fn check_image(&self, _device: Option<i32>, image: ImageRef<'_>) -> ImageCompatibility {
        // x86-64 ELF images are accepted, so that its device gets an OpenMP device number (a
        // runtime numbers only devices that can run one of the program's images, as LLVM's
        // does); `load_image` then refuses them, and the device serves the device-memory API.
        let bytes = image.bytes.as_slice();
        let elf = bytes.len() > 20 && bytes.starts_with(b"\x7fELF") && bytes[18..20] == [62, 0];
        ImageCompatibility {
            compatible: elf,
            reason: if elf {
                "the frozen-v1 test plugin accepts x86-64 images but loads none".into()
            } else {
                "not an x86-64 ELF image".into()
            },
        }
    }

    fn init_device(&self, device: i32) -> Result<()> {
        self.check_device(device)
    }

    fn deinit_device(&self, device: i32) -> Result<()> {
        self.check_device(device)
    }

    fn device_info(&self, device: i32) -> Result<Vec<InfoEntry>> {
        self.check_device(device)?;
        Ok(vec![
            InfoEntry {
                key: "compute unit kind".into(),
                value: "frozen-v1".into(),
            },
            InfoEntry {
                key: "built against plugin ABI".into(),
                value: ABI_VERSION.to_string().into(),
            },
        ])
    }

    fn load_image(&self, device: i32, _image: ImageRef<'_>) -> Result<ImageHandle> {
        self.check_device(device)?;
        Err(PluginError::new(
            ErrorCode::UNSUPPORTED,
            "the frozen-v1 test plugin runs no device images",
        ))
    }

    fn unload_image(&self, device: i32, image: ImageHandle) -> Result<()> {
        self.check_device(device)?;
        Err(PluginError::invalid_argument(format!(
            "image handle {} was never loaded",
            image.0
        )))
    }

    fn get_kernel(&self, device: i32, image: ImageHandle, _name: &str) -> Result<KernelHandle> {
        self.unload_image(device, image).map(|_| KernelHandle(0))
    }

    fn get_global(
        &self,
        device: i32,
        image: ImageHandle,
        _name: &str,
        _size: u64,
    ) -> Result<GlobalInfo> {
        self.unload_image(device, image).map(|_| GlobalInfo {
            address: 0,
            size: 0,
        })
    }

    fn alloc(&self, device: i32, size: u64, _host_ptr: usize, kind: AllocKind) -> Result<usize> {
        self.check_device(device)?;
        if kind.0 > AllocKind::DEVICE_NON_BLOCKING.0 {
            return Err(PluginError::invalid_argument(format!(
                "unknown allocation kind {}",
                kind.0
            )));
        }
        let buffer = vec![0u8; size.max(1) as usize].into_boxed_slice();
        let address = buffer.as_ptr() as usize;
        self.memory
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(address, buffer);
        Ok(address)
    }

    fn free(&self, device: i32, ptr: usize, _kind: AllocKind) -> Result<()> {
        self.check_device(device)?;
        match self
            .memory
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&ptr)
        {
            Some(_) => Ok(()),
            None => Err(PluginError::invalid_argument(format!(
                "{ptr:#x} is not an allocation of the frozen-v1 device"
            ))),
        }
    }

    fn create_queue(&self, device: i32) -> Result<QueueHandle> {
        self.check_device(device).map(|_| ONLY_QUEUE)
    }

    fn release_queue(&self, device: i32, queue: QueueHandle) -> Result<()> {
        self.check_queue(device, queue)
    }

    fn copy_to_device(
        &self,
        device: i32,
        dst: usize,
        src: usize,
        size: u64,
        queue: QueueHandle,
    ) -> Result<()> {
        self.check_queue(device, queue)?;
        self.copy(device, dst, src, size, dst)
    }

    fn copy_from_device(
        &self,
        device: i32,
        dst: usize,
        src: usize,
        size: u64,
        queue: QueueHandle,
    ) -> Result<()> {
        self.check_queue(device, queue)?;
        self.copy(device, dst, src, size, src)
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
        self.check_queue(src_device, queue)?;
        self.check_device(dst_device)?;
        self.check_range(dst, size)?;
        self.copy(src_device, dst, src, size, src)
    }

    fn launch_kernel(
        &self,
        device: i32,
        _kernel: KernelHandle,
        _args: &[usize],
        _config: &LaunchConfig,
        _queue: QueueHandle,
    ) -> Result<()> {
        self.check_device(device)?;
        Err(PluginError::new(
            ErrorCode::UNSUPPORTED,
            "the frozen-v1 test plugin has no kernels",
        ))
    }

    fn synchronize(&self, device: i32, queue: QueueHandle) -> Result<()> {
        self.check_queue(device, queue)
    }

    fn query_queue(&self, device: i32, queue: QueueHandle) -> Result<bool> {
        self.check_queue(device, queue).map(|_| true)
    }

    fn create_event(&self, device: i32) -> Result<EventHandle> {
        self.check_device(device).map(|_| ONLY_EVENT)
    }

    fn record_event(&self, device: i32, event: EventHandle, queue: QueueHandle) -> Result<()> {
        self.check_queue(device, queue)?;
        self.check_event(device, event)
    }

    fn wait_event(&self, device: i32, event: EventHandle, queue: QueueHandle) -> Result<()> {
        self.check_queue(device, queue)?;
        self.check_event(device, event)
    }

    fn sync_event(&self, device: i32, event: EventHandle) -> Result<()> {
        self.check_event(device, event)
    }

    fn destroy_event(&self, device: i32, event: EventHandle) -> Result<()> {
        self.check_event(device, event)
    }

    fn pin_memory(&self, device: i32, _host_ptr: usize, _size: u64) -> Result<usize> {
        self.check_device(device)?;
        Err(PluginError::new(
            ErrorCode::UNSUPPORTED,
            "the frozen-v1 test plugin does not pin memory",
        ))
    }

    fn unpin_memory(&self, device: i32, _host_ptr: usize) -> Result<()> {
        self.check_device(device)?;
        Err(PluginError::new(
            ErrorCode::UNSUPPORTED,
            "the frozen-v1 test plugin does not pin memory",
        ))
    }
}

export_plugin!(FrozenV1Plugin);
