//! One host device: its loaded images and its allocations, and the per-device calls of the
//! plugin ABI ([`Device`]).

use crate::device_runtime::{self, RuntimeKernel};
use crate::{elf_check, helper_threads, kernel_fault, sys};
use host_os::address_map::AddressMap;
use log::debug;
use offload_image::device_environment::DeviceEnvironment;
use plugin_api::*;
use std::collections::{HashMap, HashSet};
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use sync_util::{get_mut, lock};

type Result<T> = std::result::Result<T, PluginError>;

/// The queue of every construct: host work runs synchronously (never `QueueHandle::SYNC`,
/// which `create_queue` must not return).
const HOST_QUEUE: QueueHandle = QueueHandle(1);

/// A `/proc/meminfo` figure (`MemTotal`, `MemAvailable`) in bytes.
fn meminfo_bytes(field: &str) -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = meminfo
        .lines()
        .find(|l| l.strip_prefix(field).is_some_and(|r| r.starts_with(':')))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// The machine's memory, which every host device shares.
pub fn total_memory_bytes() -> Option<u64> {
    meminfo_bytes("MemTotal")
}

/// An image loaded into this process for one device.
struct LoadedImage {
    library: libloading::os::unix::Library,
    /// Kept open while loaded: the loader knows the image by its `/proc/self/fd/N` name, and a
    /// reused descriptor number would make it hand back this image for a different one.
    _file: OwnedFd,
    /// Faults in the image's code are caught and reported while this lives (registered when
    /// its first kernel is looked up, released before the library closes).
    watched: Option<host_os::kernel_faults::Code>,
}

pub struct HostDevice {
    index: i32,
    /// Processors of the machine.
    cpus: u32,
    /// What the images' device environment global says (`device_runtime`).
    environment: DeviceEnvironment,
    images: Mutex<HashMap<u64, LoadedImage>>,
    /// Live allocations and their sizes, so a bad `free` is an error rather than heap corruption.
    allocations: Mutex<AddressMap<usize, u64>>,
    /// Name and execution mode of each kernel handed out, for launch information.
    kernels: Mutex<HashMap<u64, KernelInfo>>,
    /// The event handles given out and not destroyed, so a bogus one is an error.
    events: Mutex<HashSet<u64>>,
    next_handle: AtomicU64,
    /// The GPU-style kernels handed out (flang's), which run through their image's host device
    /// runtime; `runtime_kernels_seen` keeps the launches of the others off the lock.
    runtime_kernels: Mutex<HashMap<u64, (ImageHandle, RuntimeKernel)>>,
    runtime_kernels_seen: AtomicBool,
}

/// What `LIBOMPTARGET_INFO` says about a kernel at launch.
#[derive(Clone)]
pub struct KernelInfo {
    pub name: String,
    /// From the image's `<kernel>_exec_mode` global: 1 generic, 2 SPMD, 3 generic-SPMD.
    pub mode: u8,
}

impl KernelInfo {
    /// LLVM's name for the execution mode.
    pub fn mode_name(&self) -> &'static str {
        match self.mode {
            2 => "SPMD",
            3 => "Generic-SPMD",
            _ => "Generic",
        }
    }
}

impl HostDevice {
    pub fn new(index: i32, num_devices: i32) -> Self {
        let cpus = std::thread::available_parallelism()
            .map(|n| n.get() as u32)
            .unwrap_or(1);
        HostDevice {
            index,
            cpus,
            environment: device_runtime::device_environment(index, num_devices, cpus),
            images: Mutex::new(HashMap::new()),
            allocations: Mutex::new(AddressMap::default()),
            kernels: Mutex::new(HashMap::new()),
            events: Mutex::new(HashSet::new()),
            next_handle: AtomicU64::new(1),
            runtime_kernels: Mutex::new(HashMap::new()),
            runtime_kernels_seen: AtomicBool::new(false),
        }
    }

    fn new_handle(&self) -> u64 {
        self.next_handle.fetch_add(1, Ordering::Relaxed)
    }

    fn symbol(&self, image: ImageHandle, name: &str) -> Result<usize> {
        let images = lock(&self.images);
        let loaded = images.get(&image.0).ok_or_else(|| unknown_image(image))?;
        sys::symbol_address(&loaded.library, name).ok_or_else(|| {
            PluginError::new(
                ErrorCode::NOT_FOUND,
                format!("symbol '{name}' not found in the image"),
            )
        })
    }

    fn kernel_info(&self, kernel: KernelHandle) -> Option<KernelInfo> {
        lock(&self.kernels).get(&kernel.0).cloned()
    }

