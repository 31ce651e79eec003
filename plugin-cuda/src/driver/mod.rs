//! The thin layer over the CUDA driver API: one safe method per driver call, each returning
//! the driver's error by name. Device logic lives above it and never sees a raw status.
//! What the plugin retains, loads or creates is given back by owners (`owned`): the calls that
//! give an object back are theirs alone.

mod completion;
mod library;
mod owned;

pub use completion::Completion;
pub use cudarc::driver::sys;
pub use library::{DriverLibrary, Status, DRIVER_LIBRARY};
pub use owned::{Owned, OwnedEvent, OwnedModule, OwnedStream, PrimaryContext, Releasable};

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::fmt;
use std::sync::Arc;
use sys::{CUcontext, CUdevice, CUdeviceptr, CUevent, CUfunction, CUmodule, CUstream};

/// A failed driver call: which call, and the driver's code and name for the failure.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DriverError {
    pub call: &'static str,
    pub code: u32,
    pub name: String,
}

impl fmt::Display for DriverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} failed: {} ({})", self.call, self.name, self.code)
    }
}

impl std::error::Error for DriverError {}

pub type Result<T> = std::result::Result<T, DriverError>;

/// Codes the plugin reacts to rather than reports.
pub mod codes {
    use super::sys::CUresult;
    pub const NOT_READY: u32 = CUresult::CUDA_ERROR_NOT_READY as u32;
    pub const NO_DEVICE: u32 = CUresult::CUDA_ERROR_NO_DEVICE as u32;
    pub const TOO_MANY_PEERS: u32 = CUresult::CUDA_ERROR_TOO_MANY_PEERS as u32;
    pub const PEER_ACCESS_ALREADY_ENABLED: u32 =
        CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED as u32;
    pub const HOST_MEMORY_ALREADY_REGISTERED: u32 =
        CUresult::CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED as u32;
    /// The driver has torn itself down (its own exit handler ran): every call fails so,
    /// `cuGetErrorName` too, and what the plugin held is released already.
    pub const DEINITIALIZED: u32 = CUresult::CUDA_ERROR_DEINITIALIZED as u32;
}

macro_rules! handle {
    ($(#[$doc:meta])* $name:ident($raw:ty)) => {
        $(#[$doc])*
        #[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
        pub struct $name(pub $raw);
        // SAFETY: driver handles are process-wide; the driver API may be called with them from
        // any thread (the plugin sets the owning context first).
        unsafe impl Send for $name {}
        // SAFETY: as above; the handle is an opaque token the driver synchronises internally.
        unsafe impl Sync for $name {}
    };
}

handle!(
    /// A device's primary context.
    Context(CUcontext)
);
handle!(
    /// A loaded module (one device image).
    Module(CUmodule)
);
handle!(
    /// A kernel of a loaded module.
    Function(CUfunction)
);
handle!(
    /// A stream: work on it runs in order.
    Stream(CUstream)
);
handle!(
    /// A point in a stream that other streams or the host can wait for.
    Event(CUevent)
);

/// The value of one driver memset, whose width picks the call: each element of the range
/// gets it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum MemsetValue {
    D8(u8),
    D16(u16),
    D32(u32),
}

impl MemsetValue {
    /// The element's width in bytes.
    pub fn width(self) -> u64 {
        match self {
            MemsetValue::D8(_) => 1,
            MemsetValue::D16(_) => 2,
            MemsetValue::D32(_) => 4,
        }
    }

    pub fn call(self) -> &'static str {
        match self {
            MemsetValue::D8(_) => "cuMemsetD8Async",
            MemsetValue::D16(_) => "cuMemsetD16Async",
            MemsetValue::D32(_) => "cuMemsetD32Async",
        }
    }
}

/// The driver, opened and initialised.
pub struct Driver {
    library: DriverLibrary,
}

impl Driver {
    /// Opens `libcuda.so.1` and calls `cuInit`. `Err` is a sentence for the user.
    pub fn open() -> std::result::Result<Driver, String> {
        let library = DriverLibrary::open()?;
        let driver = Driver { library };
        // SAFETY: cuInit takes flags (must be 0) and may be called from any thread.
        let status = unsafe { (driver.fns().init)(0) };
        if status != Status::SUCCESS {
            let error = driver.error("cuInit", status);
            let hint = if error.code == codes::NO_DEVICE {
                "no NVIDIA GPU is visible"
            } else {
                "the driver could not start"
            };
            return Err(format!(
                "{} (driver at {}): {hint}",
                error,
                driver.library.path.display()
            ));
        }
        Ok(driver)
    }

