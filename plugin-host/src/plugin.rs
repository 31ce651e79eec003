//! The [`Plugin`] implementation: argument checks and dispatch to [`HostDevice`]s.

use crate::device::HostDevice;
use crate::{elf_check, sys};
use log::{debug, warn};
use plugin_api::*;

type Result<T> = std::result::Result<T, PluginError>;

/// Devices LLVM's host plugin exposes; ours too unless the variable below says otherwise.
const DEFAULT_DEVICES: i32 = 4;
/// The queue of every construct: host work runs synchronously (never `QueueHandle::SYNC`,
/// which `create_queue` must not return).
const HOST_QUEUE: QueueHandle = QueueHandle(1);
/// Overrides the number of host devices (1 to 64).
pub const NUM_DEVICES_VAR: &str = "LIBOMPTARGET_HOST_NUM_DEVICES";

pub struct HostPlugin {
    devices: Vec<HostDevice>,
}

fn device_count_from_env() -> i32 {
    match std::env::var(NUM_DEVICES_VAR) {
        Err(_) => DEFAULT_DEVICES,
        Ok(text) => match text.trim().parse::<i32>() {
            Ok(n) if (1..=64).contains(&n) => n,
            _ => {
                warn!("{NUM_DEVICES_VAR}='{text}' is not a number from 1 to 64; using {DEFAULT_DEVICES}");
                DEFAULT_DEVICES
            }
        },
    }
}

/// A `/proc/meminfo` figure (`MemTotal`, `MemAvailable`) in bytes.
fn meminfo_bytes(field: &str) -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = meminfo
        .lines()
        .find(|l| l.strip_prefix(field).is_some_and(|r| r.starts_with(':')))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

fn total_memory_bytes() -> Option<u64> {
    meminfo_bytes("MemTotal")
}

impl HostPlugin {
    fn device(&self, device: i32) -> Result<&HostDevice> {
        usize::try_from(device)
            .ok()
            .and_then(|i| self.devices.get(i))
            .ok_or_else(|| {
                PluginError::new(
                    ErrorCode::INVALID_DEVICE,
                    format!(
                        "host device {device} does not exist (there are {})",
                        self.devices.len()
                    ),
                )
            })
    }
}

impl Plugin for HostPlugin {
    fn may_run_target(triple: &str) -> TargetClaim {
        TargetClaim::for_architectures(triple, &[std::env::consts::ARCH])
    }

    fn init() -> Result<Self> {
        let count = device_count_from_env();
        debug!("host plugin: {count} devices");
        Ok(HostPlugin {
            devices: (0..count).map(HostDevice::new).collect(),
        })
    }

    fn describe(&self) -> PluginDescription {
        PluginDescription {
            name: "host".into(),
            num_devices: self.devices.len() as i32,
            note: format!(
                "the CPU as {} offload devices ({NUM_DEVICES_VAR})",
                self.devices.len()
            )
            .into(),
        }
    }

    fn num_devices(&self) -> i32 {
        self.devices.len() as i32
    }

    fn check_image(&self, device: Option<i32>, image: ImageRef<'_>) -> ImageCompatibility {
        if let Some(d) = device {
            if let Err(e) = self.device(d) {
                return ImageCompatibility::no(e.message.to_string());
            }
        }
        elf_check::check(&image)
    }

    fn init_device(&self, device: i32) -> Result<()> {
        self.device(device).map(|_| ())
    }

    fn deinit_device(&self, device: i32) -> Result<()> {
        self.device(device).map(|_| ())
    }

