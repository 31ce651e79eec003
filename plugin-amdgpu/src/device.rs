//! One AMD GPU (an HSA agent): its memory pools, streams and events, loaded executables and
//! kernels, and what LLVM's device runtime expects from the host when an image is loaded and
//! a kernel launched (`AMDGPUDeviceTy` and `AMDGPUKernelTy` in LLVM).

use crate::code_object::{self, CodeObject, KernelMetadata, TargetId};
use crate::handles::HandleTable;
use crate::hsa::{AgentInfo, Executable, HsaRuntime};
use crate::hsa_interface::{Agent, HsaError, HsaInterface, KernelDispatch, MemoryPool};
use crate::hsa_real::RealHsa;
use crate::kernarg_pool::{KernargBuffer, KernargPool};
use crate::kernel_args::{self, LaunchShape};
use crate::settings::AmdgpuSettings;
use crate::stream::{Event, Stream, StreamConfig, StreamManager};
use plugin_api::gpu::KERNEL_ENVIRONMENT_SIZE;
use plugin_api::gpu::{DeviceEnvironment, KernelLaunchEnvironment, NO_LAUNCH_ENVIRONMENT};
use plugin_api::gpu::{GridValues, KernelEnvironment, KernelLimits, Settings};
use plugin_api::{AllocKind, ErrorCode, GlobalInfo, InfoEntry, LaunchConfig, PluginError};
use plugin_api::{EventHandle, ImageHandle, KernelHandle, MemoryInfo, QueueHandle};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

type Result<T> = std::result::Result<T, PluginError>;

/// Turns an HSA failure into a plugin error that says what was being done.
pub fn failed(what: impl std::fmt::Display, e: HsaError) -> PluginError {
    let code = match e.status {
        HsaError::STATUS_OUT_OF_RESOURCES => ErrorCode::OUT_OF_MEMORY,
        HsaError::STATUS_INVALID_ARGUMENT => ErrorCode::INVALID_ARGUMENT,
        _ => ErrorCode::FAILED,
    };
    PluginError::new(code, format!("{what}: {e}"))
}

/// LLVM's default device stack: 16 KiB per work-item for kernels with a dynamic call stack.
const DEFAULT_STACK_SIZE: u64 = 16 * 1024;
/// LLVM's default device-side malloc pool: 512 MiB.
const DEFAULT_HEAP_SIZE: u64 = 512 << 20;

/// What the host side of every GPU shares: the CPU agent and its pools.
pub struct HostMemory {
    pub agent: Agent,
    /// Fine-grained system memory: staging buffers and `llvm_omp_target_alloc_host`.
    pub fine_pool: MemoryPool,
    /// Kernel argument buffers.
    pub kernargs: KernargPool<RealHsa>,
    /// Every GPU agent, given access to host allocations.
    pub gpu_agents: Vec<Agent>,
}

struct LoadedImage {
    executable: Mutex<Option<Executable>>,
    code: CodeObject,
}

struct Kernel {
    name: String,
    kernel_object: u64,
    metadata: KernelMetadata,
    group_segment_size: u32,
    private_segment_size: u32,
    limits: KernelLimits,
}

pub struct AmdgpuDevice {
    hsa: Arc<RealHsa>,
    runtime: Arc<HsaRuntime>,
    ordinal: i32,
    pub agent: AgentInfo,
    pub targets: Vec<TargetId>,
    host: Arc<HostMemory>,
    device_pool: MemoryPool,
    grid: GridValues,
    hardware_parallelism: u64,
    plugin_devices: u32,
    settings: Settings,
    streams: StreamManager<RealHsa>,
    /// Streams not bound to a queue handle, reused by synchronous operations and new queues.
    idle_streams: Mutex<Vec<Stream<RealHsa>>>,
    queues: HandleTable<Stream<RealHsa>>,
    events: HandleTable<Event<RealHsa>>,
    images: HandleTable<LoadedImage>,
    kernels: HandleTable<Kernel>,
    /// Host ranges the user pinned: start -> (device-visible address, bytes).
    pinned: Mutex<HashMap<usize, (usize, u64)>>,
    /// The device-side malloc pool (address, bytes), shared by the device's images.
    malloc_pool: Mutex<Option<(usize, u64)>>,
}