    pub fn path(&self) -> &std::path::Path {
        &self.library.path
    }

    fn fns(&self) -> &library::DriverFunctions {
        &self.library.functions
    }

    fn error(&self, call: &'static str, status: Status) -> DriverError {
        let mut name: *const c_char = std::ptr::null();
        // SAFETY: cuGetErrorName writes a pointer to a static string, or fails for unknown
        // codes and leaves it null.
        let known = unsafe { (self.fns().get_error_name)(status, &mut name) } == Status::SUCCESS;
        let name = if known && !name.is_null() {
            // SAFETY: the driver returned a static NUL-terminated string.
            unsafe { CStr::from_ptr(name) }
                .to_string_lossy()
                .into_owned()
        } else if status.0 == codes::DEINITIALIZED {
            // A torn-down driver names no code, this one included.
            "CUDA_ERROR_DEINITIALIZED".into()
        } else {
            format!("unknown CUDA error {}", status.0)
        };
        DriverError {
            call,
            code: status.0,
            name,
        }
    }

    fn check(&self, call: &'static str, status: Status) -> Result<()> {
        if status == Status::SUCCESS {
            Ok(())
        } else {
            Err(self.error(call, status))
        }
    }

    pub fn driver_version(&self) -> Result<i32> {
        let mut v = 0;
        // SAFETY: writes one int.
        let s = unsafe { (self.fns().driver_get_version)(&mut v) };
        self.check("cuDriverGetVersion", s).map(|_| v)
    }

    pub fn device_count(&self) -> Result<i32> {
        let mut n = 0;
        // SAFETY: writes one int.
        let s = unsafe { (self.fns().device_get_count)(&mut n) };
        self.check("cuDeviceGetCount", s).map(|_| n)
    }

    pub fn device(&self, ordinal: i32) -> Result<CUdevice> {
        let mut d = 0;
        // SAFETY: writes one device handle (an int).
        let s = unsafe { (self.fns().device_get)(&mut d, ordinal) };
        self.check("cuDeviceGet", s).map(|_| d)
    }

    pub fn device_name(&self, device: CUdevice) -> Result<String> {
        let mut buf = [0 as c_char; 256];
        // SAFETY: the driver writes at most `len` bytes including the NUL.
        let s =
            unsafe { (self.fns().device_get_name)(buf.as_mut_ptr(), buf.len() as c_int, device) };
        self.check("cuDeviceGetName", s)?;
        // SAFETY: the buffer is NUL-terminated by the driver (and was zeroed).
        Ok(unsafe { CStr::from_ptr(buf.as_ptr()) }
            .to_string_lossy()
            .into_owned())
    }

    pub fn attribute(&self, device: CUdevice, attribute: sys::CUdevice_attribute) -> Result<i32> {
        let mut v = 0;
        // SAFETY: writes one int; the attribute is a valid enumerator.
        let s = unsafe { (self.fns().device_get_attribute)(&mut v, attribute as c_int, device) };
        self.check("cuDeviceGetAttribute", s).map(|_| v)
    }

    pub fn total_memory(&self, device: CUdevice) -> Result<u64> {
        let mut v = 0usize;
        // SAFETY: writes one size_t.
        let s = unsafe { (self.fns().device_total_mem)(&mut v, device) };
        self.check("cuDeviceTotalMem", s).map(|_| v as u64)
    }

    /// The device's UUID (`cuDeviceGetUuid`).
    pub fn device_uuid(&self, device: CUdevice) -> Result<[u8; 16]> {
        let Some(f) = self.fns().device_get_uuid else {
            return Err(self.missing("cuDeviceGetUuid", "9.2"));
        };
        let mut uuid = [0u8; 16];
        // SAFETY: writes one CUuuid (16 bytes).
        let s = unsafe { f(&mut uuid, device) };
        self.check("cuDeviceGetUuid", s).map(|_| uuid)
    }

