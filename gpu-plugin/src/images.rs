//! The life of an image on a GPU, written once over each vendor's driver primitives (LLVM's
//! `GenericDeviceTy::loadBinary`, `setupDeviceEnvironment`, `setupDeviceMemoryPool`,
//! `callGlobalConstructors` and `unloadBinary`): once the vendor's driver has loaded a module,
//! the device runtime's globals are filled in, its RPC client is connected, the module's
//! global constructors run, and the image gets its handle; unloading runs the destructors,
//! frees what was placed for the image and unloads the module.

use crate::rpc::protocol::Protocol;
use crate::{indirect_call_table, DeviceEnvironment, HandleTable};
use plugin_api::{AllocKind, Device, ErrorCode, GlobalInfo, ImageHandle, IndirectCall};
use plugin_api::{PluginError, QueueHandle};
use std::sync::{Arc, Mutex};
use sync_util::lock;

type Result<T> = std::result::Result<T, PluginError>;

/// The device runtime's globals the host fills in.
const DEVICE_ENVIRONMENT: &str = "__omp_rtl_device_environment";
const MEMORY_POOL: &str = "__omp_rtl_device_memory_pool";
const MEMORY_POOL_TRACKER: &str = "__omp_rtl_device_memory_pool_tracker";

/// How a vendor's images run their global constructors and destructors.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Constructors {
    /// Kernels the compiler made that walk the image's init and fini arrays themselves
    /// (AMDGPU: `amdgcn.device.init` and `amdgcn.device.fini`), run on one thread.
    Kernels {
        init: &'static str,
        fini: &'static str,
    },
    /// NVPTX: the backend leaves one `__init_array_object_<name>_<priority>` (or `__fini_…`)
    /// pointer per function, which the host gathers in priority order into an array, names in
    /// `__init_array_start`/`__init_array_end`, and has `nvptx$device$init` (or `…fini`) walk.
    GatheredArrays,
}

/// Device memory as the image life cycle uses it: every call has finished when it returns.
/// Every plugin device has it, through its ABI calls on `QueueHandle::SYNC`.
pub trait SyncMemory {
    fn alloc(&self, size: u64) -> Result<u64>;
    fn free(&self, address: u64) -> Result<()>;
    fn write(&self, address: u64, bytes: &[u8]) -> Result<()>;
    fn read(&self, address: u64, bytes: &mut [u8]) -> Result<()>;
}

impl<T: Device> SyncMemory for T {
    fn alloc(&self, size: u64) -> Result<u64> {
        Device::alloc(self, size, 0, AllocKind::DEVICE).map(|a| a as u64)
    }

    fn free(&self, address: u64) -> Result<()> {
        Device::free(self, address as usize, AllocKind::DEVICE)
    }

    fn write(&self, address: u64, bytes: &[u8]) -> Result<()> {
        let (from, size) = (bytes.as_ptr() as usize, bytes.len() as u64);
        // SAFETY: `bytes` outlives the synchronous copy.
        unsafe { self.copy_to_device(address as usize, from, size, QueueHandle::SYNC) }
    }

    fn read(&self, address: u64, bytes: &mut [u8]) -> Result<()> {
        let (to, size) = (bytes.as_mut_ptr() as usize, bytes.len() as u64);
        // SAFETY: `bytes` is borrowed mutably for the synchronous copy.
        unsafe { self.copy_from_device(to, address as usize, size, QueueHandle::SYNC) }
    }
}

/// The driver primitives the image life cycle needs from a GPU plugin's device. Every call is
/// synchronous: it has finished when it returns.
pub trait ImageDriver: SyncMemory {
    /// A module the driver loaded, with what the plugin read of its image (a CUDA module and
    /// its symbol table, an HSA executable and its code object).
    type Module: Send + Sync;

    /// How this vendor's images run their constructors and destructors.
    const CONSTRUCTORS: Constructors;

