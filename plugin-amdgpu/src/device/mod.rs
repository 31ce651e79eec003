//! One AMD GPU (an HSA agent): its memory pools, streams and events, memory and copies
//! (`AMDGPUDeviceTy` in LLVM). Images and kernels are in `images`, launches in `launch`.

mod fill;
mod images;
mod launch;

use crate::code_object::{KernelMetadata, TargetId};
use crate::hsa::pools::PoolSegment;
use crate::hsa::{memory_fault, AgentInfo, HsaRuntime};
use crate::hsa_interface::{Agent, HsaError, HsaInterface, MemoryPool};
use crate::hsa_real::RealHsa;
use crate::kernarg_pool::KernargPool;
use crate::settings::AmdgpuSettings;
use crate::stream::{Event, Stream, StreamConfig, StreamManager, StreamPolicy};
use gpu_plugin::allocation_traces::AllocationTraces;
use gpu_plugin::images::Images;
use gpu_plugin::launch_buffers::LaunchBufferPool;
use gpu_plugin::launch_traces::LaunchTraces;
use gpu_plugin::pinning::PinTable;
use gpu_plugin::rpc::device_rpc::DeviceRpc;
use gpu_plugin::zero_copy::{self, HostMemoryReach, ZeroCopyChoice, ZeroCopySettings};
use gpu_plugin::HandleTable;
use gpu_plugin::{GridValues, KernelLimits, Settings};
use plugin_api::WorkTime;
use plugin_api::{AllocKind, Device, DeviceTraits, ErrorCode, InfoEntry, PluginError};
use plugin_api::{EventHandle, ForeignRuntime, InteropInfo, MemoryInfo, QueueHandle, Vendor};
use plugin_api::{GlobalInfo, ImageHandle, ImageRef, IndirectCall, KernelHandle, LaunchConfig};
use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex, RwLock};
use sync_util::{lock, read, write};

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

/// The LDS of a work-group on every GCN and CDNA GPU, for a runtime that lists no group
/// segment pool.
const DEFAULT_GROUP_MEMORY: u32 = 64 * 1024;
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
    /// Host memory allocated for the program (`llvm_omp_target_alloc_host`/`_shared`):
    /// start -> bytes. Every GPU reaches it, so copies to and from it need no staging and no
    /// lock (locking memory HSA allocated is refused).
    pub allocations: Mutex<BTreeMap<usize, usize>>,
}

struct Kernel {
    /// Shared with the launch traces, which keep it past the kernel's unloading.
    name: Arc<str>,
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
    /// Bytes of group memory (LDS) a work-group may have: the group segment pool's size.
    group_memory: u32,
    grid: GridValues,
    hardware_parallelism: u64,
    plugin_devices: u32,
    settings: Settings,
    streams: StreamManager<RealHsa>,
    /// Streams not bound to a queue handle, reused by synchronous operations and new queues.
    idle_streams: Mutex<Vec<Stream<RealHsa>>>,
    /// Queues whose HSA queue an OpenMP interop object handed to the program: waiting for them
    /// must also wait for the packets the program submitted there.
    interop_queues: Mutex<HashSet<u64>>,
    queues: HandleTable<Arc<Stream<RealHsa>>>,
    events: HandleTable<Arc<Event<RealHsa>>>,
    images: Images<images::AmdgpuModule>,
    kernels: HandleTable<Arc<Kernel>>,
    /// Host ranges the user pinned, with their pins (read by every copy, changed by pins).
    pinned: RwLock<PinTable>,
    /// Launch environments with team-reduction buffers, reused across launches.
    launch_buffers: Arc<LaunchBufferPool>,
    /// The kernels launched last, for the report of a kernel that faults (shared with the
    /// memory-fault handler).
    launches: Arc<LaunchTraces>,
    /// Where the device's memory came from, when tracked, for reports of bad frees and of
    /// memory faults (shared with the memory-fault handler).
    allocations: Arc<AllocationTraces>,
    /// The device's mailbox for its kernels' calls to the host.
    rpc: DeviceRpc,
    /// Whether maps use host memory in place, and why (decided when the device starts).
    zero_copy: ZeroCopyChoice,
}

