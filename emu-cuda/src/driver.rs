//! The emulated driver's state: devices with their primary contexts and memory, and the handles
//! it gave out (streams, events, modules, functions), each checked on every use so that a stale
//! or wrong handle is `CUDA_ERROR_INVALID_HANDLE` rather than undefined behaviour.

use crate::config;
use crate::image::{Kernel, ModuleImage};
use crate::memory::{AddressBook, DeviceMemory, Kind, Region};
use crate::status::{self, Result};
use crate::streams::{Event, Stream};
use offload_image::twin::{Twin, TwinKernel};
use std::cell::Cell;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use sync_util::lock;

/// The legacy default stream and its aliases: the null handle, `CU_STREAM_LEGACY`,
/// `CU_STREAM_PER_THREAD` (treated as the legacy stream).
pub fn is_default_stream(handle: usize) -> bool {
    handle <= 2
}

pub struct Driver {
    pub devices: Vec<Device>,
    pub book: AddressBook,
    pub streams: Handles<Stream>,
    pub events: Handles<Event>,
    pub modules: Handles<Module>,
    pub functions: Handles<Function>,
}

pub struct Device {
    pub index: usize,
    pub memory: DeviceMemory,
    pub context: Context,
}

pub struct Context {
    pub state: Mutex<ContextState>,
    /// The sticky error of a kernel fault (0: none): every call on the context returns it
    /// until the primary context is released for the last time.
    pub sticky: AtomicU32,
}

pub struct ContextState {
    pub retained: u32,
    pub flags: u32,
    /// `CUlimit` values: stack, printf FIFO, malloc heap, runtime sync depth, pending launches,
    /// L2 fetch granularity, persisting L2.
    pub limits: [usize; 7],
    pub peers: HashSet<usize>,
    pub streams: Vec<Arc<Stream>>,
}

static DRIVER: OnceLock<Driver> = OnceLock::new();

thread_local! {
    /// The calling thread's current context (its device index + 1; 0: none).
    static CURRENT: Cell<usize> = const { Cell::new(0) };
}

/// `cuInit`: builds the devices once.
pub fn init() -> Result<&'static Driver> {
    if let Some(driver) = DRIVER.get() {
        return Ok(driver);
    }
    let settings = config::get();
    if settings.devices == 0 {
        return Err(status::NO_DEVICE);
    }
    let mut devices = Vec::new();
    for index in 0..settings.devices {
        let memory = DeviceMemory::reserve(index, settings.memory).map_err(|e| {
            eprintln!("omptarget-emu (CUDA): {e}");
            status::OUT_OF_MEMORY
        })?;
        devices.push(Device {
            index,
            memory,
            context: Context {
                state: Mutex::new(ContextState {
                    retained: 0,
                    flags: 0,
                    limits: [1024, 1 << 20, 8 << 20, 2, 2048, 32, 0],
                    peers: HashSet::new(),
                    streams: Vec::new(),
                }),
                sticky: AtomicU32::new(0),
            },
        });
    }
    let first = DRIVER
        .set(Driver {
            devices,
            book: AddressBook::default(),
            streams: Handles::new(0xc5),
            events: Handles::new(0xe5),
            modules: Handles::new(0x3d),
            functions: Handles::new(0xf5),
        })
        .is_ok();
    if first && !late_teardown() {
        register_teardown();
    }
    Ok(DRIVER.get().unwrap())
}

/// Set by the driver's own exit handler: from then on every call fails with
/// `CUDA_ERROR_DEINITIALIZED`, as the real driver's do once it has torn itself down.
static TORN_DOWN: AtomicBool = AtomicBool::new(false);

pub fn torn_down() -> bool {
    TORN_DOWN.load(Ordering::Acquire)
}

extern "C" fn tear_down() {
    TORN_DOWN.store(true, Ordering::Release);
}

/// The real driver registers an exit handler as it initialises, which releases every context
/// and fails later calls; handlers registered before `cuInit` therefore run after it (seen on
/// an H100 with driver 580: `cuCtxSetCurrent` answered `CUDA_ERROR_DEINITIALIZED` there).
fn register_teardown() {
    extern "C" {
        fn atexit(handler: extern "C" fn()) -> std::ffi::c_int;
    }
    // SAFETY: registers a function without arguments that only stores a flag; the emulated
    // driver is a dependency of whoever initialised it and is not unloaded before exit.
    unsafe { atexit(tear_down) };
}

/// `OMPTARGET_EMU_LATE_TEARDOWN`: the exit handler is registered at the first kernel launch
/// instead of in `cuInit`, after the handlers a runtime registered as it started its plugin:
/// it then runs before them, and their shutdown finds the driver gone.
fn late_teardown() -> bool {
    static LATE: OnceLock<bool> = OnceLock::new();
    *LATE.get_or_init(|| std::env::var_os("OMPTARGET_EMU_LATE_TEARDOWN").is_some())
}