    pub fn can_access_peer(&self, device: CUdevice, peer: CUdevice) -> Result<bool> {
        let mut v = 0;
        // SAFETY: writes one int.
        let s = unsafe { (self.fns().device_can_access_peer)(&mut v, device, peer) };
        self.check("cuDeviceCanAccessPeer", s).map(|_| v != 0)
    }

    /// Flags and whether the primary context is already active (another library may own it).
    pub fn primary_context_state(&self, device: CUdevice) -> Result<(u32, bool)> {
        let (mut flags, mut active) = (0, 0);
        // SAFETY: writes two ints.
        let s = unsafe { (self.fns().primary_ctx_get_state)(device, &mut flags, &mut active) };
        self.check("cuDevicePrimaryCtxGetState", s)
            .map(|_| (flags, active != 0))
    }

    pub fn set_primary_context_flags(&self, device: CUdevice, flags: u32) -> Result<()> {
        // SAFETY: plain value arguments.
        let s = unsafe { (self.fns().primary_ctx_set_flags)(device, flags) };
        self.check("cuDevicePrimaryCtxSetFlags", s)
    }

    /// Through [`PrimaryContext`], which releases it.
    fn retain_primary_context(&self, device: CUdevice) -> Result<Context> {
        let mut ctx = std::ptr::null_mut();
        // SAFETY: writes one context handle.
        let s = unsafe { (self.fns().primary_ctx_retain)(&mut ctx, device) };
        self.check("cuDevicePrimaryCtxRetain", s)
            .map(|_| Context(ctx))
    }

    /// [`PrimaryContext`]'s alone.
    fn release_primary_context(&self, device: CUdevice) -> Result<()> {
        // SAFETY: plain value argument; pairs with a successful retain.
        let s = unsafe { (self.fns().primary_ctx_release)(device) };
        self.check("cuDevicePrimaryCtxRelease", s)
    }

    /// Makes `context` current on the calling thread.
    pub fn set_current(&self, context: Context) -> Result<()> {
        // SAFETY: the context was retained and not released.
        let s = unsafe { (self.fns().ctx_set_current)(context.0) };
        self.check("cuCtxSetCurrent", s)
    }

    pub fn limit(&self, limit: sys::CUlimit) -> Result<u64> {
        let mut v = 0usize;
        // SAFETY: writes one size_t for the current context.
        let s = unsafe { (self.fns().ctx_get_limit)(&mut v, limit as c_int) };
        self.check("cuCtxGetLimit", s).map(|_| v as u64)
    }

    pub fn set_limit(&self, limit: sys::CUlimit, value: u64) -> Result<()> {
        // SAFETY: plain value arguments for the current context.
        let s = unsafe { (self.fns().ctx_set_limit)(limit as c_int, value as usize) };
        self.check("cuCtxSetLimit", s)
    }

    /// Lets the current context access `peer`'s memory. Already enabled counts as success.
    pub fn enable_peer_access(&self, peer: Context) -> Result<()> {
        // SAFETY: flags must be 0; the peer context is retained.
        let s = unsafe { (self.fns().ctx_enable_peer_access)(peer.0, 0) };
        if s.0 == codes::PEER_ACCESS_ALREADY_ENABLED {
            return Ok(());
        }
        self.check("cuCtxEnablePeerAccess", s)
    }

    /// Free and total device memory of the current context's device.
    pub fn memory_info(&self) -> Result<(u64, u64)> {
        let (mut free, mut total) = (0usize, 0usize);
        // SAFETY: writes two size_t values.
        let s = unsafe { (self.fns().mem_get_info)(&mut free, &mut total) };
        self.check("cuMemGetInfo", s)
            .map(|_| (free as u64, total as u64))
    }

    /// Loads a cubin or NUL-terminated PTX into the current context (through [`OwnedModule`]).
    fn load_module(&self, image: &[u8]) -> Result<Module> {
        let mut module = std::ptr::null_mut();
        // SAFETY: the driver reads the image (an ELF cubin, whose size is in its headers, or
        // PTX text that the caller NUL-terminated) during the call only.
        let s = unsafe { (self.fns().module_load_data)(&mut module, image.as_ptr().cast()) };
        self.check("cuModuleLoadData", s).map(|_| Module(module))
    }

    /// [`OwnedModule`]'s alone.
    fn unload_module(&self, module: Module) -> Result<()> {
        // SAFETY: the module was loaded and is not used afterwards.
        let s = unsafe { (self.fns().module_unload)(module.0) };
        self.check("cuModuleUnload", s)
    }

