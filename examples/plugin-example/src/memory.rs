//! Device memory of one simulated device: allocations, the globals of loaded images, and pinned
//! host ranges. A real plugin replaces `std::alloc` with its driver's allocator and keeps the
//! bookkeeping, which is what turns a bad address from the core into an error instead of a crash.

use crate::lock;
use plugin_api::{AllocKind, ErrorCode, ImageHandle, PluginError};
use std::alloc::Layout;
use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

type Result<T> = std::result::Result<T, PluginError>;

/// GPUs hand out generously aligned memory; mimic that so alignment bugs show up here too.
const ALIGN: usize = 256;

struct Block {
    layout: Layout,
    /// Kept so `free` releases with the allocator that made the block, whatever kind the caller
    /// names (the core frees pool blocks as DEFAULT; a real device has one allocator per kind).
    kind: AllocKind,
}

#[derive(Default)]
struct Ranges {
    /// Live allocations by start address.
    blocks: BTreeMap<usize, Block>,
    /// Globals handed out by `get_global`: start -> (size, image).
    globals: BTreeMap<usize, (u64, ImageHandle)>,
    /// Pinned host ranges: start -> size.
    pinned: HashMap<usize, u64>,
}

pub struct DeviceMemory {
    device: i32,
    ranges: Mutex<Ranges>,
}

fn known_kind(kind: AllocKind) -> Result<()> {
    match kind {
        AllocKind::DEVICE
        | AllocKind::HOST
        | AllocKind::SHARED
        | AllocKind::DEFAULT
        | AllocKind::DEVICE_NON_BLOCKING => Ok(()),
        other => Err(PluginError::invalid_argument(format!(
            "unknown allocation kind {}",
            other.0
        ))),
    }
}

/// Whether `[addr, addr+len)` lies inside the range starting at `start` of `size` bytes.
fn inside(start: usize, size: u64, addr: usize, len: u64) -> bool {
    let end = (start as u64).checked_add(size);
    let want = (addr as u64).checked_add(len);
    matches!((end, want), (Some(end), Some(want)) if addr >= start && want <= end)
}

impl DeviceMemory {
    pub fn new(device: i32) -> Self {
        DeviceMemory {
            device,
            ranges: Mutex::new(Ranges::default()),
        }
    }

    pub fn alloc(&self, size: u64, kind: AllocKind) -> Result<usize> {
        known_kind(kind)?;
        let out_of_memory = || {
            PluginError::new(
                ErrorCode::OUT_OF_MEMORY,
                format!(
                    "cannot allocate {size} bytes of {} memory on example device {}",
                    kind.name(),
                    self.device
                ),
            )
        };
        // Zero-byte requests still get a unique address, as driver allocators give.
        let bytes = usize::try_from(size).map_err(|_| out_of_memory())?.max(1);
        let layout = Layout::from_size_align(bytes, ALIGN).map_err(|_| out_of_memory())?;
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { std::alloc::alloc(layout) };
        if ptr.is_null() {
            return Err(out_of_memory());
        }
        lock(&self.ranges)
            .blocks
            .insert(ptr as usize, Block { layout, kind });
        Ok(ptr as usize)
    }

    pub fn free(&self, ptr: usize, kind: AllocKind) -> Result<()> {
        known_kind(kind)?;
        let block = lock(&self.ranges).blocks.remove(&ptr).ok_or_else(|| {
            PluginError::invalid_argument(format!(
                "{ptr:#x} is not an allocation of example device {}",
                self.device
            ))
        })?;
        log::trace!(
            "device {}: freeing {} block {ptr:#x}",
            self.device,
            block.kind.name()
        );
        // SAFETY: the block came from `alloc` with this layout and was just removed from the
        // table, so it is released exactly once.
        unsafe { std::alloc::dealloc(ptr as *mut u8, block.layout) };
        Ok(())
    }

