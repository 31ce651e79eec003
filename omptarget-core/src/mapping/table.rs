//! The mapping table of one device, shared by every host thread that offloads to it.
//!
//! One lock for the whole table made host threads that map their own data wait for each other
//! on every construct. The table is split instead: host memory is cut into blocks of 2 MiB and
//! each block belongs to one of [`SHARDS`] shards, each with its own lock.
//! - A *narrow* mapping (whose reach, base to end, lies in one block) lives in its block's
//!   shard. Threads whose data lie in different blocks (their own stacks, their own heap
//!   arenas) take different locks.
//! - A *wide* mapping (spanning blocks: large arrays) lives in a separate set that changes only
//!   with every shard locked, so holding any one shard's lock is enough to read it; its
//!   reference counts and attached pointers sit behind a lock of their own.
//!
//! A [`TableView`] holds the locks an operation needs: its block's shard for data inside one
//! block or inside a wide mapping, every shard (in order, so no two views deadlock) otherwise.
//!
//! Long transfers run with no lock held: the construct marks the mapping as moving
//! ([`Mapping::moving`]), lets the view go, copies, then ends the move
//! ([`MappingTable::end_move`]). Whoever needs that mapping's data meanwhile waits for the end
//! of the move, also holding no lock ([`MappingTable::serving`]); everyone else goes on.

use super::extent::Extent;
use super::sorted::{Lookup, SortedMappings};
use super::start_hash::ProbeHint;
use super::Mapping;
use crate::lock::{into_inner, lock};
use std::cell::UnsafeCell;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

const BLOCK_SHIFT: u32 = 21;
const SHARD_BITS: u32 = 5;
/// Number of independently locked parts of the table.
pub(super) const SHARDS: usize = 1 << SHARD_BITS;

fn block(address: usize) -> usize {
    address >> BLOCK_SHIFT
}

/// The shard of the block holding `address`; neighbouring blocks (and thread stacks a few
/// blocks apart) spread over the shards by a multiplicative hash.
fn shard_of(address: usize) -> usize {
    ((block(address) as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - SHARD_BITS)) as usize
}

/// The host range lookups can find a mapping from: its list item's base to its end (one byte
/// at least, so a zero-length mapping is found at its start).
fn reach(base: usize, begin: usize, size: u64) -> (usize, usize) {
    let end = begin
        .saturating_add(size as usize)
        .max(begin.saturating_add(1));
    (base.min(begin), end)
}

/// Whether a zero-length section at `address` lies in the reach of a wide mapping that starts
/// in a later block (see [`TableView::lookup_address_with_wide`]).
fn reaches_from_later_block(wide: &SortedMappings<WideEntry>, address: usize) -> bool {
    match wide.lookup(address, 0) {
        Lookup::Contained(start) => start > address && block(start) != block(address),
        _ => false,
    }
}

fn within_one_block((low, high): (usize, usize)) -> bool {
    block(low) == block(high - 1)
}

/// One shard, on its own cache line so that threads locking different shards do not contend.
#[repr(align(64))]
#[derive(Default)]
struct Shard {
    mappings: Mutex<SortedMappings<Mapping>>,
    /// Where its hash lies, for [`MappingTable::prefetch`] (published under the lock).
    hint: ProbeHint<Mapping>,
}

/// A mapping spanning blocks: its extent outside the lock (it never changes), the rest inside.
struct WideEntry {
    base: usize,
    begin: usize,
    end: usize,
    mapping: Mutex<Mapping>,
}

impl Extent for WideEntry {
    fn base(&self) -> usize {
        self.base
    }
    fn begin(&self) -> usize {
        self.begin
    }
    fn end(&self) -> usize {
        self.end
    }
}

/// Names one mapping of the table: its host start, and which part of the table holds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct MappingKey {
    pub start: usize,
    wide: bool,
}

impl MappingKey {
    fn narrow(start: usize) -> Self {
        MappingKey { start, wide: false }
    }
    fn wide(start: usize) -> Self {
        MappingKey { start, wide: true }
    }
}