/// Whether `agent`'s maps use host memory in place, and why: as LLVM, on an APU with XNACK
/// (see `gpu_plugin::zero_copy`).
pub fn zero_copy_choice(agent: &AgentInfo, runtime: &HsaRuntime) -> ZeroCopyChoice {
    let reach = HostMemoryReach {
        pageable: agent.xnack_enabled(),
        shared_physical_memory: agent.is_apu(),
        prefault: runtime.svm_supported(),
    };
    zero_copy::choose(reach, ZeroCopySettings::from_env())
}

impl AmdgpuDevice {
    /// `size` bytes of `kind` from the agent's pools.
    fn allocate(&self, size: u64, kind: AllocKind) -> Result<usize> {
        let size = usize::try_from(size.max(1))
            .map_err(|_| PluginError::new(ErrorCode::OUT_OF_MEMORY, "allocation too large"))?;
        let what = || format!("allocating {size} bytes of {} memory", kind.name());
        match kind {
            AllocKind::DEFAULT | AllocKind::DEVICE | AllocKind::DEVICE_NON_BLOCKING => {
                let ptr = self
                    .hsa
                    .allocate(self.device_pool, size)
                    .map_err(|e| failed(what(), e))?;
                // Device memory is reachable by default only from its own GPU; the others
                // need it for device-to-device copies (a copy engine of either side may run
                // them) and for kernels given another device's pointer, as LLVM grants too.
                if self.host.gpu_agents.len() > 1 {
                    if let Err(e) = self.hsa.allow_access(&self.host.gpu_agents, ptr) {
                        let _ = self.hsa.free(ptr);
                        return Err(failed(what(), e));
                    }
                }
                Ok(ptr)
            }
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
                lock(&self.host.allocations).insert(ptr, size);
                Ok(ptr)
            }
            _ => Err(PluginError::invalid_argument(format!(
                "unknown allocation kind {}",
                kind.0
            ))),
        }
    }

    /// Gives `ptr`, allocated as `kind`, back to its pool.
    fn release(&self, ptr: usize, kind: AllocKind) -> Result<()> {
        if matches!(kind, AllocKind::HOST | AllocKind::SHARED) {
            lock(&self.host.allocations).remove(&ptr);
        }
        self.hsa
            .free(ptr)
            .map_err(|e| failed(format!("freeing {} memory at {ptr:#x}", kind.name()), e))
    }

    /// Sets up the device's pools, streams and limits (LLVM's `AMDGPUDeviceTy::initImpl`).
    #[allow(clippy::too_many_arguments)]
    pub fn initialize(
        runtime: Arc<HsaRuntime>,
        hsa: Arc<RealHsa>,
        ordinal: i32,
        agent: AgentInfo,
        targets: Vec<TargetId>,
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
        let group_memory = agent
            .pools
            .iter()
            .find(|p| p.segment == PoolSegment::Group && p.size > 0)
            .map_or(DEFAULT_GROUP_MEMORY, |p| {
                u32::try_from(p.size).unwrap_or(u32::MAX)
            });
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
        let streams = StreamManager::with_policy(
            hsa.clone(),
            StreamConfig {
                agent: agent.agent,
                host_agent: host.agent,
                staging_pool: host.fine_pool,
                num_queues,
                queue_size,
                max_async_copy_bytes: amd.max_async_copy_bytes as usize,
                initial_signals: amd.initial_signals,
                busy_wait: std::time::Duration::from_nanos(amd.stream_busy_wait_ns.into()),
            },
            StreamPolicy::from_settings(amd),
        )
        .map_err(|e| failed("creating the device's streams", e))?;
        log::debug!(
            "amdgpu device {ordinal}: {} ({}), up to {} teams of {} threads, {num_queues} queues of {queue_size} packets",
            agent.name,
            agent.product_name,
            grid.max_teams,
            grid.max_threads
        );
        let launches = Arc::new(LaunchTraces::from_env());
        let allocations = Arc::new(AllocationTraces::from_env());
        let rpc = DeviceRpc::new(agent.wavefront_size);
        memory_fault::report_faults_with(
            agent.agent.0,
            &launches,
            &allocations,
            agent.xnack_enabled(),
        );
        let zero_copy = zero_copy_choice(&agent, &runtime);
        log::debug!("amdgpu device {ordinal}: maps: {}", zero_copy.reason);
        Ok(AmdgpuDevice {
            zero_copy,
            hardware_parallelism: agent.compute_units as u64 * agent.max_waves_per_cu.max(1) as u64,
            hsa,
            runtime,
            ordinal,
            agent,
            targets,
            host,
            device_pool,
            group_memory,
            grid,
            plugin_devices,
            settings,
            streams,
            idle_streams: Mutex::new(Vec::new()),
            interop_queues: Mutex::new(HashSet::new()),
            queues: HandleTable::new(),
            events: HandleTable::new(),
            images: Images::default(),
            kernels: HandleTable::new(),
            pinned: RwLock::default(),
            launch_buffers: Arc::default(),
            launches,
            allocations,
            rpc,
        })
    }

    /// Reports the kernel launched last on `queue` the first time a queue of the device stops
    /// for a kernel's trap or illegal instruction, as LLVM 22 does (a memory fault is reported
    /// by its own handler, which stops the program).
    fn report_kernel_fault(&self, error: &HsaError, queue: QueueHandle) {
        use hsa_sys::{HSA_STATUS_ERROR_EXCEPTION, HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION};
        if [
            HSA_STATUS_ERROR_EXCEPTION,
            HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION,
        ]
        .contains(&error.status)
        {
            self.launches.report_kernel_fault(
                "execution interrupted by hardware trap instruction",
                Some(queue.0),
            );
        }
    }

    // ---- streams ----

    fn take_stream(&self) -> Result<Stream<RealHsa>> {
        let idle = lock(&self.idle_streams).pop();
        match idle {
            Some(s) => Ok(s),
            None => self
                .streams
                .create_stream()
                .map_err(|e| failed("creating a stream", e)),
        }
    }

    fn give_back_stream(&self, stream: Stream<RealHsa>) {
        lock(&self.idle_streams).push(stream);
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

    // ---- events ----

    fn event(&self, event: EventHandle) -> Result<Arc<Event<RealHsa>>> {
        self.events
            .get(event.0)
            .ok_or_else(|| invalid_handle("event", event.0))
    }

    // ---- memory ----

    /// The device-visible address of host memory covering `[host, host + size)` that the GPU
    /// reaches as it is: pinned by the user, or allocated for the program as host memory.
    fn pinned_address(&self, host: usize, size: u64) -> Option<usize> {
        let end = (host as u64).checked_add(size)?;
        let pinned = read(&self.pinned);
        if let Some(device) = pinned.device_address(host, size) {
            return Some(device as usize);
        }
        drop(pinned);
        let allocations = lock(&self.host.allocations);
        let (&start, &bytes) = allocations.range(..=host).next_back()?;
        (end <= (start + bytes) as u64).then_some(host)
    }
}