impl AmdgpuDevice {
    /// Sets up the device's pools, streams and limits (LLVM's `AMDGPUDeviceTy::initImpl`).
    #[allow(clippy::too_many_arguments)]
    pub fn initialize(
        runtime: Arc<HsaRuntime>,
        hsa: Arc<RealHsa>,
        ordinal: i32,
        agent: AgentInfo,
        host: Arc<HostMemory>,
        plugin_devices: u32,
        settings: Settings,
        amd: &AmdgpuSettings,
    ) -> Result<AmdgpuDevice> {
        let device_pool = agent
            .pools
            .iter()
            .find(|p| p.is_global() && p.coarse_grained && p.alloc_allowed)
            .map(|p| p.pool)
            .ok_or_else(|| {
                PluginError::failed(format!(
                    "amdgpu device {ordinal} ({}) has no coarse-grained memory pool to allocate from",
                    agent.name
                ))
            })?;
        let base = if agent.wavefront_size == 32 {
            GridValues::AMDGPU_WAVE32
        } else {
            GridValues::AMDGPU_WAVE64
        };
        let max_threads = (agent.workgroup_max_dim[0] as u32).max(1);
        let grid = GridValues {
            max_threads,
            max_teams: (agent.grid_max_dim[0] / max_threads).max(1),
            default_teams: (agent.compute_units * amd.teams_per_cu).max(1),
            min_threads_for_low_trip_count: settings.min_threads_for_low_trip_count,
            reuse_blocks_for_high_trip_count: settings.reuse_blocks_for_high_trip_count,
            ..base
        }
        .limited_by(settings.num_teams, settings.teams_thread_limit);
        let (num_queues, queue_size) = amd.queues_for(agent.queues_max, agent.queue_max_size);
        let streams = StreamManager::new(
            hsa.clone(),
            StreamConfig {
                agent: agent.agent,
                host_agent: host.agent,
                staging_pool: host.fine_pool,
                num_queues,
                queue_size,
                max_async_copy_bytes: amd.max_async_copy_bytes as usize,
                initial_signals: amd.initial_signals,
            },
        )
        .map_err(|e| failed("creating the device's streams", e))?;
        let targets = agent
            .isa_names
            .iter()
            .filter_map(|isa| TargetId::parse(isa))
            .collect();
        log::debug!(
            "amdgpu device {ordinal}: {} ({}), up to {} teams of {} threads, {num_queues} queues of {queue_size} packets",
            agent.name,
            agent.product_name,
            grid.max_teams,
            grid.max_threads
        );
        Ok(AmdgpuDevice {
            hardware_parallelism: agent.compute_units as u64 * agent.max_waves_per_cu.max(1) as u64,
            hsa,
            runtime,
            ordinal,
            agent,
            targets,
            host,
            device_pool,
            grid,
            plugin_devices,
            settings,
            streams,
            idle_streams: Mutex::new(Vec::new()),
            queues: HandleTable::new(),
            events: HandleTable::new(),
            images: HandleTable::new(),
            kernels: HandleTable::new(),
            pinned: Mutex::new(HashMap::new()),
            malloc_pool: Mutex::new(None),
        })
    }

    // ---- streams ----

    fn take_stream(&self) -> Result<Stream<RealHsa>> {
        let idle = self
            .idle_streams
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop();
        match idle {
            Some(s) => Ok(s),
            None => self
                .streams
                .create_stream()
                .map_err(|e| failed("creating a stream", e)),
        }
    }

    fn give_back_stream(&self, stream: Stream<RealHsa>) {
        self.idle_streams
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(stream);
    }

