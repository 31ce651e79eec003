//! The driver's virtual memory management (`cuMemAddressReserve`, `cuMemCreate`, `cuMemMap`,
//! `cuMemSetAccess`, `cuMemUnmap`, `cuMemRelease`, `cuMemAddressFree`,
//! `cuMemGetAllocationGranularity`), modelled on the process's own address space, since device
//! addresses are host addresses here: a reservation is a range mapped with no access, a
//! physical allocation an anonymous memory file counted against its device's memory, a mapping
//! that file mapped over part of a reservation, still inaccessible until `cuMemSetAccess`
//! grants it (then it is device memory for copies, memsets and kernels, and a kernel touching
//! it after `cuMemUnmap` faults as on hardware).
//!
//! LLVM's CUDA plugin calls these for its record-and-replay allocations; LLVM 19 and 22.1
//! declare them after `DLWRAP_FINALIZE()` and never resolve them, LLVM's main branch resolves
//! them at load time with the others. Ranges are checked as the driver checks them: sizes and
//! addresses in whole granules (2 MiB), a mapping inside one reservation and over no other,
//! access set and mappings removed only over whole mappings, a reservation freed only whole
//! and unmapped; anything else is `CUDA_ERROR_INVALID_VALUE`. Not modelled: shareable handles
//! (`requestedHandleTypes`), read-only access, mapping at an offset into a physical allocation
//! (the driver requires 0 there too): each is `CUDA_ERROR_NOT_SUPPORTED` with a trace note.

#![allow(
    non_snake_case,
    clippy::missing_safety_doc,
    clippy::not_unsafe_ptr_arg_deref
)]

use crate::driver::{self, Driver, Handles};
use crate::memory::{Kind, Region};
use crate::status::{self, CuResult, Result};
use crate::trace::{call, Call};
use std::collections::BTreeMap;
use std::ffi::{c_int, c_uint, c_ulonglong, c_void};
use std::os::fd::OwnedFd;
use std::sync::{Arc, Mutex, OnceLock};
use sync_util::lock;

type CUdeviceptr = u64;
/// `CUmemGenericAllocationHandle`.
type AllocationHandle = c_ulonglong;

/// The granule of reservations, physical allocations and mappings (the driver's on x86-64
/// GPUs: 2 MiB), for both `CU_MEM_ALLOC_GRANULARITY_MINIMUM` and `_RECOMMENDED`.
pub const GRANULARITY: usize = 2 << 20;

/// `CUmemLocation`.
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct Location {
    pub kind: c_uint,
    pub id: c_int,
}

/// `CUmemAllocationProp` of CUDA 12.
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct AllocationProp {
    pub kind: c_uint,
    pub requested_handle_types: c_uint,
    pub location: Location,
    pub win32_handle_metadata: *mut c_void,
    /// `allocFlags`: compression type, GPUDirect RDMA capable, usage, reserved.
    pub alloc_flags: [u8; 8],
}

/// `CUmemAccessDesc`.
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct AccessDesc {
    pub location: Location,
    pub flags: c_uint,
}

const ALLOCATION_TYPE_PINNED: c_uint = 1;
const LOCATION_TYPE_DEVICE: c_uint = 1;
const ACCESS_NONE: c_uint = 0;
const ACCESS_READ: c_uint = 1;
const ACCESS_READWRITE: c_uint = 3;
const GRANULARITY_MINIMUM: c_int = 0;
const GRANULARITY_RECOMMENDED: c_int = 1;

/// A physical allocation: its memory file, counted against its device's memory until the last
/// of its handle and its mappings is gone.
struct Physical {
    device: usize,
    size: usize,
    file: OwnedFd,
}

impl Drop for Physical {
    fn drop(&mut self) {
        if let Ok(driver) = driver::get() {
            driver.devices[self.device].memory.unclaim(self.size);
        }
    }
}

struct Mapping {
    size: usize,
    physical: Arc<Physical>,
    /// Granted with `cuMemSetAccess` (then in the address book as device memory).
    accessible: bool,
}

struct Reservation {
    size: usize,
    /// By start address.
    mappings: BTreeMap<usize, Mapping>,
}

