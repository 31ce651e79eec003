//! Range lookups over a set of non-overlapping mappings ordered by host start address.

use super::extent::Extent;
use super::start_hash::{ProbeHint, StartHash};
use super::start_index::StartIndex;

/// The answer to "is [begin, begin+size) mapped?", naming mappings by `K`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Lookup<K = usize> {
    /// Entirely inside this mapping.
    Contained(K),
    /// Overlaps this mapping without being inside it (an "explicit extension").
    Extends(K),
    Absent,
}

impl<K> Lookup<K> {
    /// The mapping that serves the range: the one containing it, or with `allow_extension`
    /// (implicit maps, kernel arguments) also one it overlaps.
    pub(crate) fn serving(self, allow_extension: bool) -> Option<K> {
        match self {
            Lookup::Contained(k) => Some(k),
            Lookup::Extends(k) if allow_extension => Some(k),
            _ => None,
        }
    }

    pub(crate) fn map<L>(self, f: impl FnOnce(K) -> L) -> Lookup<L> {
        match self {
            Lookup::Contained(k) => Lookup::Contained(f(k)),
            Lookup::Extends(k) => Lookup::Extends(f(k)),
            Lookup::Absent => Lookup::Absent,
        }
    }
}

/// The entries by host start, twice: an ordered index of their starts for range searches, and
/// the entries themselves hashed by start. Most lookups name a mapping's own start (a
/// `present` region, an exit of what was entered) and are answered by one hash probe, in time
/// that does not grow with the table; a search of the start index (by page, see
/// [`StartIndex`]) and a probe of the start it finds answer the rest. Both change together,
/// under the caller's lock.
#[derive(Debug)]
pub(super) struct SortedMappings<V> {
    starts: StartIndex,
    entries: StartHash<V>,
}

impl<V> Default for SortedMappings<V> {
    fn default() -> Self {
        SortedMappings {
            starts: StartIndex::default(),
            entries: StartHash::default(),
        }
    }
}

impl<V: Extent> SortedMappings<V> {
    pub(super) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub(super) fn lookup(&self, begin: usize, size: u64) -> Lookup {
        // A mapping starting at `begin` that holds `begin` is the answer whatever the size:
        // inside it, or overlapping it (any other mapping the range reaches starts at its end
        // or later, and the mapping holding `begin` names an overlap). A zero-length one holds
        // only zero-length sections; the searches below decide the rest.
        if let Some(m) = self.get(begin) {
            let end = begin.saturating_add(size as usize);
            if size == 0 {
                return Lookup::Contained(begin);
            }
            if begin < m.end() {
                return if end <= m.end() {
                    Lookup::Contained(begin)
                } else {
                    Lookup::Extends(begin)
                };
            }
        }
        self.search(begin, size)
    }

    /// The lookup by searches of the start index alone, without the probe of `begin`.
    fn search(&self, begin: usize, size: u64) -> Lookup {
        if size == 0 {
            return self.lookup_address(begin);
        }
        let end = begin.saturating_add(size as usize);
        // One search answers the usual cases: the last mapping starting before `end`. Starting
        // at or before `begin`, it is the only one that can hold `begin` (mappings do not
        // overlap), and none starts in between.
        let Some((start, m)) = self.found(self.starts.at_or_before(end - 1)) else {
            return Lookup::Absent;
        };
        if start <= begin {
            return if begin >= m.end() {
                Lookup::Absent
            } else if end <= m.end() {
                Lookup::Contained(start)
            } else {
                Lookup::Extends(start)
            };
        }
        // An overlap: named by the mapping holding `begin` if one does, else by the first one
        // starting inside the range.
        Lookup::Extends(self.first_overlapping(begin, end).unwrap_or(start))
    }

    /// A zero-length section (OpenMP 5.1 "pointer initialization"): found in the mapping that
    /// holds the address, or whose list item's base..end range holds it.
    fn lookup_address(&self, address: usize) -> Lookup {
        if let Some((start, m)) = self.found(self.starts.at_or_before(address)) {
            if address < m.end() || address < m.base() || address == start {
                return Lookup::Contained(start);
            }
        }
        if let Some((start, m)) = self.found(
            address
                .checked_add(1)
                .and_then(|a| self.starts.at_or_after(a)),
        ) {
            if address >= m.base() {
                return Lookup::Contained(start);
            }
        }
        Lookup::Absent
    }

    /// A mapping overlapping [begin, end), if any.
    pub(super) fn first_overlapping(&self, begin: usize, end: usize) -> Option<usize> {
        if let Some((start, m)) = self.found(self.starts.at_or_before(begin)) {
            if begin < m.end() {
                return Some(start);
            }
        }
        self.starts.at_or_after(begin).filter(|&start| start < end)
    }

    /// The entry at a start the index gave.
    fn found(&self, start: Option<usize>) -> Option<(usize, &V)> {
        let start = start?;
        Some((start, self.entries.get(start)?))
    }

    pub(super) fn get(&self, host_begin: usize) -> Option<&V> {
        self.entries.get(host_begin)
    }

    pub(super) fn get_mut(&mut self, host_begin: usize) -> Option<&mut V> {
        self.entries.get_mut(host_begin)
    }

    /// Adds an entry; true when the hash moved (see [`Self::publish`]).
    pub(super) fn insert(&mut self, entry: V) -> bool {
        self.starts.insert(entry.begin());
        self.entries.insert(entry)
    }

