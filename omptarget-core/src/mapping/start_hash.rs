//! The entries of a [`SortedMappings`](super::sorted::SortedMappings), hashed by their host
//! start.
//!
//! Open addressing with linear probing: each entry in a slot of its own cache line(s), and
//! beside the slots a tag byte per slot (empty, a tombstone, or seven bits of its entry's
//! hash), so a probe reads tags and then only the slot whose tag matches. A lookup of a random
//! entry among a million misses the cache at its tags and at its slot, as it did in hashbrown.
//!
//! What hashbrown could not do is grow in place. The slots are one private memory mapping,
//! grown with `mremap`: the kernel moves the pages already filled, nothing is copied, and the
//! entries are rehashed where they lie. A growth faults in only the new half, where a new
//! table has every page of its double size faulted in (each zeroed by the kernel) and the old
//! one freed. At ten thousand mappings those faults were most of an enter's first-time cost.

use super::extent::Extent;
use crate::cache_hint::prefetch_line;
use crate::os_memory;
use std::alloc::Layout;
use std::marker::PhantomData;
use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

const EMPTY: u8 = 0;
/// A removed entry's slot, which probes go on past; during a rehash, an entry not yet placed.
const DELETED: u8 = 1;

fn is_full(tag: u8) -> bool {
    tag & 0x80 != 0
}

/// Where a probe for the entry starting at `start` begins (before masking), and its tag.
fn hash_of(start: usize) -> (usize, u8) {
    // The golden-ratio multiplier spreads aligned addresses (low bits zero) over the high
    // bits: the probe starts from bits 32 and up, the tag is the top seven.
    let h = (start as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    ((h >> 32) as usize, 0x80 | (h >> 57) as u8)
}

/// An entry on its own cache line(s): a lookup misses once at its slot, where an entry
/// straddling two lines would miss twice.
#[repr(align(64))]
struct Slot<V>(V);

/// The smallest table that holds entries: a page of slots (the unit of a mapping).
fn min_capacity<V>() -> usize {
    (4096 / std::mem::size_of::<Slot<V>>())
        .max(8)
        .next_power_of_two()
}

/// Entries that a table of `capacity` slots takes before it grows: one slot in eight stays
/// empty, so every probe ends.
fn usable(capacity: usize) -> usize {
    capacity - capacity / 8
}

fn bytes<V>(capacity: usize) -> usize {
    capacity
        .checked_mul(std::mem::size_of::<Slot<V>>())
        .expect("mapping table size")
}

pub(super) struct StartHash<V> {
    /// `tags.len()` slots in a private anonymous mapping; dangling while that is 0.
    slots: NonNull<Slot<V>>,
    /// A tag per slot: the capacity, a power of two, or 0 before the first entry.
    tags: Box<[u8]>,
    items: usize,
    /// Empty slots that may still be filled before the table grows or is rehashed (usable
    /// slots less entries less tombstones).
    growth_left: usize,
}

// SAFETY: the table owns its entries, which are reached only through it: it may go to, and be
// shared with, other threads as its entries may.
unsafe impl<V: Send> Send for StartHash<V> {}
// SAFETY: as above; `&self` gives out only `&V`.
unsafe impl<V: Sync> Sync for StartHash<V> {}

impl<V> Default for StartHash<V> {
    fn default() -> Self {
        StartHash {
            slots: NonNull::dangling(),
            tags: Box::new([]),
            items: 0,
            growth_left: 0,
        }
    }
}

impl<V> std::fmt::Debug for StartHash<V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StartHash")
            .field("items", &self.items)
            .field("capacity", &self.tags.len())
            .finish()
    }
}

impl<V> Drop for StartHash<V> {
    fn drop(&mut self) {
        if self.tags.is_empty() {
            return;
        }
        for i in 0..self.tags.len() {
            if is_full(self.tags[i]) {
                // SAFETY: a full tag marks an initialised entry, dropped here once.
                unsafe { ptr::drop_in_place(self.slot(i)) };
            }
        }
        // SAFETY: the table's own mapping of this size, not used again.
        unsafe { os_memory::munmap(self.slots.as_ptr().cast(), bytes::<V>(self.tags.len())) };
    }
}

impl<V> StartHash<V> {
    pub(super) fn is_empty(&self) -> bool {
        self.items == 0
    }

    fn slot(&self, i: usize) -> *mut Slot<V> {
        debug_assert!(i < self.tags.len());
        // SAFETY: callers pass an index below the capacity, so the pointer stays inside the
        // mapping.
        unsafe { self.slots.as_ptr().add(i) }
    }

