//! The OpenMP device memory API (`omp_target_*`) and LLVM's extensions (`llvm_omp_*`,
//! `ompx_*`). Invalid device numbers and unknown pointers are reported and answered with the
//! API's error value; they are never fatal.

use super::guard;
use crate::device::Device;
use crate::error::{OffloadError, Result};
use crate::mapping::{Lookup, Mapping};
use crate::observe::logging;
use crate::observe::ompt::{self, DataOp, DataOpKind};
use crate::runtime::Runtime;
use plugin_api::{AllocKind, QueueHandle};
use std::ffi::{c_int, c_void};
use std::ptr;

/// OpenMP 5.2's `omp_initial_device`: another name for the initial device.
const OMP_INITIAL_DEVICE: c_int = -1;

/// The device, initialised, or `None` for the initial (host) device.
fn device_or_host(runtime: &Runtime, device_num: c_int) -> Result<Option<&Device>> {
    if device_num == runtime.initial_device() {
        return Ok(None);
    }
    let device = runtime.device(device_num as i64)?;
    runtime.prepare(device)?;
    Ok(Some(device))
}

fn report<T>(api: &str, fallback: T, result: Result<T>) -> T {
    result.unwrap_or_else(|e| {
        logging::failure_message(&format!("{api}: {e}"));
        fallback
    })
}

#[no_mangle]
pub extern "C" fn omp_get_num_devices() -> c_int {
    guard("omp_get_num_devices", 0, || {
        let runtime = Runtime::get();
        runtime.find_late_devices();
        runtime.num_devices()
    })
}

#[no_mangle]
pub extern "C" fn __tgt_get_num_devices() -> c_int {
    omp_get_num_devices()
}

#[no_mangle]
pub extern "C" fn omp_get_initial_device() -> c_int {
    guard("omp_get_initial_device", 0, || {
        Runtime::get().initial_device()
    })
}

/// On the host, the device number is the initial device's (inside kernels the device image
/// answers for itself).
#[no_mangle]
pub extern "C" fn omp_get_device_num() -> c_int {
    omp_get_initial_device()
}

fn alloc(api: &str, size: usize, device_num: c_int, kind: AllocKind) -> *mut c_void {
    guard(api, ptr::null_mut(), || {
        if size == 0 {
            return ptr::null_mut(); // as LLVM: nothing to allocate
        }
        let runtime = Runtime::get();
        let result = device_or_host(runtime, device_num).and_then(|device| match device {
            // SAFETY: malloc has no preconditions; the program frees with omp_target_free.
            None => Ok(unsafe { libc_malloc(size.max(1)) }),
            Some(d) => d.alloc(size as u64, 0, kind).map(|p| p as *mut c_void),
        });
        report(api, ptr::null_mut(), result)
    })
}

fn free(api: &str, ptr: *mut c_void, device_num: c_int, kind: AllocKind) {
    guard(api, (), || {
        if ptr.is_null() {
            return;
        }
        let runtime = Runtime::get();
        let result = device_or_host(runtime, device_num).and_then(|device| match device {
            None => {
                // SAFETY: initial-device memory came from `alloc` above, i.e. malloc.
                unsafe { libc_free(ptr) };
                Ok(())
            }
            Some(d) => d.free(ptr as usize, kind),
        });
        report(api, (), result)
    })
}

extern "C" {
    #[link_name = "malloc"]
    fn libc_malloc(size: usize) -> *mut c_void;
    #[link_name = "free"]
    fn libc_free(ptr: *mut c_void);
}

#[no_mangle]
pub extern "C" fn omp_target_alloc(size: usize, device_num: c_int) -> *mut c_void {
    alloc("omp_target_alloc", size, device_num, AllocKind::DEFAULT)
}

#[no_mangle]
pub extern "C" fn omp_target_free(ptr: *mut c_void, device_num: c_int) {
    free("omp_target_free", ptr, device_num, AllocKind::DEFAULT)
}

#[no_mangle]
pub extern "C" fn llvm_omp_target_alloc_device(size: usize, device_num: c_int) -> *mut c_void {
    alloc(
        "llvm_omp_target_alloc_device",
        size,
        device_num,
        AllocKind::DEVICE,
    )
}

