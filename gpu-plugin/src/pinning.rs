//! The host ranges a GPU plugin has page-locked, with how many pins use each (LLVM's
//! `PinnedAllocationMapTy`, shared by its GPU plugins). A pin inside a range that is already
//! locked counts on that range instead of locking again; the range is unlocked when its last
//! pin is undone. Each pin is undone by the address it was made with.

use std::collections::BTreeMap;

/// One page-locked host range.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PinnedRange {
    pub start: usize,
    pub size: u64,
    /// The address the device uses for `start` (`cuMemHostGetDevicePointer`, or what
    /// `hsa_amd_memory_lock` gave).
    pub device: u64,
    /// Locked by this plugin (unlock it at the end) rather than found locked already.
    pub ours: bool,
    /// The host address of each pin counted on the range, one entry per pin.
    pins: Vec<usize>,
}

impl PinnedRange {
    fn end(&self) -> u128 {
        self.start as u128 + self.size as u128
    }

    fn contains(&self, host: usize, size: u64) -> bool {
        self.start <= host && host as u128 + size as u128 <= self.end()
    }

    fn intersects(&self, host: usize, size: u64) -> bool {
        (self.start as u128) < host as u128 + size as u128 && (host as u128) < self.end()
    }

    pub fn pin_count(&self) -> usize {
        self.pins.len()
    }
}

/// Why a pin or unpin was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PinError {
    /// The range covers part of a pinned range and memory outside it.
    PartialOverlap {
        host: usize,
        size: u64,
        start: usize,
        pinned: u64,
    },
    /// No pin was made with this address.
    NotPinned(usize),
}

impl std::fmt::Display for PinError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            PinError::PartialOverlap {
                host,
                size,
                start,
                pinned,
            } => write!(
                f,
                "{size} bytes at {host:#x} partly overlap the {pinned} pinned bytes at {start:#x}"
            ),
            PinError::NotPinned(host) => {
                write!(f, "{host:#x} is not an address that was pinned")
            }
        }
    }
}

/// A refused pin or unpin is the caller's mistake.
impl From<PinError> for plugin_api::PluginError {
    fn from(e: PinError) -> Self {
        plugin_api::PluginError::invalid_argument(e.to_string())
    }
}

#[derive(Default)]
pub struct PinTable {
    ranges: BTreeMap<usize, PinnedRange>,
}

impl PinTable {
    /// Counts a pin of `[host, host + size)` on the pinned range holding it and returns the
    /// device address for `host`; `Ok(None)` if no pinned range touches it (`pin` then locks it
    /// and calls `insert`).
    fn pin_existing(&mut self, host: usize, size: u64) -> Result<Option<u64>, PinError> {
        let Some(range) = self.intersecting(host, size) else {
            return Ok(None);
        };
        if !range.contains(host, size) {
            return Err(PinError::PartialOverlap {
                host,
                size,
                start: range.start,
                pinned: range.size,
            });
        }
        range.pins.push(host);
        Ok(Some(range.device + (host - range.start) as u64))
    }

    /// Pins `[host, host + size)`: counted on the pinned range holding it, or else locked by
    /// `lock` (the device address and whether this plugin locked it) and recorded. Returns the
    /// device address for `host`.
    pub fn pin(
        &mut self,
        host: usize,
        size: u64,
        lock: impl FnOnce() -> Result<(u64, bool), plugin_api::PluginError>,
    ) -> Result<u64, plugin_api::PluginError> {
        if let Some(address) = self.pin_existing(host, size)? {
            return Ok(address);
        }
        let (device, ours) = lock()?;
        self.insert(host, size, device, ours);
        Ok(device)
    }

    /// Records a newly locked range with its first pin (no pinned range may touch it: check
    /// with `pin_existing` first).
    fn insert(&mut self, start: usize, size: u64, device: u64, ours: bool) {
        let range = PinnedRange {
            start,
            size,
            device,
            ours,
            pins: vec![start],
        };
        self.ranges.insert(start, range);
    }

    /// Undoes one pin made with `host`. Returns the range when that was its last pin: the
    /// caller unlocks it if `ours`.
    pub fn unpin(&mut self, host: usize) -> Result<Option<PinnedRange>, PinError> {
        let range = self
            .intersecting(host, 1)
            .ok_or(PinError::NotPinned(host))?;
        let at = range
            .pins
            .iter()
            .position(|&p| p == host)
            .ok_or(PinError::NotPinned(host))?;
        range.pins.swap_remove(at);
        if !range.pins.is_empty() {
            return Ok(None);
        }
        let start = range.start;
        Ok(self.ranges.remove(&start))
    }

    /// The device's address for `[host, host + size)` when one pinned range holds all of it.
    pub fn device_address(&self, host: usize, size: u64) -> Option<u64> {
        // Ranges never overlap: only the last one starting at or before `host` can hold it.
        let (_, range) = self.ranges.range(..=host).next_back()?;
        range
            .contains(host, size)
            .then(|| range.device + (host - range.start) as u64)
    }

