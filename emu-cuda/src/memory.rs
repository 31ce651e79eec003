//! Memory as the driver sees it. Device memory of each device is a range of this process's
//! address space of its own (reserved inaccessible, made accessible per allocation, so a kernel
//! touching freed memory faults as on hardware); with unified addressing, one address book says
//! what every address the driver handed out or was told about is.

use crate::status::{self, Result};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use sync_util::lock;

const PAGE: usize = 4096;
/// Where the first device's range is placed: far from the heap and the libraries.
const DEVICE_RANGES_BASE: usize = 0x2000_0000_0000;
const DEVICE_RANGE_STRIDE: usize = 1 << 40;

/// What a range of addresses is.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `cuMemAlloc`, `cuMemAllocAsync`.
    Device,
    /// `cuMemAllocManaged`: device memory the host may touch.
    Managed,
    /// A module's global variables (the cubin's data, or the twin image's storage).
    ModuleGlobal,
    /// Physical memory of `cuMemCreate` mapped with `cuMemMap` and made accessible with
    /// `cuMemSetAccess` (see `vmm`): device memory that `cuMemFree` does not take.
    Mapped,
    /// `cuMemAllocHost`: page-locked host memory.
    HostAllocated,
    /// `cuMemHostRegister`: page-locked user memory.
    HostRegistered,
}