    /// The device's number within the plugin, for messages.
    fn ordinal(&self) -> i32;
    /// The device environment of this device, without an indirect-call table.
    fn device_environment(&self) -> DeviceEnvironment;
    /// The size of the pool the device runtime's `malloc` allocates from, where the host
    /// provides one (`__omp_rtl_device_memory_pool`); `None` where device-side `malloc` is the
    /// driver's own.
    fn malloc_pool_size(&self) -> Option<u64>;

    /// The device address and size of the module's global `name`; `None` if it has none.
    fn global(&self, module: &Self::Module, name: &str) -> Result<Option<(u64, u64)>>;
    /// Whether the module has the kernel `name`.
    fn has_kernel(&self, module: &Self::Module, name: &str) -> bool;
    /// The names of the module's globals that start with `prefix`.
    fn globals_with_prefix(&self, module: &Self::Module, prefix: &str) -> Vec<String>;
    /// Runs the module's kernel `name`, which takes no arguments, on one thread.
    fn run_on_one_thread(&self, module: &Self::Module, name: &str) -> Result<()>;
    /// Unloads the module.
    fn unload_module(&self, module: Self::Module) -> Result<()>;
    /// Gives the device code's RPC client (named by the module's global of `protocol`, `size`
    /// bytes at `address`) the device's mailbox; a device without an RPC server has nothing
    /// to do.
    fn connect_rpc(&self, protocol: Protocol, address: u64, size: u64) -> Result<()> {
        let _ = (protocol, address, size);
        Ok(())
    }
}

/// One loaded image.
pub struct Image<M> {
    /// Taken when the image is unloaded; a thread still holding the image then finds it gone.
    module: Mutex<Option<M>>,
    /// The device runtime's indirect-call table, freed with the image.
    indirect_calls: Mutex<Option<u64>>,
}

impl<M> Image<M> {
    /// Calls `f` with the module, unless the image was unloaded meanwhile.
    pub fn with_module<T>(&self, f: impl FnOnce(&M) -> Result<T>) -> Result<T> {
        let module = lock(&self.module);
        let module = module
            .as_ref()
            .ok_or_else(|| PluginError::invalid_argument("the image was unloaded"))?;
        f(module)
    }
}

/// A device's loaded images behind their handles, and the device-side `malloc` pool they
/// share.
pub struct Images<M> {
    table: HandleTable<Arc<Image<M>>>,
    /// Allocated for the first image that asks; `(0, 0)` if that allocation failed.
    malloc_pool: Mutex<Option<(u64, u64)>>,
}

impl<M> Default for Images<M> {
    fn default() -> Self {
        Images {
            table: HandleTable::new(),
            malloc_pool: Mutex::new(None),
        }
    }
}

impl<M: Send + Sync> Images<M> {
    /// Takes in a module the driver has just loaded: fills in the device runtime's globals
    /// and runs the module's constructors. On failure the module is unloaded again.
    pub fn add<D: ImageDriver<Module = M>>(&self, device: &D, module: M) -> Result<ImageHandle> {
        let prepared = write_device_environment(device, &module, (0, 0))
            .and_then(|()| self.provide_malloc_pool(device, &module))
            .and_then(|()| connect_rpc_client(device, &module))
            .and_then(|()| run_constructors(device, &module, Phase::Init));
        if let Err(e) = prepared {
            if let Err(unloading) = device.unload_module(module) {
                log::debug!("device {}: {unloading}", device.ordinal());
            }
            return Err(e);
        }
        let image = Image {
            module: Mutex::new(Some(module)),
            indirect_calls: Mutex::new(None),
        };
        Ok(ImageHandle(self.table.insert(Arc::new(image))))
    }

    /// The image behind `handle`.
    pub fn get(&self, handle: ImageHandle) -> Result<Arc<Image<M>>> {
        self.table
            .get(handle.0)
            .ok_or_else(|| invalid_image(handle))
    }