    /// Refuses a queue handle this device never gave out: host work needs no queue, but a
    /// bogus handle is the caller's error and is reported as one.
    #[inline]
    fn check_queue(&self, queue: QueueHandle) -> Result<()> {
        if queue == QueueHandle::SYNC || queue == HOST_QUEUE {
            return Ok(());
        }
        Err(PluginError::invalid_argument(format!(
            "no queue with handle {} on host device {}",
            queue.0, self.index
        )))
    }

    /// Refuses an event handle this device never gave out, or destroyed.
    fn check_event(&self, event: EventHandle) -> Result<()> {
        if lock(&self.events).contains(&event.0) {
            return Ok(());
        }
        Err(unknown_event(event, self.index))
    }

    pub fn image_count(&self) -> usize {
        lock(&self.images).len()
    }

    /// Launches a GPU-style kernel through its image's host device runtime, on a league of
    /// teams of threads (see [`device_runtime`]). Runs on the calling thread, a `nowait`
    /// region's too: the teams run on the runtime's own threads, so the kernel's parallel
    /// regions are not nested in a libomp hidden helper thread's (see [`helper_threads`]).
    fn launch_through_runtime(
        &self,
        kernel: KernelHandle,
        runtime: &RuntimeKernel,
        args: &[usize],
        config: &LaunchConfig,
    ) -> Result<()> {
        let info = self.kernel_info(kernel);
        let name = info.as_ref().map_or("?", |k| k.name.as_str());
        let shape = device_runtime::shape(&runtime.config, config, self.cpus);
        if plugin_api::info::enabled(plugin_api::info::PLUGIN_KERNEL) {
            if let Some(k) = &info {
                let (teams, threads) = ([shape.teams, 1, 1], [shape.thread_limit, 1, 1]);
                plugin_api::info::kernel_launch(
                    self.index,
                    config,
                    name,
                    teams,
                    threads,
                    k.mode_name(),
                );
            }
        }
        // The launch environment first (kernels of KernelArgsTy version 3 and later): the host
        // device runtime does not read it.
        let mut words = Vec::with_capacity(args.len() + 1);
        if config.kernel_args_version >= 3 {
            words.push(0);
        }
        words.extend_from_slice(args);
        let dyn_mem =
            u64::from(config.dyn_shared_mem) + u64::from(self.environment.dynamic_mem_size);
        kernel_fault::launched(kernel.0 as usize);
        // SAFETY: the handle is the address of a kernel of a loaded image (from get_kernel),
        // whose runtime `runtime` was found with it; it takes one word per argument.
        unsafe { device_runtime::launch(name, kernel.0 as usize, runtime, &words, shape, dyn_mem) }
    }
}

/// Host work completes before each call returns: queues and events need no work, and copies
/// are `memcpy`.
impl Device for HostDevice {
    fn load_image(&self, image: ImageRef<'_>) -> Result<ImageHandle> {
        let answer = elf_check::check(&image);
        if !answer.compatible {
            return Err(PluginError::invalid_argument(format!(
                "cannot load image: {}",
                answer.reason
            )));
        }
        let handle = self.new_handle();
        let name = format!("omptarget-host-dev{}-image{}", self.index, handle);
        let file = sys::memory_file(&name, image.bytes.as_slice()).map_err(|e| {
            PluginError::failed(format!(
                "cannot create an in-memory file for the image: {e}"
            ))
        })?;
        let path = sys::fd_path(&file);
        let library = sys::open_library(&path).map_err(|e| {
            PluginError::failed(format!("the dynamic loader refused the image: {e}"))
        })?;
        debug!(
            "host device {}: loaded image {} from {}",
            self.index, handle, path
        );
        // SAFETY: the symbols are the just-loaded image's.
        unsafe {
            device_runtime::fill_device_environment(
                |name| sys::symbol_address(&library, name),
                &self.environment,
            )
        };
        lock(&self.images).insert(
            handle,
            LoadedImage {
                library,
                _file: file,
                watched: None,
            },
        );
        Ok(ImageHandle(handle))
    }

    fn unload_image(&self, image: ImageHandle) -> Result<()> {
        let loaded = lock(&self.images).remove(&image.0);
        // Its kernels' launchers go with it.
        lock(&self.runtime_kernels).retain(|_, (of, _)| *of != image);
        match loaded {
            Some(mut loaded) => {
                // No longer the image's code once the loader unmaps it.
                loaded.watched = None;
                loaded
                    .library
                    .close()
                    .map_err(|e| PluginError::failed(format!("unloading image failed: {e}")))?;
                Ok(())
            }
            None => Err(unknown_image(image)),
        }
    }

