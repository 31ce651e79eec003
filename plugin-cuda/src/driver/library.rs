//! Finding the NVIDIA driver library and resolving its entry points.
//!
//! We open `libcuda.so.1`, the name the driver installs, and nothing else. cudarc's own loader
//! tries `libcuda.so` first (the name of the CUDA toolkit's link-time stub, which fails every
//! call) and panics when it finds nothing, so its functions are not used; its generated types
//! and constants are (see `sys`).

use super::sys::{CUcontext, CUdevice, CUdeviceptr, CUevent, CUfunction, CUmodule, CUstream};
use libloading::Library;
use std::ffi::{c_char, c_int, c_uchar, c_uint, c_ushort, c_void};
use std::path::PathBuf;

/// The soname the NVIDIA driver installs.
pub const DRIVER_LIBRARY: &str = "libcuda.so.1";

/// A driver status code, kept raw: a driver newer than our bindings may return codes that
/// cudarc's `CUresult` enumeration does not list.
#[repr(transparent)]
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Status(pub c_uint);

impl Status {
    pub const SUCCESS: Status = Status(0);
}

macro_rules! driver_functions {
    (
        required { $($field:ident = $symbol:literal : fn($($arg:ty),*);)* }
        optional { $($ofield:ident = $osymbol:literal : fn($($oarg:ty),*);)* }
    ) => {
        /// The driver entry points the plugin calls, resolved once from the driver library.
        pub struct DriverFunctions {
            $(pub $field: unsafe extern "C" fn($($arg),*) -> Status,)*
            $(pub $ofield: Option<unsafe extern "C" fn($($oarg),*) -> Status>,)*
        }

        impl DriverFunctions {
            fn resolve(library: &Library) -> Result<Self, String> {
                Ok(DriverFunctions {
                    $($field: symbol(library, $symbol)?,)*
                    $($ofield: symbol(library, $osymbol).ok(),)*
                })
            }
        }
    };
}