struct Space {
    /// By start address.
    reservations: Mutex<BTreeMap<usize, Reservation>>,
    handles: Handles<Physical>,
}

fn space() -> &'static Space {
    static SPACE: OnceLock<Space> = OnceLock::new();
    SPACE.get_or_init(|| Space {
        reservations: Mutex::new(BTreeMap::new()),
        handles: Handles::new(0x6d),
    })
}

/// Whether `address` lies in a reservation of `cuMemAddressReserve` (mapped or not).
pub(crate) fn reserved(address: usize) -> bool {
    let reservations = lock(&space().reservations);
    reservations
        .range(..=address)
        .next_back()
        .is_some_and(|(&start, r)| address - start < r.size)
}

/// A size or address in whole granules.
fn granular(value: usize) -> Result<()> {
    if value.is_multiple_of(GRANULARITY) {
        Ok(())
    } else {
        Err(status::INVALID_VALUE)
    }
}

/// The device of an allocation's properties: pinned device memory of an existing device, as
/// the driver requires (`INVALID_VALUE`, or `INVALID_DEVICE` for the device).
fn device_of(driver: &Driver, prop: *const AllocationProp) -> Result<(usize, AllocationProp)> {
    if prop.is_null() {
        return Err(status::INVALID_VALUE);
    }
    // SAFETY: non-null, and the caller's contract makes it a `CUmemAllocationProp`.
    let prop = unsafe { prop.read() };
    if prop.kind != ALLOCATION_TYPE_PINNED || prop.location.kind != LOCATION_TYPE_DEVICE {
        return Err(status::INVALID_VALUE);
    }
    Ok((driver.device(prop.location.id)?.index, prop))
}

/// The start of the reservation holding `[start, start + size)`, under its lock.
fn holding(
    reservations: &BTreeMap<usize, Reservation>,
    start: usize,
    size: usize,
) -> Result<usize> {
    let (&base, reservation) = reservations
        .range(..=start)
        .next_back()
        .ok_or(status::INVALID_VALUE)?;
    let end = start.checked_add(size).ok_or(status::INVALID_VALUE)?;
    if end <= base + reservation.size {
        Ok(base)
    } else {
        Err(status::INVALID_VALUE)
    }
}

/// The starts of the mappings that make up exactly `[start, start + size)`, with no gap and
/// none reaching outside (the driver sets access and unmaps whole mappings only).
fn whole_mappings(reservation: &Reservation, start: usize, size: usize) -> Result<Vec<usize>> {
    let end = start + size;
    let mut at = start;
    let mut starts = Vec::new();
    for (&first, mapping) in reservation.mappings.range(start..end) {
        if first != at {
            return Err(status::INVALID_VALUE);
        }
        at = first + mapping.size;
        starts.push(first);
    }
    if starts.is_empty() || at != end {
        return Err(status::INVALID_VALUE);
    }
    Ok(starts)
}

/// Whether `[start, start + size)` overlaps a mapping of the reservation.
fn overlaps_mapping(reservation: &Reservation, start: usize, size: usize) -> bool {
    let before = reservation.mappings.range(..=start).next_back();
    before.is_some_and(|(&first, m)| first + m.size > start)
        || reservation
            .mappings
            .range(start..start + size)
            .next()
            .is_some()
}

/// Writes a result through an out-pointer; a null one is `CUDA_ERROR_INVALID_VALUE`.
fn out<T>(pointer: *mut T, value: T) -> Result<()> {
    if pointer.is_null() {
        return Err(status::INVALID_VALUE);
    }
    // SAFETY: non-null, and the caller's contract makes it point to a writable `T`.
    unsafe { pointer.write(value) };
    Ok(())
}

// ---- entry points -------------------------------------------------------------------------

#[no_mangle]
pub extern "C" fn cuMemGetAllocationGranularity(
    granularity: *mut usize,
    prop: *const AllocationProp,
    option: c_int,
) -> CuResult {
    call("cuMemGetAllocationGranularity", |c| {
        c.note(|| format!("option={option}"));
        let driver = driver::get()?;
        device_of(driver, prop)?;
        if option != GRANULARITY_MINIMUM && option != GRANULARITY_RECOMMENDED {
            return Err(status::INVALID_VALUE);
        }
        out(granularity, GRANULARITY)
    })
}