    /// Kernels are identified by their entry address, valid while the image is loaded.
    fn get_kernel(&self, image: ImageHandle, name: &str) -> Result<KernelHandle> {
        let address = self.symbol(image, name)?;
        if let Some(loaded) = lock(&self.images).get_mut(&image.0) {
            if loaded.watched.is_none() {
                loaded.watched = kernel_fault::watch_image_of(address);
            }
        }
        let mode = self
            .symbol(image, &format!("{name}_exec_mode"))
            // SAFETY: clang's `<kernel>_exec_mode` is a one-byte global of the loaded image.
            .map(|mode| unsafe { std::ptr::read_volatile(mode as *const u8) })
            .unwrap_or(1);
        lock(&self.kernels).insert(
            address as u64,
            KernelInfo {
                name: name.to_string(),
                mode,
            },
        );
        match RuntimeKernel::find(name, |symbol| self.symbol(image, symbol).ok()) {
            Some(kernel) => {
                lock(&self.runtime_kernels).insert(address as u64, (image, kernel));
                self.runtime_kernels_seen.store(true, Ordering::Release);
            }
            // Not one of an image unloaded since, at the same address.
            None if self.runtime_kernels_seen.load(Ordering::Acquire) => {
                lock(&self.runtime_kernels).remove(&(address as u64));
            }
            None => {}
        }
        Ok(KernelHandle(address as u64))
    }

    fn get_global(&self, image: ImageHandle, name: &str, size: u64) -> Result<GlobalInfo> {
        // The dynamic symbol table does not reliably give sizes after dlopen; trust the host's.
        self.symbol(image, name)
            .map(|address| GlobalInfo { address, size })
    }

    /// Every kind is ordinary host memory here: the "device" is the CPU itself.
    fn alloc(&self, size: u64, _host_ptr: usize, kind: AllocKind) -> Result<usize> {
        if kind.0 > AllocKind::DEVICE_NON_BLOCKING.0 {
            return Err(PluginError::invalid_argument(format!(
                "unknown allocation kind {}",
                kind.0
            )));
        }
        let ptr = sys::allocate(size).ok_or_else(|| {
            PluginError::new(
                ErrorCode::OUT_OF_MEMORY,
                format!("cannot allocate {size} bytes on host device {}", self.index),
            )
        })?;
        lock(&self.allocations).insert(ptr, size);
        Ok(ptr)
    }

    fn free(&self, ptr: usize, _kind: AllocKind) -> Result<()> {
        if lock(&self.allocations).remove(&ptr).is_none() {
            return Err(PluginError::invalid_argument(format!(
                "{ptr:#x} is not an allocation of host device {}",
                self.index
            )));
        }
        // SAFETY: the pointer was returned by `alloc` and was just removed from the live set,
        // so it is freed exactly once.
        unsafe { sys::deallocate(ptr) };
        Ok(())
    }

    /// Work on a host device completes when it is submitted, so every queue is the same one;
    /// handing out a shared constant keeps threads off a shared counter per construct.
    fn create_queue(&self) -> Result<QueueHandle> {
        Ok(HOST_QUEUE)
    }

    fn release_queue(&self, queue: QueueHandle) -> Result<()> {
        if queue == QueueHandle::SYNC {
            return Err(PluginError::invalid_argument(
                "the synchronous queue is not released",
            ));
        }
        self.check_queue(queue)
    }

    unsafe fn copy_to_device(
        &self,
        dst: usize,
        src: usize,
        size: u64,
        queue: QueueHandle,
    ) -> Result<()> {
        self.check_queue(queue)?;
        // SAFETY: `src` is readable for `size` bytes (caller's promise); `dst` is this
        // device's memory, allocated by the core for at least that much.
        unsafe { copy(dst, src, size) };
        Ok(())
    }

    unsafe fn copy_from_device(
        &self,
        dst: usize,
        src: usize,
        size: u64,
        queue: QueueHandle,
    ) -> Result<()> {
        self.check_queue(queue)?;
        // SAFETY: `dst` is writable for `size` bytes (caller's promise); `src` is this
        // device's memory.
        unsafe { copy(dst, src, size) };
        Ok(())
    }

    fn copy_to_peer(
        &self,
        src: usize,
        _target: &HostDevice,
        dst: usize,
        size: u64,
        queue: QueueHandle,
    ) -> Result<()> {
        self.check_queue(queue)?;
        // SAFETY: both are device memory of this plugin (host memory), `size` bytes each by
        // the core's contract for device-to-device copies.
        unsafe { copy(dst, src, size) };
        Ok(())
    }

