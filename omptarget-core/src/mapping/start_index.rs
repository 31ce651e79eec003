//! An ordered index of mapping starts, answering "the last start at or before x" and "the
//! first at or after x" in time that does not grow with the index.
//!
//! Starts are grouped by the 1 KiB page they lie in: a hash map from page to that page's
//! starts, sorted, and an ordered set of the pages that hold any. Mappings made one after the
//! other lie in the same or neighbouring pages, so most searches and every insert and removal
//! touch one page, found by one hash probe; only a search whose own page holds no answer goes
//! to the ordered set of pages. The B-tree this replaced was searched four levels deep at ten
//! thousand entries, and missed the cache at each level at a million.
//!
//! Only the starts are kept, each as its 16-bit offset in the page: a dozen small mappings
//! made one after the other fit a page's inline room, and the index of ten thousand of them
//! takes a few pages of memory. A copy of each mapping's extent beside its start took some
//! 110 pages there, each faulted in when first written (about 2 µs apiece on this project's
//! machines: together a tenth of the cost of an enter); the extent is read from the mapping
//! itself, found by its start in the table's hash.

use host_os::address_map::AddressMap;
use smallvec::SmallVec;
use std::collections::hash_map::Entry;
use std::collections::BTreeSet;

const PAGE_SHIFT: u32 = 10;

fn page(address: usize) -> usize {
    address >> PAGE_SHIFT
}

fn offset(address: usize) -> u16 {
    (address & ((1 << PAGE_SHIFT) - 1)) as u16
}

fn start_at(page: usize, offset: u16) -> usize {
    page << PAGE_SHIFT | offset as usize
}

/// The starts in one page, as offsets into it, sorted.
type Page = SmallVec<[u16; 16]>;

#[derive(Debug, Default)]
pub(super) struct StartIndex {
    pages: AddressMap<usize, Page>,
    /// The pages in `pages`, in order.
    order: BTreeSet<usize>,
    /// The first and the last start: searches from addresses outside all mappings (the stack,
    /// globals) are answered without probing a page.
    first: Option<usize>,
    last: Option<usize>,
}

impl StartIndex {
    /// Adds `start` (nothing changes if it is there already).
    pub(super) fn insert(&mut self, start: usize) {
        match self.lone() {
            None if self.first.is_none() => return self.set_lone(start),
            Some(only) if only == start => return,
            // A second start puts both in pages.
            Some(only) => self.add_to_page(only),
            None => {}
        }
        if self.first.is_none_or(|first| start < first) {
            self.first = Some(start);
        }
        if self.last.is_none_or(|last| start > last) {
            self.last = Some(start);
        }
        self.add_to_page(start);
    }

    /// The only start, when it is not in a page: a table holding one mapping (a region's
    /// scalar, alone in its part of the table) changes neither a page nor the set of pages
    /// as the mapping comes and goes. Searches never reach the pages then: `first` and `last`
    /// answer them.
    fn lone(&self) -> Option<usize> {
        if self.pages.is_empty() {
            self.first
        } else {
            None
        }
    }

    fn set_lone(&mut self, start: usize) {
        self.first = Some(start);
        self.last = Some(start);
    }

    fn add_to_page(&mut self, start: usize) {
        let offsets = self.pages.entry(page(start)).or_insert_with(|| {
            self.order.insert(page(start));
            SmallVec::new()
        });
        let at = offset(start);
        // Appending is the usual case: new data lies after older data.
        match offsets.last() {
            Some(&last) if last < at => offsets.push(at),
            _ => {
                if let Err(i) = offsets.binary_search(&at) {
                    offsets.insert(i, at);
                }
            }
        }
    }

    /// Removes `start`; false when it was not there.
    pub(super) fn remove(&mut self, start: usize) -> bool {
        if self.pages.is_empty() {
            if self.first != Some(start) {
                return false;
            }
            (self.first, self.last) = (None, None);
            return true;
        }
        let key = page(start);
        // One probe of the pages: the entry is changed or removed where it was found.
        let Entry::Occupied(mut entry) = self.pages.entry(key) else {
            return false;
        };
        let at = offset(start);
        // Read as a plain slice once: each call on the SmallVec asks again where it lies.
        let offsets: &mut [u16] = entry.get_mut();
        let n = offsets.len();
        let (Some(&page_first), Some(&page_last)) = (offsets.first(), offsets.last()) else {
            return false; // not reached: empty pages are removed
        };
        // Mappings usually go in the order they came (the first of the page) or the reverse
        // (its last): asked before searching.
        let i = if page_first == at {
            0
        } else if page_last == at {
            n - 1
        } else {
            match offsets.binary_search(&at) {
                Ok(i) => i,
                Err(_) => return false,
            }
        };
        // The page's first and last starts once this one is gone (none when it was alone).
        let (page_first, page_last) = if n == 1 {
            (None, None)
        } else {
            let first = offsets[usize::from(i == 0)];
            let last = offsets[if i == n - 1 { n - 2 } else { n - 1 }];
            (Some(start_at(key, first)), Some(start_at(key, last)))
        };
        if n == 1 {
            entry.remove();
            self.order.remove(&key);
        } else {
            offsets.copy_within(i + 1.., i);
            entry.get_mut().truncate(n - 1);
        }
        // The first or last start gone: its successor is in the same page, usually.
        if self.first == Some(start) {
            self.first = page_first.or_else(|| self.first_of_page(*self.order.first()?));
        }
        if self.last == Some(start) {
            self.last = page_last.or_else(|| self.last_of_page(*self.order.last()?));
        }
        true
    }

