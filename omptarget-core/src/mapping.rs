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
    pub host_begin: usize,
    pub host_end: usize,
    pub device_begin: usize,
    pub dynamic_refs: u64,
    pub hold_refs: u64,
    /// Whether the runtime allocated the device memory (and so frees it on removal).
    pub owns_device_memory: bool,
    pub shadow_pointers: Vec<ShadowPointer>,
}

impl Mapping {
    pub fn size(&self) -> u64 {
        (self.host_end - self.host_begin) as u64
    }
    /// Device address of a host address inside this mapping.
    pub fn device_address(&self, host: usize) -> usize {
        self.device_begin + (host - self.host_begin)
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
        let end = begin.saturating_add(size as usize);
        // The mapping that starts at or before `begin` is the only one that can contain it.
        if let Some((&start, m)) = self.by_host_begin.range(..=begin).next_back() {
            let contains = if size == 0 {
                begin < m.host_end || begin == m.host_begin
            } else {
                end <= m.host_end && begin < m.host_end
            };
            if contains {
                return Lookup::Contained(start);
            }
            if begin < m.host_end {
                return Lookup::Extends(start);
            }
        }
        if size > 0 {
            if let Some((&start, _)) = self.by_host_begin.range(begin..end).next() {
                return Lookup::Extends(start);
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
            host_begin: begin,
            host_end: begin + size,
            device_begin: 0x10_0000 + begin,
            dynamic_refs: 1,
            hold_refs: 0,
            owns_device_memory: true,
            shadow_pointers: Vec::new(),
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
        assert_eq!(t.remove(2000).unwrap().size(), 0);
        assert!(t.is_empty());
    }
}