pub(crate) struct MappingTable {
    shards: [Shard; SHARDS],
    /// Changed only through a view holding every shard; read through any view.
    wide: UnsafeCell<SortedMappings<WideEntry>>,
    /// How many moves have ended; threads waiting for one sleep on `move_ended`.
    moves_ended: Mutex<u64>,
    move_ended: Condvar,
    /// How many mappings are marked moving: while none is, a lookup need not look at the flag
    /// of the mapping it found (a second search). Counted up while the view that marks the
    /// mapping is held, down after the flag is cleared.
    moves_in_progress: AtomicUsize,
}

/// What a thread that found a moving mapping waits for: the count of ended moves to pass the
/// one it read while the mapping was seen moving.
#[derive(Clone, Copy, Debug)]
pub(crate) struct MoveTicket(u64);

// SAFETY: the shards are mutexes; `wide` is reached only through a `TableView`, which reads it
// while holding at least one shard lock and changes it only while holding all of them, so no
// read overlaps a change. Its entries' mutable parts are behind their own mutexes.
unsafe impl Sync for MappingTable {}

impl Default for MappingTable {
    fn default() -> Self {
        MappingTable {
            shards: std::array::from_fn(|_| Shard::default()),
            wide: UnsafeCell::new(SortedMappings::default()),
            moves_ended: Mutex::new(0),
            move_ended: Condvar::new(),
            moves_in_progress: AtomicUsize::new(0),
        }
    }
}

impl MappingTable {
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Starts loading, with no lock, the lines of the table that a lookup of the mapping
    /// starting at `start` reads first: issued as a construct begins, the loads run while it
    /// sets itself up. A lookup among a million mappings misses the cache there otherwise.
    pub(crate) fn prefetch(&self, start: usize) {
        self.shards[shard_of(start)].hint.prefetch(start);
    }