    fn fill_memory(&self, dst: usize, pattern: &[u8], size: u64, queue: QueueHandle) -> Result<()> {
        self.check_queue(queue)?;
        // SAFETY: `dst` is device memory of this plugin (host memory), `size` bytes long by the
        // core's contract for fills.
        unsafe { sys::fill(dst, pattern, size) };
        Ok(())
    }

    fn launch_kernel(
        &self,
        kernel: KernelHandle,
        args: &[usize],
        config: &LaunchConfig,
        queue: QueueHandle,
    ) -> Result<()> {
        self.check_queue(queue)?;
        if self.runtime_kernels_seen.load(Ordering::Acquire) {
            let runtime = lock(&self.runtime_kernels).get(&kernel.0).map(|&(_, k)| k);
            if let Some(runtime) = runtime {
                return self.launch_through_runtime(kernel, &runtime, args, config);
            }
        }
        if plugin_api::info::enabled(plugin_api::info::PLUGIN_KERNEL) {
            // A host device runs one team of one thread, whatever was asked (LLVM's host grid).
            if let Some(k) = self.kernel_info(kernel) {
                let mode = k.mode_name();
                plugin_api::info::kernel_launch(self.index, config, &k.name, [1; 3], [1; 3], mode);
            }
        }
        // From KernelArgsTy version 3 on, kernels take the launch environment first. Host kernels
        // do not read it (LLVM passes no environment for them either), so it is null.
        // On the stack for the usual few arguments: no allocation per launch.
        let environment = usize::from(config.kernel_args_version >= 3);
        let count = environment + args.len();
        let mut inline = [0usize; 17];
        let on_heap: Vec<usize>;
        let full_args: &[usize] = if count <= inline.len() {
            inline[environment..count].copy_from_slice(args);
            &inline[..count]
        } else {
            let mut all = vec![0; count];
            all[environment..].copy_from_slice(args);
            on_heap = all;
            &on_heap
        };
        kernel_fault::launched(kernel.0 as usize);
        // SAFETY: the handle is the address of a kernel of a loaded image (from get_kernel), and
        // clang's x86-64 kernels take one pointer-sized value per argument. A `nowait` region's
        // kernel launched on a libomp hidden helper thread runs on a partner thread instead.
        unsafe { helper_threads::call_kernel(kernel.0 as usize, full_args, config.flags) };
        Ok(())
    }

    fn synchronize(&self, queue: QueueHandle) -> Result<()> {
        self.check_queue(queue)
    }

    fn query_queue(&self, queue: QueueHandle) -> Result<bool> {
        self.check_queue(queue).map(|()| true)
    }

    /// Events only need to exist (the core records none on a device whose queues complete on
    /// submission; a caller that does gets one that is always complete).
    fn create_event(&self) -> Result<EventHandle> {
        let handle = self.new_handle();
        lock(&self.events).insert(handle);
        Ok(EventHandle(handle))
    }

    fn record_event(&self, event: EventHandle, queue: QueueHandle) -> Result<()> {
        self.check_queue(queue)?;
        self.check_event(event)
    }

    fn wait_event(&self, event: EventHandle, queue: QueueHandle) -> Result<()> {
        self.check_queue(queue)?;
        self.check_event(event)
    }

    fn sync_event(&self, event: EventHandle) -> Result<()> {
        self.check_event(event)
    }

    fn destroy_event(&self, event: EventHandle) -> Result<()> {
        if lock(&self.events).remove(&event.0) {
            return Ok(());
        }
        Err(unknown_event(event, self.index))
    }

    /// Host memory is already accessible to the host "device".
    fn pin_memory(&self, host_ptr: usize, _size: u64) -> Result<usize> {
        Ok(host_ptr)
    }

    fn unpin_memory(&self, _host_ptr: usize) -> Result<()> {
        Ok(())
    }

    /// Host devices share the machine's memory: what the kernel says is available.
    fn memory_info(&self) -> Result<MemoryInfo> {
        match (meminfo_bytes("MemAvailable"), total_memory_bytes()) {
            (Some(free), Some(total)) => Ok(MemoryInfo { free, total }),
            _ => Err(PluginError::new(
                ErrorCode::UNSUPPORTED,
                "/proc/meminfo is not readable",
            )),
        }
    }

    /// The host devices have no foreign runtime: interop objects carry no native handles.
    fn interop_info(&self, queue: QueueHandle) -> Result<InteropInfo> {
        self.check_queue(queue)?;
        Ok(InteropInfo::none(Vendor::LLVM))
    }

