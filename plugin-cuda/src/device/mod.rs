//! One CUDA device: its primary context, stream and event pools, loaded images and kernels,
//! memory, and what LLVM's device runtime expects from the host when an image is loaded and
//! a kernel launched.

mod images;
mod launch;
mod memory;

use crate::driver::{self, sys, Context, Driver, DriverError, Event, Function, Stream};
use crate::driver::{Completion, OwnedModule, OwnedStream, PrimaryContext};
use crate::image::{self, ImageKind, SmVersion, SymbolTable};
use crate::launch::{DynamicSharedLimit, OptInError, DEFAULT_SHARED_BYTES};
use crate::resources::{PooledResource, ResourcePool};
use crate::work_timing::WorkTimer;
use gpu_plugin::allocation_traces::AllocationTraces;
use gpu_plugin::images::{Constructors, ImageDriver, Images};
use gpu_plugin::launch_buffers::{LaunchBuffer, LaunchBufferPool};
use gpu_plugin::launch_traces::LaunchTraces;
use gpu_plugin::rpc::device_rpc::DeviceRpc;
use gpu_plugin::zero_copy::{self, HostMemoryReach, ZeroCopyChoice, ZeroCopySettings};
use gpu_plugin::HandleTable;
use gpu_plugin::{DeviceEnvironment, NO_LAUNCH_ENVIRONMENT};
use gpu_plugin::{GridValues, KernelEnvironment, KernelLimits, Settings, KERNEL_ENVIRONMENT_SIZE};
use plugin_api::PluginError;
use plugin_api::{AllocKind, Device, DeviceTraits, ErrorCode, GlobalInfo, InfoEntry, LaunchConfig};
use plugin_api::{
    EventHandle, ForeignRuntime, ImageHandle, ImageRef, IndirectCall, InteropInfo, KernelHandle,
    MemoryInfo, QueueHandle, Vendor, WorkTime,
};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};
use sync_util::{lock, read, write};
use sys::CUdevice_attribute as Attr;

type Result<T> = std::result::Result<T, PluginError>;

/// How long a wait that must stay able to give up spins on the driver's query before it
/// sleeps until the stream's host function wakes it (short work ends without a wake-up), and
/// how long it sleeps between queries where no host function can wake it.
const WAIT_SPIN: Duration = Duration::from_micros(100);
const WAIT_POLL: Duration = Duration::from_millis(1);

/// How a wait that must stay able to give up learns that a stream's work is done.
enum StreamWake {
    /// Not asked yet: the wait spins first.
    NotYet,
    /// A host function queued behind the work raises it.
    HostFunction(Arc<Completion>),
    /// Nothing wakes the wait: it queries the stream between sleeps.
    Polling,
}

/// Turns a driver failure into a plugin error that says what was being done.
pub fn failed(what: impl std::fmt::Display, e: DriverError) -> PluginError {
    let code = if e.code == sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY as u32 {
        ErrorCode::OUT_OF_MEMORY
    } else {
        ErrorCode::FAILED
    };
    PluginError::new(code, format!("{what}: {e}"))
}

/// Whether a driver error is a kernel's fault: an illegal address or instruction, a
/// misaligned address, a bad program counter, a stack error, a failed device assertion, or a
/// launch that failed while running.
fn kernel_fault(code: u32) -> bool {
    use sys::CUresult::*;
    [
        CUDA_ERROR_ILLEGAL_ADDRESS,
        CUDA_ERROR_ILLEGAL_INSTRUCTION,
        CUDA_ERROR_MISALIGNED_ADDRESS,
        CUDA_ERROR_INVALID_ADDRESS_SPACE,
        CUDA_ERROR_INVALID_PC,
        CUDA_ERROR_HARDWARE_STACK_ERROR,
        CUDA_ERROR_ASSERT,
        CUDA_ERROR_LAUNCH_FAILED,
    ]
    .iter()
    .any(|&fault| fault as u32 == code)
}

/// What is known about a device before it is initialised (enough to check images).
#[derive(Clone, Debug)]
pub struct DeviceIdentity {
    pub ordinal: i32,
    pub handle: sys::CUdevice,
    pub name: String,
    pub sm: SmVersion,
}