/// At each launch: registers the late exit handler, once, when asked for.
pub fn launched() {
    static REGISTERED: std::sync::Once = std::sync::Once::new();
    if late_teardown() {
        REGISTERED.call_once(register_teardown);
    }
}

/// The driver, once `cuInit` has run.
pub fn get() -> Result<&'static Driver> {
    DRIVER.get().ok_or(status::NOT_INITIALIZED)
}

impl Driver {
    pub fn device(&self, ordinal: i32) -> Result<&Device> {
        usize::try_from(ordinal)
            .ok()
            .and_then(|i| self.devices.get(i))
            .ok_or(status::INVALID_DEVICE)
    }

    /// The handle of a device's primary context: its address, stable for the process.
    pub fn context_handle(&self, device: usize) -> usize {
        &self.devices[device].context as *const Context as usize
    }

    pub fn context_by_handle(&self, handle: usize) -> Result<&Device> {
        self.devices
            .iter()
            .find(|d| self.context_handle(d.index) == handle)
            .ok_or(status::INVALID_CONTEXT)
    }

    /// The calling thread's current context, which must be retained (active).
    pub fn current(&self) -> Result<&Device> {
        let index = CURRENT
            .with(|c| c.get())
            .checked_sub(1)
            .ok_or(status::INVALID_CONTEXT)?;
        let device = &self.devices[index];
        if lock(&device.context.state).retained == 0 {
            return Err(status::INVALID_CONTEXT);
        }
        Ok(device)
    }

    pub fn set_current(&self, handle: usize) -> Result<()> {
        if handle == 0 {
            CURRENT.with(|c| c.set(0));
            return Ok(());
        }
        let device = self.context_by_handle(handle)?;
        if lock(&device.context.state).retained == 0 {
            return Err(status::INVALID_CONTEXT);
        }
        CURRENT.with(|c| c.set(device.index + 1));
        Ok(())
    }

    /// The device's context has no sticky error.
    pub fn usable(&self, device: usize) -> Result<()> {
        match self.devices[device].context.sticky.load(Ordering::Acquire) {
            0 => Ok(()),
            code => Err(status::Error(code)),
        }
    }

    /// A kernel of `device` faulted (on `stream`, if known): `error` becomes the context's
    /// sticky error, as on hardware, and its streams are abandoned, the faulting kernel's
    /// counting as done, so that nothing waits for it forever.
    pub fn kernel_faulted(
        &self,
        device: usize,
        error: status::Error,
        stream: Option<&Arc<Stream>>,
    ) {
        let _ = self.devices[device].context.sticky.compare_exchange(
            0,
            error.0,
            Ordering::AcqRel,
            Ordering::Acquire,
        );
        if let Some(stream) = stream {
            stream.abandon(true);
        }
        let streams = lock(&self.devices[device].context.state).streams.clone();
        for other in streams {
            if !stream.is_some_and(|s| Arc::ptr_eq(s, &other)) {
                other.abandon(false);
            }
        }
    }

    /// A stream of the current context's device, or `None` for the legacy default stream.
    pub fn stream(&self, handle: usize, device: usize) -> Result<Option<Arc<Stream>>> {
        if is_default_stream(handle) {
            return Ok(None);
        }
        let stream = self.streams.get(handle)?;
        if stream.device != device {
            return Err(status::INVALID_HANDLE);
        }
        Ok(Some(stream))
    }

    /// What the legacy default stream waits for: all blocking streams of the device.
    pub fn legacy_sync(&self, device: usize) {
        let streams = lock(&self.devices[device].context.state).streams.clone();
        for stream in streams.iter().filter(|s| s.blocking) {
            stream.wait_idle();
        }
    }

    /// What `cuMemAlloc`, `cuMemFree` and `cuCtxSynchronize` wait for: every stream.
    pub fn device_sync(&self, device: usize) {
        let streams = lock(&self.devices[device].context.state).streams.clone();
        for stream in streams {
            stream.wait_idle();
        }
    }

    /// Device memory of `size` bytes on `device`, recorded in the address book.
    pub fn allocate(&self, device: usize, size: usize, kind: Kind) -> Result<usize> {
        let start = self.devices[device].memory.allocate(size)?;
        self.book.insert(Region {
            start,
            size,
            kind,
            device: Some(device),
        });
        Ok(start)
    }

    /// Frees an allocation of `kinds` starting at `start`.
    pub fn free(&self, start: usize, kinds: &[Kind]) -> Result<()> {
        match self.book.find(start, 0) {
            Some(r) if r.start == start && kinds.contains(&r.kind) => {
                self.book.remove(start);
                let device = r.device.ok_or(status::INVALID_VALUE)?;
                self.devices[device].memory.free(start).map(|_| ())
            }
            _ => Err(status::INVALID_VALUE),
        }
    }