    /// A view for looking up [begin, begin+size) and for creating a mapping of it whose list
    /// item starts at `base` (pass `begin` when only looking up).
    pub(crate) fn view(&self, begin: usize, size: u64, base: usize) -> TableView<'_> {
        let shard = shard_of(begin);
        let view = TableView {
            table: self,
            locks: Locks::One(shard, lock(&self.shards[shard].mappings)),
        };
        if within_one_block(reach(base, begin, size)) {
            // A zero-length section found only in the reach of a wide mapping starting in a
            // later block needs the blocks in between, where a nearer mapping would hide it.
            if size > 0 || view.wide().is_empty() || !reaches_from_later_block(view.wide(), begin) {
                return view;
            }
            drop(view);
            return self.view_all();
        }
        // Data spanning blocks can be answered from one shard only when a wide mapping holds
        // all of it (then nothing else overlaps it, and nothing is created).
        if size > 0 && matches!(view.wide().lookup(begin, size), Lookup::Contained(_)) {
            return view;
        }
        drop(view);
        self.view_all()
    }

    /// A view of one known mapping (enough to change its counts; removing a wide one needs
    /// [`MappingTable::view_all`]).
    pub(crate) fn view_of(&self, key: MappingKey) -> TableView<'_> {
        let shard = shard_of(key.start);
        TableView {
            table: self,
            locks: Locks::One(shard, lock(&self.shards[shard].mappings)),
        }
    }

    /// A view of the whole table (every shard locked, in order).
    pub(crate) fn view_all(&self) -> TableView<'_> {
        TableView {
            table: self,
            locks: Locks::All(self.shards.iter().map(|s| lock(&s.mappings)).collect()),
        }
    }

    /// A view for [begin, begin+size) (see [`MappingTable::view`]) with the mapping that
    /// serves it (see [`TableView::serving`]), which no other construct is moving: a moving
    /// one is waited for with no lock held, then looked up again (it may be gone by then).
    pub(crate) fn serving(
        &self,
        begin: usize,
        size: u64,
        base: usize,
        allow_extension: bool,
    ) -> (TableView<'_>, Option<MappingKey>) {
        let (view, found) = self.lookup(begin, size, base, allow_extension);
        (view, found.serving(allow_extension))
    }

    /// As [`MappingTable::serving`], with the whole answer of the lookup (one search for
    /// callers that go on to create a mapping when none serves).
    pub(crate) fn lookup(
        &self,
        begin: usize,
        size: u64,
        base: usize,
        allow_extension: bool,
    ) -> (TableView<'_>, Lookup<MappingKey>) {
        loop {
            let mut view = self.view(begin, size, base);
            let found = view.lookup(begin, size);
            let serving = found.serving(allow_extension);
            let any_moving = self.moves_in_progress.load(Ordering::SeqCst) > 0;
            let ticket = serving.filter(|_| any_moving);
            let Some(ticket) = ticket.and_then(|key| view.move_ticket(key)) else {
                return (view, found);
            };
            drop(view);
            self.wait_for_move(ticket);
        }
    }

    /// Sleeps until some move has ended after the ticket was taken.
    pub(crate) fn wait_for_move(&self, ticket: MoveTicket) {
        let mut ended = lock(&self.moves_ended);
        while *ended == ticket.0 {
            ended = self
                .move_ended
                .wait(ended)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// Ends the move of a mapping marked [`Mapping::moving`], changing it on the way (its
    /// transfer's event), and wakes whoever waits for it.
    pub(crate) fn end_move(&self, key: MappingKey, change: impl FnOnce(&mut Mapping)) {
        if let Some(mut m) = self.view_of(key).get_mut(key) {
            m.moving = false;
            change(&mut m);
        }
        self.moves_in_progress.fetch_sub(1, Ordering::SeqCst);
        *lock(&self.moves_ended) += 1;
        self.move_ended.notify_all();
    }
}

enum Locks<'t> {
    One(usize, MutexGuard<'t, SortedMappings<Mapping>>),
    All(Vec<MutexGuard<'t, SortedMappings<Mapping>>>),
}

/// Access to the part of a [`MappingTable`] whose locks it holds.
pub(crate) struct TableView<'t> {
    table: &'t MappingTable,
    locks: Locks<'t>,
}

/// What [`TableView::change_or_remove`] did.
pub(crate) enum Changed {
    Missing,
    Kept,
    Removed(Mapping),
    /// Changed, and to be removed, which needs a view of the whole table.
    NeedsWholeTable,
}

/// One mapping, changeable while the view that found it is held.
pub(crate) enum EntryMut<'v> {
    Narrow(&'v mut Mapping),
    Wide(MutexGuard<'v, Mapping>),
}

impl Deref for EntryMut<'_> {
    type Target = Mapping;
    fn deref(&self) -> &Mapping {
        match self {
            EntryMut::Narrow(m) => m,
            EntryMut::Wide(m) => m,
        }
    }
}

impl DerefMut for EntryMut<'_> {
    fn deref_mut(&mut self) -> &mut Mapping {
        match self {
            EntryMut::Narrow(m) => m,
            EntryMut::Wide(m) => m,
        }
    }
}

/// A view used outside the range it was made for: a bug in the runtime, reported as such.
fn not_locked(shard: usize) -> ! {
    panic!("mapping table shard {shard} used without its lock (internal error)")
}

impl<'t> TableView<'t> {
    fn wide(&self) -> &SortedMappings<WideEntry> {
        // SAFETY: this view holds at least one shard lock, and `wide` changes only under all of
        // them (see `MappingTable`'s Sync), so nothing changes it while this borrow lives.
        unsafe { &*self.table.wide.get() }
    }

    fn wide_mut(&mut self) -> Option<&mut SortedMappings<WideEntry>> {
        match self.locks {
            // SAFETY: every shard lock is held by this view, so no other view exists to read
            // `wide`, and `&mut self` excludes this view's own borrows of it.
            Locks::All(_) => Some(unsafe { &mut *self.table.wide.get() }),
            Locks::One(..) => None,
        }
    }

    fn narrow(&self, shard: usize) -> &SortedMappings<Mapping> {
        match &self.locks {
            Locks::One(s, guard) if *s == shard => guard,
            Locks::All(guards) => &guards[shard],
            Locks::One(..) => not_locked(shard),
        }
    }