    /// Runs `op` on the queue's stream, or, for `QueueHandle::SYNC`, on an idle stream that is
    /// synchronised before returning.
    fn on_queue(
        &self,
        queue: QueueHandle,
        op: impl FnOnce(&Stream<RealHsa>) -> std::result::Result<(), HsaError>,
        what: &dyn Fn() -> String,
    ) -> Result<()> {
        if queue != QueueHandle::SYNC {
            let stream = self
                .queues
                .get(queue.0)
                .ok_or_else(|| invalid_handle("queue", queue.0))?;
            return op(&stream).map_err(|e| failed(what(), e));
        }
        let stream = self.take_stream()?;
        let result = op(&stream).map_err(|e| failed(what(), e));
        // Wait even after a failed push: it may have queued earlier work.
        let synced = stream
            .synchronize()
            .map_err(|e| failed(format!("{} (waiting for the device)", what()), e));
        self.give_back_stream(stream);
        result.and(synced)
    }

    pub fn create_queue(&self) -> Result<QueueHandle> {
        let stream = self.take_stream()?;
        Ok(QueueHandle(self.queues.insert(stream)))
    }

    pub fn release_queue(&self, queue: QueueHandle) -> Result<()> {
        let stream = self
            .queues
            .remove(queue.0)
            .ok_or_else(|| invalid_handle("queue", queue.0))?;
        // The core synchronised the queue; a stream still shared elsewhere is simply dropped.
        if let Ok(stream) = Arc::try_unwrap(stream) {
            self.give_back_stream(stream);
        }
        Ok(())
    }

    pub fn synchronize(&self, queue: QueueHandle) -> Result<()> {
        if queue == QueueHandle::SYNC {
            return Ok(());
        }
        let stream = self
            .queues
            .get(queue.0)
            .ok_or_else(|| invalid_handle("queue", queue.0))?;
        stream
            .synchronize()
            .map_err(|e| failed("waiting for the device", e))
    }

    pub fn query(&self, queue: QueueHandle) -> Result<bool> {
        if queue == QueueHandle::SYNC {
            return Ok(true);
        }
        let stream = self
            .queues
            .get(queue.0)
            .ok_or_else(|| invalid_handle("queue", queue.0))?;
        stream.query().map_err(|e| failed("querying the device", e))
    }

    // ---- events ----

    pub fn create_event(&self) -> Result<EventHandle> {
        Ok(EventHandle(self.events.insert(self.streams.create_event())))
    }

    fn event(&self, event: EventHandle) -> Result<Arc<Event<RealHsa>>> {
        self.events
            .get(event.0)
            .ok_or_else(|| invalid_handle("event", event.0))
    }

    pub fn record_event(&self, event: EventHandle, queue: QueueHandle) -> Result<()> {
        let event = self.event(event)?;
        if queue == QueueHandle::SYNC {
            // Synchronous work has completed already: nothing to record.
            return Ok(());
        }
        self.on_queue(queue, |s| s.record(&event), &|| "recording an event".into())
    }

    pub fn wait_event(&self, event: EventHandle, queue: QueueHandle) -> Result<()> {
        let event = self.event(event)?;
        if queue == QueueHandle::SYNC {
            return event
                .synchronize()
                .map_err(|e| failed("waiting for an event", e));
        }
        self.on_queue(queue, |s| s.wait_for(&event), &|| {
            "waiting for an event".into()
        })
    }

    pub fn sync_event(&self, event: EventHandle) -> Result<()> {
        self.event(event)?
            .synchronize()
            .map_err(|e| failed("waiting for an event", e))
    }

    pub fn destroy_event(&self, event: EventHandle) -> Result<()> {
        self.events
            .remove(event.0)
            .map(drop)
            .ok_or_else(|| invalid_handle("event", event.0))
    }

    // ---- memory ----