impl Kind {
    pub fn page_locked(self) -> bool {
        matches!(self, Kind::HostAllocated | Kind::HostRegistered)
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Region {
    pub start: usize,
    pub size: usize,
    pub kind: Kind,
    /// The device whose memory it is (host memory: none).
    pub device: Option<usize>,
}

impl Region {
    fn contains(&self, address: usize, len: usize) -> bool {
        address >= self.start
            && address
                .checked_add(len)
                .is_some_and(|end| end <= self.start + self.size)
    }
}

/// Every region the driver knows, by start address.
#[derive(Default)]
pub struct AddressBook {
    regions: Mutex<BTreeMap<usize, Region>>,
}

impl AddressBook {
    /// The region holding `[address, address + len)` (a zero length still needs `address` to
    /// be inside one).
    pub fn find(&self, address: usize, len: usize) -> Option<Region> {
        let regions = lock(&self.regions);
        let (_, region) = regions.range(..=address).next_back()?;
        (region.contains(address, len.max(1))).then_some(*region)
    }

    /// Whether anything known overlaps `[start, start + size)`.
    fn overlaps(&self, start: usize, size: usize) -> bool {
        let regions = lock(&self.regions);
        let end = start.saturating_add(size);
        if let Some((_, r)) = regions.range(..=start).next_back() {
            if r.start + r.size > start {
                return true;
            }
        }
        regions.range(start..end).next().is_some()
    }

    pub fn insert(&self, region: Region) {
        lock(&self.regions).insert(region.start, region);
    }

    /// Removes the region starting exactly at `start`.
    pub fn remove(&self, start: usize) -> Option<Region> {
        lock(&self.regions).remove(&start)
    }

    /// A device pointer of `len` bytes: anything the driver knows (with unified addressing,
    /// page-locked host memory is reachable from the device too); pageable host memory is not.
    pub fn device_range(&self, address: usize, len: usize) -> Result<Region> {
        self.find(address, len).ok_or(status::INVALID_VALUE)
    }

    /// Registers user memory (`cuMemHostRegister`): no overlap with what is registered.
    pub fn register_host(&self, start: usize, size: usize) -> Result<()> {
        if start == 0 || size == 0 {
            return Err(status::INVALID_VALUE);
        }
        if self.overlaps(start, size) {
            return Err(status::HOST_MEMORY_ALREADY_REGISTERED);
        }
        self.insert(Region {
            start,
            size,
            kind: Kind::HostRegistered,
            device: None,
        });
        Ok(())
    }

    /// `cuMemHostUnregister`: only the start of a registration.
    pub fn unregister_host(&self, start: usize) -> Result<()> {
        let mut regions = lock(&self.regions);
        match regions.get(&start) {
            Some(r) if r.kind == Kind::HostRegistered => {
                regions.remove(&start);
                Ok(())
            }
            _ => Err(status::HOST_MEMORY_NOT_REGISTERED),
        }
    }

    /// Every region of `device` (for tearing a context down).
    pub fn regions_of(&self, device: usize) -> Vec<Region> {
        let regions = lock(&self.regions);
        regions
            .values()
            .filter(|r| r.device == Some(device))
            .copied()
            .collect()
    }
}

/// One device's memory: a reserved range and the allocations in it (first fit, page sized),
/// and the physical memory of `cuMemCreate`, which counts against the same size.
pub struct DeviceMemory {
    base: usize,
    size: usize,
    /// Where the range was asked for (see [`DeviceMemory::at_hint`]).
    hint: usize,
    /// Offset -> size of each live allocation.
    allocations: Mutex<BTreeMap<usize, usize>>,
    /// Bytes of physical memory created with `cuMemCreate` and not yet released (changed
    /// under the allocations' lock, so that the two never overcommit together).
    physical: AtomicUsize,
}

impl DeviceMemory {
    pub fn reserve(device: usize, size: u64) -> std::result::Result<DeviceMemory, String> {
        let size = usize::try_from(size)
            .ok()
            .filter(|&s| s > 0 && s <= DEVICE_RANGE_STRIDE)
            .ok_or_else(|| {
                format!("OMPTARGET_EMU_MEMORY must be between 1 byte and 1 TiB, not {size}")
            })?
            .next_multiple_of(PAGE);
        let hint = DEVICE_RANGES_BASE + device * DEVICE_RANGE_STRIDE;
        let base = sys::reserve(hint, size).map_err(|e| {
            format!("cannot reserve {size} bytes of address space for device {device}: {e}")
        })?;
        Ok(DeviceMemory {
            base,
            size,
            hint,
            allocations: Mutex::new(BTreeMap::new()),
            physical: AtomicUsize::new(0),
        })
    }

    pub fn total(&self) -> usize {
        self.size
    }

    /// Whether `address` lies in the device's range (allocated or not).
    pub fn contains(&self, address: usize) -> bool {
        address >= self.base && address - self.base < self.size
    }

    /// Whether the range is where it was asked for, below every mapping of the host program.
    pub fn at_hint(&self) -> bool {
        self.base == self.hint
    }

    pub fn used(&self) -> usize {
        let allocations = lock(&self.allocations);
        allocations.values().sum::<usize>() + self.physical.load(Ordering::Relaxed)
    }

    /// Whether `size` more bytes fit beside the allocations and the physical memory.
    fn fits(&self, allocations: &BTreeMap<usize, usize>, size: usize) -> bool {
        let used = allocations.values().sum::<usize>() + self.physical.load(Ordering::Relaxed);
        used.checked_add(size)
            .is_some_and(|total| total <= self.size)
    }

    /// Counts `size` bytes of physical memory (`cuMemCreate`) against the device's size.
    pub fn claim(&self, size: usize) -> Result<()> {
        let allocations = lock(&self.allocations);
        if !self.fits(&allocations, size) {
            return Err(status::OUT_OF_MEMORY);
        }
        self.physical.fetch_add(size, Ordering::Relaxed);
        Ok(())
    }

    /// Gives back physical memory counted by [`claim`](Self::claim).
    pub fn unclaim(&self, size: usize) {
        let _allocations = lock(&self.allocations);
        self.physical.fetch_sub(size, Ordering::Relaxed);
    }

    /// A new accessible range of at least `size` bytes.
    pub fn allocate(&self, size: usize) -> Result<usize> {
        if size == 0 {
            return Err(status::INVALID_VALUE);
        }
        let size = size
            .checked_next_multiple_of(PAGE)
            .ok_or(status::OUT_OF_MEMORY)?;
        let mut allocations = lock(&self.allocations);
        let mut candidate = 0usize;
        for (&offset, &len) in allocations.iter() {
            if offset - candidate >= size {
                break;
            }
            candidate = offset + len;
        }
        if self.size - candidate < size || !self.fits(&allocations, size) {
            return Err(status::OUT_OF_MEMORY);
        }
        let address = self.base + candidate;
        sys::commit(address, size).map_err(|_| status::OUT_OF_MEMORY)?;
        allocations.insert(candidate, size);
        Ok(address)
    }

    /// Releases an allocation made by [`allocate`](Self::allocate), given its start.
    pub fn free(&self, address: usize) -> Result<usize> {
        let offset = address
            .checked_sub(self.base)
            .ok_or(status::INVALID_VALUE)?;
        // The pages are made inaccessible before the range can be handed out again: a
        // decommit after the lock is released could revoke another thread's new allocation.
        let mut allocations = lock(&self.allocations);
        let size = allocations.remove(&offset).ok_or(status::INVALID_VALUE)?;
        sys::decommit(address, size);
        Ok(size)
    }
}

/// Page-locked host memory (`cuMemAllocHost`): whole pages of its own.
pub fn allocate_host(size: usize) -> Result<usize> {
    if size == 0 {
        return Err(status::INVALID_VALUE);
    }
    let size = size
        .checked_next_multiple_of(PAGE)
        .ok_or(status::OUT_OF_MEMORY)?;
    if let Some(start) = omptarget_emu_support::retired_memory::reuse(size, 0..size) {
        return Ok(start);
    }
    sys::map_host(size).map_err(|_| status::OUT_OF_MEMORY)
}

/// Freed page-locked memory stays reserved with no access for a while, so that a kernel
/// writing after the free faults as on a GPU.
pub fn free_host(address: usize, size: usize) {
    omptarget_emu_support::retired_memory::retire(address, size.next_multiple_of(PAGE));
}

/// An inaccessible anonymous range of `size` bytes at `hint` when it is free there, else
/// anywhere (device memory's reservation, and the virtual memory calls').
pub(crate) fn reserve(hint: usize, size: usize) -> std::io::Result<usize> {
    sys::reserve(hint, size)
}

/// The memory-mapping calls, each in one small function.
mod sys {
    use std::io::Error;

    pub fn reserve(hint: usize, size: usize) -> Result<usize, Error> {
        // SAFETY: an anonymous private mapping with no access; the hint is only a hint (no
        // MAP_FIXED), so nothing existing is replaced.
        let p = unsafe {
            libc::mmap(
                hint as *mut libc::c_void,
                size,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            Err(Error::last_os_error())
        } else {
            Ok(p as usize)
        }
    }

    pub fn commit(address: usize, size: usize) -> Result<(), Error> {
        // SAFETY: the range lies in a reservation of ours (DeviceMemory::allocate).
        let r = unsafe {
            libc::mprotect(
                address as *mut libc::c_void,
                size,
                libc::PROT_READ | libc::PROT_WRITE,
            )
        };
        if r == 0 {
            Ok(())
        } else {
            Err(Error::last_os_error())
        }
    }

    pub fn decommit(address: usize, size: usize) {
        // SAFETY: the range was an allocation in our reservation; its pages are dropped and
        // made inaccessible again, so a later access faults.
        unsafe {
            libc::madvise(address as *mut libc::c_void, size, libc::MADV_DONTNEED);
            libc::mprotect(address as *mut libc::c_void, size, libc::PROT_NONE);
        }
    }

    pub fn map_host(size: usize) -> Result<usize, Error> {
        // SAFETY: a fresh anonymous read-write mapping.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                size,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            Err(Error::last_os_error())
        } else {
            Ok(p as usize)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocations_fit_reuse_and_run_out() {
        let memory = DeviceMemory::reserve(40, 64 * 1024).unwrap();
        let a = memory.allocate(100).unwrap();
        let b = memory.allocate(3 * PAGE).unwrap();
        assert_eq!(b, a + PAGE);
        // SAFETY: `a` is an accessible allocation of at least 100 bytes.
        unsafe { (a as *mut u8).write(7) };
        assert_eq!(memory.used(), 4 * PAGE);
        assert_eq!(memory.free(a), Ok(PAGE));
        assert_eq!(memory.free(a), Err(status::INVALID_VALUE), "double free");
        assert_eq!(
            memory.free(b + 8),
            Err(status::INVALID_VALUE),
            "interior pointer"
        );
        assert_eq!(memory.allocate(PAGE), Ok(a), "first fit reuses the hole");
        assert_eq!(memory.allocate(64 * 1024), Err(status::OUT_OF_MEMORY));
        assert_eq!(memory.allocate(0), Err(status::INVALID_VALUE));
    }

    #[test]
    fn the_book_knows_device_and_host_ranges() {
        let book = AddressBook::default();
        book.insert(Region {
            start: 0x10000,
            size: 0x1000,
            kind: Kind::Device,
            device: Some(0),
        });
        assert!(book.device_range(0x10000, 0x1000).is_ok());
        assert_eq!(
            book.device_range(0x10800, 0x1000),
            Err(status::INVALID_VALUE)
        );
        assert_eq!(book.device_range(0x20000, 8), Err(status::INVALID_VALUE));
        assert_eq!(book.register_host(0x30000, 100), Ok(()));
        assert_eq!(
            book.register_host(0x30010, 10),
            Err(status::HOST_MEMORY_ALREADY_REGISTERED)
        );
        assert_eq!(
            book.register_host(0x2ff00, 0x200),
            Err(status::HOST_MEMORY_ALREADY_REGISTERED)
        );
        assert_eq!(
            book.unregister_host(0x30010),
            Err(status::HOST_MEMORY_NOT_REGISTERED)
        );
        assert_eq!(book.unregister_host(0x30000), Ok(()));
        assert_eq!(
            book.unregister_host(0x30000),
            Err(status::HOST_MEMORY_NOT_REGISTERED)
        );
    }
}