    fn narrow_mut(&mut self, shard: usize) -> &mut SortedMappings<Mapping> {
        match &mut self.locks {
            Locks::One(s, guard) if *s == shard => guard,
            Locks::All(guards) => &mut guards[shard],
            Locks::One(..) => not_locked(shard),
        }
    }

    /// Is [begin, begin+size) mapped? (`size` 0: OpenMP's zero-length section rules.)
    pub(crate) fn lookup(&self, begin: usize, size: u64) -> Lookup<MappingKey> {
        let wide = self.wide();
        let end = begin.saturating_add(size as usize);
        let one_block = size == 0 || block(begin) == block(end - 1);
        if size == 0 && !wide.is_empty() {
            return self.lookup_address_with_wide(begin);
        }
        if wide.is_empty() && one_block {
            // The usual case: only the block's shard can answer.
            return self
                .narrow(shard_of(begin))
                .lookup(begin, size)
                .map(MappingKey::narrow);
        }
        if one_block {
            // Mappings do not overlap: one that contains the range is the answer, so the
            // block's own mapping (a probe of its start, usually) is asked first, and the wide
            // ones only without it.
            let in_narrow = self
                .narrow(shard_of(begin))
                .lookup(begin, size)
                .map(MappingKey::narrow);
            if let Lookup::Contained(_) = in_narrow {
                return in_narrow;
            }
            let in_wide = wide.lookup(begin, size).map(MappingKey::wide);
            return match (in_narrow, in_wide) {
                (_, Lookup::Contained(k)) => Lookup::Contained(k),
                (Lookup::Extends(k), _) | (_, Lookup::Extends(k)) => Lookup::Extends(k),
                _ => Lookup::Absent,
            };
        }
        // A range over several blocks: a view of it holds the locks of the shards it reaches
        // only when no wide mapping contains it, so the wide ones are asked first.
        let in_wide = if wide.is_empty() {
            Lookup::Absent
        } else {
            wide.lookup(begin, size).map(MappingKey::wide)
        };
        if let Lookup::Contained(_) = in_wide {
            return in_wide;
        }
        // Narrow mappings lie in one block each, so none can hold data spanning blocks.
        let in_narrow = self
            .overlapping_narrow(begin, end)
            .map_or(Lookup::Absent, |start| {
                Lookup::Extends(MappingKey::narrow(start))
            });
        match (in_narrow, in_wide) {
            (Lookup::Extends(k), _) | (_, Lookup::Extends(k)) => Lookup::Extends(k),
            _ => Lookup::Absent,
        }
    }

    /// A zero-length section at `address` with wide mappings about: as LLVM, the mapping
    /// starting at or before it holds it if its range does, else the first one starting after
    /// it does if its list item's base is at or before it (and no other starts in between).
    fn lookup_address_with_wide(&self, address: usize) -> Lookup<MappingKey> {
        let shard = shard_of(address);
        let narrow = self.narrow(shard).lookup(address, 0);
        let wide = self.wide().lookup(address, 0);
        match (narrow, wide) {
            (Lookup::Contained(n), _) if n <= address => {
                return Lookup::Contained(MappingKey::narrow(n))
            }
            (_, Lookup::Contained(w)) if w <= address => {
                return Lookup::Contained(MappingKey::wide(w))
            }
            _ => {}
        }
        // Held in the reach of a mapping starting after the address: the nearer start wins.
        let wide_start = match wide {
            Lookup::Contained(w) => w,
            _ => usize::MAX,
        };
        if let Lookup::Contained(n) = narrow {
            let wide_between = self.wide().first_overlapping(address + 1, n).is_some();
            return if !wide_between {
                Lookup::Contained(MappingKey::narrow(n))
            } else {
                Lookup::Absent
            };
        }
        if wide_start == usize::MAX {
            return Lookup::Absent;
        }
        // Any narrow mapping starting before the wide one hides it (its base is after the
        // address: it would have held the address otherwise).
        let hidden = if block(wide_start) == block(address) {
            self.narrow(shard)
                .first_overlapping(address + 1, wide_start)
                .is_some()
        } else if matches!(self.locks, Locks::All(_)) {
            self.overlapping_narrow(address + 1, wide_start).is_some()
        } else {
            false // not reached: `MappingTable::view` takes every shard for this case
        };
        if hidden {
            Lookup::Absent
        } else {
            Lookup::Contained(MappingKey::wide(wide_start))
        }
    }