    pub fn function(&self, module: Module, name: &str) -> Result<Function> {
        let cname = c_string(name, "cuModuleGetFunction")?;
        let mut f = std::ptr::null_mut();
        // SAFETY: module is loaded; the name is NUL-terminated and outlives the call.
        let s = unsafe { (self.fns().module_get_function)(&mut f, module.0, cname.as_ptr()) };
        self.check("cuModuleGetFunction", s).map(|_| Function(f))
    }

    /// Device address and size of a global variable of a module.
    pub fn global(&self, module: Module, name: &str) -> Result<(CUdeviceptr, u64)> {
        let cname = c_string(name, "cuModuleGetGlobal")?;
        let (mut ptr, mut size) = (0, 0usize);
        // SAFETY: module is loaded; the name is NUL-terminated; writes an address and a size.
        let s = unsafe {
            (self.fns().module_get_global)(&mut ptr, &mut size, module.0, cname.as_ptr())
        };
        self.check("cuModuleGetGlobal", s)
            .map(|_| (ptr, size as u64))
    }

    pub fn function_attribute(
        &self,
        function: Function,
        attribute: sys::CUfunction_attribute,
    ) -> Result<i32> {
        let mut v = 0;
        // SAFETY: writes one int for a valid function.
        let s = unsafe { (self.fns().func_get_attribute)(&mut v, attribute as c_int, function.0) };
        self.check("cuFuncGetAttribute", s).map(|_| v)
    }

    /// Sets an attribute of a kernel (`cuFuncSetAttribute`), e.g. its dynamic shared memory
    /// limit.
    pub fn set_function_attribute(
        &self,
        function: Function,
        attribute: sys::CUfunction_attribute,
        value: i32,
    ) -> Result<()> {
        let Some(f) = self.fns().func_set_attribute else {
            return Err(self.missing("cuFuncSetAttribute", "9.0"));
        };
        // SAFETY: plain value arguments for a valid function.
        let s = unsafe { f(function.0, attribute as c_int, value) };
        self.check("cuFuncSetAttribute", s)
    }

    /// Launches `function` with its parameters packed in `args` (one pointer-sized value
    /// each, the layout LLVM's device code expects).
    pub fn launch(
        &self,
        function: Function,
        grid: [u32; 3],
        block: [u32; 3],
        shared_bytes: u32,
        stream: Stream,
        args: &mut [usize],
    ) -> Result<()> {
        let size = std::mem::size_of_val(args);
        let buffer = args.as_mut_ptr().cast::<u8>();
        // SAFETY: `buffer` holds `size` bytes, borrowed mutably for the call.
        let params = unsafe { std::slice::from_raw_parts_mut(buffer, size) };
        self.launch_grid(function, grid, block, shared_bytes, stream, params)
    }

    /// Launches `function` on a 3-D grid of 3-D blocks with `params`, its parameter buffer as
    /// the kernel's compiler laid it out.
    pub fn launch_grid(
        &self,
        function: Function,
        grid: [u32; 3],
        block: [u32; 3],
        shared_bytes: u32,
        stream: Stream,
        params: &mut [u8],
    ) -> Result<()> {
        let mut size = params.len();
        // cuda.h's markers are the addresses 1 and 2: CU_LAUNCH_PARAM_BUFFER_POINTER, ptr,
        // CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END.
        #[allow(clippy::manual_dangling_ptr)]
        let (buffer_pointer, buffer_size) = (1usize as *mut c_void, 2usize as *mut c_void);
        let mut config: [*mut c_void; 5] = [
            buffer_pointer,
            params.as_mut_ptr().cast(),
            buffer_size,
            (&mut size as *mut usize).cast(),
            std::ptr::null_mut(),
        ];
        // SAFETY: the parameter buffer and its size outlive the call (the driver copies the
        // parameters at launch); no kernelParams array is passed.
        let s = unsafe {
            (self.fns().launch_kernel)(
                function.0,
                grid[0],
                grid[1],
                grid[2],
                block[0],
                block[1],
                block[2],
                shared_bytes,
                stream.0,
                std::ptr::null_mut(),
                config.as_mut_ptr(),
            )
        };
        self.check("cuLaunchKernel", s)
    }

