//! The host-to-device mapping table of one device: which host ranges have device copies, with
//! their reference counts (OpenMP's dynamic count, and the `ompx_hold` count beside it).

use std::collections::BTreeMap;

/// Reference count of data that is never unmapped (`declare target` globals).
pub const INFINITE: u64 = u64::MAX;

/// A pointer inside mapped data that was rewritten on the device to point at device memory
/// (`ptr_and_obj`), with both values, so either side can be restored after a copy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShadowPointer {
    pub host_address: usize,
    pub host_value: usize,
    pub device_address: usize,
    pub device_value: usize,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mapping {
    /// The base of the mapped list item (the array, for a section of it): zero-length
    /// sections between base and begin still find this mapping, as the spec requires.
    pub host_base: usize,
    pub host_begin: usize,
    pub host_end: usize,
    pub device_begin: usize,
    /// Start of the device allocation: before `device_begin` when padding keeps a struct
    /// member's alignment.
    pub device_alloc: usize,
    pub dynamic_refs: u64,
    pub hold_refs: u64,
    /// Whether the runtime allocated the device memory (and so frees it on removal).
    pub owns_device_memory: bool,
    pub shadow_pointers: Vec<ShadowPointer>,
    /// The compiler's `map_var_info_t` string of the variable (0: unknown), for diagnostics.
    pub name: usize,
    /// Constructs that are ending this mapping and have not completed yet: the last of them
    /// removes it (LLVM's data-end thread count).
    pub ends_in_flight: u32,
}

impl Mapping {
    /// A mapping of memory the runtime does not own (globals, associated pointers), never
    /// unmapped by reference counting.
    pub fn permanent(host_begin: usize, size: u64, device_begin: usize) -> Mapping {
        Mapping {
            host_base: host_begin,
            host_begin,
            host_end: host_begin + size as usize,
            device_begin,
            device_alloc: device_begin,
            dynamic_refs: INFINITE,
            hold_refs: 0,
            owns_device_memory: false,
            shadow_pointers: Vec::new(),
            name: 0,
            ends_in_flight: 0,
        }
    }

    pub fn size(&self) -> u64 {
        (self.host_end - self.host_begin) as u64
    }
    /// Device address of a host address inside this mapping.
    /// Also for addresses just outside it, which implicit maps that extend a mapping use.
    pub fn device_address(&self, host: usize) -> usize {
        self.device_begin
            .wrapping_add(host.wrapping_sub(self.host_begin))
    }
    pub fn total_refs(&self) -> u64 {
        self.dynamic_refs.saturating_add(self.hold_refs)
    }
    pub fn is_infinite(&self) -> bool {
        self.dynamic_refs == INFINITE
    }
    /// The attached pointers stored inside [begin, begin+size): those a copy of that range
    /// overwrites and must restore.
    pub fn shadows_within(&self, begin: usize, size: u64) -> Vec<ShadowPointer> {
        let end = begin + size as usize;
        self.shadow_pointers
            .iter()
            .filter(|s| s.host_address >= begin && s.host_address < end)
            .cloned()
            .collect()
    }
}

/// The answer to "is [begin, begin+size) mapped?".
#[derive(Debug, PartialEq, Eq)]
pub enum Lookup {
    /// Entirely inside the mapping starting at this host address.
    Contained(usize),
    /// Overlaps a mapping without being inside it (an "explicit extension").
    Extends(usize),
    Absent,
}

#[derive(Default, Debug)]
pub struct MappingTable {
    by_host_begin: BTreeMap<usize, Mapping>,
}

impl MappingTable {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn len(&self) -> usize {
        self.by_host_begin.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_host_begin.is_empty()
    }

    pub fn lookup(&self, begin: usize, size: u64) -> Lookup {
        if size == 0 {
            return self.lookup_address(begin);
        }
        let end = begin.saturating_add(size as usize);
        // The mapping that starts at or before `begin` is the only one that can contain it.
        if let Some((&start, m)) = self.by_host_begin.range(..=begin).next_back() {
            if begin < m.host_end {
                return if end <= m.host_end {
                    Lookup::Contained(start)
                } else {
                    Lookup::Extends(start)
                };
            }
        }
        if let Some((&start, _)) = self.by_host_begin.range(begin..end).next() {
            return Lookup::Extends(start);
        }
        Lookup::Absent
    }