    /// A narrow mapping overlapping [begin, end), which spans blocks.
    fn overlapping_narrow(&self, begin: usize, end: usize) -> Option<usize> {
        let (first, last) = (block(begin), block(end - 1));
        let check = |shard: usize| self.narrow(shard).first_overlapping(begin, end);
        if last - first + 1 >= SHARDS {
            (0..SHARDS).find_map(check)
        } else {
            (first..=last).find_map(|b| check(shard_of(b << BLOCK_SHIFT)))
        }
    }

    /// The mapping that serves the range: the one containing it, or with `allow_extension`
    /// (implicit maps, kernel arguments) also one it overlaps.
    pub(crate) fn serving(
        &self,
        begin: usize,
        size: u64,
        allow_extension: bool,
    ) -> Option<MappingKey> {
        self.lookup(begin, size).serving(allow_extension)
    }

    /// When another construct is moving the mapping's data, what to wait for once this view
    /// is let go (taken while the mapping is seen moving, so the end of its move cannot be
    /// missed: ending a move needs the lock this view holds on the mapping).
    pub(crate) fn move_ticket(&mut self, key: MappingKey) -> Option<MoveTicket> {
        let table = self.table;
        let m = self.get_mut(key)?;
        m.moving.then(|| MoveTicket(*lock(&table.moves_ended)))
    }

    /// Counts a mapping this view marked [`Mapping::moving`] (before the view is let go);
    /// [`MappingTable::end_move`] counts it off.
    pub(crate) fn count_move(&self) {
        self.table.moves_in_progress.fetch_add(1, Ordering::SeqCst);
    }