    pub fn alloc_device(&self, size: u64) -> Result<u64> {
        let mut p = 0;
        // SAFETY: writes one device address.
        let s = unsafe { (self.fns().mem_alloc)(&mut p, size as usize) };
        self.check("cuMemAlloc", s).map(|_| p)
    }

    pub fn free_device(&self, ptr: u64) -> Result<()> {
        // SAFETY: the address came from cuMemAlloc/cuMemAllocManaged and is freed once.
        let s = unsafe { (self.fns().mem_free)(ptr) };
        self.check("cuMemFree", s)
    }

    pub fn alloc_host(&self, size: u64) -> Result<usize> {
        let mut p = std::ptr::null_mut();
        // SAFETY: writes one host pointer.
        let s = unsafe { (self.fns().mem_alloc_host)(&mut p, size as usize) };
        self.check("cuMemAllocHost", s).map(|_| p as usize)
    }

    pub fn free_host(&self, ptr: usize) -> Result<()> {
        // SAFETY: the pointer came from cuMemAllocHost and is freed once.
        let s = unsafe { (self.fns().mem_free_host)(ptr as *mut c_void) };
        self.check("cuMemFreeHost", s)
    }

    pub fn alloc_managed(&self, size: u64) -> Result<u64> {
        let mut p = 0;
        // SAFETY: writes one address; 1 = CU_MEM_ATTACH_GLOBAL.
        let s = unsafe { (self.fns().mem_alloc_managed)(&mut p, size as usize, 1) };
        self.check("cuMemAllocManaged", s).map(|_| p)
    }

    pub fn has_async_allocator(&self) -> bool {
        self.fns().mem_alloc_async.is_some() && self.fns().mem_free_async.is_some()
    }

    pub fn alloc_async(&self, size: u64, stream: Stream) -> Result<u64> {
        let Some(f) = self.fns().mem_alloc_async else {
            return Err(self.missing("cuMemAllocAsync", "11.2"));
        };
        let mut p = 0;
        // SAFETY: writes one address; the stream is live.
        let s = unsafe { f(&mut p, size as usize, stream.0) };
        self.check("cuMemAllocAsync", s).map(|_| p)
    }

    pub fn free_async(&self, ptr: u64, stream: Stream) -> Result<()> {
        let Some(f) = self.fns().mem_free_async else {
            return Err(self.missing("cuMemFreeAsync", "11.2"));
        };
        // SAFETY: the address came from cuMemAllocAsync; the stream is live.
        let s = unsafe { f(ptr, stream.0) };
        self.check("cuMemFreeAsync", s)
    }

    /// The error for an optional entry point this driver lacks (`since`: the CUDA version
    /// that added it).
    fn missing(&self, call: &'static str, since: &str) -> DriverError {
        DriverError {
            call,
            code: sys::CUresult::CUDA_ERROR_NOT_SUPPORTED as u32,
            name: format!("not provided by this driver (CUDA {since} or later needed)"),
        }
    }

    /// Page-locks host memory. Returns false if it was already registered (by someone else).
    pub fn register_host(&self, ptr: usize, size: u64) -> Result<bool> {
        // SAFETY: the caller keeps [ptr, ptr+size) allocated until it unregisters;
        // 1 = CU_MEMHOSTREGISTER_PORTABLE (usable from every context).
        let s = unsafe { (self.fns().mem_host_register)(ptr as *mut c_void, size as usize, 1) };
        if s.0 == codes::HOST_MEMORY_ALREADY_REGISTERED {
            return Ok(false);
        }
        self.check("cuMemHostRegister", s).map(|_| true)
    }

    pub fn unregister_host(&self, ptr: usize) -> Result<()> {
        // SAFETY: the pointer was registered with cuMemHostRegister.
        let s = unsafe { (self.fns().mem_host_unregister)(ptr as *mut c_void) };
        self.check("cuMemHostUnregister", s)
    }

    /// The device address of registered (page-locked) host memory.
    pub fn host_device_pointer(&self, ptr: usize) -> Result<u64> {
        let mut d = 0;
        // SAFETY: writes one device address; flags must be 0.
        let s = unsafe { (self.fns().mem_host_get_device_pointer)(&mut d, ptr as *mut c_void, 0) };
        self.check("cuMemHostGetDevicePointer", s).map(|_| d)
    }