    /// Removes every range (the plugin is shutting down) and answers those the plugin locked
    /// itself, which it must now unlock; ranges found locked already stay as they were found.
    pub fn drain_ours(&mut self) -> Vec<PinnedRange> {
        std::mem::take(&mut self.ranges)
            .into_values()
            .filter(|r| r.ours)
            .collect()
    }

    /// The pinned range that shares a byte with `[host, host + size)`, if any (ranges never
    /// overlap each other, so the last one starting before its end is the only candidate
    /// apart from those starting inside it; the first of those is checked too).
    fn intersecting(&mut self, host: usize, size: u64) -> Option<&mut PinnedRange> {
        let before = self
            .ranges
            .range(..=host)
            .next_back()
            .filter(|(_, r)| r.intersects(host, size))
            .map(|(&s, _)| s);
        let inside = || {
            self.ranges
                .range(host..)
                .next()
                .filter(|(_, r)| r.intersects(host, size))
                .map(|(&s, _)| s)
        };
        let start = before.or_else(inside)?;
        self.ranges.get_mut(&start)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOST: usize = 0x10_0000;
    const DEVICE: u64 = 0x7f00_0000_0000;

    fn pinned() -> PinTable {
        let mut t = PinTable::default();
        assert_eq!(t.pin_existing(HOST, 4096), Ok(None));
        t.insert(HOST, 4096, DEVICE, true);
        t
    }

    #[test]
    fn two_pins_need_two_unpins() {
        let mut t = pinned();
        assert_eq!(t.pin_existing(HOST, 4096), Ok(Some(DEVICE)));
        assert_eq!(t.unpin(HOST), Ok(None));
        let last = t.unpin(HOST).unwrap().expect("the last unpin unlocks");
        assert_eq!((last.start, last.size, last.ours), (HOST, 4096, true));
        assert_eq!(t.unpin(HOST), Err(PinError::NotPinned(HOST)));
    }

    #[test]
    fn pins_inside_a_pinned_range_count_on_it_with_the_device_offset() {
        let mut t = pinned();
        assert_eq!(t.pin_existing(HOST + 64, 128), Ok(Some(DEVICE + 64)));
        // The range stays locked while the interior pin lives, whatever the order.
        assert_eq!(t.unpin(HOST), Ok(None));
        assert!(t.unpin(HOST + 64).unwrap().is_some());
    }

    #[test]
    fn unpinning_an_address_no_pin_was_made_with_is_an_error() {
        let mut t = pinned();
        assert_eq!(t.unpin(HOST + 8), Err(PinError::NotPinned(HOST + 8)));
        assert_eq!(t.unpin(HOST * 4), Err(PinError::NotPinned(HOST * 4)));
        // The failed unpins did not touch the count.
        assert!(t.unpin(HOST).unwrap().is_some());
    }

    #[test]
    fn partial_overlaps_are_refused() {
        let mut t = pinned();
        let straddling = t.pin_existing(HOST + 4000, 200);
        assert!(matches!(straddling, Err(PinError::PartialOverlap { .. })));
        // A range that starts before and covers the pinned one overlaps it too.
        let covering = t.pin_existing(HOST - 16, 8192);
        assert!(matches!(covering, Err(PinError::PartialOverlap { .. })));
        assert_eq!(t.pin_existing(HOST + 4096, 16), Ok(None));
        assert_eq!(t.pin_existing(HOST - 16, 16), Ok(None));
    }

    #[test]
    fn device_addresses_are_found_only_inside_one_pinned_range() {
        let mut t = pinned();
        t.insert(HOST + 4096, 4096, DEVICE * 2, true);
        assert_eq!(t.device_address(HOST, 4096), Some(DEVICE));
        assert_eq!(t.device_address(HOST + 100, 8), Some(DEVICE + 100));
        assert_eq!(t.device_address(HOST + 4100, 8), Some(DEVICE * 2 + 4));
        // Touching two ranges, or memory outside any, has no one device address.
        assert_eq!(t.device_address(HOST + 4000, 200), None);
        assert_eq!(t.device_address(HOST - 8, 16), None);
        assert_eq!(t.device_address(HOST + 8192, 1), None);
    }

    #[test]
    fn drain_removes_every_range_and_answers_ours_once() {
        let mut t = pinned();
        t.insert(HOST * 2, 16, DEVICE * 2, false);
        assert_eq!(t.pin_existing(HOST, 1), Ok(Some(DEVICE)));
        let drained = t.drain_ours();
        assert_eq!(drained.len(), 1);
        assert_eq!((drained[0].start, drained[0].pin_count()), (HOST, 2));
        assert_eq!(t.unpin(HOST), Err(PinError::NotPinned(HOST)));
        assert_eq!(t.unpin(HOST * 2), Err(PinError::NotPinned(HOST * 2)));
    }
}