#[no_mangle]
pub extern "C" fn llvm_omp_target_alloc_host(size: usize, device_num: c_int) -> *mut c_void {
    alloc(
        "llvm_omp_target_alloc_host",
        size,
        device_num,
        AllocKind::HOST,
    )
}

#[no_mangle]
pub extern "C" fn llvm_omp_target_alloc_shared(size: usize, device_num: c_int) -> *mut c_void {
    alloc(
        "llvm_omp_target_alloc_shared",
        size,
        device_num,
        AllocKind::SHARED,
    )
}

#[no_mangle]
pub extern "C" fn llvm_omp_target_free_device(ptr: *mut c_void, device_num: c_int) {
    free(
        "llvm_omp_target_free_device",
        ptr,
        device_num,
        AllocKind::DEVICE,
    )
}

#[no_mangle]
pub extern "C" fn llvm_omp_target_free_host(ptr: *mut c_void, device_num: c_int) {
    free(
        "llvm_omp_target_free_host",
        ptr,
        device_num,
        AllocKind::HOST,
    )
}

#[no_mangle]
pub extern "C" fn llvm_omp_target_free_shared(ptr: *mut c_void, device_num: c_int) {
    free(
        "llvm_omp_target_free_shared",
        ptr,
        device_num,
        AllocKind::SHARED,
    )
}

/// Host fallback of the device-side dynamic shared memory query: there is none on the host.
#[no_mangle]
pub extern "C" fn llvm_omp_target_dynamic_shared_alloc() -> *mut c_void {
    ptr::null_mut()
}

/// Copies `len` bytes between any two of: host, device, device of another plugin.
///
/// # Safety
/// Whichever of `dst` and `src` is on the host must be valid for `len` bytes (the API's
/// contract with the program).
unsafe fn copy(
    runtime: &Runtime,
    dst: usize,
    src: usize,
    len: u64,
    dst_num: c_int,
    src_num: c_int,
) -> Result<()> {
    if len == 0 {
        return Ok(());
    }
    let dst_dev = device_or_host(runtime, dst_num)?;
    let src_dev = device_or_host(runtime, src_num)?;
    let sync = QueueHandle::SYNC;
    match (dst_dev, src_dev) {
        (None, None) => {
            // SAFETY: both are host buffers of at least `len` bytes (API contract); they may overlap.
            unsafe { ptr::copy(src as *const u8, dst as *mut u8, len as usize) };
            Ok(())
        }
        // SAFETY: a host buffer of `len` bytes (the caller's promise); the copy is synchronous.
        (None, Some(s)) => unsafe { s.copy_from_device(dst, src, len, sync) },
        // SAFETY: as above.
        (Some(d), None) => unsafe { d.copy_to_device(dst, src, len, sync) },
        (Some(d), Some(s)) if std::sync::Arc::ptr_eq(&d.plugin, &s.plugin) => {
            // Reported as LLVM reports a device-to-device exchange: "from device", with
            // both device numbers.
            let _op = DataOp::begin(
                DataOpKind::TransferFromDevice,
                (src, s.id),
                (dst, d.id),
                len,
            );
            Ok(s.plugin
                .copy_device_to_device(s.local, src, d.local, dst, len, sync)?)
        }
        (Some(d), Some(s)) => {
            // Devices of different plugins cannot exchange directly: go through the host.
            let mut staging = vec![0u8; len as usize];
            let buffer = staging.as_mut_ptr() as usize;
            // SAFETY: `staging` holds `len` bytes and outlives both synchronous copies.
            unsafe { s.copy_from_device(buffer, src, len, sync) }?;
            // SAFETY: as above.
            unsafe { d.copy_to_device(dst, buffer, len, sync) }
        }
    }
}

#[no_mangle]
pub extern "C" fn omp_target_memcpy(
    dst: *mut c_void,
    src: *const c_void,
    length: usize,
    dst_offset: usize,
    src_offset: usize,
    dst_device: c_int,
    src_device: c_int,
) -> c_int {
    guard("omp_target_memcpy", -1, || {
        if length == 0 {
            return 0;
        }
        if dst.is_null() || src.is_null() {
            logging::failure_message("Call to omp_target_memcpy with invalid arguments");
            return -1;
        }
        let runtime = Runtime::get();
        // SAFETY: the host side of the copy holds `length` bytes at its offset (the API's
        // contract with the program).
        let result = unsafe {
            copy(
                runtime,
                dst as usize + dst_offset,
                src as usize + src_offset,
                length as u64,
                dst_device,
                src_device,
            )
        };
        report("omp_target_memcpy", -1, result.map(|_| 0))
    })
}