    /// # Safety
    /// `src` must stay readable for `size` bytes until the stream is synchronised.
    pub unsafe fn copy_to_device(
        &self,
        dst: u64,
        src: usize,
        size: u64,
        stream: Stream,
    ) -> Result<()> {
        // SAFETY: the caller keeps the host range valid until the stream is synchronised.
        let s = unsafe {
            (self.fns().memcpy_htod_async)(dst, src as *const c_void, size as usize, stream.0)
        };
        self.check("cuMemcpyHtoDAsync", s)
    }

    /// # Safety
    /// `dst` must stay writable for `size` bytes, and unused, until the stream is synchronised.
    pub unsafe fn copy_from_device(
        &self,
        dst: usize,
        src: u64,
        size: u64,
        stream: Stream,
    ) -> Result<()> {
        // SAFETY: the caller keeps the host range valid until the stream is synchronised.
        let s = unsafe {
            (self.fns().memcpy_dtoh_async)(dst as *mut c_void, src, size as usize, stream.0)
        };
        self.check("cuMemcpyDtoHAsync", s)
    }

    pub fn copy_on_device(&self, dst: u64, src: u64, size: u64, stream: Stream) -> Result<()> {
        // SAFETY: device addresses are checked by the driver; plain values otherwise.
        let s = unsafe { (self.fns().memcpy_dtod_async)(dst, src, size as usize, stream.0) };
        self.check("cuMemcpyDtoDAsync", s)
    }

    pub fn copy_peer(
        &self,
        dst: u64,
        dst_context: Context,
        src: u64,
        src_context: Context,
        size: u64,
        stream: Stream,
    ) -> Result<()> {
        // SAFETY: both contexts are retained; addresses are checked by the driver.
        let s = unsafe {
            (self.fns().memcpy_peer_async)(
                dst,
                dst_context.0,
                src,
                src_context.0,
                size as usize,
                stream.0,
            )
        };
        self.check("cuMemcpyPeerAsync", s)
    }

    /// Whether the driver has the asynchronous memsets (`cuMemsetD8/16/32Async`).
    pub fn can_memset(&self) -> bool {
        let f = self.fns();
        f.memset_d8_async.is_some() && f.memset_d16_async.is_some() && f.memset_d32_async.is_some()
    }

    /// Sets `count` elements of `value`'s width from `dst` to `value`, in stream order. The
    /// driver refuses a `dst` that is not aligned to the width (`CUDA_ERROR_INVALID_VALUE`).
    pub fn memset(&self, dst: u64, value: MemsetValue, count: u64, stream: Stream) -> Result<()> {
        let call = value.call();
        let n = count as usize;
        let missing = || self.missing(call, "3.2");
        let s = match value {
            MemsetValue::D8(v) => {
                let f = self.fns().memset_d8_async.ok_or_else(missing)?;
                // SAFETY: plain values; the driver checks the device range.
                unsafe { f(dst, v, n, stream.0) }
            }
            MemsetValue::D16(v) => {
                let f = self.fns().memset_d16_async.ok_or_else(missing)?;
                // SAFETY: plain values; the driver checks the device range and its alignment.
                unsafe { f(dst, v, n, stream.0) }
            }
            MemsetValue::D32(v) => {
                let f = self.fns().memset_d32_async.ok_or_else(missing)?;
                // SAFETY: plain values; the driver checks the device range and its alignment.
                unsafe { f(dst, v, n, stream.0) }
            }
        };
        self.check(call, s)
    }

    pub fn create_stream(&self) -> Result<Stream> {
        let mut st = std::ptr::null_mut();
        // SAFETY: writes one stream handle; 1 = CU_STREAM_NON_BLOCKING (as LLVM: no implicit
        // ordering with the legacy default stream).
        let s = unsafe { (self.fns().stream_create)(&mut st, 1) };
        self.check("cuStreamCreate", s).map(|_| Stream(st))
    }

    /// [`OwnedStream`]'s alone.
    fn destroy_stream(&self, stream: Stream) -> Result<()> {
        // SAFETY: the stream is not used afterwards.
        let s = unsafe { (self.fns().stream_destroy)(stream.0) };
        self.check("cuStreamDestroy", s)
    }