    /// A zero-length section (OpenMP 5.1 "pointer initialization"): found in the mapping that
    /// holds the address, or whose list item's base..end range holds it.
    fn lookup_address(&self, address: usize) -> Lookup {
        if let Some((&start, m)) = self.by_host_begin.range(..=address).next_back() {
            if address < m.host_end || address < m.host_base || address == m.host_begin {
                return Lookup::Contained(start);
            }
        }
        if let Some((&start, m)) = self.by_host_begin.range(address + 1..).next() {
            if address >= m.host_base {
                return Lookup::Contained(start);
            }
        }
        Lookup::Absent
    }

    pub fn get(&self, host_begin: usize) -> Option<&Mapping> {
        self.by_host_begin.get(&host_begin)
    }

    pub fn get_mut(&mut self, host_begin: usize) -> Option<&mut Mapping> {
        self.by_host_begin.get_mut(&host_begin)
    }

    /// The mapping containing the range, if any.
    pub fn find(&self, begin: usize, size: u64) -> Option<&Mapping> {
        match self.lookup(begin, size) {
            Lookup::Contained(start) => self.get(start),
            _ => None,
        }
    }

    /// The start of the mapping that serves the range: the one containing it, or with
    /// `allow_extension` (implicit maps, kernel arguments) also one it overlaps.
    pub fn serving(&self, begin: usize, size: u64, allow_extension: bool) -> Option<usize> {
        match self.lookup(begin, size) {
            Lookup::Contained(start) => Some(start),
            Lookup::Extends(start) if allow_extension => Some(start),
            _ => None,
        }
    }

    /// The mapping containing or overlapping the range (LLVM's lookup without "must
    /// contain"), as kernel arguments and implicit maps use it.
    pub fn find_overlapping(&self, begin: usize, size: u64) -> Option<&Mapping> {
        self.serving(begin, size, true)
            .and_then(|start| self.get(start))
    }

    pub fn insert(&mut self, mapping: Mapping) {
        self.by_host_begin.insert(mapping.host_begin, mapping);
    }

    pub fn remove(&mut self, host_begin: usize) -> Option<Mapping> {
        self.by_host_begin.remove(&host_begin)
    }

    pub fn iter(&self) -> impl Iterator<Item = &Mapping> {
        self.by_host_begin.values()
    }

    /// Removes and returns every mapping (device teardown).
    pub fn drain(&mut self) -> Vec<Mapping> {
        std::mem::take(&mut self.by_host_begin)
            .into_values()
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mapping(begin: usize, size: usize) -> Mapping {
        Mapping {
            host_base: begin,
            host_begin: begin,
            host_end: begin + size,
            device_begin: 0x10_0000 + begin,
            device_alloc: 0x10_0000 + begin,
            dynamic_refs: 1,
            hold_refs: 0,
            owns_device_memory: true,
            shadow_pointers: Vec::new(),
            name: 0,
            ends_in_flight: 0,
        }
    }

    #[test]
    fn containment_and_extension() {
        let mut t = MappingTable::new();
        t.insert(mapping(1000, 100));
        assert_eq!(t.lookup(1000, 100), Lookup::Contained(1000));
        assert_eq!(t.lookup(1050, 10), Lookup::Contained(1000));
        assert_eq!(t.lookup(1050, 0), Lookup::Contained(1000));
        assert_eq!(t.lookup(1050, 100), Lookup::Extends(1000));
        assert_eq!(t.lookup(990, 20), Lookup::Extends(1000));
        assert_eq!(t.lookup(900, 100), Lookup::Absent);
        assert_eq!(t.lookup(1100, 4), Lookup::Absent);
        assert_eq!(
            t.find(1010, 4).unwrap().device_address(1010),
            0x10_0000 + 1010
        );
    }

    #[test]
    fn zero_sized_mappings_are_found_at_their_start() {
        let mut t = MappingTable::new();
        t.insert(mapping(2000, 0));
        assert_eq!(t.lookup(2000, 0), Lookup::Contained(2000));
        assert_eq!(t.lookup(2001, 0), Lookup::Absent);
        // A section's base before its begin: zero-length sections from the base find it.
        let mut m = mapping(3000, 8);
        m.host_base = 2990;
        t.insert(m);
        assert_eq!(t.lookup(2995, 0), Lookup::Contained(3000));
        assert_eq!(t.lookup(2989, 0), Lookup::Absent);
        assert_eq!(t.remove(2000).unwrap().size(), 0);
        assert_eq!(t.remove(3000).unwrap().size(), 8);
        assert!(t.is_empty());
    }
}