/// Copies a `dims`-dimensional sub-volume, one contiguous innermost row at a time.
///
/// # Safety
/// Whichever of `dst` and `src` is on the host must hold the whole volume at its offsets
/// (the API's contract with the program).
#[allow(clippy::too_many_arguments)]
unsafe fn copy_rect(
    runtime: &Runtime,
    dst: usize,
    src: usize,
    element: usize,
    volume: &[usize],
    dst_offsets: &[usize],
    src_offsets: &[usize],
    dst_dims: &[usize],
    src_dims: &[usize],
    dst_num: c_int,
    src_num: c_int,
) -> Result<()> {
    if volume.len() == 1 {
        let d = dst + dst_offsets[0] * element;
        let s = src + src_offsets[0] * element;
        // SAFETY: one row of the volume (the caller's promise).
        return unsafe {
            copy(
                runtime,
                d,
                s,
                (volume[0] * element) as u64,
                dst_num,
                src_num,
            )
        };
    }
    let dst_slice: usize = dst_dims[1..].iter().product::<usize>() * element;
    let src_slice: usize = src_dims[1..].iter().product::<usize>() * element;
    for i in 0..volume[0] {
        // SAFETY: one slice of the volume (the caller's promise).
        unsafe {
            copy_rect(
                runtime,
                dst + (dst_offsets[0] + i) * dst_slice,
                src + (src_offsets[0] + i) * src_slice,
                element,
                &volume[1..],
                &dst_offsets[1..],
                &src_offsets[1..],
                &dst_dims[1..],
                &src_dims[1..],
                dst_num,
                src_num,
            )
        }?;
    }
    Ok(())
}

/// With both pointers null, returns the number of dimensions supported (as the spec says).
#[no_mangle]
pub extern "C" fn omp_target_memcpy_rect(
    dst: *mut c_void,
    src: *const c_void,
    element_size: usize,
    num_dims: c_int,
    volume: *const usize,
    dst_offsets: *const usize,
    src_offsets: *const usize,
    dst_dimensions: *const usize,
    src_dimensions: *const usize,
    dst_device: c_int,
    src_device: c_int,
) -> c_int {
    guard("omp_target_memcpy_rect", -1, || {
        if dst.is_null() && src.is_null() {
            return c_int::MAX;
        }
        let arrays = [
            volume,
            dst_offsets,
            src_offsets,
            dst_dimensions,
            src_dimensions,
        ];
        if dst.is_null() || src.is_null() || num_dims < 1 || arrays.iter().any(|a| a.is_null()) {
            logging::failure_message("Call to omp_target_memcpy_rect with invalid arguments");
            return -1;
        }
        let n = num_dims as usize;
        // SAFETY: each array holds `num_dims` elements (API contract), checked non-null above.
        let slice = |p: *const usize| unsafe { std::slice::from_raw_parts(p, n) };
        // SAFETY: the host side holds the volume (the API's contract with the program).
        let result = unsafe {
            copy_rect(
                Runtime::get(),
                dst as usize,
                src as usize,
                element_size,
                slice(volume),
                slice(dst_offsets),
                slice(src_offsets),
                slice(dst_dimensions),
                slice(src_dimensions),
                dst_device,
                src_device,
            )
        };
        report("omp_target_memcpy_rect", -1, result.map(|_| 0))
    })
}

#[no_mangle]
pub extern "C" fn omp_target_memset(
    ptr: *mut c_void,
    value: c_int,
    size: usize,
    device_num: c_int,
) -> *mut c_void {
    guard("omp_target_memset", ptr, || {
        if ptr.is_null() || size == 0 {
            return ptr;
        }
        let runtime = Runtime::get();
        let result = device_or_host(runtime, device_num).and_then(|device| {
            match device {
                // SAFETY: a host buffer of `size` bytes (API contract).
                None => unsafe { ptr::write_bytes(ptr as *mut u8, value as u8, size) },
                Some(d) => {
                    let (at, byte, bytes) = (ptr as usize, value as u8, size as u64);
                    match d.fill(at, byte, bytes, QueueHandle::SYNC) {
                        Some(filled) => filled?,
                        // A plugin that cannot fill on the device gets the bytes copied, as
                        // LLVM 22.1 does for every device.
                        None => {
                            let pattern = vec![byte; size];
                            // SAFETY: `pattern` holds `size` bytes and outlives the
                            // synchronous copy.
                            unsafe {
                                d.copy_to_device(
                                    at,
                                    pattern.as_ptr() as usize,
                                    bytes,
                                    QueueHandle::SYNC,
                                )
                            }?;
                        }
                    }
                }
            }
            Ok(ptr)
        });
        report("omp_target_memset", ptr, result)
    })
}