    /// Checks that `len` bytes at `addr` are device memory: inside one live allocation or one
    /// global of a loaded image. Copies are checked before they are queued.
    pub fn check(&self, addr: usize, len: u64) -> Result<()> {
        if len == 0 {
            return Ok(());
        }
        let ranges = lock(&self.ranges);
        let in_block = ranges
            .blocks
            .range(..=addr)
            .next_back()
            .is_some_and(|(&start, b)| inside(start, b.layout.size() as u64, addr, len));
        let in_global = ranges
            .globals
            .range(..=addr)
            .next_back()
            .is_some_and(|(&start, &(size, _))| inside(start, size, addr, len));
        if in_block || in_global {
            Ok(())
        } else {
            Err(PluginError::invalid_argument(format!(
                "{len} bytes at {addr:#x} are not memory of example device {}",
                self.device
            )))
        }
    }

    pub fn add_global(&self, addr: usize, size: u64, image: ImageHandle) {
        lock(&self.ranges).globals.insert(addr, (size, image));
    }

    /// Forgets the globals of an image being unloaded.
    pub fn remove_globals(&self, image: ImageHandle) {
        lock(&self.ranges)
            .globals
            .retain(|_, (_, owner)| *owner != image);
    }

    /// Simulated page-locking: host memory is already what this device reads, so the
    /// device-visible address is the host address. A real device registers the range.
    /// plugin-api refuses null and empty ranges before they get here.
    pub fn pin(&self, host: usize, size: u64) -> Result<usize> {
        lock(&self.ranges).pinned.insert(host, size);
        Ok(host)
    }

    pub fn unpin(&self, host: usize) -> Result<()> {
        match lock(&self.ranges).pinned.remove(&host) {
            Some(_) => Ok(()),
            None => Err(PluginError::invalid_argument(format!(
                "{host:#x} is not pinned on example device {}",
                self.device
            ))),
        }
    }

    pub fn live_allocations(&self) -> usize {
        lock(&self.ranges).blocks.len()
    }
}

impl Drop for DeviceMemory {
    fn drop(&mut self) {
        let ranges = self
            .ranges
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        for (ptr, block) in std::mem::take(&mut ranges.blocks) {
            // SAFETY: every block in the table is live and owned by this device.
            unsafe { std::alloc::dealloc(ptr as *mut u8, block.layout) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_must_stay_inside_allocations_and_globals() {
        let mem = DeviceMemory::new(0);
        let p = mem.alloc(100, AllocKind::DEFAULT).unwrap();
        assert!(mem.check(p, 100).is_ok());
        assert!(mem.check(p + 40, 60).is_ok());
        assert!(mem.check(p + 40, 4096).is_err());
        assert!(mem.check(p.wrapping_sub(1), 2).is_err());
        assert!(mem.check(usize::MAX - 2, 8).is_err());
        let global = 0x1000;
        mem.add_global(global, 8, ImageHandle(7));
        assert!(mem.check(global, 8).is_ok());
        assert!(mem.check(global + 4, 8).is_err());
        mem.remove_globals(ImageHandle(7));
        assert!(mem.check(global, 8).is_err());
        mem.free(p, AllocKind::DEFAULT).unwrap();
        assert!(mem.check(p, 1).is_err());
    }

    #[test]
    fn bad_frees_and_unknown_kinds_are_errors() {
        let mem = DeviceMemory::new(3);
        for kind in 0..=4 {
            let p = mem.alloc(16, AllocKind(kind)).unwrap();
            assert_eq!(p % ALIGN, 0);
            mem.free(p, AllocKind::DEFAULT).unwrap();
        }
        let e = mem.alloc(16, AllocKind(99)).unwrap_err();
        assert_eq!(e.code, ErrorCode::INVALID_ARGUMENT);
        let p = mem.alloc(0, AllocKind::DEVICE).unwrap();
        mem.free(p, AllocKind::DEVICE).unwrap();
        let e = mem.free(p, AllocKind::DEVICE).unwrap_err();
        assert_eq!(e.code, ErrorCode::INVALID_ARGUMENT);
        assert!(e.message.contains("example device 3"), "{}", e.message);
        assert_eq!(
            mem.alloc(u64::MAX, AllocKind::DEVICE).unwrap_err().code,
            ErrorCode::OUT_OF_MEMORY
        );
        assert_eq!(mem.live_allocations(), 0);
        assert_eq!(mem.pin(0x5000, 64).unwrap(), 0x5000);
        mem.unpin(0x5000).unwrap();
        assert!(mem.unpin(0x5000).is_err());
    }
}