    /// The entry in slot `i`, which must hold one (a full tag, or during a rehash a pending
    /// one).
    fn entry(&self, i: usize) -> &V {
        // SAFETY: the callers' slot holds an initialised entry, borrowed with `self`.
        unsafe { &(*self.slot(i)).0 }
    }

    fn entry_mut(&mut self, i: usize) -> &mut V {
        // SAFETY: as in `entry`, borrowed mutably with `self`.
        unsafe { &mut (*self.slot(i)).0 }
    }
}

impl<V: Extent> StartHash<V> {
    /// The slot of the entry starting at `start`.
    fn find(&self, start: usize) -> Option<usize> {
        let mask = self.tags.len().checked_sub(1)?;
        let (h, tag) = hash_of(start);
        let mut i = h & mask;
        loop {
            let t = self.tags[i];
            if t == tag && self.entry(i).begin() == start {
                return Some(i);
            }
            if t == EMPTY {
                return None;
            }
            i = (i + 1) & mask;
        }
    }

    /// The first slot not holding an entry on the probe for `start`.
    fn free_slot(&self, start: usize) -> Option<usize> {
        let mask = self.tags.len().checked_sub(1)?;
        let mut i = hash_of(start).0 & mask;
        while is_full(self.tags[i]) {
            i = (i + 1) & mask;
        }
        Some(i)
    }

    pub(super) fn get(&self, start: usize) -> Option<&V> {
        let i = self.find(start)?;
        Some(self.entry(i))
    }

    pub(super) fn get_mut(&mut self, start: usize) -> Option<&mut V> {
        let i = self.find(start)?;
        Some(self.entry_mut(i))
    }

    /// Adds `entry`, replacing the entry with the same start if there is one; true when the
    /// table moved to make room (see [`ProbeHint::publish`]).
    pub(super) fn insert(&mut self, entry: V) -> bool {
        let start = entry.begin();
        let (h, tag) = hash_of(start);
        // One probe: for the entry to replace, and meanwhile for the first free slot.
        let mut free = None;
        if let Some(mask) = self.tags.len().checked_sub(1) {
            let mut i = h & mask;
            loop {
                let t = self.tags[i];
                if t == tag && self.entry(i).begin() == start {
                    *self.entry_mut(i) = entry;
                    return false;
                }
                if !is_full(t) && free.is_none() {
                    free = Some(i);
                }
                if t == EMPTY {
                    break;
                }
                i = (i + 1) & mask;
            }
        }
        let mut moved = false;
        let i = match free {
            Some(i) if self.tags[i] == DELETED || self.growth_left > 0 => i,
            _ => {
                self.make_room();
                moved = true;
                self.free_slot(start).expect("a table with room")
            }
        };
        if self.tags[i] == EMPTY {
            self.growth_left -= 1;
        }
        self.tags[i] = tag;
        // SAFETY: slot `i` is inside the mapping and holds no entry (its tag was not full).
        unsafe { ptr::write(self.slot(i), Slot(entry)) };
        self.items += 1;
        moved
    }

    /// Removes and returns the entry starting at `start`.
    pub(super) fn remove(&mut self, start: usize) -> Option<V> {
        let i = self.find(start)?;
        Some(self.remove_at(i))
    }

    /// Changes the entry starting at `start`, then removes it if `change` returned true, with
    /// one probe: `None` when there is no such entry, else the removed entry if any.
    pub(super) fn change_or_remove(
        &mut self,
        start: usize,
        change: impl FnOnce(&mut V) -> bool,
    ) -> Option<Option<V>> {
        let i = self.find(start)?;
        Some(change(self.entry_mut(i)).then(|| self.remove_at(i)))
    }

    /// Removes and returns the entry in slot `i`, which holds one.
    fn remove_at(&mut self, i: usize) -> V {
        debug_assert!(is_full(self.tags[i]));
        let mask = self.tags.len() - 1;
        self.items -= 1;
        if self.tags[(i + 1) & mask] == EMPTY {
            // No probe goes on past an empty slot, so none needs this one or the tombstones
            // just before it: they are empty again.
            let mut j = i;
            loop {
                self.tags[j] = EMPTY;
                self.growth_left += 1;
                j = j.wrapping_sub(1) & mask;
                if self.tags[j] != DELETED {
                    break;
                }
            }
        } else {
            self.tags[i] = DELETED;
        }
        // SAFETY: slot `i` held the entry (the caller found it by its tag), and its tag now
        // says it holds none, so it is read out once.
        unsafe { ptr::read(self.slot(i)) }.0
    }

    /// Makes room for one more entry: clears the tombstones where they fill the room, else
    /// doubles the table.
    #[cold]
    #[inline(never)]
    fn make_room(&mut self) {
        if self.items < usable(self.tags.len()) / 2 {
            self.rehash_in_place();
        } else {
            self.grow();
        }
    }