    pub(crate) fn get_mut(&mut self, key: MappingKey) -> Option<EntryMut<'_>> {
        if key.wide {
            let entry = self.wide().get(key.start)?;
            Some(EntryMut::Wide(lock(&entry.mapping)))
        } else {
            self.narrow_mut(shard_of(key.start))
                .get_mut(key.start)
                .map(EntryMut::Narrow)
        }
    }

    /// The mapping starting exactly at `start`, if any.
    pub(crate) fn key_at(&self, start: usize) -> Option<MappingKey> {
        if self.wide().get(start).is_some() {
            Some(MappingKey::wide(start))
        } else {
            let narrow = self.narrow(shard_of(start)).get(start).is_some();
            narrow.then_some(MappingKey::narrow(start))
        }
    }

    /// The mapping starting exactly at `start`.
    pub(crate) fn get_at(&mut self, start: usize) -> Option<EntryMut<'_>> {
        let key = self.key_at(start)?;
        self.get_mut(key)
    }

    /// The mapping containing the range, if any.
    pub(crate) fn find(&mut self, begin: usize, size: u64) -> Option<EntryMut<'_>> {
        match self.lookup(begin, size) {
            Lookup::Contained(key) => self.get_mut(key),
            _ => None,
        }
    }

    /// The mapping containing or overlapping the range (LLVM's lookup without "must
    /// contain"), as kernel arguments and implicit maps use it.
    pub(crate) fn find_overlapping(&mut self, begin: usize, size: u64) -> Option<EntryMut<'_>> {
        let key = self.serving(begin, size, true)?;
        self.get_mut(key)
    }

    /// Adds a mapping the view was made for (see [`MappingTable::view`]); it must not overlap
    /// any other.
    pub(crate) fn insert(&mut self, mapping: Mapping) -> MappingKey {
        if mapping.moving {
            self.count_move();
        }
        let start = mapping.host_begin;
        if within_one_block(reach(mapping.host_base(), start, mapping.size())) {
            let shard = shard_of(start);
            let table = self.table;
            let narrow = self.narrow_mut(shard);
            if narrow.insert(mapping) {
                narrow.publish(&table.shards[shard].hint);
            }
            MappingKey::narrow(start)
        } else {
            let entry = WideEntry {
                base: mapping.host_base(),
                begin: start,
                end: mapping.host_end,
                mapping: Mutex::new(mapping),
            };
            match self.wide_mut() {
                Some(wide) => {
                    wide.insert(entry);
                }
                None => panic!("a mapping spanning blocks created without the whole table locked (internal error)"),
            }
            MappingKey::wide(start)
        }
    }

    /// Changes a mapping and removes it when `change` returns true, as one step for a narrow
    /// mapping. A wide one cannot be removed through a view of one shard: the answer says so
    /// and the caller retries with [`MappingTable::view_all`].
    pub(crate) fn change_or_remove(
        &mut self,
        key: MappingKey,
        change: impl FnOnce(&mut Mapping) -> bool,
    ) -> Changed {
        if key.wide {
            let Some(mut m) = self.get_mut(key) else {
                return Changed::Missing;
            };
            if !change(&mut m) {
                return Changed::Kept;
            }
            drop(m);
            if !self.can_remove(key) {
                return Changed::NeedsWholeTable;
            }
            return self.remove(key).map_or(Changed::Missing, Changed::Removed);
        }
        match self
            .narrow_mut(shard_of(key.start))
            .change_or_remove(key.start, change)
        {
            None => Changed::Missing,
            Some(None) => Changed::Kept,
            Some(Some(m)) => Changed::Removed(m),
        }
    }

    /// Whether this view may remove the mapping (a wide one needs the whole table).
    pub(crate) fn can_remove(&self, key: MappingKey) -> bool {
        !key.wide || matches!(self.locks, Locks::All(_))
    }

    pub(crate) fn remove(&mut self, key: MappingKey) -> Option<Mapping> {
        if key.wide {
            let wide = self
                .wide_mut()
                .expect("removing a wide mapping needs the whole table");
            wide.remove(key.start).map(|e| into_inner(e.mapping))
        } else {
            self.narrow_mut(shard_of(key.start)).remove(key.start)
        }
    }

    /// Every mapping, by host address (a view of the whole table).
    pub(crate) fn snapshot(&self) -> Vec<Mapping> {
        let Locks::All(guards) = &self.locks else {
            not_locked(SHARDS)
        };
        let mut all: Vec<Mapping> = guards
            .iter()
            .flat_map(|g| g.values().cloned())
            .chain(self.wide().values().map(|e| lock(&e.mapping).clone()))
            .collect();
        all.sort_by_key(|m| m.host_begin);
        all
    }

    /// Removes and returns every mapping (a view of the whole table; device teardown).
    pub(crate) fn drain(&mut self) -> Vec<Mapping> {
        let mut all: Vec<Mapping> = match &mut self.locks {
            Locks::All(guards) => guards.iter_mut().flat_map(|g| g.drain()).collect(),
            Locks::One(..) => not_locked(SHARDS),
        };
        if let Some(wide) = self.wide_mut() {
            all.extend(wide.drain().map(|e| into_inner(e.mapping)));
        }
        all
    }
}

#[cfg(test)]
mod tests {
    use super::super::sorted::tests::mapping;
    use super::*;

    const MIB: usize = 1 << 20;
    /// A block-aligned address, away from zero.
    const AT: usize = 0x7f00_0000_0000;

    #[test]
    fn narrow_mappings_are_found_through_their_shard() {
        let t = MappingTable::new();
        let key = t.view(AT + 100, 64, AT + 100).insert(mapping(AT + 100, 64));
        assert!(!key.wide);
        let mut v = t.view(AT + 120, 8, AT + 120);
        assert_eq!(v.lookup(AT + 120, 8), Lookup::Contained(key));
        assert_eq!(v.lookup(AT + 150, 100), Lookup::Extends(key));
        assert_eq!(v.find(AT + 100, 64).unwrap().dynamic_refs, 1);
        drop(v);
        assert_eq!(
            t.view(AT + 4 * MIB, 8, AT + 4 * MIB)
                .lookup(AT + 4 * MIB, 8),
            Lookup::Absent
        );
    }