    /// The device address and size of the image's global `name` (the ABI's `get_global`):
    /// `size`, when not 0, is the host's size of it, which the device's must match.
    pub fn global<D: ImageDriver<Module = M>>(
        &self,
        device: &D,
        handle: ImageHandle,
        name: &str,
        size: u64,
    ) -> Result<GlobalInfo> {
        let (address, actual) = self.get(handle)?.with_module(|module| {
            device.global(module, name)?.ok_or_else(|| {
                PluginError::new(
                    ErrorCode::NOT_FOUND,
                    format!("the image has no global '{name}'"),
                )
            })
        })?;
        if size != 0 && actual != size {
            return Err(PluginError::invalid_argument(format!(
                "global '{name}' has {actual} bytes on the device and {size} on the host"
            )));
        }
        Ok(GlobalInfo {
            address: address as usize,
            size: actual,
        })
    }

    /// Runs the image's destructors, frees what was placed for it and unloads its module. The
    /// handle is dead from then on, whatever fails; the first failure is returned.
    pub fn remove<D: ImageDriver<Module = M>>(
        &self,
        device: &D,
        handle: ImageHandle,
    ) -> Result<()> {
        let image = self
            .table
            .remove(handle.0)
            .ok_or_else(|| invalid_image(handle))?;
        unload(device, &image)
    }

    /// Gives the device runtime the image's indirect-call table (as LLVM's plugin does when
    /// it loads an image): device memory holding the sorted pairs, named in the device
    /// environment, which the device reads at each indirect call.
    pub fn set_indirect_calls<D: ImageDriver<Module = M>>(
        &self,
        device: &D,
        handle: ImageHandle,
        calls: &[IndirectCall],
    ) -> Result<()> {
        let image = self.get(handle)?;
        let mut slot = lock(&image.indirect_calls);
        if slot.is_some() {
            return Err(PluginError::invalid_argument(
                "the image's indirect calls were set already",
            ));
        }
        let table = indirect_call_table(calls);
        let address = device.alloc(table.len() as u64)?;
        let placed = device.write(address, &table).and_then(|()| {
            image.with_module(|module| {
                write_device_environment(device, module, (address, calls.len() as u64))
            })
        });
        if let Err(e) = placed {
            if let Err(freeing) = device.free(address) {
                log::debug!("device {}: {freeing}", device.ordinal());
            }
            return Err(e);
        }
        *slot = Some(address);
        Ok(())
    }

    /// Unloads every image still loaded and frees the `malloc` pool (the device is being shut
    /// down); the first failure is returned after everything was tried.
    pub fn unload_all<D: ImageDriver<Module = M>>(&self, device: &D) -> Result<()> {
        let mut result = Ok(());
        for image in self.table.drain() {
            if let Err(e) = unload(device, &image) {
                result = result.and(Err(e));
            }
        }
        if let Some((address, _)) = lock(&self.malloc_pool).take() {
            if address != 0 {
                if let Err(e) = device.free(address) {
                    result = result.and(Err(e));
                }
            }
        }
        result
    }

    /// Gives the image's device-side `malloc` its pool (`LIBOMPTARGET_HEAP_SIZE`), one per
    /// device, shared by its images, and zeroes the image's pool statistics.
    fn provide_malloc_pool<D: ImageDriver<Module = M>>(
        &self,
        device: &D,
        module: &M,
    ) -> Result<()> {
        let Some(size) = device.malloc_pool_size() else {
            return Ok(());
        };
        let Some(pool_global) = device.global(module, MEMORY_POOL)? else {
            return Ok(());
        };
        let (address, size) = *lock(&self.malloc_pool).get_or_insert_with(|| {
            device.alloc(size).map(|a| (a, size)).unwrap_or_else(|e| {
                log::warn!("no device memory pool for device-side malloc: {e}");
                (0, 0)
            })
        });
        if let Some(tracker) = device.global(module, MEMORY_POOL_TRACKER)? {
            // {allocations, bytes, smallest, largest}
            let zeroed = words(&[0, 0, u64::MAX, 0]);
            write_exactly(device, MEMORY_POOL_TRACKER, tracker, &zeroed)?;
        }
        write_exactly(device, MEMORY_POOL, pool_global, &words(&[address, size]))
    }
}