driver_functions! {
    required {
        init = "cuInit": fn(c_uint);
        driver_get_version = "cuDriverGetVersion": fn(*mut c_int);
        get_error_name = "cuGetErrorName": fn(Status, *mut *const c_char);
        get_error_string = "cuGetErrorString": fn(Status, *mut *const c_char);
        device_get_count = "cuDeviceGetCount": fn(*mut c_int);
        device_get = "cuDeviceGet": fn(*mut CUdevice, c_int);
        device_get_name = "cuDeviceGetName": fn(*mut c_char, c_int, CUdevice);
        device_get_attribute = "cuDeviceGetAttribute": fn(*mut c_int, c_int, CUdevice);
        device_total_mem = "cuDeviceTotalMem_v2": fn(*mut usize, CUdevice);
        device_can_access_peer = "cuDeviceCanAccessPeer": fn(*mut c_int, CUdevice, CUdevice);
        primary_ctx_get_state = "cuDevicePrimaryCtxGetState": fn(CUdevice, *mut c_uint, *mut c_int);
        primary_ctx_set_flags = "cuDevicePrimaryCtxSetFlags_v2": fn(CUdevice, c_uint);
        primary_ctx_retain = "cuDevicePrimaryCtxRetain": fn(*mut CUcontext, CUdevice);
        primary_ctx_release = "cuDevicePrimaryCtxRelease_v2": fn(CUdevice);
        ctx_set_current = "cuCtxSetCurrent": fn(CUcontext);
        ctx_get_limit = "cuCtxGetLimit": fn(*mut usize, c_int);
        ctx_set_limit = "cuCtxSetLimit": fn(c_int, usize);
        ctx_enable_peer_access = "cuCtxEnablePeerAccess": fn(CUcontext, c_uint);
        mem_get_info = "cuMemGetInfo_v2": fn(*mut usize, *mut usize);
        module_load_data = "cuModuleLoadData": fn(*mut CUmodule, *const c_void);
        module_unload = "cuModuleUnload": fn(CUmodule);
        module_get_function = "cuModuleGetFunction": fn(*mut CUfunction, CUmodule, *const c_char);
        module_get_global = "cuModuleGetGlobal_v2": fn(*mut CUdeviceptr, *mut usize, CUmodule, *const c_char);
        func_get_attribute = "cuFuncGetAttribute": fn(*mut c_int, c_int, CUfunction);
        launch_kernel = "cuLaunchKernel": fn(
            CUfunction, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, CUstream,
            *mut *mut c_void, *mut *mut c_void
        );
        mem_alloc = "cuMemAlloc_v2": fn(*mut CUdeviceptr, usize);
        mem_free = "cuMemFree_v2": fn(CUdeviceptr);
        mem_alloc_host = "cuMemAllocHost_v2": fn(*mut *mut c_void, usize);
        mem_free_host = "cuMemFreeHost": fn(*mut c_void);
        mem_alloc_managed = "cuMemAllocManaged": fn(*mut CUdeviceptr, usize, c_uint);
        mem_host_register = "cuMemHostRegister_v2": fn(*mut c_void, usize, c_uint);
        mem_host_unregister = "cuMemHostUnregister": fn(*mut c_void);
        mem_host_get_device_pointer = "cuMemHostGetDevicePointer_v2": fn(
            *mut CUdeviceptr, *mut c_void, c_uint
        );
        memcpy_htod_async = "cuMemcpyHtoDAsync_v2": fn(CUdeviceptr, *const c_void, usize, CUstream);
        memcpy_dtoh_async = "cuMemcpyDtoHAsync_v2": fn(*mut c_void, CUdeviceptr, usize, CUstream);
        memcpy_dtod_async = "cuMemcpyDtoDAsync_v2": fn(CUdeviceptr, CUdeviceptr, usize, CUstream);
        memcpy_peer_async = "cuMemcpyPeerAsync": fn(
            CUdeviceptr, CUcontext, CUdeviceptr, CUcontext, usize, CUstream
        );
        stream_create = "cuStreamCreate": fn(*mut CUstream, c_uint);
        stream_destroy = "cuStreamDestroy_v2": fn(CUstream);
        stream_synchronize = "cuStreamSynchronize": fn(CUstream);
        stream_query = "cuStreamQuery": fn(CUstream);
        stream_wait_event = "cuStreamWaitEvent": fn(CUstream, CUevent, c_uint);
        event_create = "cuEventCreate": fn(*mut CUevent, c_uint);
        event_record = "cuEventRecord": fn(CUevent, CUstream);
        event_synchronize = "cuEventSynchronize": fn(CUevent);
        event_destroy = "cuEventDestroy_v2": fn(CUevent);
    }
    optional {
        // Every driver has it; optional so that a driver without it still runs programs (only
        // LIBOMPTARGET_PROFILE's device spans need it).
        event_elapsed_time = "cuEventElapsedTime": fn(*mut f32, CUevent, CUevent);
        // CUDA 11.2 and later: the stream-ordered allocator, for device-non-blocking memory.
        mem_alloc_async = "cuMemAllocAsync": fn(*mut CUdeviceptr, usize, CUstream);
        mem_free_async = "cuMemFreeAsync": fn(CUdeviceptr, CUstream);
        // CUDA 9.2 and later: the device's UUID (`CUuuid`, 16 bytes), for its OpenMP UID.
        device_get_uuid = "cuDeviceGetUuid": fn(*mut [u8; 16], CUdevice);
        // CUDA 9.0 and later: opting a kernel in to more than 48 KiB of dynamic shared memory.
        func_set_attribute = "cuFuncSetAttribute": fn(CUfunction, c_int, c_int);
        // Every driver since CUDA 3.2 has them; optional so that a driver without them still
        // runs programs: the fill answers UNSUPPORTED and the core copies a host buffer.
        memset_d8_async = "cuMemsetD8Async": fn(CUdeviceptr, c_uchar, usize, CUstream);
        memset_d16_async = "cuMemsetD16Async": fn(CUdeviceptr, c_ushort, usize, CUstream);
        memset_d32_async = "cuMemsetD32Async": fn(CUdeviceptr, c_uint, usize, CUstream);
        // CUDA 10.0 and later: a host function in stream order, for waits with a time limit.
        launch_host_func = "cuLaunchHostFunc": fn(
            CUstream, Option<unsafe extern "C" fn(*mut c_void)>, *mut c_void
        );
    }
}

fn symbol<T: Copy>(library: &Library, name: &str) -> Result<T, String> {
    let mut cname = name.as_bytes().to_vec();
    cname.push(0);
    // SAFETY: every `T` this is called with is the C signature of `name` as declared in the
    // driver's cuda.h (checked by hand against cudarc's bindings of the same symbol).
    unsafe { library.get::<T>(&cname) }
        .map(|s| *s)
        .map_err(|e| format!("{DRIVER_LIBRARY} has no {name} ({e}); the driver is too old"))
}

/// The opened driver library with its entry points. Never unloaded: driver threads outlive
/// any point where unloading would be safe.
pub struct DriverLibrary {
    pub path: PathBuf,
    pub functions: DriverFunctions,
    _library: Library,
}

impl DriverLibrary {
    /// Opens `libcuda.so.1` from the usual search path. `Err` says why in words.
    pub fn open() -> Result<DriverLibrary, String> {
        // SAFETY: the driver library's initialisers are the vendor's; loading it is what every
        // CUDA program does.
        let library = unsafe { Library::new(DRIVER_LIBRARY) }.map_err(|e| {
            format!(
                "{DRIVER_LIBRARY} not found or not loadable ({e}): no NVIDIA driver is installed"
            )
        })?;
        let functions = DriverFunctions::resolve(&library)?;
        let path = host_os::loaded_file(functions.init as usize)
            .unwrap_or_else(|| PathBuf::from(DRIVER_LIBRARY));
        Ok(DriverLibrary {
            path,
            functions,
            _library: library,
        })
    }
}
