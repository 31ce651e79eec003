//! One CUDA device: its primary context, stream and event pools, loaded images and kernels,
//! memory, and what LLVM's device runtime expects from the host when an image is loaded and
//! a kernel launched.

use crate::driver::{self, sys, Context, Driver, DriverError, Event, Function, Module, Stream};
use crate::handles::HandleTable;
use crate::image::{self, ImageKind, SmVersion, SymbolTable};
use crate::launch::{DynamicSharedLimit, OptInError, DEFAULT_SHARED_BYTES};
use crate::resources::{PooledResource, ResourcePool};
use crate::work_timing::WorkTimer;
use plugin_api::gpu::launch_buffers::{LaunchBuffer, LaunchBufferPool};
use plugin_api::gpu::{place_indirect_call_table, DeviceEnvironment, NO_LAUNCH_ENVIRONMENT};
use plugin_api::gpu::{
    GridValues, KernelEnvironment, KernelLimits, Settings, KERNEL_ENVIRONMENT_SIZE,
};
use plugin_api::{AllocKind, Device, ErrorCode, GlobalInfo, InfoEntry, LaunchConfig, PluginError};
use plugin_api::{
    EventHandle, ForeignRuntime, ImageHandle, ImageRef, IndirectCall, InteropInfo, KernelHandle,
    MemoryInfo, QueueHandle, Vendor, WorkTime,
};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use sync_util::{lock, read, write};
use sys::CUdevice_attribute as Attr;

type Result<T> = std::result::Result<T, PluginError>;

