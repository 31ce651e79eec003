//! An ordered index of spans by start address, answering "the last span starting at or before
//! x" and "the first starting at or after x" in time that does not grow with the index.
//!
//! Spans are grouped by the 1 KiB page of their start: a hash map from page to that page's
//! spans, sorted, and an ordered set of the pages that hold any. Mappings made one after the
//! other lie in the same or neighbouring pages, so most searches and every insert and removal
//! touch one page, found by one hash probe; only a search whose own page holds no answer goes
//! to the ordered set of pages. The B-tree of spans this replaces was searched four levels deep
//! at ten thousand entries, and missed the cache at each level at a million.

use plugin_api::address_map::AddressMap;
use smallvec::SmallVec;
use std::collections::BTreeSet;

const PAGE_SHIFT: u32 = 10;

fn page(address: usize) -> usize {
    address >> PAGE_SHIFT
}

/// The spans starting in one page, sorted by start.
type Page<S> = SmallVec<[(usize, S); 4]>;

#[derive(Debug, Clone)]
pub struct SpanIndex<S> {
    pages: AddressMap<usize, Page<S>>,
    /// The pages in `pages`, in order.
    order: BTreeSet<usize>,
    /// The first and the last span: searches from addresses outside all mappings (the stack,
    /// globals) are answered without probing a page.
    first: Option<(usize, S)>,
    last: Option<(usize, S)>,
}

impl<S> Default for SpanIndex<S> {
    fn default() -> Self {
        SpanIndex {
            pages: AddressMap::default(),
            order: BTreeSet::new(),
            first: None,
            last: None,
        }
    }
}

impl<S: Copy> SpanIndex<S> {
    /// Adds (or replaces) the span starting at `start`.
    pub fn insert(&mut self, start: usize, span: S) {
        match self.lone() {
            None if self.first.is_none() => return self.set_lone(start, span),
            Some((only, _)) if only == start => return self.set_lone(start, span),
            // A second span puts both in pages.
            Some((only, only_span)) => self.add_to_page(only, only_span),
            None => {}
        }
        if self.first.is_none_or(|(first, _)| start <= first) {
            self.first = Some((start, span));
        }
        if self.last.is_none_or(|(last, _)| start >= last) {
            self.last = Some((start, span));
        }
        self.add_to_page(start, span);
    }

    /// The only span, when it is not in a page: a table holding one mapping (a region's
    /// scalar, alone in its part of the table) changes neither a page nor the set of pages
    /// as the mapping comes and goes. Searches never reach the pages then: `first` and `last`
    /// answer them.
    fn lone(&self) -> Option<(usize, S)> {
        if self.pages.is_empty() {
            self.first
        } else {
            None
        }
    }

    fn set_lone(&mut self, start: usize, span: S) {
        self.first = Some((start, span));
        self.last = Some((start, span));
    }

    fn add_to_page(&mut self, start: usize, span: S) {
        let spans = self.pages.entry(page(start)).or_insert_with(|| {
            self.order.insert(page(start));
            SmallVec::new()
        });
        // A page that outgrows its inline spans is usually being filled by mappings made one
        // after the other (a dozen small ones fit a page): grow it once, to room for 16.
        if spans.len() == spans.inline_size() {
            spans.reserve_exact(16 - spans.inline_size());
        }
        // Appending is the usual case: new data lies after older data.
        match spans.last() {
            Some(&(last, _)) if last < start => spans.push((start, span)),
            _ => match spans.binary_search_by_key(&start, |&(s, _)| s) {
                Ok(at) => spans[at].1 = span,
                Err(at) => spans.insert(at, (start, span)),
            },
        }
    }

    pub fn remove(&mut self, start: usize) -> Option<S> {
        if self.pages.is_empty() {
            let (_, span) = self.first.filter(|&(only, _)| only == start)?;
            (self.first, self.last) = (None, None);
            return Some(span);
        }
        let key = page(start);
        let spans = self.pages.get_mut(&key)?;
        // Mappings usually go in the order they came (the first of the page) or the reverse
        // (its last): asked before searching.
        let at = if spans.first().is_some_and(|&(s, _)| s == start) {
            0
        } else if spans.last().is_some_and(|&(s, _)| s == start) {
            spans.len() - 1
        } else {
            spans.binary_search_by_key(&start, |&(s, _)| s).ok()?
        };
        let (_, span) = spans.remove(at);
        // The first or last span gone: its successor is in the same page, usually.
        let (page_first, page_last) = (spans.first().copied(), spans.last().copied());
        if spans.is_empty() {
            self.pages.remove(&key);
            self.order.remove(&key);
        }
        if self.first.is_some_and(|(first, _)| first == start) {
            self.first = page_first.or_else(|| {
                let p = self.order.first()?;
                self.pages[p].first().copied()
            });
        }
        if self.last.is_some_and(|(last, _)| last == start) {
            self.last = page_last.or_else(|| {
                let p = self.order.last()?;
                self.pages[p].last().copied()
            });
        }
        Some(span)
    }