impl DeviceIdentity {
    pub fn query(driver: &Driver, ordinal: i32) -> driver::Result<DeviceIdentity> {
        let handle = driver.device(ordinal)?;
        let major = driver.attribute(handle, Attr::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?;
        let minor = driver.attribute(handle, Attr::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?;
        Ok(DeviceIdentity {
            ordinal,
            handle,
            name: driver.device_name(handle)?,
            sm: SmVersion::from_capability(major, minor),
        })
    }
}

/// An image loaded on the device: the driver's module, and the image's symbols as the plugin
/// read them (none for PTX, whose names only the driver knows).
pub struct CudaModule {
    /// Unloaded when dropped; `unload_module` unloads it explicitly, reporting a failure.
    module: OwnedModule,
    symbols: SymbolTable,
}

struct Kernel {
    /// Shared with the launch traces, which keep it past the kernel's unloading.
    name: Arc<str>,
    /// The image it came from (image handles are never reused).
    image: ImageHandle,
    function: Function,
    limits: KernelLimits,
    /// How much dynamic shared memory the kernel may use now; raised on demand. Shared by
    /// every handle to the same function, since the driver keeps one limit per function.
    dynamic_shared: Arc<DynamicSharedLimit>,
}

/// Work to do once a stream's operations have completed.
enum Deferred {
    /// A launch's environment and reduction buffer, back to the pool once the launch is done.
    LaunchBuffer(LaunchBuffer),
}

#[derive(Copy, Clone, PartialEq, Eq)]
enum PeerAccess {
    Unknown,
    Enabled,
    Unavailable,
}

pub struct CudaDevice {
    driver: Arc<Driver>,
    /// Set by `deinit`: the primary context is released once, and a second `deinit` (the
    /// plugin's own, after the core's `deinit_device`) has nothing left to do.
    released: std::sync::atomic::AtomicBool,
    pub identity: DeviceIdentity,
    /// The primary context's handle, lent by `primary` (below) for as long as it is retained.
    context: Context,
    grid: GridValues,
    hardware_parallelism: u64,
    /// Most shared memory one block may use with opt-in.
    shared_memory_optin: u32,
    plugin_devices: u32,
    settings: Settings,
    streams: ResourcePool<Stream>,
    events: ResourcePool<Event>,
    /// The streams behind the queue handles given out (`create_queue`), and the events behind
    /// the event handles: a handle is looked up here before its object reaches the driver.
    queues: HandleTable<Stream>,
    event_handles: HandleTable<Event>,
    images: Images<CudaModule>,
    /// Shared so a launch takes its kernel out of the table and drops the lock before it
    /// touches the driver (a synchronous launch waits for the device).
    kernels: RwLock<Vec<Arc<Kernel>>>,
    deferred: Mutex<HashMap<usize, Vec<Deferred>>>,
    deferred_count: AtomicUsize,
    launch_buffers: LaunchBufferPool,
    peers: Mutex<Vec<PeerAccess>>,
    /// A stream for the stream-ordered allocator, apart from every queue.
    allocation_stream: Mutex<Option<OwnedStream>>,
    /// The device's timing of queued work, once profiling asks (plugin ABI 1.5).
    timer: WorkTimer,
    /// The kernels launched last, for the report of a kernel that faults.
    launches: LaunchTraces,
    /// Where the device's memory came from, when tracked, for reports of bad frees.
    allocations: AllocationTraces,
    /// The device's mailbox for its kernels' calls to the host.
    rpc: DeviceRpc,
    /// What the device reaches of host memory, and whether its maps use it in place.
    host_reach: HostMemoryReach,
    zero_copy: ZeroCopyChoice,
    /// The retained primary context, taken and released by `deinit`. Last: fields drop in
    /// order, and everything above was created in this context.
    primary: Mutex<Option<PrimaryContext>>,
}

fn attribute(driver: &Driver, device: sys::CUdevice, attribute: Attr) -> Result<u32> {
    driver
        .attribute(device, attribute)
        .map(|v| v.max(0) as u32)
        .map_err(|e| failed("reading a device attribute", e))
}

/// What device `d` reaches of host memory: pageable memory through the host's own page
/// tables (ATS on a coherent node) or mirrored ones (HMM); an integrated GPU shares the host's
/// memory.
pub fn host_memory_reach(driver: &Driver, d: sys::CUdevice) -> HostMemoryReach {
    let has = |a| driver.attribute(d, a).is_ok_and(|v| v > 0);
    HostMemoryReach {
        pageable: has(Attr::CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS),
        shared_physical_memory: has(Attr::CU_DEVICE_ATTRIBUTE_INTEGRATED),
        prefault: false,
    }
}

impl CudaDevice {
    /// Retains the primary context and creates the pools (LLVM's `CUDADeviceTy::initImpl`).
    pub fn initialize(
        driver: Arc<Driver>,
        identity: DeviceIdentity,
        plugin_devices: u32,
        settings: Settings,
    ) -> Result<CudaDevice> {
        let d = identity.handle;
        let (flags, active) = driver
            .primary_context_state(d)
            .map_err(|e| failed("querying the primary context", e))?;
        const SCHED_MASK: u32 = 0x7;
        const SCHED_BLOCKING_SYNC: u32 = 0x4;
        if active {
            if flags & SCHED_MASK != SCHED_BLOCKING_SYNC {
                log::debug!(
                    "cuda device {}: primary context already active with flags {flags:#x}",
                    identity.ordinal
                );
            }
        } else {
            // Blocking synchronisation: waiting threads sleep instead of spinning on a core
            // the program's host threads need.
            driver
                .set_primary_context_flags(d, SCHED_BLOCKING_SYNC)
                .map_err(|e| failed("setting the primary context's flags", e))?;
        }
        let primary = PrimaryContext::retain(&driver, d)
            .map_err(|e| failed("retaining the primary context", e))?;
        let context = primary.handle();
        // From here on, a failure drops what was retained and created so far, which gives it
        // back: the pools' objects first, then the context.
        driver
            .set_current(context)
            .map_err(|e| failed("making the context current", e))?;
        let setup = || -> Result<(GridValues, u64, u32)> {
            if let Some(bytes) = settings.stack_size {
                driver
                    .set_limit(sys::CUlimit::CU_LIMIT_STACK_SIZE, bytes)
                    .map_err(|e| failed("setting LIBOMPTARGET_STACK_SIZE", e))?;
            }
            // Device-side malloc on NVPTX is the driver's own (the device runtime defines no
            // pool allocator for it), so LIBOMPTARGET_HEAP_SIZE sizes the driver's heap and no
            // `__omp_rtl_device_memory_pool` is provided (as LLVM's CUDA plugin).
            if let Some(bytes) = settings.heap_size {
                driver
                    .set_limit(sys::CUlimit::CU_LIMIT_MALLOC_HEAP_SIZE, bytes)
                    .map_err(|e| failed("setting LIBOMPTARGET_HEAP_SIZE", e))?;
            }
            let grid = GridValues {
                max_teams: attribute(&driver, d, Attr::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X)?,
                max_threads: attribute(&driver, d, Attr::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X)?,
                warp_size: attribute(&driver, d, Attr::CU_DEVICE_ATTRIBUTE_WARP_SIZE)?.max(1),
                min_threads_for_low_trip_count: settings.min_threads_for_low_trip_count,
                reuse_blocks_for_high_trip_count: settings.reuse_blocks_for_high_trip_count,
                ..GridValues::NVPTX
            }
            .limited_by(settings.num_teams, settings.teams_thread_limit);
            let sms = attribute(&driver, d, Attr::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?;
            let per_sm = attribute(
                &driver,
                d,
                Attr::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR,
            )?;
            // Drivers before CUDA 9 do not know the attribute: no opt-in there.
            let optin = driver
                .attribute(
                    d,
                    Attr::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                )
                .map_or(DEFAULT_SHARED_BYTES, |v| {
                    (v.max(0) as u32).max(DEFAULT_SHARED_BYTES)
                });
            Ok((grid, sms as u64 * (per_sm / grid.warp_size) as u64, optin))
        };
        let (grid, hardware_parallelism, shared_memory_optin) = setup()?;
        let host_reach = host_memory_reach(&driver, d);
        let zero_copy = zero_copy::choose(host_reach, ZeroCopySettings::from_env());
        log::debug!(
            "cuda device {}: maps: {}",
            identity.ordinal,
            zero_copy.reason
        );
        let streams = ResourcePool::new(&driver, settings.initial_streams)
            .map_err(|e| failed("creating the stream pool", e))?;
        let events = ResourcePool::new(&driver, settings.initial_events)
            .map_err(|e| failed("creating the event pool", e))?;
        log::debug!(
            "cuda device {}: {} ({}), up to {} teams of {} threads",
            identity.ordinal,
            identity.name,
            identity.sm,
            grid.max_teams,
            grid.max_threads
        );
        Ok(CudaDevice {
            driver,
            identity,
            context,
            grid,
            hardware_parallelism,
            shared_memory_optin,
            plugin_devices,
            settings,
            streams,
            events,
            queues: HandleTable::new(),
            event_handles: HandleTable::new(),
            images: Images::default(),
            kernels: RwLock::new(Vec::new()),
            deferred: Mutex::new(HashMap::new()),
            deferred_count: AtomicUsize::new(0),
            launch_buffers: LaunchBufferPool::default(),
            peers: Mutex::new(vec![PeerAccess::Unknown; plugin_devices as usize]),
            allocation_stream: Mutex::new(None),
            released: std::sync::atomic::AtomicBool::new(false),
            timer: WorkTimer::default(),
            launches: LaunchTraces::from_env(),
            allocations: AllocationTraces::from_env(),
            rpc: DeviceRpc::new(grid.warp_size),
            host_reach,
            zero_copy,
            primary: Mutex::new(Some(primary)),
        })
    }

    pub fn context(&self) -> Context {
        self.context
    }

    /// Makes the device's context current on the calling thread, before driver calls that work
    /// in the current context (allocations, copies, launches, creating streams, events and
    /// modules): the core calls from any thread. Calls bound to a stream or an event
    /// (synchronisations, queries, event records and waits) work in that object's context and
    /// skip it, as LLVM's plugin does; a `cuCtxSetCurrent` per call was most of our driver
    /// calls per construct.
    fn activate(&self) -> Result<()> {
        self.driver
            .set_current(self.context)
            .map_err(|e| failed("making the device's context current", e))
    }

    /// Runs `op` on the queue's stream, or, for `QueueHandle::SYNC`, on a pooled stream
    /// that is synchronised before returning. The context is made current only for a new
    /// stream: `op` makes it current itself if its calls need it.
    fn on_queue(&self, queue: QueueHandle, op: impl FnOnce(Stream) -> Result<()>) -> Result<()> {
        if queue != QueueHandle::SYNC {
            return op(self.stream_of(queue)?);
        }
        let stream = self.take_stream()?;
        let result = op(stream).and_then(|_| self.finish(stream));
        if result.is_err() {
            // Drain whatever was queued before reusing the stream.
            let _ = self.driver.synchronize(stream);
            self.run_deferred(stream);
        }
        self.streams.give_back(stream);
        result
    }

    /// Queues one operation that the core counts (a copy or a launch) on `stream`, between
    /// timing events when profiling asked for the device's timing. Not on the synchronous
    /// queue's pooled streams, whose timings nobody asks for.
    #[inline]
    fn timed(
        &self,
        queue: QueueHandle,
        stream: Stream,
        op: impl FnOnce() -> Result<()>,
    ) -> Result<()> {
        if queue == QueueHandle::SYNC || !self.timer.is_on() {
            return op();
        }
        self.timer.around(
            &self.driver,
            stream,
            |e| failed("timing queued work", e),
            op,
        )
    }

    /// Waits for a stream and runs its deferred work.
    fn finish(&self, stream: Stream) -> Result<()> {
        let result = self.driver.synchronize(stream).map_err(|e| {
            self.report_kernel_fault(&e);
            failed("waiting for the device", e)
        });
        self.run_deferred(stream);
        result
    }

    /// Waits at most `limit` for `stream`'s work, and leaves it to [`Self::finish`]: true when
    /// the work completed or failed (which `finish` then reports). Short work is caught by
    /// spinning on the driver's query; longer work by a host function the driver calls when
    /// the stream reaches it, queued by the first call of a wait (`wake`), which wakes the
    /// waiting thread, since the driver's own waits have no time limit.
    fn wait_within(&self, stream: Stream, limit: Duration, wake: &mut StreamWake) -> bool {
        let done = || !matches!(self.driver.query(stream), Ok(false));
        if let StreamWake::NotYet = wake {
            let spin = Instant::now();
            while spin.elapsed() < WAIT_SPIN.min(limit) {
                if done() {
                    return true;
                }
                std::thread::yield_now();
            }
            // Host functions are queued in the current context (the core waits from any
            // thread).
            let queued = Completion::new();
            let notified = self.activate().and_then(|()| {
                self.driver
                    .notify_when_done(stream, &queued)
                    .map_err(|e| failed("queueing the wait's host function", e))
            });
            *wake = match notified {
                Ok(true) => StreamWake::HostFunction(queued),
                // A driver without host functions (before CUDA 10), or one that refused it.
                _ => StreamWake::Polling,
            };
        }
        match wake {
            // The driver skips host functions after a kernel fault: the query finds it.
            StreamWake::HostFunction(completion) => completion.wait_within(limit) || done(),
            _ => {
                std::thread::sleep(WAIT_POLL.min(limit));
                done()
            }
        }
    }

    /// Reports the device's last launches the first time the driver says a kernel faulted
    /// (the context's error is sticky: every later call fails with it too). The driver does
    /// not say which kernel: the report lists the last ones.
    fn report_kernel_fault(&self, error: &DriverError) {
        if kernel_fault(error.code) {
            self.launches.report_fault(&format!(
                "a kernel on CUDA device {} faulted: {} ({})",
                self.identity.ordinal, error.name, error.code
            ));
        }
    }

    fn defer(&self, stream: Stream, work: Deferred) {
        lock(&self.deferred)
            .entry(stream.0 as usize)
            .or_default()
            .push(work);
        self.deferred_count.fetch_add(1, Ordering::Release);
    }

    fn run_deferred(&self, stream: Stream) {
        if self.deferred_count.load(Ordering::Acquire) == 0 {
            return;
        }
        let work = lock(&self.deferred).remove(&(stream.0 as usize));
        for item in work.into_iter().flatten() {
            self.complete(item);
        }
    }

    fn complete(&self, work: Deferred) {
        self.deferred_count.fetch_sub(1, Ordering::Release);
        match work {
            Deferred::LaunchBuffer(buffer) => self.launch_buffers.give_back(buffer),
        }
    }

    /// The stream behind a queue handle this device gave out (not `QueueHandle::SYNC`).
    #[inline]
    fn stream_of(&self, queue: QueueHandle) -> Result<Stream> {
        self.queues
            .get(queue.0)
            .ok_or_else(|| invalid_handle("queue", queue.0))
    }

    /// The event behind an event handle this device gave out.
    #[inline]
    fn event_of(&self, event: EventHandle) -> Result<Event> {
        self.event_handles
            .get(event.0)
            .ok_or_else(|| invalid_handle("event", event.0))
    }

    fn take_stream(&self) -> Result<Stream> {
        self.take_pooled(&self.streams, "taking a stream")
    }

    /// A pooled stream or event; the context is made current only when the pool must create
    /// more.
    fn take_pooled<T>(&self, pool: &ResourcePool<T>, what: &str) -> Result<T>
    where
        T: PooledResource<Driver>,
    {
        if let Some(resource) = pool.try_take() {
            return Ok(resource);
        }
        self.activate()?;
        pool.take(&self.driver).map_err(|e| failed(what, e))
    }
}

/// The per-device calls of the plugin ABI; plugin-api has looked the device up and applied
/// the argument rules every plugin shares.
impl Device for CudaDevice {
    // ---- queues and events ----

    fn create_queue(&self) -> Result<QueueHandle> {
        let stream = self.take_stream()?;
        Ok(QueueHandle(self.queues.insert(stream)))
    }

    fn release_queue(&self, queue: QueueHandle) -> Result<()> {
        if queue == QueueHandle::SYNC {
            return Err(PluginError::invalid_argument(
                "the synchronous queue is not released",
            ));
        }
        let stream = self
            .queues
            .remove(queue.0)
            .ok_or_else(|| invalid_handle("queue", queue.0))?;
        self.rpc.finished(queue);
        self.timer.discard(stream);
        self.streams.give_back(stream);
        Ok(())
    }

    fn synchronize(&self, queue: QueueHandle) -> Result<()> {
        if queue == QueueHandle::SYNC {
            return Ok(());
        }
        let stream = self.stream_of(queue)?;
        let mut wake = StreamWake::NotYet;
        let served = self
            .rpc
            .wait_for(queue, |slice| self.wait_within(stream, slice, &mut wake));
        // A kernel left waiting for the host still runs: its stream's deferred work stays.
        let finished = served.and_then(|()| self.finish(stream));
        self.rpc.finished(queue);
        finished
    }

    /// The handles of an OpenMP interop object: the CUDA runtime API's view (LLVM's choice),
    /// which shares the primary context and takes a `CUstream` as a `cudaStream_t`. Our
    /// synchronize is `cuStreamSynchronize`, which also waits for work the program queued.
    fn interop_info(&self, queue: QueueHandle) -> Result<InteropInfo> {
        let targetsync = if queue == QueueHandle::SYNC {
            0
        } else {
            self.stream_of(queue)?.0 as usize
        };
        Ok(InteropInfo {
            foreign_runtime: ForeignRuntime::CUDA,
            vendor: Vendor::NVIDIA,
            platform: 0,
            device: self.identity.handle as usize,
            context: self.context.0 as usize,
            targetsync,
        })
    }

    fn traits(&self) -> DeviceTraits {
        match self.zero_copy.maps_in_place {
            true => DeviceTraits::ZERO_COPY_MAPS,
            false => DeviceTraits::NONE,
        }
    }

    /// Pageable memory where the device reaches it (HMM, ATS); otherwise memory page-locked or
    /// allocated for the device, whose first and last bytes the driver maps (UVA).
    fn is_accessible(&self, host: usize, size: u64) -> Result<bool> {
        if self.host_reach.pageable {
            return Ok(true);
        }
        self.activate()?;
        let last = host.saturating_add(size.saturating_sub(1) as usize);
        Ok([host, last]
            .iter()
            .all(|&p| self.driver.host_device_pointer(p).is_ok()))
    }

    fn memory_info(&self) -> Result<MemoryInfo> {
        self.activate()?;
        let (free, total) = self
            .driver
            .memory_info()
            .map_err(|e| failed("asking for free memory", e))?;
        Ok(MemoryInfo { free, total })
    }

    fn query_queue(&self, queue: QueueHandle) -> Result<bool> {
        if queue == QueueHandle::SYNC {
            return Ok(true);
        }
        let stream = self.stream_of(queue)?;
        let done = self.driver.query(stream).map_err(|e| {
            self.report_kernel_fault(&e);
            self.rpc.finished(queue);
            failed("querying the device", e)
        })?;
        if done {
            self.run_deferred(stream);
            self.rpc.finished(queue);
        } else if let Err(e) = self.rpc.check(queue) {
            self.rpc.finished(queue);
            return Err(e);
        }
        Ok(done)
    }

    fn start_work_timing(&self) -> Result<()> {
        if !self.driver.can_time_events() {
            return Err(PluginError::unsupported(
                "the CUDA driver has no cuEventElapsedTime",
            ));
        }
        self.timer.start();
        Ok(())
    }

    fn work_times(&self, queue: QueueHandle) -> Result<Vec<WorkTime>> {
        if queue == QueueHandle::SYNC {
            return Ok(Vec::new());
        }
        let stream = self.stream_of(queue)?;
        // A new reference event may be created, and is recorded on an idle pooled stream.
        self.activate()?;
        let idle = self.take_stream()?;
        let times = self
            .timer
            .times(&self.driver, stream, idle)
            .map_err(|e| failed("reading the device's timing of queued work", e));
        self.streams.give_back(idle);
        times
    }

    fn create_event(&self) -> Result<EventHandle> {
        let event = self.take_pooled(&self.events, "taking an event")?;
        Ok(EventHandle(self.event_handles.insert(event)))
    }

    fn record_event(&self, event: EventHandle, queue: QueueHandle) -> Result<()> {
        let event = self.event_of(event)?;
        self.on_queue(queue, |stream| {
            self.driver
                .record_event(event, stream)
                .map_err(|e| failed("recording an event", e))
        })
    }

    fn wait_event(&self, event: EventHandle, queue: QueueHandle) -> Result<()> {
        let event = self.event_of(event)?;
        self.on_queue(queue, |stream| {
            self.driver
                .wait_event(stream, event)
                .map_err(|e| failed("waiting for an event on a queue", e))
        })
    }

    fn sync_event(&self, event: EventHandle) -> Result<()> {
        self.driver
            .sync_event(self.event_of(event)?)
            .map_err(|e| failed("waiting for an event", e))
    }

    fn destroy_event(&self, event: EventHandle) -> Result<()> {
        let event = self
            .event_handles
            .remove(event.0)
            .ok_or_else(|| invalid_handle("event", event.0))?;
        self.events.give_back(event);
        Ok(())
    }

    // ---- memory ----

    fn alloc(&self, size: u64, host_ptr: usize, kind: AllocKind) -> Result<usize> {
        // Untracked, nothing is kept across the driver's allocation.
        if !self.allocations.is_on() {
            return self.allocate(size, kind);
        }
        let address = self.allocate(size, kind)?;
        self.allocations.allocated(address, size, host_ptr, kind);
        Ok(address)
    }

    fn free(&self, ptr: usize, kind: AllocKind) -> Result<()> {
        self.allocations.freeing(ptr, kind);
        self.release(ptr, kind)
    }

    // ---- copies ----

    unsafe fn copy_to_device(
        &self,
        dst: usize,
        src: usize,
        size: u64,
        queue: QueueHandle,
    ) -> Result<()> {
        self.on_queue(queue, |s| {
            self.activate()?;
            self.timed(queue, s, || {
                // SAFETY: the caller's promise, passed on.
                unsafe { self.driver.copy_to_device(dst as u64, src, size, s) }
                    .map_err(|e| failed(format!("copying {size} bytes to the device"), e))
            })
        })
    }

    unsafe fn copy_from_device(
        &self,
        dst: usize,
        src: usize,
        size: u64,
        queue: QueueHandle,
    ) -> Result<()> {
        self.on_queue(queue, |s| {
            self.activate()?;
            self.timed(queue, s, || {
                // SAFETY: the caller's promise, passed on.
                unsafe { self.driver.copy_from_device(dst, src as u64, size, s) }
                    .map_err(|e| failed(format!("copying {size} bytes from the device"), e))
            })
        })
    }

    /// Copies to `dst` on `peer` (or this device), through peer access where the devices
    /// allow it.
    fn copy_to_peer(
        &self,
        src: usize,
        peer: &CudaDevice,
        dst: usize,
        size: u64,
        queue: QueueHandle,
    ) -> Result<()> {
        let direct = peer.identity.ordinal != self.identity.ordinal && self.peer_access(peer)?;
        self.on_queue(queue, |s| {
            self.activate()?;
            self.timed(queue, s, || {
                let result = if direct {
                    self.driver.copy_peer(
                        dst as u64,
                        peer.context,
                        src as u64,
                        self.context,
                        size,
                        s,
                    )
                } else {
                    self.driver.copy_on_device(dst as u64, src as u64, size, s)
                };
                result.map_err(|e| failed(format!("copying {size} bytes between devices"), e))
            })
        })
    }

    // ---- fills (memory.rs) ----

    fn fill_memory(&self, dst: usize, pattern: &[u8], size: u64, queue: QueueHandle) -> Result<()> {
        self.fill(dst, pattern, size, queue)
    }

    // ---- images, kernels and launches (images.rs, launch.rs) ----

    fn load_image(&self, image: ImageRef<'_>) -> Result<ImageHandle> {
        CudaDevice::load_image(self, image)
    }

    fn unload_image(&self, handle: ImageHandle) -> Result<()> {
        self.images.remove(self, handle)
    }

    fn set_indirect_calls(&self, handle: ImageHandle, calls: &[IndirectCall]) -> Result<()> {
        self.images.set_indirect_calls(self, handle, calls)
    }

    fn get_kernel(&self, image: ImageHandle, name: &str) -> Result<KernelHandle> {
        CudaDevice::get_kernel(self, image, name)
    }

    fn get_global(&self, image: ImageHandle, name: &str, size: u64) -> Result<GlobalInfo> {
        self.images.global(self, image, name, size)
    }

    fn launch_kernel(
        &self,
        kernel: KernelHandle,
        args: &[usize],
        config: &LaunchConfig,
        queue: QueueHandle,
    ) -> Result<()> {
        CudaDevice::launch_kernel(self, kernel, args, config, queue)
    }

    fn launch_kernel_params(
        &self,
        kernel: KernelHandle,
        params: &[u8],
        config: &LaunchConfig,
        queue: QueueHandle,
    ) -> Result<()> {
        CudaDevice::launch_kernel_params(self, kernel, params, config, queue)
    }
}

impl CudaDevice {
    // ---- description ----

    pub fn info(&self) -> Vec<InfoEntry> {
        let mut info = Vec::new();
        let _ = self.activate();
        if let Ok(v) = self.driver.limit(sys::CUlimit::CU_LIMIT_STACK_SIZE) {
            info.push(InfoEntry::new("stack size bytes", v));
        }
        if let Ok(v) = self.driver.limit(sys::CUlimit::CU_LIMIT_MALLOC_HEAP_SIZE) {
            info.push(InfoEntry::new("heap size bytes", v));
        }
        if let Ok((free, _)) = self.driver.memory_info() {
            info.push(InfoEntry::new("free memory bytes", free));
        }
        info.push(InfoEntry::new("max teams", self.grid.max_teams));
        info.push(InfoEntry::new(
            "max threads per team",
            self.grid.max_threads,
        ));
        info.push(InfoEntry::new(
            "hardware parallelism",
            self.hardware_parallelism,
        ));
        info
    }

    /// Releases everything (LLVM's `deinitImpl`): runs pending destructors, unloads modules,
    /// destroys pools and releases the primary context.
    pub fn deinit(&self) -> Result<()> {
        if self.released.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        if let Err(e) = self.driver.set_current(self.context) {
            if e.code == driver::codes::DEINITIALIZED {
                // The driver's own exit handler ran first and released the context with
                // everything in it; there is nothing left to give back.
                log::debug!(
                    "cuda device {}: the driver has shut down already",
                    self.identity.ordinal
                );
                if let Some(primary) = lock(&self.primary).take() {
                    primary.forget();
                }
                return Ok(());
            }
            return Err(failed("making the device's context current", e));
        }
        let mut first_error = self.images.unload_all(self).err();
        if let Err(e) = self.rpc.disconnect(self) {
            first_error = first_error.or(Some(e));
        }
        // Launches still deferred were never synchronised; their buffers go with the rest.
        let pending = std::mem::take(&mut *lock(&self.deferred));
        for item in pending.into_values().flatten() {
            self.complete(item);
        }
        self.free_launch_buffers();
        // Dropping the allocator's stream destroys it; a failure is not reported.
        drop(lock(&self.allocation_stream).take());
        self.timer.destroy_all();
        let (busy_streams, e1) = self.streams.destroy_all();
        let (busy_events, e2) = self.events.destroy_all();
        if busy_streams + busy_events > 0 {
            log::debug!(
                "cuda device {}: {busy_streams} streams and {busy_events} events were still in use",
                self.identity.ordinal
            );
        }
        for e in [e1, e2].into_iter().flatten() {
            first_error.get_or_insert(failed("destroying a pooled object", e));
        }
        // Last, as the fields drop: everything above lived in this context.
        if let Some(primary) = lock(&self.primary).take() {
            if let Err(e) = primary.release() {
                first_error.get_or_insert(failed("releasing the primary context", e));
            }
        }
        first_error.map_or(Ok(()), Err)
    }
}

/// Handles are 1-based indexes so that 0 is never valid.
fn index_of(handle: u64, len: usize) -> Option<usize> {
    let i = usize::try_from(handle).ok()?.checked_sub(1)?;
    (i < len).then_some(i)
}

fn invalid_handle(what: &str, value: u64) -> PluginError {
    PluginError::invalid_argument(format!("no {what} with handle {value} on this device"))
}

/// The kernel a handle names in the device's kernel list, taken out of the table: the read
/// lock is released before the caller launches, so loading kernels never waits for a launch.
fn kernel_at(kernels: &RwLock<Vec<Arc<Kernel>>>, handle: KernelHandle) -> Result<Arc<Kernel>> {
    let kernels = read(kernels);
    index_of(handle.0, kernels.len())
        .map(|i| Arc::clone(&kernels[i]))
        .ok_or_else(|| invalid_handle("kernel", handle.0))
}