/// The per-device calls of the plugin ABI; plugin-api has looked the device up and applied
/// the argument rules every plugin shares.
impl Device for AmdgpuDevice {
    // ---- streams ----

    fn create_queue(&self) -> Result<QueueHandle> {
        let stream = self.take_stream()?;
        // Queues time their work once the core asked for it (`start_work_timing`); synchronous
        // work (`QueueHandle::SYNC`, the plugin's own launches) never is.
        if self.streams.times_work() {
            stream.start_timing();
        }
        Ok(QueueHandle(self.queues.insert(Arc::new(stream))))
    }

    fn release_queue(&self, queue: QueueHandle) -> Result<()> {
        lock(&self.interop_queues).remove(&queue.0);
        let stream = self
            .queues
            .remove(queue.0)
            .ok_or_else(|| invalid_handle("queue", queue.0))?;
        self.rpc.finished(queue);
        // Timings not asked for go with the queue: the stream's next user starts afresh.
        stream.stop_timing();
        // The core synchronised the queue; a stream still shared elsewhere is simply dropped.
        if let Ok(stream) = Arc::try_unwrap(stream) {
            self.give_back_stream(stream);
        }
        Ok(())
    }

    fn synchronize(&self, queue: QueueHandle) -> Result<()> {
        if queue == QueueHandle::SYNC {
            return Ok(());
        }
        let stream = self
            .queues
            .get(queue.0)
            .ok_or_else(|| invalid_handle("queue", queue.0))?;
        if lock(&self.interop_queues).contains(&queue.0) {
            stream
                .fence_queue()
                .map_err(|e| failed("fencing the program's work on an interop queue", e))?;
        }
        let waiting = |e: HsaError| {
            self.report_kernel_fault(&e, queue);
            failed("waiting for the device", e)
        };
        // Spins (LLVM's busy wait) only at the start of the wait, not at each slice's.
        let mut spin = true;
        let served = self.rpc.wait_for(queue, |slice| {
            stream.wait_within(slice, std::mem::take(&mut spin))
        });
        let finished = served.and_then(|()| stream.synchronize().map_err(waiting));
        self.rpc.finished(queue);
        finished
    }

