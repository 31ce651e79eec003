//! The driver's C entry points: exactly those that our CUDA plugin, LLVM 19's or LLVM 22's
//! resolve, with the driver's signatures (the virtual-memory family is in `vmm`). Each checks its arguments, goes through `trace::call` and leaves
//! the work to the modules beside it.

// The entry points take the driver API's raw pointers from C callers; their contract is the
// driver's, so they are not marked unsafe (cuLaunchKernel, with its argument arrays, is).
#![allow(
    non_snake_case,
    clippy::missing_safety_doc,
    clippy::not_unsafe_ptr_arg_deref
)]

use crate::driver::{self, Driver, Function};
use crate::launch;
use crate::load;
use crate::memory::{self, Kind, Region};
use crate::profile;
use crate::status::{self, CuResult, Result};
use crate::streams::{Event, Stream, Untimed};
use crate::trace::{call, Call};
use offload_image::device_environment::KERNEL_ENVIRONMENT_SUFFIX;
use offload_image::twin;
use std::ffi::{c_char, c_int, c_uchar, c_uint, c_ushort, c_void, CStr};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use sync_util::lock;

type CUdevice = c_int;
type CUdeviceptr = u64;
/// Opaque handles (contexts, modules, functions, streams, events) are pointers in the C API.
type Handle = usize;

/// Writes a result through an out-pointer; a null one is `CUDA_ERROR_INVALID_VALUE`.
fn out<T>(pointer: *mut T, value: T) -> Result<()> {
    if pointer.is_null() {
        return Err(status::INVALID_VALUE);
    }
    // SAFETY: non-null, and the caller's contract makes it point to a writable `T`.
    unsafe { pointer.write(value) };
    Ok(())
}

fn copy_bytes(dst: usize, src: usize, len: usize) {
    // SAFETY: both ranges were checked against the address book (device side) or are the
    // caller's own buffers of `len` bytes (host side), as the copy functions require.
    unsafe { std::ptr::copy(src as *const u8, dst as *mut u8, len) };
}

/// The current context's device, with the driver; a context whose kernel faulted answers
/// with its sticky error.
fn current() -> Result<(&'static Driver, usize)> {
    let driver = driver::get()?;
    let device = driver.current()?.index;
    driver.usable(device)?;
    Ok((driver, device))
}

fn note_stream(c: &mut Call, stream: Handle) {
    c.note(|| format!("stream={stream:#x}"));
}

/// Notes a host-to-device copy's destination and, for small copies, the bytes copied (so a
/// trace shows what a plugin wrote into the device runtime's globals and tables).
fn note_upload(c: &mut Call, dst: CUdeviceptr, src: *const c_void, size: usize) {
    c.note(|| {
        let mut text = format!("dst={dst:#x} size={size}");
        if !src.is_null() && size <= omptarget_emu_support::calls::SHOWN_BYTES {
            // SAFETY: the caller's source buffer holds `size` bytes (the call's contract).
            let bytes = unsafe { std::slice::from_raw_parts(src.cast::<u8>(), size) };
            text.push_str(&omptarget_emu_support::calls::shown_bytes(bytes));
        }
        text
    });
}

// ---- initialisation, version, errors -------------------------------------------------------

#[no_mangle]
pub extern "C" fn cuInit(flags: c_uint) -> CuResult {
    call("cuInit", |_| {
        if flags != 0 {
            return Err(status::INVALID_VALUE);
        }
        let delay = crate::config::get().init_delay_ms;
        if delay > 0 {
            std::thread::sleep(std::time::Duration::from_millis(delay));
        }
        driver::init().map(|_| ())
    })
}

#[no_mangle]
pub extern "C" fn cuDriverGetVersion(version: *mut c_int) -> CuResult {
    call("cuDriverGetVersion", |_| {
        out(version, profile::DRIVER_VERSION)
    })
}

#[no_mangle]
pub extern "C" fn cuGetErrorName(code: CuResult, name: *mut *const c_char) -> CuResult {
    call("cuGetErrorName", |_| {
        let text: &'static CStr = match code {
            0 => c"CUDA_SUCCESS",
            _ => static_c_str(status::name(code).ok_or(status::INVALID_VALUE)?),
        };
        out(name, text.as_ptr())
    })
}

#[no_mangle]
pub extern "C" fn cuGetErrorString(code: CuResult, text: *mut *const c_char) -> CuResult {
    call("cuGetErrorString", |_| {
        let s: &'static CStr = match code {
            0 => c"no error",
            _ => static_c_str(status::text(code).ok_or(status::INVALID_VALUE)?),
        };
        out(text, s.as_ptr())
    })
}

/// A process-lifetime C copy of a static text (the driver hands out static strings).
fn static_c_str(text: &'static str) -> &'static CStr {
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};
    static TEXTS: OnceLock<Mutex<HashMap<&'static str, &'static CStr>>> = OnceLock::new();
    let mut texts = lock(TEXTS.get_or_init(Default::default));
    texts.entry(text).or_insert_with(|| {
        let owned = std::ffi::CString::new(text).unwrap_or_default();
        Box::leak(owned.into_boxed_c_str())
    })
}

// ---- devices ----------------------------------------------------------------------------

#[no_mangle]
pub extern "C" fn cuDeviceGetCount(count: *mut c_int) -> CuResult {
    call("cuDeviceGetCount", |_| {
        out(count, driver::get()?.devices.len() as c_int)
    })
}

#[no_mangle]
pub extern "C" fn cuDeviceGet(device: *mut CUdevice, ordinal: c_int) -> CuResult {
    call("cuDeviceGet", |_| {
        driver::get()?.device(ordinal)?;
        out(device, ordinal)
    })
}

#[no_mangle]
pub extern "C" fn cuDeviceGetName(name: *mut c_char, len: c_int, device: CUdevice) -> CuResult {
    call("cuDeviceGetName", |_| {
        driver::get()?.device(device)?;
        let len = usize::try_from(len).map_err(|_| status::INVALID_VALUE)?;
        if name.is_null() || len == 0 {
            return Err(status::INVALID_VALUE);
        }
        let bytes = profile::current().name().as_bytes();
        let n = bytes.len().min(len - 1);
        // SAFETY: `name` has room for `len` bytes (the caller's contract); n + 1 <= len.
        unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), name.cast::<u8>(), n);
            name.add(n).write(0);
        }
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn cuDeviceGetAttribute(
    value: *mut c_int,
    attribute: c_int,
    device: CUdevice,
) -> CuResult {
    call("cuDeviceGetAttribute", |c| {
        c.note(|| format!("attribute={attribute}"));
        let d = driver::get()?.device(device)?;
        out(
            value,
            profile::attribute(attribute, d.index).ok_or(status::INVALID_VALUE)?,
        )
    })
}

#[no_mangle]
pub extern "C" fn cuDeviceTotalMem_v2(bytes: *mut usize, device: CUdevice) -> CuResult {
    call("cuDeviceTotalMem_v2", |_| {
        out(bytes, driver::get()?.device(device)?.memory.total())
    })
}

#[no_mangle]
pub extern "C" fn cuDeviceGetUuid(uuid: *mut [u8; 16], device: CUdevice) -> CuResult {
    call("cuDeviceGetUuid", |_| {
        let d = driver::get()?.device(device)?;
        let mut bytes = *b"omptarget-emu-\0\0";
        bytes[14..].copy_from_slice(&(d.index as u16).to_be_bytes());
        out(uuid, bytes)
    })
}