#[no_mangle]
pub extern "C" fn cuMemCreate(
    handle: *mut AllocationHandle,
    size: usize,
    prop: *const AllocationProp,
    flags: c_ulonglong,
) -> CuResult {
    call("cuMemCreate", |c| {
        c.note(|| format!("size={size}"));
        let driver = driver::get()?;
        let (device, prop) = device_of(driver, prop)?;
        if flags != 0 || handle.is_null() || size == 0 {
            return Err(status::INVALID_VALUE);
        }
        granular(size)?;
        if prop.requested_handle_types != 0 {
            c.note(|| "not modelled: shareable handle types".to_owned());
            return Err(status::NOT_SUPPORTED);
        }
        let file = sys::memory_file(size).map_err(|_| status::OUT_OF_MEMORY)?;
        driver.devices[device].memory.claim(size)?;
        let physical = Arc::new(Physical { device, size, file });
        let created = space().handles.insert(physical) as AllocationHandle;
        c.note(|| format!("handle={created:#x} device={device}"));
        out(handle, created)
    })
}

/// Releases the handle; the memory goes when its last mapping does.
#[no_mangle]
pub extern "C" fn cuMemRelease(handle: AllocationHandle) -> CuResult {
    call("cuMemRelease", |c| {
        c.note(|| format!("handle={handle:#x}"));
        driver::get()?;
        let handle = usize::try_from(handle).map_err(|_| status::INVALID_VALUE)?;
        space()
            .handles
            .remove(handle)
            .map(|_| ())
            .map_err(|_| status::INVALID_VALUE)
    })
}

/// Reserves `size` bytes of addresses aligned to `alignment` (at least a granule), at `hint`
/// when that range is free.
#[no_mangle]
pub extern "C" fn cuMemAddressReserve(
    pointer: *mut CUdeviceptr,
    size: usize,
    alignment: usize,
    hint: CUdeviceptr,
    flags: c_ulonglong,
) -> CuResult {
    call("cuMemAddressReserve", |c| {
        c.note(|| format!("size={size} alignment={alignment} addr={hint:#x}"));
        driver::get()?;
        if flags != 0 || pointer.is_null() || size == 0 {
            return Err(status::INVALID_VALUE);
        }
        granular(size)?;
        if alignment != 0 && !alignment.is_power_of_two() {
            return Err(status::INVALID_VALUE);
        }
        let alignment = alignment.max(GRANULARITY);
        let start =
            sys::reserve(hint as usize, size, alignment).map_err(|_| status::OUT_OF_MEMORY)?;
        lock(&space().reservations).insert(
            start,
            Reservation {
                size,
                mappings: BTreeMap::new(),
            },
        );
        c.note(|| format!("ptr={start:#x}"));
        out(pointer, start as CUdeviceptr)
    })
}

/// Frees a whole reservation, which must have no mappings left.
#[no_mangle]
pub extern "C" fn cuMemAddressFree(pointer: CUdeviceptr, size: usize) -> CuResult {
    call("cuMemAddressFree", |c| {
        c.note(|| format!("ptr={pointer:#x} size={size}"));
        driver::get()?;
        let start = pointer as usize;
        let mut reservations = lock(&space().reservations);
        match reservations.get(&start) {
            Some(r) if r.size == size && r.mappings.is_empty() => {}
            _ => return Err(status::INVALID_VALUE),
        }
        reservations.remove(&start);
        sys::release(start, size);
        Ok(())
    })
}