    #[test]
    fn wide_mappings_are_found_from_any_block_they_span() {
        let t = MappingTable::new();
        let (begin, size) = (AT + MIB, 8 * MIB);
        let mut all = t.view(begin, size as u64, begin);
        assert!(matches!(all.locks, Locks::All(_)));
        let key = all.insert(mapping(begin, size));
        assert!(key.wide);
        drop(all);
        for at in [begin, begin + 3 * MIB + 5, begin + size - 1] {
            let v = t.view(at, 1, at);
            assert!(
                matches!(v.locks, Locks::One(..)),
                "one shard serves {at:#x}"
            );
            assert_eq!(v.lookup(at, 1), Lookup::Contained(key));
        }
        // A lookup spanning the whole mapping holds one shard only.
        let mut v = t.view(begin, size as u64, begin);
        assert!(matches!(v.locks, Locks::One(..)));
        // Found in the wide mappings before any narrow shard is asked (none but one is locked).
        assert_eq!(v.lookup(begin, size as u64), Lookup::Contained(key));
        v.get_mut(key).unwrap().dynamic_refs += 1;
        assert!(!v.can_remove(key));
        drop(v);
        // Overlapping its end from outside is an extension.
        let v = t.view(begin + size - 8, 16, begin + size - 8);
        assert_eq!(v.lookup(begin + size - 8, 16), Lookup::Extends(key));
        drop(v);
        let mut all = t.view_all();
        assert_eq!(all.remove(key).unwrap().dynamic_refs, 2);
        assert!(all.snapshot().is_empty());
    }

    #[test]
    fn releasing_removes_narrow_mappings_at_once_and_wide_ones_with_the_whole_table() {
        let t = MappingTable::new();
        let narrow = t.view(AT + 64, 8, AT + 64).insert(mapping(AT + 64, 8));
        let wide = t
            .view(AT + MIB, 4 * MIB as u64, AT + MIB)
            .insert(mapping(AT + MIB, 4 * MIB));
        let release = |m: &mut Mapping| {
            m.dynamic_refs -= 1;
            m.dynamic_refs == 0
        };
        assert!(matches!(
            t.view_of(narrow).change_or_remove(narrow, release),
            Changed::Removed(_)
        ));
        assert!(matches!(
            t.view_of(narrow).change_or_remove(narrow, release),
            Changed::Missing
        ));
        assert!(matches!(
            t.view_of(wide).change_or_remove(wide, release),
            Changed::NeedsWholeTable
        ));
        let mut all = t.view_all();
        assert!(matches!(
            all.change_or_remove(wide, |_| true),
            Changed::Removed(_)
        ));
        assert!(all.snapshot().is_empty());
    }

    #[test]
    fn data_spanning_blocks_sees_narrow_mappings_in_each() {
        let t = MappingTable::new();
        let inside = AT + 5 * MIB + 64;
        let key = t.view(inside, 32, inside).insert(mapping(inside, 32));
        let (begin, size) = (AT + MIB, 16 * MIB as u64);
        let v = t.view(begin, size, begin);
        assert!(matches!(v.locks, Locks::All(_)));
        assert_eq!(v.lookup(begin, size), Lookup::Extends(key));
        drop(v);
        // Reaching far back to its base makes a small section a wide mapping.
        let member = AT + 40 * MIB;
        let mut m = mapping(member, 16);
        m.set_host_base(AT + 30 * MIB);
        let mut v = t.view(member, 16, m.host_base());
        let wide = v.insert(m);
        assert!(wide.wide);
        drop(v);
        let v = t.view(AT + 35 * MIB, 0, AT + 35 * MIB);
        assert_eq!(v.lookup(AT + 35 * MIB, 0), Lookup::Contained(wide));
        drop(v);
        let mut all = t.view_all();
        let starts: Vec<usize> = all.snapshot().iter().map(|m| m.host_begin).collect();
        assert_eq!(starts, vec![inside, member]);
        assert_eq!(all.drain().len(), 2);
    }