    /// The handles of an OpenMP interop object: the agent and, for `targetsync`, the HSA queue
    /// of `queue`'s stream (shared with other streams, as in LLVM), which `synchronize` then
    /// fences.
    fn interop_info(&self, queue: QueueHandle) -> Result<InteropInfo> {
        let targetsync = if queue == QueueHandle::SYNC {
            0
        } else {
            let stream = self
                .queues
                .get(queue.0)
                .ok_or_else(|| invalid_handle("queue", queue.0))?;
            lock(&self.interop_queues).insert(queue.0);
            stream.hsa_queue().0 as usize
        };
        Ok(InteropInfo {
            foreign_runtime: ForeignRuntime::HSA,
            vendor: Vendor::AMD,
            platform: 0,
            device: self.agent.agent.0 as usize,
            context: 0,
            targetsync,
        })
    }

    /// Profiles the device's HSA queues and copies (ROCm's profiling API) and calibrates the
    /// HSA system clock against the host's; queues created from now on time their work.
    fn start_work_timing(&self) -> Result<()> {
        if !self.hsa.has_profiling() {
            return Err(PluginError::unsupported(format!(
                "the HSA runtime {} lacks ROCm's profiling functions",
                self.runtime.library_path()
            )));
        }
        self.streams
            .start_work_timing()
            .map_err(|e| failed("starting the device's timing of its work", e))
    }

    /// The device's timing of the queue's completed work since it was created or last asked:
    /// one span per copy and kernel launch, in submission order (see `stream::timing`).
    fn work_times(&self, queue: QueueHandle) -> Result<Vec<WorkTime>> {
        if queue == QueueHandle::SYNC {
            return Ok(Vec::new());
        }
        let stream = self
            .queues
            .get(queue.0)
            .ok_or_else(|| invalid_handle("queue", queue.0))?;
        let spans = stream
            .take_work_times()
            .map_err(|e| failed("reading the device's timing of its work", e))?;
        Ok(spans
            .into_iter()
            .map(|span| WorkTime {
                start_ns: span.start_ns,
                end_ns: span.end_ns,
                uncertainty_ns: span.uncertainty_ns,
            })
            .collect())
    }

    fn query_queue(&self, queue: QueueHandle) -> Result<bool> {
        if queue == QueueHandle::SYNC {
            return Ok(true);
        }
        let stream = self
            .queues
            .get(queue.0)
            .ok_or_else(|| invalid_handle("queue", queue.0))?;
        let done = stream
            .query()
            .map_err(|e| {
                self.report_kernel_fault(&e, queue);
                failed("querying the device", e)
            })
            .and_then(|done| match done {
                true => Ok(true),
                false => self.rpc.check(queue).map(|()| false),
            });
        if !matches!(done, Ok(false)) {
            self.rpc.finished(queue);
        }
        done
    }

    // ---- events ----