/// Turns a driver failure into a plugin error that says what was being done.
pub fn failed(what: impl std::fmt::Display, e: DriverError) -> PluginError {
    let code = if e.code == sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY as u32 {
        ErrorCode::OUT_OF_MEMORY
    } else {
        ErrorCode::FAILED
    };
    PluginError::new(code, format!("{what}: {e}"))
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

struct LoadedImage {
    module: Module,
    symbols: SymbolTable,
    has_destructors: bool,
    /// The device runtime's indirect-call table, freed with the image.
    indirect_calls: Option<u64>,
}

struct Kernel {
    name: String,
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
    images: RwLock<Vec<Option<LoadedImage>>>,
    /// Shared so a launch takes its kernel out of the table and drops the lock before it
    /// touches the driver (a synchronous launch waits for the device).
    kernels: RwLock<Vec<Arc<Kernel>>>,
    deferred: Mutex<HashMap<usize, Vec<Deferred>>>,
    deferred_count: AtomicUsize,
    launch_buffers: LaunchBufferPool,
    peers: Mutex<Vec<PeerAccess>>,
    /// A stream for the stream-ordered allocator, apart from every queue.
    allocation_stream: Mutex<Option<Stream>>,
    /// The device's timing of queued work, once profiling asks (plugin ABI 1.5).
    timer: WorkTimer,
}

fn attribute(driver: &Driver, device: sys::CUdevice, attribute: Attr) -> Result<u32> {
    driver
        .attribute(device, attribute)
        .map(|v| v.max(0) as u32)
        .map_err(|e| failed("reading a device attribute", e))
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
        let context = driver
            .retain_primary_context(d)
            .map_err(|e| failed("retaining the primary context", e))?;
        // From here on, a failure gives back what was retained and created so far.
        let release = |e: PluginError| {
            let _ = driver.release_primary_context(d);
            e
        };
        driver
            .set_current(context)
            .map_err(|e| release(failed("making the context current", e)))?;
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
        let (grid, hardware_parallelism, shared_memory_optin) = match setup() {
            Ok(v) => v,
            Err(e) => return Err(release(e)),
        };
        let streams = ResourcePool::new(&*driver, settings.initial_streams)
            .map_err(|e| release(failed("creating the stream pool", e)))?;
        let events = match ResourcePool::new(&*driver, settings.initial_events) {
            Ok(pool) => pool,
            Err(e) => {
                let _ = streams.destroy_all(&*driver);
                return Err(release(failed("creating the event pool", e)));
            }
        };
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
            images: RwLock::new(Vec::new()),
            kernels: RwLock::new(Vec::new()),
            deferred: Mutex::new(HashMap::new()),
            deferred_count: AtomicUsize::new(0),
            launch_buffers: LaunchBufferPool::default(),
            peers: Mutex::new(vec![PeerAccess::Unknown; plugin_devices as usize]),
            allocation_stream: Mutex::new(None),
            released: std::sync::atomic::AtomicBool::new(false),
            timer: WorkTimer::default(),
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
            &*self.driver,
            stream,
            |e| failed("timing queued work", e),
            op,
        )
    }

    /// Waits for a stream and runs its deferred work.
    fn finish(&self, stream: Stream) -> Result<()> {
        let result = self
            .driver
            .synchronize(stream)
            .map_err(|e| failed("waiting for the device", e));
        self.run_deferred(stream);
        result
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
        T: Copy + Send + PooledResource<Driver>,
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
        self.timer.discard(stream);
        self.streams.give_back(stream);
        Ok(())
    }

    fn synchronize(&self, queue: QueueHandle) -> Result<()> {
        if queue == QueueHandle::SYNC {
            return Ok(());
        }
        self.finish(self.stream_of(queue)?)
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
        let done = self
            .driver
            .query(stream)
            .map_err(|e| failed("querying the device", e))?;
        if done {
            self.run_deferred(stream);
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
            .times(&*self.driver, stream, idle)
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

    fn alloc(&self, size: u64, _host_ptr: usize, kind: AllocKind) -> Result<usize> {
        self.activate()?;
        let size = size.max(1);
        let what = || format!("allocating {size} bytes of {} memory", kind.name());
        let address = match kind {
            AllocKind::DEFAULT | AllocKind::DEVICE => self.driver.alloc_device(size),
            AllocKind::HOST => self.driver.alloc_host(size).map(|p| p as u64),
            AllocKind::SHARED => self.driver.alloc_managed(size),
            AllocKind::DEVICE_NON_BLOCKING => self.alloc_non_blocking(size),
            _ => {
                return Err(PluginError::invalid_argument(format!(
                    "unknown allocation kind {}",
                    kind.0
                )))
            }
        };
        address.map(|a| a as usize).map_err(|e| failed(what(), e))
    }

    fn free(&self, ptr: usize, kind: AllocKind) -> Result<()> {
        self.activate()?;
        let result = match kind {
            AllocKind::HOST => self.driver.free_host(ptr),
            AllocKind::DEVICE_NON_BLOCKING if self.driver.has_async_allocator() => {
                self.allocation_stream().and_then(|s| {
                    self.driver.free_async(ptr as u64, s)?;
                    self.driver.synchronize(s)
                })
            }
            _ => self.driver.free_device(ptr as u64),
        };
        result.map_err(|e| failed(format!("freeing {ptr:#x}"), e))
    }

    // ---- copies ----

    fn copy_to_device(&self, dst: usize, src: usize, size: u64, queue: QueueHandle) -> Result<()> {
        self.on_queue(queue, |s| {
            self.activate()?;
            self.timed(queue, s, || {
                self.driver
                    .copy_to_device(dst as u64, src, size, s)
                    .map_err(|e| failed(format!("copying {size} bytes to the device"), e))
            })
        })
    }

    fn copy_from_device(
        &self,
        dst: usize,
        src: usize,
        size: u64,
        queue: QueueHandle,
    ) -> Result<()> {
        self.on_queue(queue, |s| {
            self.activate()?;
            self.timed(queue, s, || {
                self.driver
                    .copy_from_device(dst, src as u64, size, s)
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

    // ---- images ----

    fn load_image(&self, image_ref: ImageRef<'_>) -> Result<ImageHandle> {
        let bytes = image_ref.bytes.as_slice();
        let image::CheckedImage { kind, symbols } =
            image::check(bytes, self.identity.sm).map_err(|e| match e.code {
                ErrorCode::UNSUPPORTED => PluginError::unsupported(format!(
                    "device {} ({}, {}): {}",
                    self.identity.ordinal, self.identity.name, self.identity.sm, e.message
                )),
                _ => e,
            })?;
        self.activate()?;
        let module = match kind {
            ImageKind::Cubin { .. } => self.driver.load_module(bytes),
            ImageKind::Ptx { .. } => {
                let mut text = bytes.to_vec();
                if text.last() != Some(&0) {
                    text.push(0);
                }
                self.driver.load_module(&text)
            }
        }
        .map_err(|e| {
            failed(
                format!("loading the image on cuda device {}", self.identity.ordinal),
                e,
            )
        })?;
        let loaded = LoadedImage {
            module,
            symbols,
            has_destructors: false,
            indirect_calls: None,
        };
        let prepared = self
            .write_device_environment(&loaded, (0, 0))
            .and_then(|_| self.run_global_constructors(&loaded, true));
        let has_destructors = match prepared {
            Ok(()) => self.has_symbol(&loaded, "nvptx$device$fini"),
            Err(e) => {
                let _ = self.driver.unload_module(module);
                return Err(e);
            }
        };
        let mut images = write(&self.images);
        images.push(Some(LoadedImage {
            has_destructors,
            ..loaded
        }));
        Ok(ImageHandle(images.len() as u64))
    }

    fn unload_image(&self, handle: ImageHandle) -> Result<()> {
        let loaded = {
            let mut images = write(&self.images);
            index_of(handle.0, images.len())
                .and_then(|i| images[i].take())
                .ok_or_else(|| invalid_handle("image", handle.0))?
        };
        self.activate()?;
        let destructors = if loaded.has_destructors {
            self.run_global_constructors(&loaded, false)
        } else {
            Ok(())
        };
        let table = match loaded.indirect_calls {
            Some(table) => self.free(table as usize, AllocKind::DEVICE),
            None => Ok(()),
        };
        let unloaded = self
            .driver
            .unload_module(loaded.module)
            .map_err(|e| failed("unloading an image", e));
        destructors.and(table).and(unloaded)
    }

    /// Gives the device runtime the image's indirect-call table (as LLVM's plugin does when it
    /// loads an image): device memory holding the sorted pairs, named in the device
    /// environment, which the device reads at each indirect call.
    fn set_indirect_calls(&self, handle: ImageHandle, calls: &[IndirectCall]) -> Result<()> {
        // Load time only: the image table stays locked while the table is placed.
        let mut images = write(&self.images);
        let image = index_of(handle.0, images.len())
            .and_then(|i| images[i].as_mut())
            .ok_or_else(|| invalid_handle("image", handle.0))?;
        if image.indirect_calls.is_some() {
            return Err(PluginError::invalid_argument(
                "the image's indirect calls were set already",
            ));
        }
        let address = place_indirect_call_table(
            calls,
            |size| self.alloc(size, 0, AllocKind::DEVICE),
            |address, table| {
                let (from, size) = (table.as_ptr() as usize, table.len() as u64);
                self.copy_to_device(address, from, size, QueueHandle::SYNC)
            },
            |table, count| self.write_device_environment(image, (table, count)),
            |address| {
                let _ = self.free(address, AllocKind::DEVICE);
            },
        )?;
        image.indirect_calls = Some(address as u64);
        Ok(())
    }

    // ---- kernels and globals ----

    fn get_kernel(&self, image: ImageHandle, name: &str) -> Result<KernelHandle> {
        let kernel = self.with_image(image, |loaded| {
            if !loaded.symbols.is_empty() && !loaded.symbols.functions().any(|f| f.name == name) {
                return Err(PluginError::new(
                    ErrorCode::NOT_FOUND,
                    format!("the image has no kernel '{name}'"),
                ));
            }
            self.activate()?;
            let function = self
                .driver
                .function(loaded.module, name)
                .map_err(|e| failed(format!("finding kernel '{name}'"), e))?;
            let function_max = self
                .driver
                .function_attribute(
                    function,
                    sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
                )
                .map_err(|e| failed(format!("reading the limits of '{name}'"), e))?;
            let environment = self.kernel_environment(loaded, name)?;
            if environment.is_none() {
                log::debug!(
                    "kernel '{name}' has no kernel environment: launching it as a bare kernel"
                );
            }
            Ok(Kernel {
                name: name.to_owned(),
                image,
                function,
                limits: KernelLimits::new(environment, &self.grid, function_max.max(1) as u32),
                dynamic_shared: Arc::new(self.dynamic_shared_limit(function)),
            })
        })?;
        let mut kernels = write(&self.kernels);
        let kernel = share_limit_with_earlier_handles(&kernels, kernel);
        kernels.push(Arc::new(kernel));
        Ok(KernelHandle(kernels.len() as u64))
    }

    fn get_global(&self, image: ImageHandle, name: &str, size: u64) -> Result<GlobalInfo> {
        self.with_image(image, |loaded| {
            self.activate()?;
            let (address, actual) = self
                .driver
                .global(loaded.module, name)
                .map_err(|e| failed(format!("finding global '{name}'"), e))?;
            if size != 0 && actual != size {
                return Err(PluginError::invalid_argument(format!(
                    "global '{name}' has {actual} bytes on the device and {size} on the host"
                )));
            }
            Ok(GlobalInfo {
                address: address as usize,
                size: actual,
            })
        })
    }

    // ---- launch ----

    fn launch_kernel(
        &self,
        handle: KernelHandle,
        args: &[usize],
        config: &LaunchConfig,
        queue: QueueHandle,
    ) -> Result<()> {
        let kernel = kernel_at(&self.kernels, handle)?;
        let (blocks, threads) = kernel.limits.dimensions(&self.grid, config);
        plugin_api::info::kernel_launch(
            self.identity.ordinal,
            config,
            &kernel.name,
            blocks,
            threads,
            kernel.limits.mode_name(config),
        );
        let shared = config.dyn_shared_mem.max(self.settings.shared_memory_size);
        // The driver launches in the current context (LLVM's plugin does not make it current
        // here, and fails on a thread whose first call is a launch).
        self.activate()?;
        self.reserve_shared_memory(&kernel, shared)?;
        self.on_queue(queue, |stream| {
            let mut packed = Vec::with_capacity(args.len() + 1);
            if config.kernel_args_version >= 3 {
                packed.push(self.launch_environment(&kernel.limits, stream)?);
            }
            packed.extend_from_slice(args);
            self.timed(queue, stream, || {
                self.driver
                    .launch(
                        kernel.function,
                        blocks,
                        threads,
                        shared,
                        stream,
                        &mut packed,
                    )
                    .map_err(|e| failed(format!("launching '{}'", kernel.name), e))
            })
        })
    }

    /// Launches a kernel-language (CUDA) kernel: its own parameter layout, exactly the grid and
    /// block asked for, no launch environment.
    fn launch_kernel_params(
        &self,
        handle: KernelHandle,
        params: &[u8],
        config: &LaunchConfig,
        queue: QueueHandle,
    ) -> Result<()> {
        let kernel = kernel_at(&self.kernels, handle)?;
        let grid = config.num_teams.map(|n| n.max(1));
        let block = config.thread_limit.map(|n| n.max(1));
        if plugin_api::info::enabled(plugin_api::info::PLUGIN_KERNEL) {
            plugin_api::info::line(
                self.identity.ordinal,
                &format!(
                    "Launching kernel {} with {grid:?} blocks and {block:?} threads (CUDA)",
                    kernel.name
                ),
            );
        }
        let shared = config.dyn_shared_mem;
        self.activate()?;
        self.reserve_shared_memory(&kernel, shared)?;
        let mut owned = params.to_vec();
        self.on_queue(queue, |stream| {
            self.timed(queue, stream, || {
                self.driver
                    .launch_grid(kernel.function, grid, block, shared, stream, &mut owned)
                    .map_err(|e| failed(format!("launching '{}'", kernel.name), e))
            })
        })
    }
}

impl CudaDevice {
    // ---- memory ----

    /// Device memory from the stream-ordered allocator, on a stream of its own: it does not
    /// wait for running kernels, so device-side malloc pools can grow while a kernel runs.
    fn alloc_non_blocking(&self, size: u64) -> driver::Result<u64> {
        if !self.driver.has_async_allocator() {
            return self.driver.alloc_device(size);
        }
        let stream = self.allocation_stream()?;
        let ptr = self.driver.alloc_async(size, stream)?;
        if let Err(e) = self.driver.synchronize(stream) {
            // The caller never sees the address: free it (stream-ordered, else synchronously).
            if self.driver.free_async(ptr, stream).is_err() {
                let _ = self.driver.free_device(ptr);
            }
            return Err(e);
        }
        Ok(ptr)
    }

    fn allocation_stream(&self) -> driver::Result<Stream> {
        let mut slot = lock(&self.allocation_stream);
        if let Some(s) = *slot {
            return Ok(s);
        }
        let s = self.driver.create_stream()?;
        *slot = Some(s);
        Ok(s)
    }

    /// Page-locks `[host, host + size)` for every context (the plugin counts pins, see
    /// `CudaPlugin::pin_memory`): the address the device uses for `host`, and whether this call
    /// locked it (`false`: the program or another library had registered it already; it stays
    /// registered after the last unpin).
    pub fn page_lock(&self, host: usize, size: u64) -> Result<(u64, bool)> {
        self.activate()?;
        let what = || format!("page-locking {size} bytes at {host:#x}");
        let ours = self
            .driver
            .register_host(host, size)
            .map_err(|e| failed(what(), e))?;
        match self.driver.host_device_pointer(host) {
            Ok(device) => Ok((device, ours)),
            Err(e) => {
                if ours {
                    let _ = self.driver.unregister_host(host);
                }
                Err(failed(what(), e))
            }
        }
    }

    /// Undoes `page_lock` of the range starting at `start`.
    pub fn page_unlock(&self, start: usize) -> Result<()> {
        self.activate()?;
        self.driver
            .unregister_host(start)
            .map_err(|e| failed(format!("unlocking {start:#x}"), e))
    }

    // ---- copies ----

    fn peer_access(&self, peer: &CudaDevice) -> Result<bool> {
        let index = peer.identity.ordinal as usize;
        let mut peers = lock(&self.peers);
        match peers.get(index).copied() {
            Some(PeerAccess::Enabled) => return Ok(true),
            Some(PeerAccess::Unavailable) | None => return Ok(false),
            Some(PeerAccess::Unknown) => {}
        }
        self.activate()?;
        let can = self
            .driver
            .can_access_peer(self.identity.handle, peer.identity.handle)
            .map_err(|e| failed("checking peer access", e))?;
        let state = if !can {
            PeerAccess::Unavailable
        } else {
            match self.driver.enable_peer_access(peer.context) {
                Ok(()) => PeerAccess::Enabled,
                Err(e) if e.code == driver::codes::TOO_MANY_PEERS => {
                    log::debug!("cuda: too many peers, copying through the driver instead");
                    PeerAccess::Unavailable
                }
                Err(e) => return Err(failed("enabling peer access", e)),
            }
        };
        peers[index] = state;
        Ok(state == PeerAccess::Enabled)
    }

    // ---- images ----

    fn with_image<T>(
        &self,
        handle: ImageHandle,
        f: impl FnOnce(&LoadedImage) -> Result<T>,
    ) -> Result<T> {
        let images = read(&self.images);
        let image = index_of(handle.0, images.len())
            .and_then(|i| images[i].as_ref())
            .ok_or_else(|| invalid_handle("image", handle.0))?;
        f(image)
    }

    fn has_symbol(&self, image: &LoadedImage, name: &str) -> bool {
        if !image.symbols.is_empty() {
            return image.symbols.find(name).is_some();
        }
        // PTX: only the driver knows its names.
        self.driver.global(image.module, name).is_ok()
            || self.driver.function(image.module, name).is_ok()
    }

    /// Writes `bytes` into a global of the image; `Ok(false)` if the image has no such global.
    fn write_global(&self, image: &LoadedImage, name: &str, bytes: &[u8]) -> Result<bool> {
        if !image.symbols.is_empty() && image.symbols.find(name).is_none() {
            return Ok(false);
        }
        let Ok((address, size)) = self.driver.global(image.module, name) else {
            return Ok(false);
        };
        if size != bytes.len() as u64 {
            return Err(PluginError::invalid_argument(format!(
                "the image's '{name}' has {size} bytes, the runtime expects {}: the image was \
                 built for another version of LLVM's device runtime",
                bytes.len()
            )));
        }
        self.copy_to_device(
            address as usize,
            bytes.as_ptr() as usize,
            size,
            QueueHandle::SYNC,
        )?;
        Ok(true)
    }

    fn read_device_word(&self, address: u64) -> Result<u64> {
        let mut value = 0u64;
        self.copy_from_device(
            &mut value as *mut u64 as usize,
            address as usize,
            8,
            QueueHandle::SYNC,
        )?;
        Ok(value)
    }

    /// Writes the image's device environment; `indirect_calls` is the indirect-call table's
    /// address and entry count.
    fn write_device_environment(
        &self,
        image: &LoadedImage,
        indirect_calls: (u64, u64),
    ) -> Result<()> {
        let env = DeviceEnvironment {
            debug_kind: self.settings.device_debug_kind,
            num_devices: self.plugin_devices,
            device_num: self.identity.ordinal as u32,
            dynamic_mem_size: self.settings.shared_memory_size,
            // CUDA's device clock as LLVM reports it (omp_get_wtick on the device).
            clock_frequency: 1_000_000_000,
            indirect_call_table: indirect_calls.0,
            indirect_call_table_size: indirect_calls.1,
            hardware_parallelism: self.hardware_parallelism,
        };
        if !self.write_global(image, "__omp_rtl_device_environment", &env.to_bytes())? {
            log::debug!("image has no __omp_rtl_device_environment; not an OpenMP image?");
        }
        Ok(())
    }

    /// Runs the image's global constructors (or destructors): the NVPTX backend leaves
    /// `__init_array_object_<name>_<priority>` pointers that the host gathers into the array
    /// the `nvptx$device$init` kernel walks.
    fn run_global_constructors(&self, image: &LoadedImage, constructors: bool) -> Result<()> {
        let (kernel, prefix, start, end) = if constructors {
            (
                "nvptx$device$init",
                "__init_array_object_",
                "__init_array_start",
                "__init_array_end",
            )
        } else {
            (
                "nvptx$device$fini",
                "__fini_array_object_",
                "__fini_array_start",
                "__fini_array_end",
            )
        };
        if !self.has_symbol(image, kernel) {
            return Ok(());
        }
        let mut entries: Vec<(u32, &str)> = image
            .symbols
            .with_prefix(prefix)
            .map(|s| {
                let priority = s.name.rsplit('_').next().and_then(|p| p.parse().ok());
                (priority.unwrap_or(u32::MAX), s.name.as_str())
            })
            .collect();
        entries.sort();
        let mut pointers = Vec::with_capacity(entries.len());
        for (_, name) in &entries {
            let (address, _) = self
                .driver
                .global(image.module, name)
                .map_err(|e| failed(format!("finding '{name}'"), e))?;
            pointers.push(self.read_device_word(address)?);
        }
        let bytes = (pointers.len().max(1) * 8) as u64;
        let array = self.alloc(bytes, 0, AllocKind::DEVICE)? as u64;
        let run = || -> Result<()> {
            if !pointers.is_empty() {
                self.copy_to_device(
                    array as usize,
                    pointers.as_ptr() as usize,
                    bytes,
                    QueueHandle::SYNC,
                )?;
            }
            let stop = array + pointers.len() as u64 * 8;
            self.write_global(image, start, &array.to_le_bytes())?;
            self.write_global(image, end, &stop.to_le_bytes())?;
            let function = self
                .driver
                .function(image.module, kernel)
                .map_err(|e| failed(format!("finding '{kernel}'"), e))?;
            self.on_queue(QueueHandle::SYNC, |s| {
                self.driver
                    .launch(function, [1; 3], [1; 3], 0, s, &mut [])
                    .map_err(|e| failed(format!("running '{kernel}'"), e))
            })
        };
        log::debug!(
            "cuda device {}: running {} global {} through '{kernel}'",
            self.identity.ordinal,
            pointers.len(),
            if constructors {
                "constructors"
            } else {
                "destructors"
            }
        );
        let result = run();
        let freed = self.free(array as usize, AllocKind::DEVICE);
        result.and(freed)
    }

    // ---- kernels and globals ----

    /// The kernel's dynamic shared memory limit as loaded (48 KiB less its static shared
    /// memory unless the image says otherwise), and its static shared memory.
    fn dynamic_shared_limit(&self, function: Function) -> DynamicSharedLimit {
        use sys::CUfunction_attribute as F;
        let read = |a| self.driver.function_attribute(function, a).ok();
        let static_bytes = read(F::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)
            .unwrap_or(0)
            .max(0) as u32;
        let current = read(F::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)
            .map(|v| v.max(0) as u32)
            .unwrap_or(DEFAULT_SHARED_BYTES.saturating_sub(static_bytes));
        DynamicSharedLimit::new(current, static_bytes)
    }

    /// Opts the kernel in to `bytes` of dynamic shared memory if its limit is lower (launches
    /// above the default 48 KiB fail otherwise).
    fn reserve_shared_memory(&self, kernel: &Kernel, bytes: u32) -> Result<()> {
        let set = |limit: u32| {
            self.driver.set_function_attribute(
                kernel.function,
                sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                limit as i32,
            )
        };
        match kernel
            .dynamic_shared
            .ensure(bytes, self.shared_memory_optin, set)
        {
            Ok(()) => Ok(()),
            Err(OptInError::TooLarge(e)) => Err(PluginError::invalid_argument(format!(
                "launching '{}' on cuda device {}: {e}",
                kernel.name, self.identity.ordinal
            ))),
            Err(OptInError::Driver(e)) => Err(failed(
                format!(
                    "allowing '{}' {bytes} bytes of dynamic shared memory",
                    kernel.name
                ),
                e,
            )),
        }
    }

    /// The kernel's `<name>_kernel_environment`, from the cubin's initial data as LLVM
    /// reads it, or from the device for PTX (whose symbols only the driver knows).
    fn kernel_environment(
        &self,
        image: &LoadedImage,
        kernel: &str,
    ) -> Result<Option<KernelEnvironment>> {
        let global = format!("{kernel}_kernel_environment");
        if !image.symbols.is_empty() {
            let initial = image
                .symbols
                .find(&global)
                .and_then(|s| s.initial.as_deref());
            return Ok(initial.and_then(KernelEnvironment::parse));
        }
        let Ok((address, size)) = self.driver.global(image.module, &global) else {
            return Ok(None);
        };
        let mut bytes = [0u8; KERNEL_ENVIRONMENT_SIZE];
        let n = (size as usize).min(bytes.len());
        self.copy_from_device(
            bytes.as_mut_ptr() as usize,
            address as usize,
            n as u64,
            QueueHandle::SYNC,
        )?;
        Ok(KernelEnvironment::parse(&bytes[..n]))
    }

    // ---- launch ----

    /// The implicit first kernel argument: a launch environment with a team-reduction
    /// buffer for kernels that need one, from the device's pool and back to it once the
    /// stream is synchronised.
    fn launch_environment(&self, limits: &KernelLimits, stream: Stream) -> Result<usize> {
        let bytes = limits.environment.map_or(0, |e| e.reduction_buffer_bytes());
        if bytes == 0 {
            return Ok(NO_LAUNCH_ENVIRONMENT);
        }
        let buffer = self.take_launch_buffer(bytes)?;
        let host = buffer.host_environment();
        // Rewritten every launch: the device runtime counts teams in it.
        let copied = self.driver.copy_to_device(
            buffer.address,
            host.as_ptr() as usize,
            host.len() as u64,
            stream,
        );
        let address = buffer.address as usize;
        // Deferred even if the copy failed: the stream may still read the host copy.
        self.defer(stream, Deferred::LaunchBuffer(buffer));
        copied.map_err(|e| failed("copying a launch environment", e))?;
        Ok(address)
    }

    /// A pooled launch buffer; when the device is out of memory, the idle buffers (perhaps
    /// too small) are freed and the allocation tried once more.
    fn take_launch_buffer(&self, bytes: u64) -> Result<LaunchBuffer> {
        let allocate = |size| self.driver.alloc_device(size);
        let out_of_memory = sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY as u32;
        let buffer = match self.launch_buffers.take(bytes, allocate) {
            Err(e) if e.code == out_of_memory && self.launch_buffers.idle_count() > 0 => {
                self.free_launch_buffers();
                self.launch_buffers.take(bytes, allocate)
            }
            other => other,
        };
        buffer.map_err(|e| failed(format!("allocating a {bytes}-byte reduction buffer"), e))
    }

    fn free_launch_buffers(&self) {
        for address in self.launch_buffers.drain() {
            if let Err(e) = self.driver.free_device(address) {
                log::warn!("cuda device {}: {e}", self.identity.ordinal);
            }
        }
    }

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
                return Ok(());
            }
            return Err(failed("making the device's context current", e));
        }
        let handles: Vec<u64> = (1..=read(&self.images).len() as u64).collect();
        let mut first_error = None;
        for h in handles {
            let present = read(&self.images)[h as usize - 1].is_some();
            if present {
                if let Err(e) = self.unload_image(ImageHandle(h)) {
                    first_error.get_or_insert(e);
                }
            }
        }
        // Launches still deferred were never synchronised; their buffers go with the rest.
        let pending = std::mem::take(&mut *lock(&self.deferred));
        for item in pending.into_values().flatten() {
            self.complete(item);
        }
        self.free_launch_buffers();
        if let Some(s) = lock(&self.allocation_stream).take() {
            let _ = self.driver.destroy_stream(s);
        }
        self.timer.destroy_all(&*self.driver);
        let (busy_streams, e1) = self.streams.destroy_all(&self.driver);
        let (busy_events, e2) = self.events.destroy_all(&self.driver);
        if busy_streams + busy_events > 0 {
            log::debug!(
                "cuda device {}: {busy_streams} streams and {busy_events} events were still in use",
                self.identity.ordinal
            );
        }
        for e in [e1, e2].into_iter().flatten() {
            first_error.get_or_insert(failed("destroying a pooled object", e));
        }
        if let Err(e) = self.driver.release_primary_context(self.identity.handle) {
            first_error.get_or_insert(failed("releasing the primary context", e));
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

/// A kernel looked up again (same image, same function) gets the earlier handle's shared
/// memory limit: two records of one driver limit could disagree, and one could lower it.
fn share_limit_with_earlier_handles(kernels: &[Arc<Kernel>], mut kernel: Kernel) -> Kernel {
    let earlier = kernels
        .iter()
        .find(|k| k.image == kernel.image && k.function == kernel.function);
    if let Some(earlier) = earlier {
        kernel.dynamic_shared = Arc::clone(&earlier.dynamic_shared);
    }
    kernel
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kernel(name: &str) -> Kernel {
        Kernel {
            name: name.into(),
            image: ImageHandle(1),
            function: Function(std::ptr::null_mut()),
            limits: KernelLimits::new(None, &GridValues::NVPTX, 1024),
            dynamic_shared: Arc::new(DynamicSharedLimit::new(DEFAULT_SHARED_BYTES, 0)),
        }
    }

    #[test]
    fn handles_to_one_function_share_its_shared_memory_limit() {
        let first = Arc::new(kernel("a"));
        first
            .dynamic_shared
            .ensure(64 * 1024, 100 * 1024, |_| Ok::<(), ()>(()))
            .unwrap();
        let table = vec![first];
        let again = share_limit_with_earlier_handles(&table, kernel("a"));
        assert_eq!(again.dynamic_shared.current(), 64 * 1024);
        // A smaller request through the second handle must not lower the driver's limit.
        let lowered = again
            .dynamic_shared
            .ensure(50 * 1024, 100 * 1024, |_| Err(()));
        assert!(lowered.is_ok());
        let other_image = Kernel {
            image: ImageHandle(2),
            ..kernel("a")
        };
        let other = share_limit_with_earlier_handles(&table, other_image);
        assert_eq!(other.dynamic_shared.current(), DEFAULT_SHARED_BYTES);
    }

    #[test]
    fn a_launch_does_not_hold_the_kernel_table() {
        let table = RwLock::new(vec![Arc::new(kernel("a"))]);
        let taken = kernel_at(&table, KernelHandle(1)).unwrap();
        // Another thread may add a kernel while this launch is under way.
        table.try_write().unwrap().push(Arc::new(kernel("b")));
        assert_eq!(taken.name, "a");
        assert_eq!(kernel_at(&table, KernelHandle(2)).unwrap().name, "b");
    }

    #[test]
    fn kernel_handles_are_one_based() {
        let table = RwLock::new(vec![Arc::new(kernel("a"))]);
        assert!(kernel_at(&table, KernelHandle(0)).is_err());
        assert!(kernel_at(&table, KernelHandle(2)).is_err());
    }
}