    /// Releases everything of a device whose primary context was released for the last time.
    /// The next retain makes a new context, without the old one's sticky error.
    pub fn tear_down(&self, device: usize) {
        let streams = std::mem::take(&mut lock(&self.devices[device].context.state).streams);
        for stream in &streams {
            stream.wait_idle();
            stream.close();
        }
        self.devices[device]
            .context
            .sticky
            .store(0, Ordering::Release);
        self.streams.remove_where(|s| s.device == device);
        for (handle, module) in self.modules.remove_where(|m| m.device == device) {
            self.unload(handle, &module);
        }
        // A module's globals go with the module; mapped memory with its reservation, which
        // belongs to the process (`vmm`), not to the context.
        for region in self.book.regions_of(device) {
            if !matches!(region.kind, Kind::ModuleGlobal | Kind::Mapped) {
                let _ = self.free(region.start, &[region.kind]);
            }
        }
    }

    /// Frees a module's storage and forgets its functions (the module is already removed).
    pub fn unload(&self, handle: usize, module: &Module) {
        self.functions.remove_where(|f| f.module == handle);
        for &start in &module.storage {
            self.book.remove(start);
            let _ = self.devices[module.device].memory.free(start);
        }
        for &start in lock(&module.twin_regions).iter() {
            self.book.remove(start);
        }
    }
}

/// Handles of one kind: process-unique values with a tag byte, so a handle of another kind (or
/// a destroyed one) is refused.
pub struct Handles<T> {
    tag: usize,
    next: AtomicUsize,
    live: Mutex<HashMap<usize, Arc<T>>>,
}

impl<T> Handles<T> {
    pub fn new(tag: usize) -> Self {
        Handles {
            tag,
            next: AtomicUsize::new(1),
            live: Mutex::new(HashMap::new()),
        }
    }

    pub fn insert(&self, value: Arc<T>) -> usize {
        let handle = (self.tag << 40) | (self.next.fetch_add(1, Ordering::Relaxed) << 4);
        lock(&self.live).insert(handle, value);
        handle
    }

    pub fn get(&self, handle: usize) -> Result<Arc<T>> {
        lock(&self.live)
            .get(&handle)
            .cloned()
            .ok_or(status::INVALID_HANDLE)
    }

    pub fn remove(&self, handle: usize) -> Result<Arc<T>> {
        lock(&self.live)
            .remove(&handle)
            .ok_or(status::INVALID_HANDLE)
    }

    fn remove_where(&self, doomed: impl Fn(&T) -> bool) -> Vec<(usize, Arc<T>)> {
        let mut live = lock(&self.live);
        let handles: Vec<usize> = live
            .iter()
            .filter(|(_, v)| doomed(v))
            .map(|(&h, _)| h)
            .collect();
        handles
            .into_iter()
            .filter_map(|h| live.remove(&h).map(|v| (h, v)))
            .collect()
    }
}

pub struct Module {
    pub device: usize,
    pub image: ModuleImage,
    /// Device address of each of the image's data sections.
    pub storage: Vec<usize>,
    pub twin: Option<Twin>,
    /// The twin's code, registered so that a fault in it is its kernel's.
    pub code: Option<omptarget_emu_support::kernel_faults::Code>,
    /// Twin variables handed out as device addresses (recorded in the address book).
    pub twin_regions: Mutex<Vec<usize>>,
    /// Function handles already given out, by name (the driver hands out one per kernel).
    pub functions: Mutex<HashMap<String, usize>>,
}

impl Module {
    /// The device address and size of global `name`: the twin's variable if the twin has it
    /// (so kernels, which run in the twin, and copies see one variable), else the cubin's.
    pub fn global(&self, name: &str, book: &AddressBook) -> Result<(usize, usize)> {
        let global = self.image.globals.get(name).ok_or(status::NOT_FOUND)?;
        if let Some(address) = self.twin.as_ref().and_then(|t| t.symbol(name)) {
            let mut regions = lock(&self.twin_regions);
            if !regions.contains(&address) {
                book.insert(Region {
                    start: address,
                    size: global.size.max(1),
                    kind: Kind::ModuleGlobal,
                    device: Some(self.device),
                });
                regions.push(address);
            }
            return Ok((address, global.size));
        }
        Ok((self.storage[global.section] + global.offset, global.size))
    }
}

pub struct Function {
    pub module: usize,
    pub device: usize,
    pub name: String,
    pub kernel: Kernel,
    /// The twin's kernel of the same name.
    pub entry: Option<TwinKernel>,
    /// `CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`.
    pub max_dynamic_shared: AtomicU32,
    /// Keeps the module (and its twin) loaded while its launches are queued.
    pub _module: Arc<Module>,
}