    pub fn synchronize(&self, stream: Stream) -> Result<()> {
        // SAFETY: the stream is live.
        let s = unsafe { (self.fns().stream_synchronize)(stream.0) };
        self.check("cuStreamSynchronize", s)
    }

    /// Whether all work on `stream` completed (`Ok(false)`: still running).
    pub fn query(&self, stream: Stream) -> Result<bool> {
        // SAFETY: the stream is live.
        let s = unsafe { (self.fns().stream_query)(stream.0) };
        if s.0 == codes::NOT_READY {
            return Ok(false);
        }
        self.check("cuStreamQuery", s).map(|_| true)
    }

    /// Raises `done` once the work queued on `stream` so far has completed (a host function;
    /// the driver skips it after a kernel fault). `Ok(false)`: the driver has no host functions.
    pub fn notify_when_done(&self, stream: Stream, done: &Arc<Completion>) -> Result<bool> {
        let Some(launch_host_func) = self.fns().launch_host_func else {
            return Ok(false);
        };
        let data = completion::host_function_data(done);
        // SAFETY: the stream is live; the function takes back the reference `data` holds.
        let s = unsafe { launch_host_func(stream.0, Some(completion::raise_completion), data) };
        if s != Status::SUCCESS {
            // SAFETY: the driver refused the function, so it will not take the reference.
            unsafe { completion::take_back(data) };
        }
        self.check("cuLaunchHostFunc", s).map(|_| true)
    }

    pub fn wait_event(&self, stream: Stream, event: Event) -> Result<()> {
        // SAFETY: both are live; flags 0.
        let s = unsafe { (self.fns().stream_wait_event)(stream.0, event.0, 0) };
        self.check("cuStreamWaitEvent", s)
    }

    pub fn create_event(&self) -> Result<Event> {
        let mut e = std::ptr::null_mut();
        // SAFETY: writes one event handle; 2 = CU_EVENT_DISABLE_TIMING (cheaper to record and
        // wait on; we never time with events).
        let s = unsafe { (self.fns().event_create)(&mut e, 2) };
        self.check("cuEventCreate", s).map(|_| Event(e))
    }

    /// An event that records when the stream reached it (for `elapsed_ms`).
    pub fn create_timing_event(&self) -> Result<Event> {
        let mut e = std::ptr::null_mut();
        // SAFETY: writes one event handle; flags 0 = CU_EVENT_DEFAULT, with timing.
        let s = unsafe { (self.fns().event_create)(&mut e, 0) };
        self.check("cuEventCreate", s).map(|_| Event(e))
    }

    /// Milliseconds from `start`'s latest record to `end`'s (negative if `end` came first);
    /// both must be timing events whose records have completed.
    pub fn elapsed_ms(&self, start: Event, end: Event) -> Result<f32> {
        let Some(f) = self.fns().event_elapsed_time else {
            return Err(self.missing("cuEventElapsedTime", "2.0"));
        };
        let mut ms = 0f32;
        // SAFETY: writes one float; both events are live.
        let s = unsafe { f(&mut ms, start.0, end.0) };
        self.check("cuEventElapsedTime", s).map(|_| ms)
    }

    /// Whether the driver can time events (`cuEventElapsedTime`).
    pub fn can_time_events(&self) -> bool {
        self.fns().event_elapsed_time.is_some()
    }

    pub fn record_event(&self, event: Event, stream: Stream) -> Result<()> {
        // SAFETY: both are live.
        let s = unsafe { (self.fns().event_record)(event.0, stream.0) };
        self.check("cuEventRecord", s)
    }

    pub fn sync_event(&self, event: Event) -> Result<()> {
        // SAFETY: the event is live.
        let s = unsafe { (self.fns().event_synchronize)(event.0) };
        self.check("cuEventSynchronize", s)
    }

    /// [`OwnedEvent`]'s alone.
    fn destroy_event(&self, event: Event) -> Result<()> {
        // SAFETY: the event is not used afterwards.
        let s = unsafe { (self.fns().event_destroy)(event.0) };
        self.check("cuEventDestroy", s)
    }
}

fn c_string(name: &str, call: &'static str) -> Result<CString> {
    CString::new(name).map_err(|_| DriverError {
        call,
        code: sys::CUresult::CUDA_ERROR_INVALID_VALUE as u32,
        name: format!("name '{}' contains a NUL byte", name.escape_debug()),
    })
}