    pub fn alloc(&self, size: u64, kind: AllocKind) -> Result<usize> {
        let size = usize::try_from(size.max(1))
            .map_err(|_| PluginError::new(ErrorCode::OUT_OF_MEMORY, "allocation too large"))?;
        let what = || format!("allocating {size} bytes of {} memory", kind.name());
        match kind {
            AllocKind::DEFAULT | AllocKind::DEVICE | AllocKind::DEVICE_NON_BLOCKING => self
                .hsa
                .allocate(self.device_pool, size)
                .map_err(|e| failed(what(), e)),
            // Fine-grained host memory the GPUs may access (LLVM uses it for shared memory
            // too: without XNACK there is no migration).
            AllocKind::HOST | AllocKind::SHARED => {
                let ptr = self
                    .hsa
                    .allocate(self.host.fine_pool, size)
                    .map_err(|e| failed(what(), e))?;
                if let Err(e) = self.hsa.allow_access(&self.host.gpu_agents, ptr) {
                    let _ = self.hsa.free(ptr);
                    return Err(failed(what(), e));
                }
                Ok(ptr)
            }
            _ => Err(PluginError::invalid_argument(format!(
                "unknown allocation kind {}",
                kind.0
            ))),
        }
    }

    pub fn free(&self, ptr: usize, kind: AllocKind) -> Result<()> {
        self.hsa
            .free(ptr)
            .map_err(|e| failed(format!("freeing {} memory at {ptr:#x}", kind.name()), e))
    }

    pub fn pin(&self, host: usize, size: u64) -> Result<usize> {
        let device = self
            .hsa
            .lock_host_memory(host, size as usize, &self.host.gpu_agents)
            .map_err(|e| failed(format!("page-locking {size} bytes at {host:#x}"), e))?;
        self.pinned
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(host, (device, size));
        Ok(device)
    }