    fn first_of_page(&self, p: usize) -> Option<usize> {
        Some(start_at(p, *self.pages.get(&p)?.first()?))
    }

    fn last_of_page(&self, p: usize) -> Option<usize> {
        Some(start_at(p, *self.pages.get(&p)?.last()?))
    }

    /// The greatest start at or before `x`.
    pub(super) fn at_or_before(&self, x: usize) -> Option<usize> {
        let last = self.last?;
        if x >= last {
            return Some(last);
        }
        if self.first.is_some_and(|first| x < first) {
            return None;
        }
        let key = page(x);
        if let Some(offsets) = self.pages.get(&key) {
            let after = offsets.partition_point(|&o| o <= offset(x));
            if after > 0 {
                return Some(start_at(key, offsets[after - 1]));
            }
        }
        self.last_of_page(*self.order.range(..key).next_back()?)
    }

    /// The least start at or after `x`.
    pub(super) fn at_or_after(&self, x: usize) -> Option<usize> {
        let first = self.first?;
        if x <= first {
            return Some(first);
        }
        if self.last.is_some_and(|last| x > last) {
            return None;
        }
        let key = page(x);
        if let Some(offsets) = self.pages.get(&key) {
            let from = offsets.partition_point(|&o| o < offset(x));
            if from < offsets.len() {
                return Some(start_at(key, offsets[from]));
            }
        }
        self.first_of_page(*self.order.range(key.checked_add(1)?..).next()?)
    }

    /// The starts, in order.
    pub(super) fn in_order(&self) -> impl Iterator<Item = usize> + '_ {
        let lone = self.lone();
        self.order
            .iter()
            .flat_map(|&p| self.pages[&p].iter().map(move |&o| start_at(p, o)))
            .chain(lone)
    }
}

#[test]
fn answers_as_a_b_tree_does() {
    let mut index = StartIndex::default();
    let mut model = BTreeSet::new();
    // A small generator, so that the test needs no crate: starts spread over a few pages, close
    // together, and far apart.
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for _ in 0..20_000u32 {
        let r = next();
        let start = match r % 3 {
            0 => (r >> 8) as usize % 8192,
            1 => 0x7f00_0000 + (r >> 8) as usize % (1 << 20),
            _ => (r >> 8) as usize,
        };
        if next() % 3 == 0 {
            assert_eq!(index.remove(start), model.remove(&start), "remove {start}");
            if let Some(&some) = model.range(start..).next() {
                assert_eq!(index.remove(some), model.remove(&some), "remove {some}");
            }
        } else {
            index.insert(start);
            model.insert(start);
        }
        let x = match next() % 3 {
            0 => start,
            1 => start.wrapping_add(1),
            _ => next() as usize % 16384,
        };
        let before = model.range(..=x).next_back().copied();
        let after = model.range(x..).next().copied();
        assert_eq!(index.at_or_before(x), before, "at or before {x}");
        assert_eq!(index.at_or_after(x), after, "at or after {x}");
    }
    assert!(index.in_order().eq(model.iter().copied()));
    assert_eq!(
        index.at_or_after(usize::MAX),
        model.get(&usize::MAX).copied()
    );
    for start in model.iter().copied().collect::<Vec<_>>() {
        index.remove(start);
    }
    assert!(index.in_order().next().is_none() && index.pages.is_empty());
}

#[test]
fn a_lone_start_uses_no_page() {
    let mut index = StartIndex::default();
    for _ in 0..3 {
        index.insert(0x1000);
        index.insert(0x1000); // already there
        assert!(index.pages.is_empty() && index.order.is_empty());
        assert_eq!(index.at_or_before(0x5000), Some(0x1000));
        assert_eq!(index.at_or_before(0xfff), None);
        assert_eq!(index.at_or_after(0x1000), Some(0x1000));
        assert_eq!(index.at_or_after(0x1001), None);
        assert!(index.in_order().eq([0x1000]));
        assert!(!index.remove(0x2000));
        // A second start puts both in pages; removing them leaves the index empty.
        index.insert(0x2000);
        assert!(index.in_order().eq([0x1000, 0x2000]));
        assert_eq!(index.at_or_before(0x1fff), Some(0x1000));
        assert!(index.remove(0x1000));
        assert_eq!(index.at_or_after(0), Some(0x2000));
        assert!(index.remove(0x2000));
        assert!(index.pages.is_empty() && index.first.is_none() && index.last.is_none());
        assert!(!index.remove(0x1000));
    }
}

/// A page's dozen small mappings, made one after the other, stay in its inline room.
#[test]
fn a_dozen_neighbours_fit_a_page_inline() {
    let mut index = StartIndex::default();
    for i in 0..12 {
        index.insert(0x10_0000 + 80 * i);
    }
    assert!(!index.pages[&page(0x10_0000)].spilled());
}