#[no_mangle]
pub extern "C" fn omp_target_is_present(ptr: *const c_void, device_num: c_int) -> c_int {
    guard("omp_target_is_present", 0, || {
        let runtime = Runtime::get();
        if ptr.is_null() {
            return 0;
        }
        match device_or_host(runtime, device_num) {
            Ok(None) => 1,
            // One byte, as LLVM: the storage the pointer refers to, not a zero-length section.
            Ok(Some(d)) => {
                let at = ptr as usize;
                let found = d.mapping.view(at, 1, at).find(at, 1).is_some();
                found as c_int
            }
            Err(e) => report("omp_target_is_present", 0, Err(e)),
        }
    })
}

/// Whether a device can access host storage directly. As LLVM 22: a null pointer is not, the
/// host (the initial device or `omp_initial_device`, -1) always is, and a plugin device is
/// when its plugin says so (plugin ABI 1.7): an APU with XNACK, a GPU that reaches pageable
/// memory, memory page-locked for the device. The host plugin answers no, as LLVM 22's does
/// (programs written for it then map the data, which works everywhere). A size of 0 asks
/// about the storage the pointer refers to: one byte.
#[no_mangle]
pub extern "C" fn omp_target_is_accessible(
    ptr: *const c_void,
    size: usize,
    device_num: c_int,
) -> c_int {
    guard("omp_target_is_accessible", 0, || {
        let runtime = Runtime::get();
        if ptr.is_null() {
            return 0;
        }
        if device_num == OMP_INITIAL_DEVICE {
            return 1;
        }
        match device_or_host(runtime, device_num) {
            Ok(None) => 1,
            Ok(Some(d)) => d.is_accessible(ptr as usize, size.max(1) as u64) as c_int,
            Err(e) => report("omp_target_is_accessible", 0, Err(e)),
        }
    })
}

#[no_mangle]
pub extern "C" fn omp_get_mapped_ptr(ptr: *const c_void, device_num: c_int) -> *mut c_void {
    guard("omp_get_mapped_ptr", ptr::null_mut(), || {
        let runtime = Runtime::get();
        if ptr.is_null() {
            return ptr::null_mut();
        }
        match device_or_host(runtime, device_num) {
            Ok(None) => ptr as *mut c_void,
            Ok(Some(d)) => {
                let at = ptr as usize;
                let mut table = d.mapping.view(at, 1, at);
                table
                    .find(at, 1)
                    .map_or(ptr::null_mut(), |m| m.device_address(at) as *mut c_void)
            }
            Err(e) => report("omp_get_mapped_ptr", ptr::null_mut(), Err(e)),
        }
    })
}

#[no_mangle]
pub extern "C" fn omp_target_associate_ptr(
    host_ptr: *const c_void,
    device_ptr: *const c_void,
    size: usize,
    device_offset: usize,
    device_num: c_int,
) -> c_int {
    guard("omp_target_associate_ptr", -1, || {
        let runtime = Runtime::get();
        if host_ptr.is_null() || device_ptr.is_null() || size == 0 {
            logging::failure_message("Call to omp_target_associate_ptr with invalid arguments");
            return -1;
        }
        if device_num == runtime.initial_device() {
            logging::failure_message(
                "omp_target_associate_ptr: no association possible on the host",
            );
            return -1;
        }
        let result = runtime.device(device_num as i64).and_then(|d| {
            // Reported before the association is made, with the device pointer as given.
            drop(DataOp::begin(
                DataOpKind::Associate,
                (host_ptr as usize, ompt::events::HOST),
                (device_ptr as usize, d.id),
                size as u64,
            ));
            let (host, dev) = (host_ptr as usize, device_ptr as usize + device_offset);
            let mut table = d.mapping.view(host, size as u64, host);
            let existing = table
                .get_at(host)
                .map(|m| m.host_end == host + size && m.device_begin == dev);
            match existing {
                Some(true) => Ok(0),
                Some(false) => Err(OffloadError::new(
                    "Not allowed to re-associate a different device ptr+offset with the same host ptr",
                )),
                None if table.lookup(host, size as u64) != Lookup::Absent => {
                    Err(OffloadError::new(format!(
                        "{host:#x} ({size} bytes) overlaps data already mapped on device {device_num}"
                    )))
                }
                None => {
                    table.insert(Mapping::permanent(host, size as u64, dev));
                    Ok(0)
                }
            }
        });
        result.unwrap_or_else(|e| {
            logging::failure_message(&e.message);
            -1
        })
    })
}