    pub fn unpin(&self, host: usize) -> Result<()> {
        let entry = self
            .pinned
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&host);
        if entry.is_none() {
            return Err(PluginError::invalid_argument(format!(
                "host memory at {host:#x} was not pinned"
            )));
        }
        self.hsa
            .unlock_host_memory(host)
            .map_err(|e| failed(format!("unlocking host memory at {host:#x}"), e))
    }

    /// The device-visible address of pinned host memory covering `[host, host + size)`.
    fn pinned_address(&self, host: usize, size: u64) -> Option<usize> {
        let pinned = self.pinned.lock().unwrap_or_else(|e| e.into_inner());
        if pinned.is_empty() {
            return None;
        }
        pinned.iter().find_map(|(&start, &(device, bytes))| {
            let end = start as u64 + bytes;
            (host >= start && host as u64 + size <= end).then(|| device + (host - start))
        })
    }

    pub fn memory_info(&self) -> Result<MemoryInfo> {
        let memory = self
            .runtime
            .memory_info(self.agent.agent)
            .map_err(|e| failed("asking for free memory", e))?;
        Ok(MemoryInfo {
            free: memory.free_or_total(),
            total: memory.total,
        })
    }

    pub fn copy_to_device(
        &self,
        dst: usize,
        src: usize,
        size: u64,
        queue: QueueHandle,
    ) -> Result<()> {
        let pinned = self.pinned_address(src, size);
        self.on_queue(
            queue,
            |s| s.push_host_to_device(dst, src, size as usize, pinned),
            &|| format!("copying {size} bytes from host {src:#x} to device {dst:#x}"),
        )
    }

    pub fn copy_from_device(
        &self,
        dst: usize,
        src: usize,
        size: u64,
        queue: QueueHandle,
    ) -> Result<()> {
        let pinned = self.pinned_address(dst, size);
        self.on_queue(
            queue,
            |s| s.push_device_to_host(dst, src, size as usize, pinned),
            &|| format!("copying {size} bytes from device {src:#x} to host {dst:#x}"),
        )
    }

    /// Copies from this device to `dst_agent`'s memory (possibly this device's) on `queue`.
    pub fn copy_to_agent(
        &self,
        src: usize,
        dst: usize,
        dst_agent: Agent,
        size: u64,
        queue: QueueHandle,
    ) -> Result<()> {
        self.on_queue(
            queue,
            |s| s.push_device_to_device(dst, dst_agent, src, self.agent.agent, size as usize),
            &|| format!("copying {size} bytes from device {src:#x} to device {dst:#x}"),
        )
    }

    // ---- images ----

    pub fn load_image(&self, bytes: &[u8]) -> Result<ImageHandle> {
        let code = CodeObject::parse(bytes).map_err(PluginError::invalid_argument)?;
        code_object::check_compatibility(code.target(), &self.targets)
            .map_err(PluginError::unsupported)?;
        let executable = self
            .runtime
            .load_executable(self.agent.agent, code.bytes())
            .map_err(|e| failed("loading the code object", e))?;
        let image = LoadedImage {
            executable: Mutex::new(Some(executable)),
            code,
        };
        let setup = || -> Result<()> {
            self.write_device_environment(&image)?;
            self.provide_malloc_pool(&image)?;
            self.run_init_kernel(&image, "amdgcn.device.init")
        };
        if let Err(e) = setup() {
            if let Some(executable) = image
                .executable
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take()
            {
                let _ = executable.destroy();
            }
            return Err(e);
        }
        Ok(ImageHandle(self.images.insert(image)))
    }

    pub fn unload_image(&self, handle: ImageHandle) -> Result<()> {
        let image = self
            .images
            .remove(handle.0)
            .ok_or_else(|| invalid_handle("image", handle.0))?;
        let destructors = self.run_init_kernel(&image, "amdgcn.device.fini");
        let executable = image
            .executable
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        let destroyed = match executable {
            Some(e) => e
                .destroy()
                .map_err(|e| failed("destroying the executable", e)),
            None => Ok(()),
        };
        destructors.and(destroyed)
    }

    fn image(&self, handle: ImageHandle) -> Result<Arc<LoadedImage>> {
        self.images
            .get(handle.0)
            .ok_or_else(|| invalid_handle("image", handle.0))
    }

    /// The device address and size of a global of `image`.
    fn variable(&self, image: &LoadedImage, name: &str) -> Result<(usize, u64)> {
        let executable = image.executable.lock().unwrap_or_else(|e| e.into_inner());
        let executable = executable
            .as_ref()
            .ok_or_else(|| PluginError::invalid_argument("the image was unloaded"))?;
        executable
            .variable(self.agent.agent, name)
            .map_err(|e| failed(format!("finding global '{name}'"), e))
    }

    /// Copies `bytes` into the global `name` if the image has it; false if it does not.
    fn write_global(&self, image: &LoadedImage, name: &str, bytes: &[u8]) -> Result<bool> {
        if image.code.symbol(name).is_none() {
            return Ok(false);
        }
        let (address, size) = self.variable(image, name)?;
        let n = bytes.len().min(size as usize);
        self.copy_to_device(
            address,
            bytes.as_ptr() as usize,
            n as u64,
            QueueHandle::SYNC,
        )?;
        Ok(true)
    }

    fn write_device_environment(&self, image: &LoadedImage) -> Result<()> {
        let env = DeviceEnvironment {
            debug_kind: self.settings.device_debug_kind,
            num_devices: self.plugin_devices,
            device_num: self.ordinal as u32,
            dynamic_mem_size: self.settings.shared_memory_size,
            clock_frequency: self.agent.timestamp_frequency,
            indirect_call_table: 0,
            indirect_call_table_size: 0,
            hardware_parallelism: self.hardware_parallelism,
        };
        if !self.write_global(image, "__omp_rtl_device_environment", &env.to_bytes())? {
            log::debug!("image has no __omp_rtl_device_environment; not an OpenMP image?");
        }
        Ok(())
    }

    /// Gives the image's device-side malloc its pool (`LIBOMPTARGET_HEAP_SIZE`, 512 MiB by
    /// default, as LLVM's AMDGPU plugin). One pool per device, shared by its images.
    fn provide_malloc_pool(&self, image: &LoadedImage) -> Result<()> {
        if image.code.symbol("__omp_rtl_device_memory_pool").is_none() {
            return Ok(());
        }
        let (ptr, size) = {
            let mut slot = self.malloc_pool.lock().unwrap_or_else(|e| e.into_inner());
            match *slot {
                Some(pool) => pool,
                None => {
                    let size = self.settings.heap_size.unwrap_or(DEFAULT_HEAP_SIZE);
                    let pool = match self.alloc(size, AllocKind::DEVICE) {
                        Ok(p) => (p, size),
                        Err(e) => {
                            log::warn!("no device memory pool for device-side malloc: {e}");
                            (0, 0)
                        }
                    };
                    *slot = Some(pool);
                    pool
                }
            }
        };
        // {allocations, bytes, smallest, largest}
        let mut tracker = Vec::with_capacity(32);
        for v in [0u64, 0, u64::MAX, 0] {
            tracker.extend_from_slice(&v.to_le_bytes());
        }
        self.write_global(image, "__omp_rtl_device_memory_pool_tracker", &tracker)?;
        let mut pool = Vec::with_capacity(16);
        pool.extend_from_slice(&(ptr as u64).to_le_bytes());
        pool.extend_from_slice(&size.to_le_bytes());
        self.write_global(image, "__omp_rtl_device_memory_pool", &pool)?;
        Ok(())
    }

    /// Runs the constructor (`amdgcn.device.init`) or destructor (`amdgcn.device.fini`) kernel
    /// the compiler made for the image's globals, if it has one, on one thread.
    fn run_init_kernel(&self, image: &LoadedImage, name: &str) -> Result<()> {
        if image.code.kernel(name).is_none() {
            return Ok(());
        }
        let kernel = self.make_kernel(image, name)?;
        let config = LaunchConfig {
            num_teams: [1, 1, 1],
            thread_limit: [1, 1, 1],
            ..Default::default()
        };
        self.launch_kernel(&kernel, &[], 1, 1, &config, QueueHandle::SYNC)
    }

    // ---- kernels and globals ----

    pub fn get_kernel(&self, handle: ImageHandle, name: &str) -> Result<KernelHandle> {
        let image = self.image(handle)?;
        let kernel = self.make_kernel(&image, name)?;
        Ok(KernelHandle(self.kernels.insert(kernel)))
    }

    fn make_kernel(&self, image: &LoadedImage, name: &str) -> Result<Kernel> {
        let metadata = image.code.kernel(name).cloned().ok_or_else(|| {
            PluginError::new(
                ErrorCode::NOT_FOUND,
                format!("the image has no kernel '{name}'"),
            )
        })?;
        let symbol = {
            let executable = image.executable.lock().unwrap_or_else(|e| e.into_inner());
            let executable = executable
                .as_ref()
                .ok_or_else(|| PluginError::invalid_argument("the image was unloaded"))?;
            executable
                .kernel(self.agent.agent, &format!("{name}.kd"))
                .map_err(|e| failed(format!("finding kernel '{name}'"), e))?
        };
        let environment = Self::kernel_environment(image, name);
        if environment.is_none() {
            log::debug!("kernel '{name}' has no kernel environment: launching it as a bare kernel");
        }
        Ok(Kernel {
            name: name.to_owned(),
            kernel_object: symbol.kernel_object,
            group_segment_size: symbol.group_segment_size,
            private_segment_size: symbol.private_segment_size,
            limits: KernelLimits::new(
                environment,
                &self.grid,
                metadata.max_flat_workgroup_size.max(1),
            ),
            metadata,
        })
    }

    /// The kernel's `<name>_kernel_environment`: its initial bytes in the code object, as LLVM
    /// reads them (the launch-relevant part holds no relocated addresses).
    fn kernel_environment(image: &LoadedImage, kernel: &str) -> Option<KernelEnvironment> {
        let bytes = image
            .code
            .symbol_bytes(&format!("{kernel}_kernel_environment"))?;
        KernelEnvironment::parse(&bytes[..bytes.len().min(KERNEL_ENVIRONMENT_SIZE)])
    }

    pub fn get_global(&self, handle: ImageHandle, name: &str, size: u64) -> Result<GlobalInfo> {
        let image = self.image(handle)?;
        if image.code.symbol(name).is_none() {
            return Err(PluginError::new(
                ErrorCode::NOT_FOUND,
                format!("the image has no global '{name}'"),
            ));
        }
        let (address, actual) = self.variable(&image, name)?;
        if size != 0 && actual != size {
            return Err(PluginError::invalid_argument(format!(
                "global '{name}' has {actual} bytes on the device and {size} on the host"
            )));
        }
        Ok(GlobalInfo {
            address,
            size: actual,
        })
    }

    // ---- launch ----

    pub fn launch(
        &self,
        handle: KernelHandle,
        args: &[usize],
        config: &LaunchConfig,
        queue: QueueHandle,
    ) -> Result<()> {
        let kernel = self
            .kernels
            .get(handle.0)
            .ok_or_else(|| invalid_handle("kernel", handle.0))?;
        let (blocks, threads) = kernel.limits.geometry(&self.grid, config);
        if plugin_api::info::enabled(plugin_api::info::PLUGIN_KERNEL) {
            let mode = kernel
                .limits
                .environment
                .map_or("SPMD", |e| e.exec_mode.name());
            plugin_api::info::line(
                self.ordinal,
                &format!(
                    "Launching kernel {} with {blocks} blocks and {threads} threads in {mode} mode",
                    kernel.name
                ),
            );
        }
        self.launch_kernel(&kernel, args, blocks, threads, config, queue)
    }

    fn launch_kernel(
        &self,
        kernel: &Kernel,
        args: &[usize],
        blocks: u32,
        threads: u32,
        config: &LaunchConfig,
        queue: QueueHandle,
    ) -> Result<()> {
        let grid_x = blocks.checked_mul(threads).ok_or_else(|| {
            PluginError::invalid_argument(format!(
                "{blocks} teams of {threads} threads exceed the device's grid"
            ))
        })?;
        let dynamic_lds = config.dyn_shared_mem.max(self.settings.shared_memory_size);
        let private = if kernel.metadata.uses_dynamic_stack {
            self.settings.stack_size.unwrap_or(DEFAULT_STACK_SIZE) as u32
        } else {
            kernel.private_segment_size
        };
        let what = || format!("launching '{}'", kernel.name);
        self.on_queue(
            queue,
            |stream| {
                let shape = LaunchShape {
                    blocks,
                    threads,
                    dynamic_lds,
                };
                let build = |values: &[usize]| {
                    kernel_args::build(&kernel.metadata, values, shape)
                        .map_err(|m| HsaError::new(HsaError::STATUS_INVALID_ARGUMENT, m))
                };
                let mut values = Vec::with_capacity(args.len() + 1);
                if config.kernel_args_version >= 3 {
                    values.push(NO_LAUNCH_ENVIRONMENT);
                }
                values.extend_from_slice(args);
                // Check the arguments against the kernel before anything is allocated or queued.
                let mut segment = build(&values)?;
                let mut launch_memory = Vec::new();
                let prepared = (|| {
                    if config.kernel_args_version >= 3 {
                        let env =
                            self.launch_environment(&kernel.limits, stream, &mut launch_memory)?;
                        if env != NO_LAUNCH_ENVIRONMENT {
                            values[0] = env;
                            segment = build(&values)?;
                        }
                    }
                    self.host.kernargs.take(&segment)
                })();
                let buffer = match prepared {
                    Ok(buffer) => buffer,
                    Err(e) => {
                        self.discard_launch_memory(stream, launch_memory);
                        return Err(e);
                    }
                };
                let dispatch = KernelDispatch {
                    kernel_object: kernel.kernel_object,
                    kernarg_address: buffer.address,
                    workgroup_size: [threads as u16, 1, 1],
                    grid_size: [grid_x, 1, 1],
                    group_segment_size: kernel.group_segment_size + dynamic_lds,
                    private_segment_size: private,
                };
                // The stream runs `release` when the kernel completed, or at once if it could
                // not be queued.
                let release = self.after_kernel(buffer, launch_memory);
                stream.push_kernel(&dispatch, Some(release))
            },
            &what,
        )
    }

    /// Frees the launch memory of a launch that failed before its kernel was queued. A copy
    /// of the launch environment may have been queued: wait for it before freeing what it
    /// touches.
    fn discard_launch_memory(&self, stream: &Stream<RealHsa>, memory: Vec<LaunchMemory>) {
        if memory.iter().any(|m| matches!(m, LaunchMemory::Host(_))) {
            let _ = stream.synchronize();
        }
        for m in memory {
            if let LaunchMemory::Device(ptr) = m {
                let _ = self.hsa.free(ptr);
            }
        }
    }

    /// What to release once a kernel completed: its argument buffer and launch memory.
    fn after_kernel(
        &self,
        buffer: KernargBuffer,
        launch_memory: Vec<LaunchMemory>,
    ) -> Box<dyn FnOnce() + Send> {
        let host = self.host.clone();
        let hsa = self.hsa.clone();
        Box::new(move || {
            host.kernargs.give_back(buffer);
            for memory in launch_memory {
                if let LaunchMemory::Device(ptr) = memory {
                    if let Err(e) = hsa.free(ptr) {
                        log::warn!("amdgpu: freeing launch memory: {e}");
                    }
                }
            }
        })
    }

    /// The implicit first kernel argument: a launch environment with a team-reduction buffer
    /// for kernels that need one, freed once the kernel completed.
    fn launch_environment(
        &self,
        limits: &KernelLimits,
        stream: &Stream<RealHsa>,
        memory: &mut Vec<LaunchMemory>,
    ) -> std::result::Result<usize, HsaError> {
        let bytes = limits.environment.map_or(0, |e| e.reduction_buffer_bytes());
        if bytes == 0 {
            return Ok(NO_LAUNCH_ENVIRONMENT);
        }
        let buffer = self.hsa.allocate(self.device_pool, bytes as usize)?;
        memory.push(LaunchMemory::Device(buffer));
        let device_env = self
            .hsa
            .allocate(self.device_pool, KernelLaunchEnvironment::SIZE)?;
        memory.push(LaunchMemory::Device(device_env));
        // The host copy must live until the stream has read it, which is before the kernel
        // completes: the kernel's release drops it.
        let host = Box::new(
            KernelLaunchEnvironment {
                reduction_count: 0,
                reduction_iteration_count: 0,
                reduction_buffer: buffer as u64,
            }
            .to_bytes(),
        );
        let (source, size) = (host.as_ptr() as usize, host.len());
        // Kept before the push: a failed push may have queued part of the copy.
        memory.push(LaunchMemory::Host(host));
        stream.push_host_to_device(device_env, source, size, None)?;
        Ok(device_env)
    }

    // ---- description ----

    pub fn info(&self) -> Vec<InfoEntry> {
        let mut info = vec![
            InfoEntry::new("max teams", self.grid.max_teams),
            InfoEntry::new("max threads per team", self.grid.max_threads),
            InfoEntry::new("default teams", self.grid.default_teams),
            InfoEntry::new("hardware parallelism", self.hardware_parallelism),
        ];
        if let Ok(m) = self.memory_info() {
            info.push(InfoEntry::new("free memory bytes", m.free));
        }
        info
    }

    /// Releases the device's streams, events, executables and memory (no call follows).
    pub fn deinit(&self) -> Result<()> {
        self.queues.drain();
        self.events.drain();
        self.idle_streams
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
        let mut result = Ok(());
        for image in self.images.drain() {
            let executable = image
                .executable
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take();
            if let Some(e) = executable {
                if let Err(e) = e.destroy() {
                    result = Err(failed("destroying an executable", e));
                }
            }
        }
        if let Some((ptr, _)) = self
            .malloc_pool
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        {
            if ptr != 0 {
                let _ = self.hsa.free(ptr);
            }
        }
        if let Err(e) = self.streams.shutdown() {
            result = Err(failed("shutting down the device's streams", e));
        }
        result
    }
}

/// Memory a launch allocated for the kernel, released when it completed.
enum LaunchMemory {
    Device(usize),
    /// Host bytes an asynchronous copy reads; dropped, never read, afterwards.
    Host(#[allow(dead_code)] Box<[u8; KernelLaunchEnvironment::SIZE]>),
}

fn invalid_handle(what: &str, value: u64) -> PluginError {
    PluginError::invalid_argument(format!("no {what} with handle {value} on this device"))
}