    fn grow(&mut self) {
        let old = self.tags.len();
        let new = if old == 0 {
            min_capacity::<V>()
        } else {
            old * 2
        };
        self.slots = remap(self.slots, old, new);
        let mut tags = vec![EMPTY; new].into_boxed_slice();
        tags[..old].copy_from_slice(&self.tags);
        self.tags = tags;
        self.rehash_in_place();
    }

    /// Puts every entry where a probe for its start finds it, in place. Tombstones (and after a
    /// growth, the new half) become empty slots and entries become pending; then each pending
    /// entry goes to the first slot of its probe that holds no placed entry, trading places
    /// with a pending entry where there is one. A placed entry never moves again, and the slots
    /// from its probe's start to it all hold placed entries, so every probe finds its entry.
    fn rehash_in_place(&mut self) {
        let mask = self.tags.len() - 1;
        for t in self.tags.iter_mut() {
            *t = if is_full(*t) { DELETED } else { EMPTY };
        }
        for i in 0..self.tags.len() {
            while self.tags[i] == DELETED {
                let (h, tag) = hash_of(self.entry(i).begin());
                let mut p = h & mask;
                while is_full(self.tags[p]) {
                    p = (p + 1) & mask;
                }
                if p == i {
                    self.tags[i] = tag;
                } else if self.tags[p] == EMPTY {
                    // SAFETY: two distinct slots of the mapping; `p` holds nothing and
                    // receives `i`'s entry, whose old slot is then marked empty.
                    unsafe { ptr::copy_nonoverlapping(self.slot(i), self.slot(p), 1) };
                    self.tags[p] = tag;
                    self.tags[i] = EMPTY;
                } else {
                    // SAFETY: two distinct slots of the mapping, both holding pending entries.
                    unsafe { ptr::swap_nonoverlapping(self.slot(i), self.slot(p), 1) };
                    self.tags[p] = tag;
                }
            }
        }
        self.growth_left = usable(self.tags.len()) - self.items;
    }
}

/// Where a table's tags and slots lie, published by whoever holds the table's lock each time it
/// moves, so that a construct can start loading the lines its lookups will read before it takes
/// the lock (and while it sets itself up). Only a hint: a stale one loads a line for nothing.
pub(super) struct ProbeHint<V> {
    tags: AtomicUsize,
    slots: AtomicUsize,
    /// Capacity less one; `usize::MAX` before the table has slots.
    mask: AtomicUsize,
    entries: PhantomData<fn() -> V>,
}

impl<V> Default for ProbeHint<V> {
    fn default() -> Self {
        ProbeHint {
            tags: AtomicUsize::new(0),
            slots: AtomicUsize::new(0),
            mask: AtomicUsize::new(usize::MAX),
            entries: PhantomData,
        }
    }
}

impl<V> ProbeHint<V> {
    pub(super) fn publish(&self, table: &StartHash<V>) {
        // Relaxed: nothing is read through these but prefetches.
        self.tags.store(table.tags.as_ptr() as usize, Relaxed);
        self.slots.store(table.slots.as_ptr() as usize, Relaxed);
        self.mask.store(table.tags.len().wrapping_sub(1), Relaxed);
    }

    /// Starts loading the tag and the slot where a probe for `start` begins (the entry's
    /// slot, unless an earlier entry took it).
    pub(super) fn prefetch(&self, start: usize) {
        let mask = self.mask.load(Relaxed);
        if mask == usize::MAX {
            return;
        }
        let i = hash_of(start).0 & mask;
        prefetch_line(self.tags.load(Relaxed).wrapping_add(i));
        prefetch_line(
            self.slots
                .load(Relaxed)
                .wrapping_add(i.wrapping_mul(std::mem::size_of::<Slot<V>>())),
        );
    }
}