    #[test]
    fn threads_on_their_own_data_and_on_shared_data() {
        let t = MappingTable::new();
        let shared = AT + 64 * MIB;
        t.view(shared, 4 * MIB as u64, shared)
            .insert(mapping(shared, 4 * MIB));
        std::thread::scope(|s| {
            for thread in 0..4usize {
                let t = &t;
                s.spawn(move || {
                    let own = AT + thread * 8 * MIB + 4096;
                    for i in 0..2000 {
                        let begin = own + (i % 7) * 256;
                        let mut v = t.view(begin, 64, begin);
                        assert_eq!(v.lookup(begin, 64), Lookup::Absent);
                        let key = v.insert(mapping(begin, 64));
                        drop(v);
                        let mut v = t.view(shared + i, 8, shared + i);
                        v.find(shared + i, 8).unwrap().dynamic_refs += 1;
                        drop(v);
                        assert!(t.view_of(key).remove(key).is_some());
                    }
                });
            }
        });
        let all = t.view_all().snapshot();
        assert_eq!(all.len(), 1);
        assert_eq!(all[0].dynamic_refs, 1 + 4 * 2000);
    }

    #[test]
    fn a_moving_mapping_is_waited_for_by_its_users_only_and_with_no_lock_held() {
        use std::sync::atomic::{AtomicBool, Ordering};
        use std::time::Duration;
        let t = MappingTable::new();
        let (begin, size) = (AT + MIB, 256 * MIB);
        let mut m = mapping(begin, size);
        m.moving = true;
        let key = t.view(begin, size as u64, begin).insert(m);
        let served = AtomicBool::new(false);
        std::thread::scope(|s| {
            let user = s.spawn(|| {
                let (mut view, found) = t.serving(begin + 8, 8, begin + 8, false);
                served.store(true, Ordering::SeqCst);
                assert_eq!(found, Some(key));
                assert!(!view.get_mut(key).unwrap().moving);
                let refs = view.get_mut(key).unwrap().dynamic_refs;
                refs
            });
            std::thread::sleep(Duration::from_millis(50));
            assert!(
                !served.load(Ordering::SeqCst),
                "the user waits for the move"
            );
            // Meanwhile other data, even right after the moving mapping, is served.
            for at in [AT + 600 * MIB, begin + size] {
                let other = at + 4096;
                let (mut view, found) = t.serving(other, 64, other, false);
                if found.is_none() {
                    view.insert(mapping(other, 64));
                }
            }
            t.end_move(key, |m| m.dynamic_refs = 7);
            assert_eq!(user.join().unwrap(), 7);
        });
    }

    #[test]
    fn a_zero_length_section_in_a_wide_mappings_reach_is_hidden_by_a_nearer_mapping() {
        // LLVM 22's use_device_ptr test, case F, when a 2 MiB boundary falls between the
        // pointee (`x`) and the section mapped from it: the pointer variable mapped between
        // them is the first mapping after `x`, and its base is not at or before `x`.
        let boundary = AT + 4 * MIB;
        let x = boundary - 0x100;
        let t = MappingTable::new();
        let mut section = mapping(boundary + 0x98, 20);
        section.set_host_base(x);
        let wide = t.view(section.host_begin, 20, x).insert(section);
        assert!(wide.wide);
        let found = |t: &MappingTable| {
            let (view, found) = t.lookup(x, 0, x, false);
            drop(view);
            found
        };
        assert_eq!(found(&t), Lookup::Contained(wide));
        let pointer = t
            .view(boundary + 0x60, 8, boundary + 0x60)
            .insert(mapping(boundary + 0x60, 8));
        assert!(!pointer.wide);
        assert_eq!(found(&t), Lookup::Absent);
        // The same in one block: a mapping in between hides the wide one too.
        let near = t.view(x + 0x10, 8, x + 0x10).insert(mapping(x + 0x10, 8));
        assert_eq!(found(&t), Lookup::Absent);
        // Whereas data inside a mapping is found whatever lies about.
        assert_eq!(
            t.lookup(x + 0x10, 0, x + 0x10, false).1,
            Lookup::Contained(near)
        );
        assert_eq!(
            t.lookup(boundary + 0x98, 0, boundary + 0x98, false).1,
            Lookup::Contained(wide)
        );
    }
}