    /// A kernel-language launch on the host: host kernels take one pointer-sized value per
    /// argument, so a parameter buffer of whole 8-byte words is their argument list (the grid
    /// is one team of one thread, as for every host launch). Other layouts cannot be passed.
    fn launch_kernel_params(
        &self,
        kernel: KernelHandle,
        params: &[u8],
        _config: &LaunchConfig,
        queue: QueueHandle,
    ) -> Result<()> {
        self.check_queue(queue)?;
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
        kernel_fault::launched(kernel.0 as usize);
        // SAFETY: the handle is the address of a kernel of a loaded image (from get_kernel),
        // which takes one pointer-sized value per argument: the caller's buffer of them.
        unsafe { sys::call_with_args(kernel.0 as usize, &args) };
        Ok(())
    }

    /// Host device code calls host function pointers as they are: nothing to translate.
    fn set_indirect_calls(&self, _image: ImageHandle, _calls: &[IndirectCall]) -> Result<()> {
        Ok(())
    }

    /// Copies are memcpy and launches run the kernel before returning; device memory is this
    /// process's memory.
    fn traits(&self) -> DeviceTraits {
        DeviceTraits::QUEUES_COMPLETE_ON_SUBMISSION | DeviceTraits::MEMORY_IN_PROCESS
    }
}

/// Copies between two addresses of this process (plugin-api has refused null addresses and
/// let through no empty copy).
///
/// # Safety
/// `src` readable and `dst` writable for `size` bytes; distinct buffers (host and device
/// copies are separate allocations) or the same address.
unsafe fn copy(dst: usize, src: usize, size: u64) {
    if dst == src {
        return;
    }
    // SAFETY: the caller's promise.
    unsafe { sys::copy(dst, src, size) };
}

impl Drop for HostDevice {
    fn drop(&mut self) {
        for (&ptr, _) in get_mut(&mut self.allocations).iter() {
            // SAFETY: every key is a live allocation from `allocate`, freed once here.
            unsafe { sys::deallocate(ptr) };
        }
    }
}

fn unknown_event(event: EventHandle, device: i32) -> PluginError {
    PluginError::invalid_argument(format!(
        "no event with handle {} on host device {device}",
        event.0
    ))
}

fn unknown_image(image: ImageHandle) -> PluginError {
    PluginError::invalid_argument(format!(
        "image handle {} is not loaded on this device",
        image.0
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bogus_queue_and_event_handles_are_refused() {
        let device = HostDevice::new(0, 1);
        let queue = device.create_queue().unwrap();
        let event = device.create_event().unwrap();
        let bogus_queue = QueueHandle(u64::MAX - 7);
        let bogus_event = EventHandle(u64::MAX - 7);
        let (mut word, source) = (0u64, 42u64);
        let (dst, src) = (
            &mut word as *mut u64 as usize,
            &source as *const u64 as usize,
        );
        assert!(device.synchronize(bogus_queue).is_err());
        assert!(device.query_queue(bogus_queue).is_err());
        // SAFETY: two live words of this stack; the host device copies at once.
        assert!(unsafe { device.copy_to_device(dst, src, 8, bogus_queue) }.is_err());
        assert_eq!(word, 0, "no copy on a bogus queue");
        assert!(device.record_event(event, bogus_queue).is_err());
        assert!(device.wait_event(event, bogus_queue).is_err());
        assert!(device.release_queue(bogus_queue).is_err());
        assert!(device.release_queue(QueueHandle::SYNC).is_err());
        for call in [
            device.record_event(bogus_event, queue),
            device.wait_event(bogus_event, QueueHandle::SYNC),
            device.sync_event(bogus_event),
            device.destroy_event(bogus_event),
        ] {
            let e = call.unwrap_err();
            assert_eq!(e.code, ErrorCode::INVALID_ARGUMENT);
            assert!(e.message.contains("no event with handle"), "{e}");
        }
        // The real ones still work; a destroyed event is gone.
        // SAFETY: as above.
        unsafe { device.copy_to_device(dst, src, 8, queue) }.unwrap();
        assert_eq!(word, 42);
        device.record_event(event, queue).unwrap();
        device.wait_event(event, QueueHandle::SYNC).unwrap();
        device.sync_event(event).unwrap();
        device.destroy_event(event).unwrap();
        assert!(device.sync_event(event).is_err());
        assert!(device.destroy_event(event).is_err());
        device.synchronize(queue).unwrap();
        device.release_queue(queue).unwrap();
    }
}