/// Moves the mapping of `old` slots at `slots` (none while `old` is 0) to one of `new` slots:
/// the kernel moves the pages, so nothing is copied and nothing faults in again.
fn remap<V>(slots: NonNull<Slot<V>>, old: usize, new: usize) -> NonNull<Slot<V>> {
    let address = if old == 0 {
        // SAFETY: a new private anonymous mapping, aliasing nothing.
        unsafe {
            os_memory::mmap(
                ptr::null_mut(),
                bytes::<V>(new),
                os_memory::PROT_READ | os_memory::PROT_WRITE,
                os_memory::MAP_PRIVATE | os_memory::MAP_ANONYMOUS,
                -1,
                0,
            )
        }
    } else {
        // SAFETY: `slots` is the table's own mapping of `old` slots; the table uses only the
        // returned address from here on.
        unsafe {
            os_memory::mremap(
                slots.as_ptr().cast(),
                bytes::<V>(old),
                bytes::<V>(new),
                os_memory::MREMAP_MAYMOVE,
            )
        }
    };
    if address == os_memory::MAP_FAILED {
        // As Rust's collections do when memory runs out.
        std::alloc::handle_alloc_error(
            Layout::from_size_align(bytes::<V>(new), 64).expect("mapping table layout"),
        );
    }
    // The rehash that follows touches every page of the new part: fault them in at once.
    // SAFETY: the range is the new part of the mapping just made, holding nothing yet.
    unsafe {
        os_memory::populate_for_writing(address as usize + bytes::<V>(old), bytes::<V>(new - old))
    };
    NonNull::new(address.cast()).expect("a mapping is never at address 0")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;
    use std::collections::HashMap;
    use std::rc::Rc;

    /// An entry that counts its drops.
    struct Counted {
        start: usize,
        value: u64,
        drops: Rc<Cell<usize>>,
    }

    impl Drop for Counted {
        fn drop(&mut self) {
            self.drops.set(self.drops.get() + 1);
        }
    }

    impl Extent for Counted {
        fn base(&self) -> usize {
            self.start
        }
        fn begin(&self) -> usize {
            self.start
        }
        fn end(&self) -> usize {
            self.start + 1
        }
    }

    #[test]
    fn a_mapping_fills_one_cache_line() {
        assert_eq!(std::mem::size_of::<Slot<crate::mapping::Mapping>>(), 64);
        assert_eq!(std::mem::align_of::<Slot<crate::mapping::Mapping>>(), 64);
    }

    /// Random inserts, replacements and removals over few keys (long probes, many tombstones,
    /// rehashes at the same size) and then many (growth), checked against a `HashMap` after
    /// every step; every entry is dropped exactly once.
    #[test]
    fn agrees_with_a_hash_map() {
        let drops = Rc::new(Cell::new(0));
        let mut made = 0;
        let mut table = StartHash::default();
        let mut model: HashMap<usize, u64> = HashMap::new();
        let mut seed = 0x2545_F491_4F6C_DD1Du64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for (steps, keys) in [(20_000, 40), (20_000, 300), (60_000, 20_000)] {
            for step in 0..steps {
                let r = next();
                // Aligned addresses, as mapped data mostly is.
                let start = 0x7f00_0000_0000 + (r as usize % keys) * 64;
                if r >> 61 == 0 {
                    assert_eq!(
                        table.remove(start).map(|c: Counted| c.value),
                        model.remove(&start)
                    );
                } else if r >> 62 == 0 {
                    // Changed in place, then removed or kept (bits the key does not depend on).
                    let remove = r >> 60 & 1 != 0;
                    let answer = table.change_or_remove(start, |c: &mut Counted| {
                        c.value += 1;
                        remove
                    });
                    let expected = model.get_mut(&start).map(|v| {
                        *v += 1;
                        remove.then_some(*v)
                    });
                    if matches!(expected, Some(Some(_))) {
                        model.remove(&start);
                    }
                    assert_eq!(answer.map(|removed| removed.map(|c| c.value)), expected);
                } else {
                    made += 1;
                    table.insert(Counted {
                        start,
                        value: step,
                        drops: drops.clone(),
                    });
                    model.insert(start, step);
                }
                assert_eq!(table.items, model.len());
                let probe = 0x7f00_0000_0000 + (next() as usize % keys) * 64;
                assert_eq!(
                    table.get(probe).map(|c| c.value),
                    model.get(&probe).copied()
                );
            }
            for (&start, &value) in &model {
                assert_eq!(table.get_mut(start).map(|c| c.value), Some(value));
            }
        }
        assert!(table.tags.len() <= 2 * 20_000usize.next_power_of_two());
        drop(table);
        assert_eq!(drops.get(), made, "each entry dropped once");
    }

    /// Inserting and removing one entry over and over leaves no tombstones to fill the table.
    #[test]
    fn churn_keeps_the_table_small() {
        let drops = Rc::new(Cell::new(0));
        let mut table = StartHash::default();
        for i in 0..100_000usize {
            let start = 0x1000 + (i % 3) * 16;
            table.insert(Counted {
                start,
                value: i as u64,
                drops: drops.clone(),
            });
            assert!(table.remove(start).is_some());
        }
        assert_eq!(table.tags.len(), min_capacity::<Counted>());
        assert_eq!(table.items, 0);
    }

    #[test]
    fn an_empty_table_finds_nothing() {
        let mut table: StartHash<Counted> = StartHash::default();
        assert!(table.get(0).is_none());
        assert!(table.remove(0).is_none());
        assert!(table.get_mut(64).is_none());
    }
}