#[no_mangle]
pub extern "C" fn omp_target_disassociate_ptr(host_ptr: *const c_void, device_num: c_int) -> c_int {
    guard("omp_target_disassociate_ptr", -1, || {
        let runtime = Runtime::get();
        if host_ptr.is_null() {
            logging::failure_message("Call to omp_target_associate_ptr with invalid host_ptr");
            return -1;
        }
        if device_num == runtime.initial_device() {
            logging::failure_message(
                "omp_target_disassociate_ptr: no association possible on the host",
            );
            return -1;
        }
        let result = runtime.device(device_num as i64).and_then(|d| {
            drop(DataOp::begin(
                DataOpKind::Disassociate,
                (host_ptr as usize, ompt::events::HOST),
                (0, d.id),
                0,
            ));
            let host = host_ptr as usize;
            let mut table = d.mapping.view_all();
            let found = table
                .get_at(host)
                .map(|m| (m.hold_refs, m.is_infinite() && !m.owns_device_memory));
            match found {
                None => Err(OffloadError::new("Association not found")),
                Some((hold, _)) if hold != 0 => Err(OffloadError::new(
                    "Trying to disassociate a pointer with a non-zero hold reference count",
                )),
                Some((_, true)) => {
                    if let Some(m) = table.key_at(host).and_then(|k| table.remove(k)) {
                        d.discard_event(&m);
                    }
                    Ok(0)
                }
                Some(_) => Err(OffloadError::new(
                    "Trying to disassociate a pointer which was not mapped via omp_target_associate_ptr",
                )),
            }
        });
        result.unwrap_or_else(|e| {
            logging::failure_message(&e.message);
            -1
        })
    })
}

#[no_mangle]
pub extern "C" fn llvm_omp_target_lock_mem(
    ptr: *mut c_void,
    size: usize,
    device_num: c_int,
) -> *mut c_void {
    guard("llvm_omp_target_lock_mem", ptr::null_mut(), || {
        if size == 0 {
            return ptr::null_mut(); // as LLVM: nothing to lock
        }
        let runtime = Runtime::get();
        let result = device_or_host(runtime, device_num).and_then(|device| match device {
            None => Ok(ptr),
            Some(d) => Ok(d.plugin.pin_memory(d.local, ptr as usize, size as u64)? as *mut c_void),
        });
        report("llvm_omp_target_lock_mem", ptr::null_mut(), result)
    })
}

#[no_mangle]
pub extern "C" fn llvm_omp_target_unlock_mem(ptr: *mut c_void, device_num: c_int) {
    guard("llvm_omp_target_unlock_mem", (), || {
        let runtime = Runtime::get();
        let result = device_or_host(runtime, device_num).and_then(|device| match device {
            None => Ok(()),
            Some(d) => Ok(d.plugin.unpin_memory(d.local, ptr as usize)?),
        });
        report("llvm_omp_target_unlock_mem", (), result)
    })
}

/// Prints every device's mapping table on stdout, in LLVM's layout.
#[no_mangle]
pub extern "C" fn ompx_dump_mapping_tables() {
    guard("ompx_dump_mapping_tables", (), || {
        for device in Runtime::get().devices.iter() {
            let mappings = device.mapping.view_all().snapshot();
            crate::observe::info::dump_table(device.id, "libomptarget:0:0", &mappings, true);
        }
    })
}