/// Maps physical memory over part of a reservation, without access yet.
#[no_mangle]
pub extern "C" fn cuMemMap(
    pointer: CUdeviceptr,
    size: usize,
    offset: usize,
    handle: AllocationHandle,
    flags: c_ulonglong,
) -> CuResult {
    call("cuMemMap", |c| {
        c.note(|| format!("ptr={pointer:#x} size={size} offset={offset} handle={handle:#x}"));
        driver::get()?;
        let physical = usize::try_from(handle)
            .ok()
            .and_then(|h| space().handles.get(h).ok())
            .ok_or(status::INVALID_VALUE)?;
        let start = pointer as usize;
        if flags != 0 || offset != 0 || size == 0 || size > physical.size {
            return Err(status::INVALID_VALUE);
        }
        granular(start)?;
        granular(size)?;
        let mut reservations = lock(&space().reservations);
        let base = holding(&reservations, start, size)?;
        let reservation = reservations.get_mut(&base).ok_or(status::INVALID_VALUE)?;
        if overlaps_mapping(reservation, start, size) {
            return Err(status::INVALID_VALUE);
        }
        sys::map_file(start, size, &physical.file).map_err(|_| status::OUT_OF_MEMORY)?;
        reservation.mappings.insert(
            start,
            Mapping {
                size,
                physical,
                accessible: false,
            },
        );
        Ok(())
    })
}

/// The access the descriptors grant: read-write for any device that gets it, or none.
fn granted(driver: &Driver, descriptors: &[AccessDesc], c: &mut Call) -> Result<bool> {
    let mut readwrite = false;
    for descriptor in descriptors {
        if descriptor.location.kind != LOCATION_TYPE_DEVICE {
            return Err(status::INVALID_VALUE);
        }
        driver.device(descriptor.location.id)?;
        match descriptor.flags {
            ACCESS_NONE => {}
            ACCESS_READWRITE => readwrite = true,
            ACCESS_READ => {
                c.note(|| "not modelled: read-only access".to_owned());
                return Err(status::NOT_SUPPORTED);
            }
            _ => return Err(status::INVALID_VALUE),
        }
    }
    Ok(readwrite)
}

#[no_mangle]
pub extern "C" fn cuMemSetAccess(
    pointer: CUdeviceptr,
    size: usize,
    descriptors: *const AccessDesc,
    count: usize,
) -> CuResult {
    call("cuMemSetAccess", |c| {
        c.note(|| format!("ptr={pointer:#x} size={size} count={count}"));
        let driver = driver::get()?;
        if descriptors.is_null() || count == 0 {
            return Err(status::INVALID_VALUE);
        }
        // SAFETY: `count` descriptors (the caller's contract).
        let descriptors = unsafe { std::slice::from_raw_parts(descriptors, count) };
        let readwrite = granted(driver, descriptors, c)?;
        c.note(|| format!("readwrite={readwrite}"));
        let start = pointer as usize;
        let mut reservations = lock(&space().reservations);
        let base = holding(&reservations, start, size)?;
        let reservation = reservations.get_mut(&base).ok_or(status::INVALID_VALUE)?;
        for first in whole_mappings(reservation, start, size)? {
            let mapping = reservation.mappings.get_mut(&first).unwrap();
            set_access(driver, first, mapping, readwrite);
        }
        Ok(())
    })
}

/// Grants or revokes a mapping's access, in the page tables and in the address book.
fn set_access(driver: &Driver, start: usize, mapping: &mut Mapping, readwrite: bool) {
    sys::protect(start, mapping.size, readwrite);
    if readwrite && !mapping.accessible {
        driver.book.insert(Region {
            start,
            size: mapping.size,
            kind: Kind::Mapped,
            device: Some(mapping.physical.device),
        });
    } else if !readwrite && mapping.accessible {
        driver.book.remove(start);
    }
    mapping.accessible = readwrite;
}

/// Unmaps whole mappings, after the work queued on their devices (as `cuMemFree` waits); the
/// range is a reservation without access again.
#[no_mangle]
pub extern "C" fn cuMemUnmap(pointer: CUdeviceptr, size: usize) -> CuResult {
    call("cuMemUnmap", |c| {
        c.note(|| format!("ptr={pointer:#x} size={size}"));
        let driver = driver::get()?;
        let start = pointer as usize;
        let mut reservations = lock(&space().reservations);
        let base = holding(&reservations, start, size)?;
        let reservation = reservations.get_mut(&base).ok_or(status::INVALID_VALUE)?;
        let starts = whole_mappings(reservation, start, size)?;
        for first in starts {
            let mut mapping = reservation.mappings.remove(&first).unwrap();
            driver.device_sync(mapping.physical.device);
            set_access(driver, first, &mut mapping, false);
            sys::unmap_file(first, mapping.size);
        }
        Ok(())
    })
}