    fn device_info(&self, device: i32) -> Result<Vec<InfoEntry>> {
        let dev = self.device(device)?;
        let cores = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1);
        let mut info = vec![
            InfoEntry::new("name", "Host CPU (x86-64)"),
            InfoEntry::new("kind", "host"),
            // What LLVM's host plugin calls its compute unit (OMPT `device_initialize`).
            InfoEntry::new("compute unit kind", "generic-64bit"),
            InfoEntry::new("image format", "x86-64 ELF shared object"),
            InfoEntry::new("cores", cores),
            InfoEntry::new("loaded images", dev.image_count()),
            // The device's OpenMP UID, as LLVM 22's host plugin names it.
            InfoEntry::new("uid", format!("x86_64-{device}")),
        ];
        if let Some(bytes) = total_memory_bytes() {
            info.push(InfoEntry::new("memory bytes", bytes));
        }
        Ok(info)
    }

    fn load_image(&self, device: i32, image: ImageRef<'_>) -> Result<ImageHandle> {
        let dev = self.device(device)?;
        let answer = elf_check::check(&image);
        if !answer.compatible {
            return Err(PluginError::invalid_argument(format!(
                "cannot load image: {}",
                answer.reason
            )));
        }
        dev.load_image(image.bytes.as_slice())
    }

    fn unload_image(&self, device: i32, image: ImageHandle) -> Result<()> {
        self.device(device)?.unload_image(image)
    }

    fn get_kernel(&self, device: i32, image: ImageHandle, name: &str) -> Result<KernelHandle> {
        self.device(device)?.kernel(image, name)
    }

    fn get_global(
        &self,
        device: i32,
        image: ImageHandle,
        name: &str,
        size: u64,
    ) -> Result<GlobalInfo> {
        self.device(device)?.global(image, name, size)
    }

    fn alloc(&self, device: i32, size: u64, _host_ptr: usize, kind: AllocKind) -> Result<usize> {
        if kind.0 > AllocKind::DEVICE_NON_BLOCKING.0 {
            return Err(PluginError::invalid_argument(format!(
                "unknown allocation kind {}",
                kind.0
            )));
        }
        // Every kind is ordinary host memory here: the "device" is the CPU itself.
        self.device(device)?.allocate(size)
    }

    fn free(&self, device: i32, ptr: usize, _kind: AllocKind) -> Result<()> {
        self.device(device)?.free(ptr)
    }

    fn create_queue(&self, device: i32) -> Result<QueueHandle> {
        // Work on a host device completes when it is submitted, so every queue is the same
        // one; handing out a shared constant keeps threads off a shared counter per construct.
        self.device(device).map(|_| HOST_QUEUE)
    }

    fn release_queue(&self, device: i32, _queue: QueueHandle) -> Result<()> {
        self.device(device).map(|_| ())
    }

    fn copy_to_device(
        &self,
        device: i32,
        dst: usize,
        src: usize,
        size: u64,
        _queue: QueueHandle,
    ) -> Result<()> {
        self.device(device)?;
        copy(dst, src, size)
    }

    fn copy_from_device(
        &self,
        device: i32,
        dst: usize,
        src: usize,
        size: u64,
        _queue: QueueHandle,
    ) -> Result<()> {
        self.device(device)?;
        copy(dst, src, size)
    }

    fn copy_device_to_device(
        &self,
        src_device: i32,
        src: usize,
        dst_device: i32,
        dst: usize,
        size: u64,
        _queue: QueueHandle,
    ) -> Result<()> {
        self.device(src_device)?;
        self.device(dst_device)?;
        copy(dst, src, size)
    }

    fn launch_kernel(
        &self,
        device: i32,
        kernel: KernelHandle,
        args: &[usize],
        config: &LaunchConfig,
        _queue: QueueHandle,
    ) -> Result<()> {
        let host_device = self.device(device)?;
        if kernel.0 == 0 {
            return Err(PluginError::invalid_argument("null kernel handle"));
        }
        if plugin_api::info::enabled(plugin_api::info::PLUGIN_KERNEL) {
            // A host device runs one team of one thread, whatever was asked (LLVM's host grid).
            if let Some(k) = host_device.kernel_info(kernel) {
                let mode = k.mode_name();
                plugin_api::info::kernel_launch(device, config, &k.name, [1; 3], [1; 3], mode);
            }
        }
        // From KernelArgsTy version 3 on, kernels take the launch environment first. Host kernels
        // do not read it (LLVM passes no environment for them either), so it is null.
        // Inline for the usual few arguments: no allocation per launch.
        let mut full_args: smallvec::SmallVec<[usize; 16]> =
            smallvec::SmallVec::with_capacity(args.len() + 1);
        if config.kernel_args_version >= 3 {
            full_args.push(0);
        }
        full_args.extend_from_slice(args);
        // SAFETY: the handle is the address of a kernel of a loaded image (from get_kernel), and
        // clang's x86-64 kernels take one pointer-sized value per argument.
        unsafe { sys::call_with_args(kernel.0 as usize, &full_args) };
        Ok(())
    }

    fn synchronize(&self, device: i32, _queue: QueueHandle) -> Result<()> {
        self.device(device).map(|_| ())
    }

    fn query_queue(&self, device: i32, _queue: QueueHandle) -> Result<bool> {
        self.device(device).map(|_| true)
    }

    fn create_event(&self, device: i32) -> Result<EventHandle> {
        Ok(EventHandle(self.device(device)?.new_handle()))
    }

    fn record_event(&self, device: i32, _event: EventHandle, _queue: QueueHandle) -> Result<()> {
        self.device(device).map(|_| ())
    }

    fn wait_event(&self, device: i32, _event: EventHandle, _queue: QueueHandle) -> Result<()> {
        self.device(device).map(|_| ())
    }

    fn sync_event(&self, device: i32, _event: EventHandle) -> Result<()> {
        self.device(device).map(|_| ())
    }

    fn destroy_event(&self, device: i32, _event: EventHandle) -> Result<()> {
        self.device(device).map(|_| ())
    }

    fn pin_memory(&self, device: i32, host_ptr: usize, _size: u64) -> Result<usize> {
        // Host memory is already accessible to the host "device".
        self.device(device).map(|_| host_ptr)
    }

    fn unpin_memory(&self, device: i32, _host_ptr: usize) -> Result<()> {
        self.device(device).map(|_| ())
    }

    fn device_traits(&self, device: i32) -> Result<DeviceTraits> {
        // Copies are memcpy and launches run the kernel before returning.
        self.device(device)
            .map(|_| DeviceTraits::QUEUES_COMPLETE_ON_SUBMISSION)
    }

    fn memory_info(&self, device: i32) -> Result<MemoryInfo> {
        self.device(device)?;
        // Host devices share the machine's memory: what the kernel says is available.
        match (meminfo_bytes("MemAvailable"), total_memory_bytes()) {
            (Some(free), Some(total)) => Ok(MemoryInfo { free, total }),
            _ => Err(PluginError::new(
                ErrorCode::UNSUPPORTED,
                "/proc/meminfo is not readable",
            )),
        }
    }

    /// A kernel-language launch on the host: host kernels take one pointer-sized value per
    /// argument, so a parameter buffer of whole 8-byte words is their argument list (the grid
    /// is one team of one thread, as for every host launch). Other layouts cannot be passed.
    fn launch_kernel_params(
        &self,
        device: i32,
        kernel: KernelHandle,
        params: &[u8],
        _config: &LaunchConfig,
        _queue: QueueHandle,
    ) -> Result<()> {
        self.device(device)?;
        if kernel.0 == 0 {
            return Err(PluginError::invalid_argument("null kernel handle"));
        }
        const WORD: usize = std::mem::size_of::<usize>();
        let words = params.chunks_exact(WORD);
        if !words.remainder().is_empty() {
            return Err(PluginError::unsupported(format!(
                "a host kernel takes pointer-sized arguments; a {}-byte parameter buffer is not \
                 a whole number of them",
                params.len()
            )));
        }
        let args: Vec<usize> = words
            .map(|w| usize::from_ne_bytes(w.try_into().expect("a whole word")))
            .collect();
        // SAFETY: the handle is the address of a kernel of a loaded image (from get_kernel),
        // which takes one pointer-sized value per argument: the caller's buffer of them.
        unsafe { sys::call_with_args(kernel.0 as usize, &args) };
        Ok(())
    }

    /// Host device code calls host function pointers as they are: nothing to translate.
    fn set_indirect_calls(
        &self,
        device: i32,
        _image: ImageHandle,
        _calls: &[IndirectCall],
    ) -> Result<()> {
        self.device(device)?;
        Ok(())
    }

    /// The host devices have no foreign runtime: interop objects carry no native handles.
    fn interop_info(&self, device: i32, _queue: QueueHandle) -> Result<InteropInfo> {
        self.device(device)?;
        Ok(InteropInfo::none(Vendor::LLVM))
    }
}

fn copy(dst: usize, src: usize, size: u64) -> Result<()> {
    if size == 0 {
        return Ok(());
    }
    if dst == 0 || src == 0 {
        return Err(PluginError::invalid_argument("copy with a null address"));
    }
    if dst == src {
        return Ok(());
    }
    // SAFETY: the core passes addresses of live host and device (= host) buffers of at least
    // `size` bytes; host and device copies are distinct allocations, so they do not overlap.
    unsafe { sys::copy(dst, src, size) };
    Ok(())
}