    /// The span with the greatest start at or before `x`.
    pub fn at_or_before(&self, x: usize) -> Option<(usize, S)> {
        let last = self.last?;
        if x >= last.0 {
            return Some(last);
        }
        if self.first.is_some_and(|(first, _)| x < first) {
            return None;
        }
        let key = page(x);
        if let Some(spans) = self.pages.get(&key) {
            let after = spans.partition_point(|&(s, _)| s <= x);
            if after > 0 {
                return Some(spans[after - 1]);
            }
        }
        let earlier = *self.order.range(..key).next_back()?;
        self.pages[&earlier].last().copied()
    }

    /// The span with the least start at or after `x`.
    pub fn at_or_after(&self, x: usize) -> Option<(usize, S)> {
        let first = self.first?;
        if x <= first.0 {
            return Some(first);
        }
        if self.last.is_some_and(|(last, _)| x > last) {
            return None;
        }
        let key = page(x);
        if let Some(spans) = self.pages.get(&key) {
            let from = spans.partition_point(|&(s, _)| s < x);
            if from < spans.len() {
                return Some(spans[from]);
            }
        }
        let later = *self.order.range(key.checked_add(1)?..).next()?;
        self.pages[&later].first().copied()
    }

    /// The starts, in order.
    pub fn starts(&self) -> impl Iterator<Item = usize> + '_ {
        let lone = self.lone().map(|(start, _)| start);
        self.order
            .iter()
            .flat_map(|p| self.pages[p].iter().map(|&(start, _)| start))
            .chain(lone)
    }
}

#[test]
fn answers_as_a_b_tree_does() {
    use std::collections::BTreeMap;
    let mut index = SpanIndex::default();
    let mut model = BTreeMap::new();
    // A small generator, so that the test needs no crate: starts spread over a few pages, close
    // together, and far apart.
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for round in 0..20_000u32 {
        let r = next();
        let start = match r % 3 {
            0 => (r >> 8) as usize % 8192,
            1 => 0x7f00_0000 + (r >> 8) as usize % (1 << 20),
            _ => (r >> 8) as usize,
        };
        if next() % 3 == 0 {
            assert_eq!(index.remove(start), model.remove(&start), "remove {start}");
            if let Some((&some, _)) = model.range(start..).next() {
                assert_eq!(index.remove(some), model.remove(&some), "remove {some}");
            }
        } else {
            index.insert(start, round);
            model.insert(start, round);
        }
        let x = match next() % 3 {
            0 => start,
            1 => start.wrapping_add(1),
            _ => next() as usize % 16384,
        };
        let before = model.range(..=x).next_back().map(|(&s, &v)| (s, v));
        let after = model.range(x..).next().map(|(&s, &v)| (s, v));
        assert_eq!(index.at_or_before(x), before, "at or before {x}");
        assert_eq!(index.at_or_after(x), after, "at or after {x}");
    }
    assert!(index.starts().eq(model.keys().copied()));
    assert_eq!(
        index.at_or_after(usize::MAX),
        model.get(&usize::MAX).map(|&v| (usize::MAX, v))
    );
    for start in model.keys().copied().collect::<Vec<_>>() {
        index.remove(start);
    }
    assert!(index.starts().next().is_none() && index.pages.is_empty());
}

#[test]
fn a_lone_span_uses_no_page() {
    let mut index = SpanIndex::default();
    for round in 0..3 {
        index.insert(0x1000, round);
        index.insert(0x1000, round + 1); // replaced in place
        assert!(index.pages.is_empty() && index.order.is_empty());
        assert_eq!(index.at_or_before(0x5000), Some((0x1000, round + 1)));
        assert_eq!(index.at_or_before(0xfff), None);
        assert_eq!(index.at_or_after(0x1000), Some((0x1000, round + 1)));
        assert_eq!(index.at_or_after(0x1001), None);
        assert!(index.starts().eq([0x1000]));
        assert_eq!(index.remove(0x2000), None);
        // A second span puts both in pages; removing them leaves the index empty.
        index.insert(0x2000, 7);
        assert!(index.starts().eq([0x1000, 0x2000]));
        assert_eq!(index.at_or_before(0x1fff), Some((0x1000, round + 1)));
        assert_eq!(index.remove(0x1000), Some(round + 1));
        assert_eq!(index.at_or_after(0), Some((0x2000, 7)));
        assert_eq!(index.remove(0x2000), Some(7));
        assert!(index.pages.is_empty() && index.first.is_none() && index.last.is_none());
        assert_eq!(index.remove(0x1000), None);
    }
}
