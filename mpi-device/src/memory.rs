//! Large device allocations kept for reuse after the program frees them.
//!
//! A program that maps a large array in a loop allocates and frees the same size each time.
//! Fresh memory costs its page faults (or the driver's allocation) again on every round, which
//! on a host device halves the bandwidth of a 1 GiB map. The runtime's own pool keeps only
//! small blocks (8 KiB), so the device process keeps freed blocks of 1 MiB and more, of the same
//! device, kind and size, up to a bound (`OMPTARGET_MPI_DEVICE_CACHE_BYTES`, default 2 GiB), and
//! gives them all back when an allocation fails.
//!
//! Under memcheck, a kept block of a device whose memory is this process's (the host plugin) is
//! no-access, so that the program's use of it after freeing it is reported as it would be
//! without the cache; it is addressable again when reused, or before it is freed.

use plugin_api::AllocKind;
use std::collections::{HashMap, HashSet};
use valgrind_requests as valgrind;

/// Blocks smaller than this are not kept.
const SMALLEST: u64 = 1 << 20;
const DEFAULT_LIMIT: u64 = 2 << 30;
/// Variable bounding the bytes kept (0: keep nothing).
pub const LIMIT_VAR: &str = "OMPTARGET_MPI_DEVICE_CACHE_BYTES";

type Key = (u32, u32, u64); // device, kind, size

#[derive(Default)]
pub struct BlockCache {
    /// Live large allocations: address -> (device, kind, size).
    live: HashMap<(u32, usize), Key>,
    kept: HashMap<Key, Vec<usize>>,
    kept_bytes: u64,
    limit: u64,
    /// Under memcheck, devices whose memory is this process's: memcheck is told about their
    /// kept blocks.
    in_process: HashSet<u32>,
}

impl BlockCache {
    pub fn from_env() -> Self {
        let limit = std::env::var(LIMIT_VAR)
            .ok()
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(DEFAULT_LIMIT);
        BlockCache {
            limit,
            ..Default::default()
        }
    }

    /// A kept block for this allocation, if any.
    pub fn take(&mut self, device: u32, kind: AllocKind, size: u64) -> Option<usize> {
        let key = (device, kind.0, size);
        let address = self.kept.get_mut(&key)?.pop()?;
        self.kept_bytes -= size;
        self.live.insert((device, address), key);
        self.addressable(device, address, size);
        Some(address)
    }

    /// Records a new allocation; `in_process`: the device's memory is this process's.
    pub fn allocated(
        &mut self,
        device: u32,
        kind: AllocKind,
        size: u64,
        address: usize,
        in_process: bool,
    ) {
        if size >= SMALLEST && self.limit > 0 {
            self.live.insert((device, address), (device, kind.0, size));
            if in_process && valgrind::memcheck() {
                self.in_process.insert(device);
            }
        }
    }

    /// For valgrind: a kept block of `device` is in use again, or about to be freed.
    fn addressable(&self, device: u32, address: usize, size: u64) {
        if self.in_process.contains(&device) {
            valgrind::make_mem_undefined(address, size as usize);
        }
    }

    /// Whether a freed block is kept (then it must not be freed).
    pub fn keep(&mut self, device: u32, address: usize) -> bool {
        let Some(key) = self.live.remove(&(device, address)) else {
            return false;
        };
        if self.kept_bytes + key.2 > self.limit {
            return false;
        }
        self.kept_bytes += key.2;
        if self.in_process.contains(&device) {
            valgrind::make_mem_noaccess(address, key.2 as usize);
        }
        self.kept.entry(key).or_default().push(address);
        true
    }

    /// Every kept block of `device`, to free (after an allocation failed).
    pub fn drain(&mut self, device: u32) -> Vec<(usize, AllocKind)> {
        let mut out = Vec::new();
        let in_process = self.in_process.contains(&device);
        self.kept.retain(|key, blocks| {
            if key.0 != device {
                return true;
            }
            for &address in blocks.iter().filter(|_| in_process) {
                valgrind::make_mem_undefined(address, key.2 as usize);
            }
            out.extend(blocks.drain(..).map(|a| (a, AllocKind(key.1))));
            false
        });
        self.kept_bytes = self.kept.iter().map(|(k, v)| k.2 * v.len() as u64).sum();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_freed_large_block_is_reused_for_the_same_device_kind_and_size_only() {
        let mut cache = BlockCache {
            limit: 3 << 20,
            ..Default::default()
        };
        let mb = 1 << 20;
        cache.allocated(0, AllocKind::DEFAULT, 2 * mb, 0x1000, false);
        cache.allocated(0, AllocKind::DEFAULT, 100, 0x9000, false); // small: never kept
        assert!(cache.keep(0, 0x1000));
        assert!(!cache.keep(0, 0x9000));
        assert_eq!(cache.take(1, AllocKind::DEFAULT, 2 * mb), None);
        assert_eq!(cache.take(0, AllocKind::DEVICE, 2 * mb), None);
        assert_eq!(cache.take(0, AllocKind::DEFAULT, mb), None);
        assert_eq!(cache.take(0, AllocKind::DEFAULT, 2 * mb), Some(0x1000));
        // Over the bound: freed for real.
        cache.allocated(0, AllocKind::DEFAULT, 2 * mb, 0x2000, false);
        assert!(cache.keep(0, 0x1000));
        assert!(!cache.keep(0, 0x2000));
        assert_eq!(cache.drain(0), vec![(0x1000, AllocKind::DEFAULT)]);
        assert_eq!(cache.kept_bytes, 0);
    }
}