/// Gives the module's RPC client, if its device code has one, the device's mailbox.
fn connect_rpc_client<D: ImageDriver>(device: &D, module: &D::Module) -> Result<()> {
    for protocol in Protocol::ALL {
        if let Some((address, size)) = device.global(module, protocol.client_symbol())? {
            return device.connect_rpc(protocol, address, size);
        }
    }
    Ok(())
}

fn invalid_image(handle: ImageHandle) -> PluginError {
    PluginError::invalid_argument(format!("no image with handle {} on this device", handle.0))
}

fn unload<D: ImageDriver>(device: &D, image: &Image<D::Module>) -> Result<()> {
    let Some(module) = lock(&image.module).take() else {
        return Ok(());
    };
    let destructors = run_constructors(device, &module, Phase::Fini);
    let table = match lock(&image.indirect_calls).take() {
        Some(address) => device.free(address),
        None => Ok(()),
    };
    let unloaded = device.unload_module(module);
    destructors.and(table).and(unloaded)
}

fn words(values: &[u64]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// Writes `bytes` to a global of the device runtime, which must have their size: another size
/// means the image was built for another version of LLVM's device runtime.
fn write_exactly<D: ImageDriver>(
    device: &D,
    name: &str,
    (address, size): (u64, u64),
    bytes: &[u8],
) -> Result<()> {
    if size != bytes.len() as u64 {
        return Err(PluginError::invalid_argument(format!(
            "the image's '{name}' has {size} bytes, the runtime expects {}: the image was built \
             for another version of LLVM's device runtime",
            bytes.len()
        )));
    }
    device.write(address, bytes)
}

/// Writes the image's device environment; `indirect_calls` is the indirect-call table's
/// address and entry count.
fn write_device_environment<D: ImageDriver>(
    device: &D,
    module: &D::Module,
    indirect_calls: (u64, u64),
) -> Result<()> {
    let Some(global) = device.global(module, DEVICE_ENVIRONMENT)? else {
        log::debug!("image has no {DEVICE_ENVIRONMENT}; not an OpenMP image?");
        return Ok(());
    };
    let environment = DeviceEnvironment {
        indirect_call_table: indirect_calls.0,
        indirect_call_table_size: indirect_calls.1,
        ..device.device_environment()
    };
    write_exactly(device, DEVICE_ENVIRONMENT, global, &environment.to_bytes())
}

#[derive(Copy, Clone, PartialEq, Eq)]
enum Phase {
    Init,
    Fini,
}

/// Runs the module's global constructors or destructors, if it has any.
fn run_constructors<D: ImageDriver>(device: &D, module: &D::Module, phase: Phase) -> Result<()> {
    match D::CONSTRUCTORS {
        Constructors::Kernels { init, fini } => {
            let kernel = if phase == Phase::Init { init } else { fini };
            if !device.has_kernel(module, kernel) {
                return Ok(());
            }
            device.run_on_one_thread(module, kernel)
        }
        Constructors::GatheredArrays => run_gathered_array(device, module, phase),
    }
}

fn run_gathered_array<D: ImageDriver>(device: &D, module: &D::Module, phase: Phase) -> Result<()> {
    let (kernel, prefix, start, end) = match phase {
        Phase::Init => (
            "nvptx$device$init",
            "__init_array_object_",
            "__init_array_start",
            "__init_array_end",
        ),
        Phase::Fini => (
            "nvptx$device$fini",
            "__fini_array_object_",
            "__fini_array_start",
            "__fini_array_end",
        ),
    };
    if !device.has_kernel(module, kernel) {
        return Ok(());
    }
    let mut entries: Vec<(u32, String)> = device
        .globals_with_prefix(module, prefix)
        .into_iter()
        .map(|name| {
            let priority = name.rsplit('_').next().and_then(|p| p.parse().ok());
            (priority.unwrap_or(u32::MAX), name)
        })
        .collect();
    entries.sort();
    let mut pointers = Vec::with_capacity(entries.len());
    for (_, name) in &entries {
        let (address, _) = device.global(module, name)?.ok_or_else(|| {
            PluginError::invalid_argument(format!(
                "the image lists '{name}' but has no such global"
            ))
        })?;
        let mut word = [0u8; 8];
        device.read(address, &mut word)?;
        pointers.push(u64::from_le_bytes(word));
    }
    let bytes = words(&pointers);
    let array = device.alloc(bytes.len().max(8) as u64)?;
    let run = || -> Result<()> {
        if !bytes.is_empty() {
            device.write(array, &bytes)?;
        }
        let stop = array + bytes.len() as u64;
        for (name, value) in [(start, array), (end, stop)] {
            if let Some(global) = device.global(module, name)? {
                write_exactly(device, name, global, &value.to_le_bytes())?;
            }
        }
        device.run_on_one_thread(module, kernel)
    };
    log::debug!(
        "device {}: running {} global {} through '{kernel}'",
        device.ordinal(),
        pointers.len(),
        if phase == Phase::Init {
            "constructors"
        } else {
            "destructors"
        }
    );
    let result = run();
    let freed = device.free(array);
    result.and(freed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::sync::atomic::{AtomicU64, Ordering};

    /// A device whose memory is a map of allocations and whose modules are symbol tables; it
    /// records the kernels it ran.
    struct FakeDevice {
        memory: Mutex<HashMap<u64, Vec<u8>>>,
        next: AtomicU64,
        ran: Mutex<Vec<String>>,
        unloaded: Mutex<Vec<String>>,
        pool: Option<u64>,
        failing: bool,
    }

    struct FakeModule {
        name: String,
        globals: HashMap<String, (u64, u64)>,
        kernels: Vec<String>,
    }

    impl FakeDevice {
        fn new(pool: Option<u64>) -> FakeDevice {
            FakeDevice {
                memory: Mutex::default(),
                next: AtomicU64::new(0x1000),
                ran: Mutex::default(),
                unloaded: Mutex::default(),
                pool,
                failing: false,
            }
        }

        fn module(&self, name: &str, globals: &[(&str, u64)], kernels: &[&str]) -> FakeModule {
            FakeModule {
                name: name.into(),
                globals: globals
                    .iter()
                    .map(|&(g, size)| (g.to_string(), (self.alloc(size).unwrap(), size)))
                    .collect(),
                kernels: kernels.iter().map(|k| k.to_string()).collect(),
            }
        }

        fn bytes(&self, address: u64) -> Vec<u8> {
            lock(&self.memory)[&address].clone()
        }

        fn live(&self) -> usize {
            lock(&self.memory).len()
        }
    }

    impl ImageDriver for FakeDevice {
        type Module = FakeModule;
        const CONSTRUCTORS: Constructors = Constructors::Kernels {
            init: "init",
            fini: "fini",
        };
        fn ordinal(&self) -> i32 {
            0
        }
        fn device_environment(&self) -> DeviceEnvironment {
            DeviceEnvironment {
                num_devices: 2,
                device_num: 1,
                ..Default::default()
            }
        }
        fn malloc_pool_size(&self) -> Option<u64> {
            self.pool
        }
        fn global(&self, module: &FakeModule, name: &str) -> Result<Option<(u64, u64)>> {
            Ok(module.globals.get(name).copied())
        }
        fn has_kernel(&self, module: &FakeModule, name: &str) -> bool {
            module.kernels.iter().any(|k| k == name)
        }
        fn globals_with_prefix(&self, module: &FakeModule, prefix: &str) -> Vec<String> {
            module
                .globals
                .keys()
                .filter(|g| g.starts_with(prefix))
                .cloned()
                .collect()
        }
        fn run_on_one_thread(&self, module: &FakeModule, name: &str) -> Result<()> {
            if self.failing {
                return Err(PluginError::invalid_argument("the kernel failed"));
            }
            lock(&self.ran).push(format!("{}:{name}", module.name));
            Ok(())
        }
        fn unload_module(&self, module: FakeModule) -> Result<()> {
            for (address, _) in module.globals.values() {
                self.free(*address)?;
            }
            lock(&self.unloaded).push(module.name);
            Ok(())
        }
    }

    impl SyncMemory for FakeDevice {
        fn alloc(&self, size: u64) -> Result<u64> {
            let address = self
                .next
                .fetch_add(size.max(1).next_multiple_of(256), Ordering::Relaxed);
            lock(&self.memory).insert(address, vec![0; size as usize]);
            Ok(address)
        }
        fn free(&self, address: u64) -> Result<()> {
            lock(&self.memory)
                .remove(&address)
                .map(|_| ())
                .ok_or_else(|| PluginError::invalid_argument("double free"))
        }
        fn write(&self, address: u64, bytes: &[u8]) -> Result<()> {
            let mut memory = lock(&self.memory);
            let block = memory
                .get_mut(&address)
                .expect("a write to unallocated memory");
            block[..bytes.len()].copy_from_slice(bytes);
            Ok(())
        }
        fn read(&self, address: u64, bytes: &mut [u8]) -> Result<()> {
            let memory = lock(&self.memory);
            bytes.copy_from_slice(&memory[&address][..bytes.len()]);
            Ok(())
        }
    }

    #[test]
    fn loading_fills_the_device_runtime_globals_and_runs_constructors() {
        let device = FakeDevice::new(Some(4096));
        let images = Images::default();
        let module = device.module(
            "a",
            &[
                (DEVICE_ENVIRONMENT, 48),
                (MEMORY_POOL, 16),
                (MEMORY_POOL_TRACKER, 32),
            ],
            &["init", "fini"],
        );
        let (environment, pool) = (
            module.globals[DEVICE_ENVIRONMENT].0,
            module.globals[MEMORY_POOL].0,
        );
        let handle = images.add(&device, module).unwrap();
        assert_eq!(device.bytes(environment)[4..12], [2, 0, 0, 0, 1, 0, 0, 0]);
        let pool_bytes = device.bytes(pool);
        assert_eq!(
            u64::from_le_bytes(pool_bytes[8..16].try_into().unwrap()),
            4096
        );
        assert_eq!(*lock(&device.ran), ["a:init"]);

        images
            .set_indirect_calls(
                &device,
                handle,
                &[IndirectCall {
                    host: 2,
                    device: 20,
                }],
            )
            .unwrap();
        assert_eq!(device.bytes(environment)[32..40], 1u64.to_le_bytes());
        assert!(
            images.set_indirect_calls(&device, handle, &[]).is_err(),
            "set twice"
        );

        let before = device.live();
        images.remove(&device, handle).unwrap();
        assert_eq!(*lock(&device.ran), ["a:init", "a:fini"]);
        assert_eq!(*lock(&device.unloaded), ["a"]);
        // The module's three globals and the indirect-call table are gone; the pool stays.
        assert_eq!(device.live(), before - 4);
        assert!(images.remove(&device, handle).is_err(), "a second unload");
        images.unload_all(&device).unwrap();
        assert_eq!(device.live(), 0, "the pool is freed at shutdown");
    }

    #[test]
    fn an_image_that_cannot_be_prepared_is_unloaded_again() {
        let mut device = FakeDevice::new(None);
        let images: Images<FakeModule> = Images::default();
        // A device runtime of another size is refused.
        let wrong = device.module("c", &[(DEVICE_ENVIRONMENT, 40)], &[]);
        let e = images.add(&device, wrong).err().unwrap();
        assert!(e.message.contains("another version"), "{}", e.message);
        // A constructor that fails.
        device.failing = true;
        let failing = device.module("d", &[(DEVICE_ENVIRONMENT, 48)], &["init"]);
        let e = images.add(&device, failing).err().unwrap();
        assert!(e.message.contains("the kernel failed"), "{}", e.message);
        assert_eq!(*lock(&device.unloaded), ["c", "d"]);
        assert_eq!(device.live(), 0);
        assert_eq!(images.unload_all(&device), Ok(()));
    }

    #[test]
    fn gathered_arrays_run_in_priority_order() {
        struct Nvptx(FakeDevice);
        impl ImageDriver for Nvptx {
            type Module = FakeModule;
            const CONSTRUCTORS: Constructors = Constructors::GatheredArrays;
            fn ordinal(&self) -> i32 {
                0
            }
            fn device_environment(&self) -> DeviceEnvironment {
                DeviceEnvironment::default()
            }
            fn malloc_pool_size(&self) -> Option<u64> {
                None
            }
            fn global(&self, m: &FakeModule, n: &str) -> Result<Option<(u64, u64)>> {
                self.0.global(m, n)
            }
            fn has_kernel(&self, m: &FakeModule, n: &str) -> bool {
                self.0.has_kernel(m, n)
            }
            fn globals_with_prefix(&self, m: &FakeModule, p: &str) -> Vec<String> {
                self.0.globals_with_prefix(m, p)
            }
            fn run_on_one_thread(&self, m: &FakeModule, n: &str) -> Result<()> {
                // The kernel walks the array: record the pointers it would call.
                let start = self.0.bytes(m.globals["__init_array_start"].0);
                let end = self.0.bytes(m.globals["__init_array_end"].0);
                let (start, end) = (
                    u64::from_le_bytes(start.try_into().unwrap()),
                    u64::from_le_bytes(end.try_into().unwrap()),
                );
                let mut array = vec![0u8; (end - start) as usize];
                self.0.read(start, &mut array)?;
                let calls: Vec<String> = array
                    .chunks(8)
                    .map(|w| u64::from_le_bytes(w.try_into().unwrap()).to_string())
                    .collect();
                lock(&self.0.ran).push(format!("{n}:{}", calls.join(",")));
                Ok(())
            }
            fn unload_module(&self, m: FakeModule) -> Result<()> {
                self.0.unload_module(m)
            }
        }
        impl SyncMemory for Nvptx {
            fn alloc(&self, s: u64) -> Result<u64> {
                self.0.alloc(s)
            }
            fn free(&self, a: u64) -> Result<()> {
                self.0.free(a)
            }
            fn write(&self, a: u64, b: &[u8]) -> Result<()> {
                self.0.write(a, b)
            }
            fn read(&self, a: u64, b: &mut [u8]) -> Result<()> {
                self.0.read(a, b)
            }
        }
        let device = Nvptx(FakeDevice::new(None));
        let module = device.0.module(
            "n",
            &[
                ("__init_array_object_f_200", 8),
                ("__init_array_object_g_100", 8),
                ("__init_array_object_h", 8),
                ("__init_array_start", 8),
                ("__init_array_end", 8),
            ],
            &["nvptx$device$init"],
        );
        for (name, value) in [("f_200", 7u64), ("g_100", 5), ("h", 9)] {
            let address = module.globals[&format!("__init_array_object_{name}")].0;
            device.0.write(address, &value.to_le_bytes()).unwrap();
        }
        let images = Images::default();
        let live = device.0.live();
        images.add(&device, module).unwrap();
        assert_eq!(*lock(&device.0.ran), ["nvptx$device$init:5,7,9"]);
        assert_eq!(device.0.live(), live, "the gathered array is freed");
    }
}