    fn create_event(&self) -> Result<EventHandle> {
        Ok(EventHandle(
            self.events.insert(Arc::new(self.streams.create_event())),
        ))
    }

    fn record_event(&self, event: EventHandle, queue: QueueHandle) -> Result<()> {
        let event = self.event(event)?;
        if queue == QueueHandle::SYNC {
            // Synchronous work has completed already: nothing to record.
            return Ok(());
        }
        self.on_queue(queue, |s| s.record(&event), &|| "recording an event".into())
    }

    fn wait_event(&self, event: EventHandle, queue: QueueHandle) -> Result<()> {
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

    fn sync_event(&self, event: EventHandle) -> Result<()> {
        self.event(event)?
            .synchronize()
            .map_err(|e| failed("waiting for an event", e))
    }

    fn destroy_event(&self, event: EventHandle) -> Result<()> {
        self.events
            .remove(event.0)
            .map(drop)
            .ok_or_else(|| invalid_handle("event", event.0))
    }

    // ---- memory ----

    fn alloc(&self, size: u64, host_ptr: usize, kind: AllocKind) -> Result<usize> {
        // Untracked, nothing is kept across the driver's allocation.
        if !self.allocations.is_on() {
            return self.allocate(size, kind);
        }
        let ptr = self.allocate(size, kind)?;
        self.allocations.allocated(ptr, size, host_ptr, kind);
        Ok(ptr)
    }

    fn free(&self, ptr: usize, kind: AllocKind) -> Result<()> {
        self.allocations.freeing(ptr, kind);
        self.release(ptr, kind)
    }

    /// A range inside one already pinned counts on it, as in LLVM's plugins.
    fn pin_memory(&self, host: usize, size: u64) -> Result<usize> {
        let mut table = write(&self.pinned);
        let device = table.pin(host, size, || {
            self.hsa
                .lock_host_memory(host, size as usize, &self.host.gpu_agents)
                .map(|device| (device as u64, true))
                .map_err(|e| failed(format!("page-locking {size} bytes at {host:#x}"), e))
        })?;
        Ok(device as usize)
    }

    /// Undoes a pin made with `host`; the range is unlocked with its last pin.
    fn unpin_memory(&self, host: usize) -> Result<()> {
        let last = write(&self.pinned).unpin(host)?;
        let Some(range) = last else {
            return Ok(());
        };
        self.hsa
            .unlock_host_memory(range.start)
            .map_err(|e| failed(format!("unlocking host memory at {:#x}", range.start), e))
    }

    fn traits(&self) -> DeviceTraits {
        match self.zero_copy.maps_in_place {
            true => DeviceTraits::ZERO_COPY_MAPS,
            false => DeviceTraits::NONE,
        }
    }

    /// With XNACK the GPU reaches any host memory (its faults are served through the host's
    /// page tables); without, only memory locked or allocated for it.
    fn is_accessible(&self, host: usize, size: u64) -> Result<bool> {
        Ok(self.agent.xnack_enabled() || self.pinned_address(host, size).is_some())
    }

    fn prefault_host_memory(&self, host: usize, size: u64) -> Result<()> {
        self.hsa
            .prefault_host_memory(host, size as usize, self.agent.agent)
            .map_err(|e| failed(format!("prefaulting {size} bytes at {host:#x}"), e))
    }

    fn memory_info(&self) -> Result<MemoryInfo> {
        let memory = self
            .runtime
            .memory_info(self.agent.agent)
            .map_err(|e| failed("asking for free memory", e))?;
        Ok(MemoryInfo {
            free: memory.free_or_total(),
            total: memory.total,
        })
    }

    unsafe fn copy_to_device(
        &self,
        dst: usize,
        src: usize,
        size: u64,
        queue: QueueHandle,
    ) -> Result<()> {
        let pinned = self.pinned_address(src, size);
        self.on_queue(
            queue,
            |s| {
                // SAFETY: our caller promised `src` readable for `size` bytes until the queue
                // is synchronised (a synchronous copy synchronises before `on_queue` returns).
                unsafe { s.push_host_to_device(dst, src, size as usize, pinned) }
            },
            &|| format!("copying {size} bytes from host {src:#x} to device {dst:#x}"),
        )
    }

    unsafe fn copy_from_device(
        &self,
        dst: usize,
        src: usize,
        size: u64,
        queue: QueueHandle,
    ) -> Result<()> {
        let pinned = self.pinned_address(dst, size);
        self.on_queue(
            queue,
            |s| {
                // SAFETY: our caller promised `dst` writable for `size` bytes, and used by
                // nothing else, until the queue is synchronised (a synchronous copy synchronises
                // before `on_queue` returns).
                unsafe { s.push_device_to_host(dst, src, size as usize, pinned) }
            },
            &|| format!("copying {size} bytes from device {src:#x} to host {dst:#x}"),
        )
    }

    fn fill_memory(&self, dst: usize, pattern: &[u8], size: u64, queue: QueueHandle) -> Result<()> {
        self.fill(dst, pattern, size, queue)
    }

    /// Copies from this device to `target`'s memory (possibly this device's) on `queue`.
    fn copy_to_peer(
        &self,
        src: usize,
        target: &AmdgpuDevice,
        dst: usize,
        size: u64,
        queue: QueueHandle,
    ) -> Result<()> {
        let dst_agent = target.agent.agent;
        self.on_queue(
            queue,
            |s| s.push_device_to_device(dst, dst_agent, src, self.agent.agent, size as usize),
            &|| format!("copying {size} bytes from device {src:#x} to device {dst:#x}"),
        )
    }

    // ---- images, kernels and launches ----
    // In `images.rs` and `launch.rs`, as inherent methods of the same names (which a call on
    // `AmdgpuDevice` reaches first).

    fn load_image(&self, image: ImageRef<'_>) -> Result<ImageHandle> {
        AmdgpuDevice::load_image(self, image.bytes.as_slice())
    }

    fn unload_image(&self, image: ImageHandle) -> Result<()> {
        self.images.remove(self, image)
    }

    fn get_kernel(&self, image: ImageHandle, name: &str) -> Result<KernelHandle> {
        AmdgpuDevice::get_kernel(self, image, name)
    }

    fn get_global(&self, image: ImageHandle, name: &str, size: u64) -> Result<GlobalInfo> {
        self.images.global(self, image, name, size)
    }

    fn set_indirect_calls(&self, image: ImageHandle, calls: &[IndirectCall]) -> Result<()> {
        self.images.set_indirect_calls(self, image, calls)
    }

    fn launch_kernel(
        &self,
        kernel: KernelHandle,
        args: &[usize],
        config: &LaunchConfig,
        queue: QueueHandle,
    ) -> Result<()> {
        AmdgpuDevice::launch_kernel(self, kernel, args, config, queue)
    }

    fn launch_kernel_params(
        &self,
        kernel: KernelHandle,
        params: &[u8],
        config: &LaunchConfig,
        queue: QueueHandle,
    ) -> Result<()> {
        AmdgpuDevice::launch_kernel_params(self, kernel, params, config, queue)
    }
}

impl AmdgpuDevice {
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
        // Images first: their destructors run on the device's streams.
        let mut result = self.images.unload_all(self);
        result = result.and(self.rpc.disconnect(self));
        self.queues.drain();
        self.events.drain();
        lock(&self.idle_streams).clear();
        for buffer in self.launch_buffers.drain() {
            let _ = self.hsa.free(buffer as usize);
        }
        if let Err(e) = self.streams.shutdown() {
            result = Err(failed("shutting down the device's streams", e));
        }
        // Ranges the program left locked are unlocked once no copy can use them.
        let pinned = write(&self.pinned).drain_ours();
        for range in pinned {
            if let Err(e) = self.hsa.unlock_host_memory(range.start) {
                result = Err(failed(
                    format!("unlocking host memory at {:#x}", range.start),
                    e,
                ));
            }
        }
        result
    }
}

fn invalid_handle(what: &str, value: u64) -> PluginError {
    PluginError::invalid_argument(format!("no {what} with handle {value} on this device"))
}