/// Copies the `n` elements of a C array (null gives an empty vector).
///
/// # Safety
/// `p` must be null or hold `n` elements.
unsafe fn copied(p: *const usize, n: usize) -> Vec<usize> {
    if p.is_null() {
        return Vec::new();
    }
    // SAFETY: caller's promise.
    unsafe { std::slice::from_raw_parts(p, n) }.to_vec()
}

/// Runs a device-memory routine as a task after the given dependences (`omp_depend_t`).
fn spawn(
    api: &'static str,
    count: c_int,
    deps: *const *const c_void,
    work: impl FnOnce() + Send + 'static,
) -> c_int {
    // SAFETY: the program passes `count` depend objects (OpenMP API contract).
    let spawned =
        unsafe { crate::host_openmp::spawn_with_dependences(Box::new(work), count, deps) };
    if spawned {
        0
    } else {
        logging::failure_message(&format!("{api}: the host OpenMP runtime refused the task"));
        -1
    }
}

#[no_mangle]
pub extern "C" fn omp_target_memcpy_async(
    dst: *mut c_void,
    src: *const c_void,
    length: usize,
    dst_offset: usize,
    src_offset: usize,
    dst_device: c_int,
    src_device: c_int,
    depobj_count: c_int,
    depobj_list: *const *const c_void,
) -> c_int {
    guard("omp_target_memcpy_async", -1, || {
        if dst.is_null() || src.is_null() {
            return -1;
        }
        let (dst, src) = (dst as usize, src as usize);
        spawn(
            "omp_target_memcpy_async",
            depobj_count,
            depobj_list,
            move || {
                omp_target_memcpy(
                    dst as *mut c_void,
                    src as *const c_void,
                    length,
                    dst_offset,
                    src_offset,
                    dst_device,
                    src_device,
                );
            },
        )
    })
}

#[no_mangle]
pub extern "C" fn omp_target_memcpy_rect_async(
    dst: *mut c_void,
    src: *const c_void,
    element_size: usize,
    num_dims: c_int,
    volume: *const usize,
    dst_offsets: *const usize,
    src_offsets: *const usize,
    dst_dimensions: *const usize,
    src_dimensions: *const usize,
    dst_device: c_int,
    src_device: c_int,
    depobj_count: c_int,
    depobj_list: *const *const c_void,
) -> c_int {
    guard("omp_target_memcpy_rect_async", -1, || {
        if dst.is_null() && src.is_null() {
            return c_int::MAX;
        }
        if dst.is_null() || src.is_null() {
            return -1;
        }
        let n = num_dims.max(0) as usize;
        // SAFETY: each array holds `num_dims` elements (API contract); copied because the
        // task may run after the caller's arrays are gone.
        let arrays = unsafe {
            [
                copied(volume, n),
                copied(dst_offsets, n),
                copied(src_offsets, n),
                copied(dst_dimensions, n),
                copied(src_dimensions, n),
            ]
        };
        let (dst, src) = (dst as usize, src as usize);
        spawn(
            "omp_target_memcpy_rect_async",
            depobj_count,
            depobj_list,
            move || {
                let [v, dof, sof, dd, sd] = &arrays;
                let null_if_empty = |a: &Vec<usize>| {
                    if a.len() == n {
                        a.as_ptr()
                    } else {
                        ptr::null()
                    }
                };
                omp_target_memcpy_rect(
                    dst as *mut c_void,
                    src as *const c_void,
                    element_size,
                    num_dims,
                    null_if_empty(v),
                    null_if_empty(dof),
                    null_if_empty(sof),
                    null_if_empty(dd),
                    null_if_empty(sd),
                    dst_device,
                    src_device,
                );
            },
        )
    })
}

#[no_mangle]
pub extern "C" fn omp_target_memset_async(
    ptr: *mut c_void,
    value: c_int,
    size: usize,
    device_num: c_int,
    depobj_count: c_int,
    depobj_list: *const *const c_void,
) -> *mut c_void {
    guard("omp_target_memset_async", ptr, || {
        if ptr.is_null() || size == 0 {
            return ptr;
        }
        let address = ptr as usize;
        spawn(
            "omp_target_memset_async",
            depobj_count,
            depobj_list,
            move || {
                omp_target_memset(address as *mut c_void, value, size, device_num);
            },
        );
        ptr
    })
}