    /// Tells `hint` where the hash lies now.
    pub(super) fn publish(&self, hint: &ProbeHint<V>) {
        hint.publish(&self.entries);
    }

    /// Changes the entry starting at `host_begin`, removing it when `change` returns true:
    /// `None` when there is no such entry, else the removed entry if any.
    pub(super) fn change_or_remove(
        &mut self,
        host_begin: usize,
        change: impl FnOnce(&mut V) -> bool,
    ) -> Option<Option<V>> {
        let removed = self.entries.change_or_remove(host_begin, change)?;
        if removed.is_some() {
            self.starts.remove(host_begin);
        }
        Some(removed)
    }

    pub(super) fn remove(&mut self, host_begin: usize) -> Option<V> {
        let entry = self.entries.remove(host_begin)?;
        self.starts.remove(host_begin);
        Some(entry)
    }

    /// The entries in host address order.
    pub(super) fn values(&self) -> impl Iterator<Item = &V> {
        self.starts.in_order().filter_map(|start| self.get(start))
    }

    /// Removes and returns every entry, in host address order.
    pub(super) fn drain(&mut self) -> impl Iterator<Item = V> {
        let mut entries = std::mem::take(&mut self.entries);
        let starts: Vec<usize> = std::mem::take(&mut self.starts).in_order().collect();
        starts
            .into_iter()
            .filter_map(move |start| entries.remove(start))
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::mapping::Mapping;

    pub(crate) fn mapping(begin: usize, size: usize) -> Mapping {
        let mut m = Mapping::new(begin, begin, begin + size, 0x10_0000 + begin);
        m.dynamic_refs = 1;
        m.owns_device_memory = true;
        m
    }

    /// A list item's base far below its start (a section deep into a huge array) is kept
    /// beside the mapping, and found as a near one is.
    #[test]
    fn bases_near_and_far() {
        let mut near = mapping(1 << 40, 8);
        near.set_host_base((1 << 40) - 4096);
        assert_eq!(near.host_base(), (1 << 40) - 4096);
        let mut far = mapping(1 << 40, 8);
        far.set_host_base(1 << 20);
        assert_eq!(far.host_base(), 1 << 20);
        far.set_host_base(1 << 40);
        assert_eq!(far.host_base(), 1 << 40);
        let mut t = SortedMappings::default();
        let mut m = mapping(1 << 40, 8);
        m.set_host_base((1 << 40) - (8 << 30));
        t.insert(m);
        assert_eq!(
            t.lookup((1 << 40) - (4 << 30), 0),
            Lookup::Contained(1 << 40)
        );
        assert_eq!(t.get(1 << 40).unwrap().host_base(), (1 << 40) - (8 << 30));
    }

    #[test]
    fn containment_and_extension() {
        let mut t = SortedMappings::default();
        t.insert(mapping(1000, 100));
        assert_eq!(t.lookup(1000, 100), Lookup::Contained(1000));
        assert_eq!(t.lookup(1050, 10), Lookup::Contained(1000));
        assert_eq!(t.lookup(1050, 0), Lookup::Contained(1000));
        assert_eq!(t.lookup(1050, 100), Lookup::Extends(1000));
        assert_eq!(t.lookup(990, 20), Lookup::Extends(1000));
        assert_eq!(t.lookup(900, 100), Lookup::Absent);
        assert_eq!(t.lookup(1100, 4), Lookup::Absent);
        assert_eq!(t.first_overlapping(900, 1001), Some(1000));
        assert_eq!(t.first_overlapping(1099, 1200), Some(1000));
        assert_eq!(t.first_overlapping(1100, 1200), None);
        assert_eq!(t.get(1000).unwrap().device_address(1010), 0x10_0000 + 1010);
    }

    #[test]
    fn a_probe_of_mapping_starts_answers_as_the_search_does() {
        let mut t = SortedMappings::default();
        t.insert(mapping(1000, 100));
        t.insert(mapping(1100, 0)); // zero-length, right after the first
        t.insert(mapping(1200, 50));
        let mut m = mapping(1300, 8);
        m.set_host_base(1290);
        t.insert(m);
        for begin in [1000, 1100, 1200, 1300, 1050, 1150, 1295] {
            for size in [0, 1, 8, 50, 100, 150, 400] {
                assert_eq!(
                    t.lookup(begin, size),
                    t.search(begin, size),
                    "lookup({begin}, {size})"
                );
            }
        }
        let order: Vec<usize> = t.values().map(|m| m.host_begin).collect();
        assert_eq!(order, [1000, 1100, 1200, 1300]);
        let drained: Vec<usize> = t.drain().map(|m| m.host_begin).collect();
        assert_eq!(drained, [1000, 1100, 1200, 1300]);
        assert!(t.is_empty());
    }

    #[test]
    fn zero_sized_mappings_are_found_at_their_start() {
        let mut t = SortedMappings::default();
        t.insert(mapping(2000, 0));
        assert_eq!(t.lookup(2000, 0), Lookup::Contained(2000));
        assert_eq!(t.lookup(2001, 0), Lookup::Absent);
        // A section's base before its begin: zero-length sections from the base find it.
        let mut m = mapping(3000, 8);
        m.set_host_base(2990);
        t.insert(m);
        assert_eq!(t.lookup(2995, 0), Lookup::Contained(3000));
        assert_eq!(t.lookup(2989, 0), Lookup::Absent);
        assert_eq!(t.remove(2000).unwrap().size(), 0);
        assert_eq!(t.remove(3000).unwrap().size(), 8);
        assert!(t.is_empty());
    }
}