#[no_mangle]
pub extern "C" fn cuDeviceCanAccessPeer(
    can: *mut c_int,
    device: CUdevice,
    peer: CUdevice,
) -> CuResult {
    call("cuDeviceCanAccessPeer", |_| {
        let driver = driver::get()?;
        driver.device(device)?;
        driver.device(peer)?;
        out(can, (device != peer) as c_int)
    })
}

// ---- contexts ---------------------------------------------------------------------------

#[no_mangle]
pub extern "C" fn cuDevicePrimaryCtxRetain(context: *mut Handle, device: CUdevice) -> CuResult {
    call("cuDevicePrimaryCtxRetain", |_| {
        let driver = driver::get()?;
        let d = driver.device(device)?;
        if context.is_null() {
            return Err(status::INVALID_VALUE);
        }
        lock(&d.context.state).retained += 1;
        out(context, driver.context_handle(d.index))
    })
}

#[no_mangle]
pub extern "C" fn cuDevicePrimaryCtxRelease_v2(device: CUdevice) -> CuResult {
    call("cuDevicePrimaryCtxRelease_v2", |_| {
        let driver = driver::get()?;
        let d = driver.device(device)?;
        let last = {
            let mut state = lock(&d.context.state);
            if state.retained == 0 {
                return Err(status::INVALID_CONTEXT);
            }
            state.retained -= 1;
            state.retained == 0
        };
        if last {
            driver.tear_down(d.index);
        }
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn cuDevicePrimaryCtxGetState(
    device: CUdevice,
    flags: *mut c_uint,
    active: *mut c_int,
) -> CuResult {
    call("cuDevicePrimaryCtxGetState", |_| {
        let state = lock(&driver::get()?.device(device)?.context.state);
        out(flags, state.flags)?;
        out(active, (state.retained > 0) as c_int)
    })
}

#[no_mangle]
pub extern "C" fn cuDevicePrimaryCtxSetFlags_v2(device: CUdevice, flags: c_uint) -> CuResult {
    call("cuDevicePrimaryCtxSetFlags_v2", |c| {
        c.note(|| format!("flags={flags:#x}"));
        // Scheduling (bits 0-2), map-host (3), local-memory resize (4), sync-memops (0x80).
        if flags & !0x9f != 0 {
            return Err(status::INVALID_VALUE);
        }
        lock(&driver::get()?.device(device)?.context.state).flags = flags;
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn cuCtxSetCurrent(context: Handle) -> CuResult {
    call("cuCtxSetCurrent", |c| {
        c.note(|| format!("context={context:#x}"));
        driver::get()?.set_current(context)
    })
}

#[no_mangle]
pub extern "C" fn cuCtxGetDevice(device: *mut CUdevice) -> CuResult {
    call("cuCtxGetDevice", |_| {
        let (_, d) = current()?;
        out(device, d as CUdevice)
    })
}

#[no_mangle]
pub extern "C" fn cuCtxGetLimit(value: *mut usize, limit: c_int) -> CuResult {
    call("cuCtxGetLimit", |_| {
        let (driver, d) = current()?;
        let limits = lock(&driver.devices[d].context.state).limits;
        out(
            value,
            *usize::try_from(limit)
                .ok()
                .and_then(|l| limits.get(l))
                .ok_or(status::INVALID_VALUE)?,
        )
    })
}

#[no_mangle]
pub extern "C" fn cuCtxSetLimit(limit: c_int, value: usize) -> CuResult {
    call("cuCtxSetLimit", |c| {
        c.note(|| format!("limit={limit} value={value}"));
        let (driver, d) = current()?;
        let mut state = lock(&driver.devices[d].context.state);
        let slot = usize::try_from(limit)
            .ok()
            .and_then(|l| state.limits.get_mut(l))
            .ok_or(status::INVALID_VALUE)?;
        *slot = value;
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn cuCtxEnablePeerAccess(peer: Handle, flags: c_uint) -> CuResult {
    call("cuCtxEnablePeerAccess", |_| {
        let (driver, d) = current()?;
        let peer = driver.context_by_handle(peer)?.index;
        if flags != 0 {
            return Err(status::INVALID_VALUE);
        }
        if peer == d {
            return Err(status::INVALID_DEVICE);
        }
        if !lock(&driver.devices[d].context.state).peers.insert(peer) {
            return Err(status::PEER_ACCESS_ALREADY_ENABLED);
        }
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn cuMemGetInfo_v2(free: *mut usize, total: *mut usize) -> CuResult {
    call("cuMemGetInfo_v2", |_| {
        let (driver, d) = current()?;
        let memory = &driver.devices[d].memory;
        out(free, memory.total() - memory.used())?;
        out(total, memory.total())
    })
}

// ---- memory -----------------------------------------------------------------------------

fn allocate_device(pointer: *mut CUdeviceptr, size: usize, kind: Kind, c: &mut Call) -> Result<()> {
    c.note(|| format!("size={size}"));
    let (driver, d) = current()?;
    if pointer.is_null() {
        return Err(status::INVALID_VALUE);
    }
    // The driver's allocation waits for the device's work (what the stream-ordered allocator
    // exists to avoid).
    driver.device_sync(d);
    let start = driver.allocate(d, size, kind)?;
    c.note(|| format!("ptr={start:#x}"));
    out(pointer, start as CUdeviceptr)
}

#[no_mangle]
pub extern "C" fn cuMemAlloc_v2(pointer: *mut CUdeviceptr, size: usize) -> CuResult {
    call("cuMemAlloc_v2", |c| {
        allocate_device(pointer, size, Kind::Device, c)
    })
}

#[no_mangle]
pub extern "C" fn cuMemAllocManaged(
    pointer: *mut CUdeviceptr,
    size: usize,
    flags: c_uint,
) -> CuResult {
    call("cuMemAllocManaged", |c| {
        // CU_MEM_ATTACH_GLOBAL or CU_MEM_ATTACH_HOST.
        if flags != 1 && flags != 2 {
            return Err(status::INVALID_VALUE);
        }
        allocate_device(pointer, size, Kind::Managed, c)
    })
}

#[no_mangle]
pub extern "C" fn cuMemFree_v2(pointer: CUdeviceptr) -> CuResult {
    call("cuMemFree_v2", |c| {
        c.note(|| format!("ptr={pointer:#x}"));
        let (driver, d) = current()?;
        driver.device_sync(d);
        driver.free(pointer as usize, &[Kind::Device, Kind::Managed])
    })
}

#[no_mangle]
pub extern "C" fn cuMemAllocAsync(
    pointer: *mut CUdeviceptr,
    size: usize,
    stream: Handle,
) -> CuResult {
    call("cuMemAllocAsync", |c| {
        note_stream(c, stream);
        c.note(|| format!("size={size}"));
        let (driver, d) = current()?;
        driver.stream(stream, d)?;
        if pointer.is_null() {
            return Err(status::INVALID_VALUE);
        }
        // Stream-ordered: no wait for other work; the memory is ready in stream order.
        let start = driver.allocate(d, size, Kind::Device)?;
        c.note(|| format!("ptr={start:#x}"));
        out(pointer, start as CUdeviceptr)
    })
}

#[no_mangle]
pub extern "C" fn cuMemFreeAsync(pointer: CUdeviceptr, stream: Handle) -> CuResult {
    call("cuMemFreeAsync", |c| {
        note_stream(c, stream);
        c.note(|| format!("ptr={pointer:#x}"));
        let (driver, d) = current()?;
        let queue = driver.stream(stream, d)?;
        let start = pointer as usize;
        match driver.book.find(start, 0) {
            Some(r) if r.start == start && r.kind == Kind::Device => {}
            _ => return Err(status::INVALID_VALUE),
        }
        // Gone for new work now; the memory itself is released when the stream gets there.
        let region = driver.book.remove(start).ok_or(status::INVALID_VALUE)?;
        let device = region.device.ok_or(status::INVALID_VALUE)?;
        let release = move || {
            let _ = driver.devices[device].memory.free(start);
        };
        match queue {
            Some(queue) => queue.submit(release),
            None => {
                driver.legacy_sync(d);
                release();
            }
        }
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn cuMemAllocHost_v2(pointer: *mut *mut c_void, size: usize) -> CuResult {
    call("cuMemAllocHost_v2", |c| {
        c.note(|| format!("size={size}"));
        let (driver, _) = current()?;
        if pointer.is_null() {
            return Err(status::INVALID_VALUE);
        }
        let start = memory::allocate_host(size)?;
        driver.book.insert(Region {
            start,
            size,
            kind: Kind::HostAllocated,
            device: None,
        });
        out(pointer, start as *mut c_void)
    })
}

#[no_mangle]
pub extern "C" fn cuMemFreeHost(pointer: *mut c_void) -> CuResult {
    call("cuMemFreeHost", |_| {
        let (driver, _) = current()?;
        let start = pointer as usize;
        match driver.book.find(start, 0) {
            Some(r) if r.start == start && r.kind == Kind::HostAllocated => {
                driver.book.remove(start);
                memory::free_host(start, r.size);
                Ok(())
            }
            _ => Err(status::INVALID_VALUE),
        }
    })
}

#[no_mangle]
pub extern "C" fn cuMemHostRegister_v2(
    pointer: *mut c_void,
    size: usize,
    flags: c_uint,
) -> CuResult {
    call("cuMemHostRegister_v2", |c| {
        c.note(|| format!("ptr={:#x} size={size} flags={flags:#x}", pointer as usize));
        let (driver, _) = current()?;
        // Portable, device-map, IO memory, read-only.
        if flags & !0xf != 0 {
            return Err(status::INVALID_VALUE);
        }
        driver.book.register_host(pointer as usize, size)
    })
}

#[no_mangle]
pub extern "C" fn cuMemHostUnregister(pointer: *mut c_void) -> CuResult {
    call("cuMemHostUnregister", |c| {
        c.note(|| format!("ptr={:#x}", pointer as usize));
        let (driver, _) = current()?;
        driver.book.unregister_host(pointer as usize)
    })
}

#[no_mangle]
pub extern "C" fn cuMemHostGetDevicePointer_v2(
    device_pointer: *mut CUdeviceptr,
    pointer: *mut c_void,
    flags: c_uint,
) -> CuResult {
    call("cuMemHostGetDevicePointer_v2", |_| {
        let (driver, _) = current()?;
        if flags != 0 {
            return Err(status::INVALID_VALUE);
        }
        match driver.book.find(pointer as usize, 0) {
            // Unified addressing: the device sees page-locked memory at the host's address.
            Some(r) if r.kind.page_locked() => out(device_pointer, pointer as CUdeviceptr),
            _ => Err(status::INVALID_VALUE),
        }
    })
}

// ---- copies -----------------------------------------------------------------------------

/// Runs `work` in stream order: on the stream's worker, or (legacy default stream) now, after
/// the blocking streams.
fn in_order(
    driver: &'static Driver,
    device: usize,
    stream: Option<Arc<Stream>>,
    work: impl FnOnce() + Send + 'static,
) {
    match stream {
        Some(stream) => stream.submit(work),
        None => {
            driver.legacy_sync(device);
            work();
        }
    }
}

#[no_mangle]
pub extern "C" fn cuMemcpyHtoDAsync_v2(
    dst: CUdeviceptr,
    src: *const c_void,
    size: usize,
    stream: Handle,
) -> CuResult {
    call("cuMemcpyHtoDAsync_v2", |c| {
        note_stream(c, stream);
        note_upload(c, dst, src, size);
        let (driver, d) = current()?;
        let queue = driver.stream(stream, d)?;
        if size == 0 {
            return Ok(());
        }
        driver.book.device_range(dst as usize, size)?;
        if src.is_null() {
            return Err(status::INVALID_VALUE);
        }
        let (dst, src_address) = (dst as usize, src as usize);
        if driver
            .book
            .find(src_address, size)
            .is_some_and(|r| r.kind.page_locked())
        {
            in_order(driver, d, queue, move || copy_bytes(dst, src_address, size));
        } else {
            // Pageable memory: the driver stages it before returning, so the caller may reuse
            // its buffer at once.
            // SAFETY: the caller's source buffer holds `size` bytes.
            let staged = unsafe { std::slice::from_raw_parts(src.cast::<u8>(), size) }.to_vec();
            in_order(driver, d, queue, move || {
                copy_bytes(dst, staged.as_ptr() as usize, size)
            });
        }
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn cuMemcpyDtoHAsync_v2(
    dst: *mut c_void,
    src: CUdeviceptr,
    size: usize,
    stream: Handle,
) -> CuResult {
    call("cuMemcpyDtoHAsync_v2", |c| {
        note_stream(c, stream);
        c.note(|| format!("size={size}"));
        let (driver, d) = current()?;
        let queue = driver.stream(stream, d)?;
        if size == 0 {
            return Ok(());
        }
        driver.book.device_range(src as usize, size)?;
        if dst.is_null() {
            return Err(status::INVALID_VALUE);
        }
        let (dst_address, src) = (dst as usize, src as usize);
        let pinned = driver
            .book
            .find(dst_address, size)
            .is_some_and(|r| r.kind.page_locked());
        let waited = queue.clone();
        in_order(driver, d, queue, move || copy_bytes(dst_address, src, size));
        if !pinned {
            // Pageable destination: the copy is synchronous for the host.
            if let Some(stream) = waited {
                stream.wait_idle();
            }
        }
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn cuMemcpyDtoDAsync_v2(
    dst: CUdeviceptr,
    src: CUdeviceptr,
    size: usize,
    stream: Handle,
) -> CuResult {
    call("cuMemcpyDtoDAsync_v2", |c| {
        note_stream(c, stream);
        c.note(|| format!("size={size}"));
        let (driver, d) = current()?;
        let queue = driver.stream(stream, d)?;
        if size == 0 {
            return Ok(());
        }
        driver.book.device_range(dst as usize, size)?;
        driver.book.device_range(src as usize, size)?;
        let (dst, src) = (dst as usize, src as usize);
        in_order(driver, d, queue, move || copy_bytes(dst, src, size));
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn cuMemcpyPeerAsync(
    dst: CUdeviceptr,
    dst_context: Handle,
    src: CUdeviceptr,
    src_context: Handle,
    size: usize,
    stream: Handle,
) -> CuResult {
    call("cuMemcpyPeerAsync", |c| {
        note_stream(c, stream);
        c.note(|| format!("size={size}"));
        let (driver, d) = current()?;
        let dst_device = driver.context_by_handle(dst_context)?.index;
        let src_device = driver.context_by_handle(src_context)?.index;
        let queue = driver.stream(stream, d)?;
        if size == 0 {
            return Ok(());
        }
        let on = |address: u64, device: usize| -> Result<()> {
            let region = driver.book.device_range(address as usize, size)?;
            match region.device {
                Some(owner) if owner == device => Ok(()),
                _ => Err(status::INVALID_VALUE),
            }
        };
        on(dst, dst_device)?;
        on(src, src_device)?;
        let (dst, src) = (dst as usize, src as usize);
        in_order(driver, d, queue, move || copy_bytes(dst, src, size));
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn cuMemcpyHtoD_v2(dst: CUdeviceptr, src: *const c_void, size: usize) -> CuResult {
    call("cuMemcpyHtoD_v2", |c| {
        note_upload(c, dst, src, size);
        let (driver, d) = current()?;
        if size == 0 {
            return Ok(());
        }
        driver.book.device_range(dst as usize, size)?;
        if src.is_null() {
            return Err(status::INVALID_VALUE);
        }
        driver.legacy_sync(d);
        copy_bytes(dst as usize, src as usize, size);
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn cuMemcpyDtoH_v2(dst: *mut c_void, src: CUdeviceptr, size: usize) -> CuResult {
    call("cuMemcpyDtoH_v2", |c| {
        c.note(|| format!("size={size}"));
        let (driver, d) = current()?;
        if size == 0 {
            return Ok(());
        }
        driver.book.device_range(src as usize, size)?;
        if dst.is_null() {
            return Err(status::INVALID_VALUE);
        }
        driver.legacy_sync(d);
        copy_bytes(dst as usize, src as usize, size);
        Ok(())
    })
}

// ---- memsets ----------------------------------------------------------------------------

/// Writes `count` elements of `value` (its low `width` bytes) from `dst`.
fn set_elements(dst: usize, width: usize, value: u32, count: usize) {
    // SAFETY: `count` elements from `dst`, aligned to their width, lie in one region the device
    // reaches (checked by `memset`, as the driver does), and the region is accessible memory.
    unsafe {
        match width {
            1 => std::ptr::write_bytes(dst as *mut u8, value as u8, count),
            2 => std::slice::from_raw_parts_mut(dst as *mut u16, count).fill(value as u16),
            _ => std::slice::from_raw_parts_mut(dst as *mut u32, count).fill(value),
        }
    }
}

/// The driver's rules for `cuMemsetD{8,16,32}[Async]`: a current context without a sticky
/// error, a stream of it (`None`: the synchronous calls, on the legacy default stream), a
/// `dst` aligned to the element's width, and all `count` elements inside memory the device
/// reaches (an allocation, managed memory, a module's global or page-locked host memory); any
/// of these wrong is `INVALID_VALUE`. Then the elements are set in stream order, as a copy
/// runs.
fn memset(
    c: &mut Call,
    dst: CUdeviceptr,
    width: usize,
    value: u32,
    count: usize,
    stream: Option<Handle>,
) -> Result<()> {
    if let Some(stream) = stream {
        note_stream(c, stream);
    }
    c.note(|| {
        format!(
            "dst={dst:#x} value={value:#x} count={count} size={}",
            count.saturating_mul(width)
        )
    });
    let (driver, d) = current()?;
    let queue = match stream {
        Some(handle) => driver.stream(handle, d)?,
        None => None,
    };
    let dst = dst as usize;
    if !dst.is_multiple_of(width) {
        return Err(status::INVALID_VALUE);
    }
    if count == 0 {
        return Ok(());
    }
    let size = count.checked_mul(width).ok_or(status::INVALID_VALUE)?;
    driver.book.device_range(dst, size)?;
    in_order(driver, d, queue, move || {
        set_elements(dst, width, value, count)
    });
    Ok(())
}

#[no_mangle]
pub extern "C" fn cuMemsetD8Async(
    dst: CUdeviceptr,
    value: c_uchar,
    count: usize,
    stream: Handle,
) -> CuResult {
    call("cuMemsetD8Async", |c| {
        memset(c, dst, 1, value.into(), count, Some(stream))
    })
}

#[no_mangle]
pub extern "C" fn cuMemsetD16Async(
    dst: CUdeviceptr,
    value: c_ushort,
    count: usize,
    stream: Handle,
) -> CuResult {
    call("cuMemsetD16Async", |c| {
        memset(c, dst, 2, value.into(), count, Some(stream))
    })
}

#[no_mangle]
pub extern "C" fn cuMemsetD32Async(
    dst: CUdeviceptr,
    value: c_uint,
    count: usize,
    stream: Handle,
) -> CuResult {
    call("cuMemsetD32Async", |c| {
        memset(c, dst, 4, value, count, Some(stream))
    })
}

#[no_mangle]
pub extern "C" fn cuMemsetD8_v2(dst: CUdeviceptr, value: c_uchar, count: usize) -> CuResult {
    call("cuMemsetD8_v2", |c| {
        memset(c, dst, 1, value.into(), count, None)
    })
}

#[no_mangle]
pub extern "C" fn cuMemsetD16_v2(dst: CUdeviceptr, value: c_ushort, count: usize) -> CuResult {
    call("cuMemsetD16_v2", |c| {
        memset(c, dst, 2, value.into(), count, None)
    })
}

#[no_mangle]
pub extern "C" fn cuMemsetD32_v2(dst: CUdeviceptr, value: c_uint, count: usize) -> CuResult {
    call("cuMemsetD32_v2", |c| memset(c, dst, 4, value, count, None))
}

/// The driver's rules for `cuMemsetD2D{8,16,32}Async`: `height` rows of `width` elements,
/// `pitch` bytes apart (the pitch is unused for one row). As for the one-dimensional memsets:
/// a current context without a sticky error and a stream of it, a `dst` aligned to the
/// element's width; and the pitch aligned to it too and at least a row's bytes, and every row
/// inside one region the device reaches. Any of these wrong is `INVALID_VALUE`. Then the rows
/// are set in stream order. LLVM 22's plugin fills memory with patterns of other sizes this
/// way: one element per row, the pattern's size as the pitch.
#[allow(clippy::too_many_arguments)]
fn memset_2d(
    c: &mut Call,
    dst: CUdeviceptr,
    pitch: usize,
    width: usize,
    value: u32,
    element: usize,
    height: usize,
    stream: Handle,
) -> Result<()> {
    note_stream(c, stream);
    c.note(|| {
        let size = width.saturating_mul(element).saturating_mul(height);
        format!(
            "dst={dst:#x} pitch={pitch} value={value:#x} width={width} height={height} size={size}"
        )
    });
    let (driver, d) = current()?;
    let queue = driver.stream(stream, d)?;
    let dst = dst as usize;
    let row = width.checked_mul(element).ok_or(status::INVALID_VALUE)?;
    if !dst.is_multiple_of(element) {
        return Err(status::INVALID_VALUE);
    }
    if height > 1 && (!pitch.is_multiple_of(element) || pitch < row) {
        return Err(status::INVALID_VALUE);
    }
    if width == 0 || height == 0 {
        return Ok(());
    }
    let span = (height - 1)
        .checked_mul(pitch)
        .and_then(|rows| rows.checked_add(row))
        .ok_or(status::INVALID_VALUE)?;
    driver.book.device_range(dst, span)?;
    in_order(driver, d, queue, move || {
        for r in 0..height {
            set_elements(dst + r * pitch, element, value, width);
        }
    });
    Ok(())
}

#[no_mangle]
pub extern "C" fn cuMemsetD2D8Async(
    dst: CUdeviceptr,
    pitch: usize,
    value: c_uchar,
    width: usize,
    height: usize,
    stream: Handle,
) -> CuResult {
    call("cuMemsetD2D8Async", |c| {
        memset_2d(c, dst, pitch, width, value.into(), 1, height, stream)
    })
}

#[no_mangle]
pub extern "C" fn cuMemsetD2D16Async(
    dst: CUdeviceptr,
    pitch: usize,
    value: c_ushort,
    width: usize,
    height: usize,
    stream: Handle,
) -> CuResult {
    call("cuMemsetD2D16Async", |c| {
        memset_2d(c, dst, pitch, width, value.into(), 2, height, stream)
    })
}

#[no_mangle]
pub extern "C" fn cuMemsetD2D32Async(
    dst: CUdeviceptr,
    pitch: usize,
    value: c_uint,
    width: usize,
    height: usize,
    stream: Handle,
) -> CuResult {
    call("cuMemsetD2D32Async", |c| {
        memset_2d(c, dst, pitch, width, value, 4, height, stream)
    })
}

// ---- streams and events -----------------------------------------------------------------

#[no_mangle]
pub extern "C" fn cuStreamCreate(stream: *mut Handle, flags: c_uint) -> CuResult {
    call("cuStreamCreate", |c| {
        c.note(|| format!("flags={flags}"));
        let (driver, d) = current()?;
        // CU_STREAM_DEFAULT or CU_STREAM_NON_BLOCKING.
        if flags > 1 || stream.is_null() {
            return Err(status::INVALID_VALUE);
        }
        let created = Stream::start(d, flags == 0).map_err(|_| status::OUT_OF_MEMORY)?;
        lock(&driver.devices[d].context.state)
            .streams
            .push(created.clone());
        let handle = driver.streams.insert(created);
        c.note(|| format!("stream={handle:#x}"));
        out(stream, handle)
    })
}

#[no_mangle]
pub extern "C" fn cuStreamDestroy_v2(stream: Handle) -> CuResult {
    call("cuStreamDestroy_v2", |c| {
        note_stream(c, stream);
        let driver = driver::get()?;
        driver.usable(driver.streams.get(stream)?.device)?;
        let gone = driver.streams.remove(stream)?;
        gone.close();
        lock(&driver.devices[gone.device].context.state)
            .streams
            .retain(|s| !Arc::ptr_eq(s, &gone));
        Ok(())
    })
}

/// The stream of a handle on any device (synchronisation needs no current context).
fn any_stream(driver: &Driver, handle: Handle) -> Result<Arc<Stream>> {
    driver.streams.get(handle)
}

#[no_mangle]
pub extern "C" fn cuStreamSynchronize(stream: Handle) -> CuResult {
    call("cuStreamSynchronize", |c| {
        note_stream(c, stream);
        let driver = driver::get()?;
        if driver::is_default_stream(stream) {
            let (_, d) = current()?;
            driver.legacy_sync(d);
            return driver.usable(d);
        }
        let stream = any_stream(driver, stream)?;
        stream.wait_idle();
        driver.usable(stream.device)
    })
}

#[no_mangle]
pub extern "C" fn cuStreamQuery(stream: Handle) -> CuResult {
    call("cuStreamQuery", |c| {
        note_stream(c, stream);
        let driver = driver::get()?;
        if driver::is_default_stream(stream) {
            if let Ok(device) = driver.current() {
                driver.usable(device.index)?;
            }
            return Ok(());
        }
        let stream = any_stream(driver, stream)?;
        driver.usable(stream.device)?;
        if stream.idle() {
            Ok(())
        } else {
            Err(status::NOT_READY)
        }
    })
}

#[no_mangle]
pub extern "C" fn cuStreamWaitEvent(stream: Handle, event: Handle, flags: c_uint) -> CuResult {
    call("cuStreamWaitEvent", |c| {
        note_stream(c, stream);
        let driver = driver::get()?;
        let event = driver.events.get(event)?;
        driver.usable(event.device)?;
        if flags != 0 {
            return Err(status::INVALID_VALUE);
        }
        let mark = event.latest();
        if driver::is_default_stream(stream) {
            event.wait_for(mark);
            return Ok(());
        }
        let stream = any_stream(driver, stream)?;
        driver.usable(stream.device)?;
        stream.submit(move || event.wait_for(mark));
        Ok(())
    })
}

/// `CUhostFn`: a host function queued with `cuLaunchHostFunc`.
type HostFn = Option<unsafe extern "C" fn(*mut c_void)>;
/// `CUstreamCallback`: a callback queued with `cuStreamAddCallback`.
type StreamCallback = Option<unsafe extern "C" fn(Handle, CuResult, *mut c_void)>;

/// Runs a host function in stream order, on the stream's worker (or at once after the
/// blocking streams, on the legacy default stream). As the driver documents, it is not called
/// once a kernel fault has made the context's error sticky: an abandoned stream drops it.
#[no_mangle]
pub extern "C" fn cuLaunchHostFunc(
    stream: Handle,
    function: HostFn,
    data: *mut c_void,
) -> CuResult {
    call("cuLaunchHostFunc", |c| {
        note_stream(c, stream);
        let (driver, d) = current()?;
        let queue = driver.stream(stream, d)?;
        let function = function.ok_or(status::INVALID_VALUE)?;
        let data = data as usize;
        in_order(driver, d, queue, move || {
            // SAFETY: the caller's host function with the caller's data, as the driver calls it.
            unsafe { function(data as *mut c_void) }
        });
        Ok(())
    })
}

/// Queues a callback that runs in stream order like a host function, but, as the driver
/// documents, also after a kernel fault: then with the context's sticky error as its status
/// (queued as an event's mark is, so that an abandoned stream still reaches it).
#[no_mangle]
pub extern "C" fn cuStreamAddCallback(
    stream: Handle,
    callback: StreamCallback,
    data: *mut c_void,
    flags: c_uint,
) -> CuResult {
    call("cuStreamAddCallback", |c| {
        note_stream(c, stream);
        let (driver, d) = current()?;
        let queue = driver.stream(stream, d)?;
        let callback = callback.ok_or(status::INVALID_VALUE)?;
        if flags != 0 {
            return Err(status::INVALID_VALUE);
        }
        let data = data as usize;
        let run = move || {
            let result = driver.usable(d).err().map_or(status::SUCCESS, |e| e.0);
            // SAFETY: the caller's callback with the caller's data, as the driver calls it.
            unsafe { callback(stream, result, data as *mut c_void) }
        };
        match queue {
            Some(queue) => queue.submit_marker(run),
            None => {
                driver.legacy_sync(d);
                run();
            }
        }
        Ok(())
    })
}

/// Whether the stream has reached the event's latest record: `CUDA_SUCCESS` (also for an
/// event never recorded) or `CUDA_ERROR_NOT_READY`.
#[no_mangle]
pub extern "C" fn cuEventQuery(event: Handle) -> CuResult {
    call("cuEventQuery", |c| {
        c.note(|| format!("event={event:#x}"));
        let driver = driver::get()?;
        let event = driver.events.get(event)?;
        driver.usable(event.device)?;
        if event.complete() {
            Ok(())
        } else {
            Err(status::NOT_READY)
        }
    })
}

#[no_mangle]
pub extern "C" fn cuEventCreate(event: *mut Handle, flags: c_uint) -> CuResult {
    call("cuEventCreate", |_| {
        let (driver, d) = current()?;
        // Default, blocking sync, disable timing, interprocess.
        if flags & !0x7 != 0 || event.is_null() {
            return Err(status::INVALID_VALUE);
        }
        const DISABLE_TIMING: c_uint = 0x2;
        let timed = flags & DISABLE_TIMING == 0;
        out(event, driver.events.insert(Arc::new(Event::new(timed, d))))
    })
}

/// The time between two events' latest records, in milliseconds, as the driver measures it
/// (resolution about half a microsecond): from the instants the streams reached them.
#[no_mangle]
pub extern "C" fn cuEventElapsedTime(
    milliseconds: *mut f32,
    start: Handle,
    end: Handle,
) -> CuResult {
    call("cuEventElapsedTime", |c| {
        let driver = driver::get()?;
        let (first, last) = (driver.events.get(start)?, driver.events.get(end)?);
        driver.usable(first.device)?;
        if milliseconds.is_null() {
            return Err(status::INVALID_VALUE);
        }
        // The driver's order of checks: an event without timing, or never recorded, is an
        // invalid handle; one not yet reached is "not ready".
        let reached = |e: &Event| {
            e.reached_at().map_err(|why| match why {
                Untimed::NoTiming => status::INVALID_HANDLE,
                Untimed::NotReached => status::NOT_READY,
            })
        };
        let (from, to) = (reached(&first), reached(&last));
        let (from, to) = match (from, to) {
            (Err(status::INVALID_HANDLE), _) | (_, Err(status::INVALID_HANDLE)) => {
                return Err(status::INVALID_HANDLE)
            }
            (Err(e), _) | (_, Err(e)) => return Err(e),
            (Ok(from), Ok(to)) => (from, to),
        };
        let ms = if to >= from {
            to.duration_since(from).as_secs_f64() * 1e3
        } else {
            -(from.duration_since(to).as_secs_f64() * 1e3)
        };
        // Half-microsecond resolution, as the driver documents.
        let ms = (ms * 2000.0).round() / 2000.0;
        c.note(|| format!("start={start:#x} end={end:#x} ms={ms}"));
        out(milliseconds, ms as f32)
    })
}

#[no_mangle]
pub extern "C" fn cuEventRecord(event: Handle, stream: Handle) -> CuResult {
    call("cuEventRecord", |c| {
        note_stream(c, stream);
        let driver = driver::get()?;
        let event = driver.events.get(event)?;
        driver.usable(event.device)?;
        if driver::is_default_stream(stream) {
            let (_, d) = current()?;
            let mark = event.record();
            driver.legacy_sync(d);
            event.reach(mark);
            return Ok(());
        }
        let stream = any_stream(driver, stream)?;
        driver.usable(stream.device)?;
        let mark = event.record();
        stream.submit_marker(move || event.reach(mark));
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn cuEventSynchronize(event: Handle) -> CuResult {
    call("cuEventSynchronize", |_| {
        let driver = driver::get()?;
        let event = driver.events.get(event)?;
        event.wait_for(event.latest());
        driver.usable(event.device)
    })
}

fn destroy_event(event: Handle) -> Result<()> {
    let driver = driver::get()?;
    driver.usable(driver.events.get(event)?.device)?;
    driver.events.remove(event).map(|_| ())
}

#[no_mangle]
pub extern "C" fn cuEventDestroy_v2(event: Handle) -> CuResult {
    call("cuEventDestroy_v2", |_| destroy_event(event))
}

/// The pre-CUDA-4 name, which LLVM 19's plugin resolves (same behaviour).
#[no_mangle]
pub extern "C" fn cuEventDestroy(event: Handle) -> CuResult {
    call("cuEventDestroy", |_| destroy_event(event))
}

// ---- modules and kernels ------------------------------------------------------------------

fn load_module(module: *mut Handle, image: *const c_void, c: &mut Call) -> Result<()> {
    let (driver, d) = current()?;
    if module.is_null() || image.is_null() {
        return Err(status::INVALID_VALUE);
    }
    let loaded = load::load(driver, d, image as usize)?;
    let twin = loaded.twin.is_some();
    let handle = driver.modules.insert(Arc::new(loaded));
    c.note(|| format!("module={handle:#x} twin={twin}"));
    out(module, handle)
}

#[no_mangle]
pub extern "C" fn cuModuleLoadData(module: *mut Handle, image: *const c_void) -> CuResult {
    call("cuModuleLoadData", |c| load_module(module, image, c))
}

#[no_mangle]
pub extern "C" fn cuModuleLoadDataEx(
    module: *mut Handle,
    image: *const c_void,
    options: c_uint,
    _keys: *mut c_int,
    _values: *mut *mut c_void,
) -> CuResult {
    // JIT options only tune PTX compilation, which the emulator does not do.
    call("cuModuleLoadDataEx", |c| {
        c.note(|| format!("options={options}"));
        load_module(module, image, c)
    })
}

#[no_mangle]
pub extern "C" fn cuModuleUnload(module: Handle) -> CuResult {
    call("cuModuleUnload", |_| {
        let driver = driver::get()?;
        driver.usable(driver.modules.get(module)?.device)?;
        let gone = driver.modules.remove(module)?;
        driver.device_sync(gone.device);
        driver.unload(module, &gone);
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn cuModuleGetGlobal_v2(
    pointer: *mut CUdeviceptr,
    size: *mut usize,
    module: Handle,
    name: *const c_char,
) -> CuResult {
    call("cuModuleGetGlobal_v2", |c| {
        let driver = driver::get()?;
        let m = driver.modules.get(module)?;
        driver.usable(m.device)?;
        if name.is_null() {
            return Err(status::INVALID_VALUE);
        }
        // SAFETY: a NUL-terminated name (the caller's contract).
        let name = unsafe { CStr::from_ptr(name) }.to_string_lossy();
        c.note(|| format!("name={name}"));
        let (address, bytes) = m.global(&name, &driver.book)?;
        c.note(|| format!("dptr={address:#x} size={bytes}"));
        if !pointer.is_null() {
            out(pointer, address as CUdeviceptr)?;
        }
        if !size.is_null() {
            out(size, bytes)?;
        }
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn cuModuleGetFunction(
    function: *mut Handle,
    module: Handle,
    name: *const c_char,
) -> CuResult {
    call("cuModuleGetFunction", |c| {
        let driver = driver::get()?;
        let m = driver.modules.get(module)?;
        driver.usable(m.device)?;
        if name.is_null() || function.is_null() {
            return Err(status::INVALID_VALUE);
        }
        // SAFETY: a NUL-terminated name (the caller's contract).
        let name = unsafe { CStr::from_ptr(name) }
            .to_string_lossy()
            .into_owned();
        c.note(|| format!("name={name}"));
        let kernel = m.image.kernels.get(&name).ok_or(status::NOT_FOUND)?.clone();
        let mut given = lock(&m.functions);
        if let Some(&handle) = given.get(&name) {
            return out(function, handle);
        }
        let environment = m
            .image
            .initial_bytes(&format!("{name}{KERNEL_ENVIRONMENT_SUFFIX}"));
        let entry = m.twin.as_ref().and_then(|t| t.kernel(&name, environment));
        let allowed = profile::SHARED_DEFAULT.saturating_sub(kernel.static_shared);
        let handle = driver.functions.insert(Arc::new(Function {
            module,
            device: m.device,
            name: name.clone(),
            kernel,
            entry,
            max_dynamic_shared: AtomicU32::new(allowed),
            _module: m.clone(),
        }));
        given.insert(name, handle);
        out(function, handle)
    })
}

/// `CU_FUNC_ATTRIBUTE_*` numbers the emulator answers.
const FUNC_MAX_THREADS_PER_BLOCK: c_int = 0;
const FUNC_SHARED_SIZE_BYTES: c_int = 1;
const FUNC_NUM_REGS: c_int = 4;
const FUNC_PTX_VERSION: c_int = 5;
const FUNC_BINARY_VERSION: c_int = 6;
const FUNC_MAX_DYNAMIC_SHARED_SIZE_BYTES: c_int = 8;

#[no_mangle]
pub extern "C" fn cuFuncGetAttribute(
    value: *mut c_int,
    attribute: c_int,
    function: Handle,
) -> CuResult {
    call("cuFuncGetAttribute", |c| {
        c.note(|| format!("attribute={attribute}"));
        let driver = driver::get()?;
        let f = driver.functions.get(function)?;
        driver.usable(f.device)?;
        let answer = match attribute {
            FUNC_MAX_THREADS_PER_BLOCK => f.kernel.max_threads as c_int,
            FUNC_SHARED_SIZE_BYTES => f.kernel.static_shared as c_int,
            FUNC_NUM_REGS => 32,
            FUNC_PTX_VERSION | FUNC_BINARY_VERSION => profile::SM as c_int,
            FUNC_MAX_DYNAMIC_SHARED_SIZE_BYTES => {
                f.max_dynamic_shared.load(Ordering::Relaxed) as c_int
            }
            2 | 3 | 7 => 0, // constant and local memory, cache mode
            9 => -1,        // preferred shared-memory carveout: none
            10..=16 => 0,   // cluster attributes
            _ => return Err(status::INVALID_VALUE),
        };
        out(value, answer)
    })
}

#[no_mangle]
pub extern "C" fn cuFuncSetAttribute(function: Handle, attribute: c_int, value: c_int) -> CuResult {
    call("cuFuncSetAttribute", |c| {
        c.note(|| format!("attribute={attribute} value={value}"));
        let driver = driver::get()?;
        let f = driver.functions.get(function)?;
        driver.usable(f.device)?;
        match attribute {
            FUNC_MAX_DYNAMIC_SHARED_SIZE_BYTES => {
                let limit = profile::SHARED_OPTIN.saturating_sub(f.kernel.static_shared);
                let value = u32::try_from(value)
                    .ok()
                    .filter(|&v| v <= limit)
                    .ok_or(status::INVALID_VALUE)?;
                f.max_dynamic_shared.store(value, Ordering::Relaxed);
                Ok(())
            }
            9 => Ok(()), // carveout: a hint
            _ => Err(status::INVALID_VALUE),
        }
    })
}

/// The offset and size of a kernel's parameter `index` in its parameter buffer, from the
/// layout its image records (the layout launches are checked against); `INVALID_VALUE` past
/// the last, which is how callers (LLVM 22's plugin) find the parameter buffer's size.
#[no_mangle]
pub extern "C" fn cuFuncGetParamInfo(
    function: Handle,
    index: usize,
    offset: *mut usize,
    size: *mut usize,
) -> CuResult {
    call("cuFuncGetParamInfo", |c| {
        c.note(|| format!("index={index}"));
        let driver = driver::get()?;
        let f = driver.functions.get(function)?;
        driver.usable(f.device)?;
        let kernel = &f.kernel;
        if kernel.params.is_empty() && kernel.param_size > 0 {
            eprintln!(
                "omptarget-emu (CUDA): kernel {} has no parameter records in its image; the \
                 emulator cannot tell its parameters' layout",
                f.name
            );
            return Err(status::NOT_SUPPORTED);
        }
        let &(at, bytes) = kernel.params.get(index).ok_or(status::INVALID_VALUE)?;
        c.note(|| format!("offset={at} size={bytes}"));
        out(offset, at as usize)?;
        if !size.is_null() {
            out(size, bytes as usize)?;
        }
        Ok(())
    })
}

/// `CUoccupancyB2DSize`: the dynamic shared memory a block size needs.
type BlockSizeToShared = Option<unsafe extern "C" fn(c_int) -> usize>;

/// The block size that keeps the emulated device's multiprocessors fullest and the smallest
/// grid that fills the device with it (`launch::potential_block_size`), given the dynamic
/// shared memory (`shared`, or what `to_shared` says for each block size) and an upper limit
/// on the block size (0: none).
#[no_mangle]
pub extern "C" fn cuOccupancyMaxPotentialBlockSize(
    min_grid: *mut c_int,
    block: *mut c_int,
    function: Handle,
    to_shared: BlockSizeToShared,
    shared: usize,
    limit: c_int,
) -> CuResult {
    call("cuOccupancyMaxPotentialBlockSize", |c| {
        c.note(|| format!("shared={shared} limit={limit}"));
        let driver = driver::get()?;
        let f = driver.functions.get(function)?;
        driver.usable(f.device)?;
        let limit = u32::try_from(limit).map_err(|_| status::INVALID_VALUE)?;
        if min_grid.is_null() || block.is_null() {
            return Err(status::INVALID_VALUE);
        }
        let (grid, size) = launch::potential_block_size(&f, limit, |threads| match to_shared {
            // SAFETY: the caller's function of a block size, as the driver calls it.
            Some(to_shared) => unsafe { to_shared(threads as c_int) },
            None => shared,
        });
        c.note(|| format!("min_grid={grid} block={size}"));
        out(min_grid, grid as c_int)?;
        out(block, size as c_int)
    })
}

#[no_mangle]
pub unsafe extern "C" fn cuLaunchKernel(
    function: Handle,
    grid_x: c_uint,
    grid_y: c_uint,
    grid_z: c_uint,
    block_x: c_uint,
    block_y: c_uint,
    block_z: c_uint,
    shared: c_uint,
    stream: Handle,
    params: *mut *mut c_void,
    extra: *mut *mut c_void,
) -> CuResult {
    call("cuLaunchKernel", |c| {
        crate::driver::launched();
        note_stream(c, stream);
        c.note(|| format!("grid={grid_x}x{grid_y}x{grid_z} block={block_x}x{block_y}x{block_z} shared={shared}"));
        let (driver, d) = current()?;
        let f = driver.functions.get(function)?;
        c.note(|| format!("kernel={}", f.name));
        if f.device != d {
            return Err(status::INVALID_HANDLE);
        }
        let queue = driver.stream(stream, d)?;
        launch::check_geometry(
            &f,
            [grid_x, grid_y, grid_z],
            [block_x, block_y, block_z],
            shared,
        )?;
        // SAFETY: the pointers are the caller's, as cuLaunchKernel defines them.
        let buffer =
            unsafe { launch::parameters(&f, params as *const *const u8, extra as *const usize) }?;
        let Some(entry) = f.entry else {
            eprintln!(
                "omptarget-emu (CUDA): kernel {} has no x86-64 twin to run on the CPU; {}",
                f.name,
                twin::how_to_build("nvptx64-nvidia-cuda", "sm_90")
            );
            return Err(status::NOT_SUPPORTED);
        };
        let arguments = launch::twin_arguments(&f, &buffer)?;
        let pageable = if profile::current().faults_on_pageable() {
            crate::pageable::first_pageable(driver, &arguments)
        } else {
            None
        };
        // A kernel compiled GPU-style (flang's) runs through the twin's host device runtime, a
        // team of threads per block; any other is called once.
        let blocks = [grid_x, grid_y, grid_z]
            .iter()
            .map(|&g| u64::from(g))
            .product();
        let threads = [block_x, block_y, block_z]
            .iter()
            .map(|&b| u64::from(b))
            .product();
        let call = entry
            .call(
                &f.name,
                arguments,
                (blocks, threads),
                u64::from(shared),
                profile::WARP_SIZE,
            )
            .map_err(|why| {
                eprintln!("omptarget-emu (CUDA): {why}");
                status::NOT_SUPPORTED
            })?;
        crate::faults::prepare();
        // On the legacy default stream the kernel runs on a stream of its own, waited for: a
        // faulting kernel's thread never returns, and it must not be the caller's.
        let (stream, legacy) = match queue {
            Some(stream) => (stream, false),
            None => {
                driver.legacy_sync(d);
                let stream = Stream::start(d, true).map_err(|_| status::OUT_OF_MEMORY)?;
                (stream, true)
            }
        };
        let on = Arc::downgrade(&stream);
        stream.submit(move || {
            if let Some(address) = pageable {
                if let Some(stream) = on.upgrade() {
                    crate::faults::unreachable(d, &stream, &f.name, address);
                }
                return;
            }
            let module = &f._module;
            crate::faults::run(d, on, &f.name, module.code.as_ref(), || {
                // SAFETY: the call is of the twin's kernel of this name, which takes one
                // pointer-sized value per parameter; `f` holds its image loaded.
                if let Err(why) = unsafe { call.run(&f.name) } {
                    eprintln!("omptarget-emu (CUDA): {why}");
                }
            });
        });
        if legacy {
            stream.wait_idle();
            stream.close();
            driver.usable(d)?;
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Host function and callback arguments for the test below: what ran, and with what status.
    static HOST_FUNCTIONS_RAN: AtomicU32 = AtomicU32::new(0);
    static CALLBACK_STATUS: AtomicU32 = AtomicU32::new(u32::MAX);

    unsafe extern "C" fn count_host_function(_: *mut c_void) {
        HOST_FUNCTIONS_RAN.fetch_add(1, Ordering::SeqCst);
    }

    unsafe extern "C" fn record_status(_: Handle, result: CuResult, _: *mut c_void) {
        CALLBACK_STATUS.store(result, Ordering::SeqCst);
    }

    /// A stand-in for a faulting kernel: holds its stream until the gate at `data` opens.
    unsafe extern "C" fn wait_at_gate(data: *mut c_void) {
        // SAFETY: the test's gate, which outlives the stream's work.
        let gate = unsafe { &*data.cast::<(std::sync::Mutex<bool>, std::sync::Condvar)>() };
        let mut open = lock(&gate.0);
        while !*open {
            open = sync_util::wait(&gate.1, open);
        }
    }

    /// A kernel fault makes the context's error sticky, as on hardware: host functions queued
    /// behind the faulting kernel never run, a stream callback runs with the error as its
    /// status, and later calls, memsets among them, return the error and write nothing (the
    /// only test here that touches the process's driver, so the error reaches no other test).
    #[test]
    fn a_context_with_a_sticky_error_refuses_memsets() {
        assert_eq!(cuInit(0), 0);
        let mut context = 0usize;
        assert_eq!(cuDevicePrimaryCtxRetain(&mut context, 0), 0);
        assert_eq!(cuCtxSetCurrent(context), 0);
        let mut device = 0u64;
        assert_eq!(cuMemAlloc_v2(&mut device, 4096), 0);
        assert_eq!(cuMemsetD8_v2(device, 0x11, 4096), 0);
        let mut stream = 0usize;
        assert_eq!(cuStreamCreate(&mut stream, 1), 0);
        let gate = Box::leak(Box::new((
            std::sync::Mutex::new(false),
            std::sync::Condvar::new(),
        )));
        let gate_data = (gate as *mut (std::sync::Mutex<bool>, std::sync::Condvar)).cast();
        assert_eq!(cuLaunchHostFunc(stream, Some(wait_at_gate), gate_data), 0);
        let null = std::ptr::null_mut();
        assert_eq!(cuLaunchHostFunc(stream, Some(count_host_function), null), 0);
        assert_eq!(cuStreamAddCallback(stream, Some(record_status), null, 0), 0);
        let driver = driver::get().unwrap();
        let faulting = driver.streams.get(stream).unwrap();
        driver.kernel_faulted(0, status::ILLEGAL_ADDRESS, Some(&faulting));
        *lock(&gate.0) = true;
        gate.1.notify_all();
        assert_eq!(
            CALLBACK_STATUS.load(Ordering::SeqCst),
            status::ILLEGAL_ADDRESS.0,
            "the callback runs, with the error"
        );
        assert_eq!(HOST_FUNCTIONS_RAN.load(Ordering::SeqCst), 0);
        assert_eq!(
            cuLaunchHostFunc(stream, Some(count_host_function), null),
            status::ILLEGAL_ADDRESS.0
        );
        let refused = status::ILLEGAL_ADDRESS.0;
        assert_eq!(cuMemsetD8Async(device, 0, 4096, stream), refused);
        assert_eq!(cuMemsetD16Async(device, 0, 2048, stream), refused);
        assert_eq!(cuMemsetD32Async(device, 0, 1024, 0), refused);
        assert_eq!(cuMemsetD8_v2(device, 0, 4096), refused);
        assert_eq!(cuMemsetD16_v2(device, 0, 2048), refused);
        assert_eq!(cuMemsetD32_v2(device, 0, 1024), refused);
        // SAFETY: the allocation is host-addressable in the emulator, 4096 bytes long.
        let bytes = unsafe { std::slice::from_raw_parts(device as *const u8, 4096) };
        assert!(bytes.iter().all(|&b| b == 0x11));
        // The last release of the primary context ends the error (and frees what it had).
        assert_eq!(cuDevicePrimaryCtxRelease_v2(0), 0);
        assert_eq!(cuDevicePrimaryCtxRetain(&mut context, 0), 0);
        assert_eq!(cuMemAlloc_v2(&mut device, 4096), 0);
        assert_eq!(cuMemsetD32_v2(device, 0x0102_0304, 1024), 0);
        assert_eq!(cuMemFree_v2(device), 0);
        assert_eq!(cuDevicePrimaryCtxRelease_v2(0), 0);
    }
}