/// The memory-mapping calls, each in one small function.
mod sys {
    use std::io::{Error, ErrorKind};
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

    fn mapped(p: *mut libc::c_void) -> Result<usize, Error> {
        if p == libc::MAP_FAILED {
            Err(Error::last_os_error())
        } else {
            Ok(p as usize)
        }
    }

    /// An inaccessible anonymous range at `hint` (when free there), else anywhere: the same
    /// reservation as device memory's.
    fn reserve_at(hint: usize, size: usize) -> Result<usize, Error> {
        crate::memory::reserve(hint, size)
    }

    /// `size` bytes of inaccessible addresses aligned to `alignment`: at `hint` if it is
    /// aligned and free, else cut out of a larger range.
    pub fn reserve(hint: usize, size: usize, alignment: usize) -> Result<usize, Error> {
        if hint != 0 && hint.is_multiple_of(alignment) {
            let start = reserve_at(hint, size)?;
            if start == hint {
                return Ok(start);
            }
            release(start, size);
        }
        let padded = size
            .checked_add(alignment)
            .ok_or_else(Error::last_os_error)?;
        let start = reserve_at(0, padded)?;
        let aligned = start.next_multiple_of(alignment);
        release(start, aligned - start);
        release(aligned + size, start + padded - (aligned + size));
        Ok(aligned)
    }

    pub fn release(start: usize, size: usize) {
        if size > 0 {
            // SAFETY: a range of a reservation of ours, no longer handed out.
            unsafe { libc::munmap(start as *mut libc::c_void, size) };
        }
    }

    /// An anonymous memory file of `size` bytes: a physical allocation.
    pub fn memory_file(size: usize) -> Result<OwnedFd, Error> {
        // SAFETY: a NUL-terminated name; the descriptor returned is ours.
        let fd =
            unsafe { libc::memfd_create(c"omptarget-emu-cuMemCreate".as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return Err(Error::last_os_error());
        }
        // SAFETY: a fresh descriptor that nothing else owns.
        let file = unsafe { OwnedFd::from_raw_fd(fd) };
        let length =
            libc::off_t::try_from(size).map_err(|_| Error::from(ErrorKind::InvalidInput))?;
        // SAFETY: sizes our own memory file.
        if unsafe { libc::ftruncate(file.as_raw_fd(), length) } != 0 {
            return Err(Error::last_os_error());
        }
        Ok(file)
    }

    /// Maps the file, without access, over part of a reservation of ours.
    pub fn map_file(start: usize, size: usize, file: &OwnedFd) -> Result<(), Error> {
        // SAFETY: MAP_FIXED over a range inside one of our reservations with no mapping in it
        // (checked by the caller), so only our own inaccessible pages are replaced.
        mapped(unsafe {
            libc::mmap(
                start as *mut libc::c_void,
                size,
                libc::PROT_NONE,
                libc::MAP_SHARED | libc::MAP_FIXED,
                file.as_raw_fd(),
                0,
            )
        })
        .map(|_| ())
    }

    /// Puts the reservation's inaccessible pages back over a mapping of ours.
    pub fn unmap_file(start: usize, size: usize) {
        // SAFETY: MAP_FIXED over one of our mappings, inside our reservation.
        unsafe {
            libc::mmap(
                start as *mut libc::c_void,
                size,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE | libc::MAP_FIXED,
                -1,
                0,
            )
        };
    }

    pub fn protect(start: usize, size: usize, readwrite: bool) {
        let access = if readwrite {
            libc::PROT_READ | libc::PROT_WRITE
        } else {
            libc::PROT_NONE
        };
        // SAFETY: one of our mappings; only its access changes.
        unsafe { libc::mprotect(start as *mut libc::c_void, size, access) };
    }
}
