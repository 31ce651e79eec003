//! The plugin ABI's opaque handles (queues, events, images, kernels), as tables of the driver
//! objects behind them. The core passes handles back as `u64`s; a handle this device never gave
//! out, or gave out and took back, is found missing here and answered with an error, and never
//! reaches the driver as a wild stream, signal or event pointer.
//!
//! A handle is `generation << 32 | (slot + 1)`: never 0 (the ABI's "none" and
//! `QueueHandle::SYNC`), and a slot reused for a new object gets a new generation, so a stale
//! handle (a queue released twice, an event destroyed twice) does not name the new one.

use std::sync::Mutex;
use sync_util::lock;

pub struct HandleTable<T> {
    slots: Mutex<Slots<T>>,
}

struct Slots<T> {
    entries: Vec<Entry<T>>,
    /// Indexes of the empty entries, reused last-freed first.
    free: Vec<u32>,
}

struct Entry<T> {
    generation: u32,
    value: Option<T>,
}

/// The slot a handle names, and the generation it must have.
fn split(handle: u64) -> Option<(usize, u32)> {
    let slot = (handle as u32).checked_sub(1)?;
    Some((slot as usize, (handle >> 32) as u32))
}

fn join(slot: usize, generation: u32) -> u64 {
    (u64::from(generation) << 32) | (slot as u64 + 1)
}

impl<T: Clone> HandleTable<T> {
    pub fn new() -> Self {
        HandleTable {
            slots: Mutex::new(Slots {
                entries: Vec::new(),
                free: Vec::new(),
            }),
        }
    }

    /// Stores `value` and returns its handle (never 0).
    pub fn insert(&self, value: T) -> u64 {
        let mut slots = lock(&self.slots);
        if let Some(slot) = slots.free.pop() {
            let entry = &mut slots.entries[slot as usize];
            entry.value = Some(value);
            return join(slot as usize, entry.generation);
        }
        slots.entries.push(Entry {
            generation: 0,
            value: Some(value),
        });
        join(slots.entries.len() - 1, 0)
    }

    /// What `handle` names, if it is live.
    #[inline]
    pub fn get(&self, handle: u64) -> Option<T> {
        let (slot, generation) = split(handle)?;
        let slots = lock(&self.slots);
        let entry = slots.entries.get(slot)?;
        if entry.generation != generation {
            return None;
        }
        entry.value.clone()
    }

    /// Takes back what `handle` names; the handle is dead from then on.
    pub fn remove(&self, handle: u64) -> Option<T> {
        let (slot, generation) = split(handle)?;
        let mut slots = lock(&self.slots);
        let entry = slots.entries.get_mut(slot)?;
        if entry.generation != generation {
            return None;
        }
        let value = entry.value.take()?;
        entry.generation = entry.generation.wrapping_add(1);
        slots.free.push(slot as u32);
        Some(value)
    }

    /// Takes back every live object (at shutdown); every handle is dead from then on.
    pub fn drain(&self) -> Vec<T> {
        let mut slots = lock(&self.slots);
        let Slots { entries, free } = &mut *slots;
        let mut taken = Vec::new();
        for (slot, entry) in entries.iter_mut().enumerate() {
            if let Some(value) = entry.value.take() {
                entry.generation = entry.generation.wrapping_add(1);
                free.push(slot as u32);
                taken.push(value);
            }
        }
        taken
    }

    /// How many handles are live.
    pub fn len(&self) -> usize {
        let slots = lock(&self.slots);
        slots.entries.len() - slots.free.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<T: Clone> Default for HandleTable<T> {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_are_never_zero_and_name_what_was_stored() {
        let table = HandleTable::new();
        let a = table.insert('a');
        let b = table.insert('b');
        assert!(a != 0 && b != 0 && a != b);
        assert_eq!(table.get(a), Some('a'));
        assert_eq!(table.get(b), Some('b'));
        assert_eq!(table.len(), 2);
    }

    #[test]
    fn handles_never_given_out_are_refused() {
        let table = HandleTable::new();
        let a = table.insert(1u32);
        // 0 (QueueHandle::SYNC), a slot past the end, a wrong generation, a pointer-like value.
        for bogus in [
            0,
            a + 1,
            a | 7 << 32,
            u64::MAX,
            u64::MAX - 7,
            0x7f3a_1c00_2000,
        ] {
            assert_eq!(table.get(bogus), None, "{bogus:#x}");
            assert_eq!(table.remove(bogus), None, "{bogus:#x}");
        }
        assert_eq!(table.get(a), Some(1));
    }

    #[test]
    fn a_handle_taken_back_stays_dead_when_its_slot_is_reused() {
        let table = HandleTable::new();
        let a = table.insert("a");
        assert_eq!(table.remove(a), Some("a"));
        assert_eq!(table.remove(a), None, "a second release");
        assert_eq!(table.get(a), None);
        let b = table.insert("b");
        assert_eq!(b as u32, a as u32, "the slot is reused");
        assert_ne!(b, a, "under a new generation");
        assert_eq!(table.get(a), None);
        assert_eq!(table.remove(a), None);
        assert_eq!(table.get(b), Some("b"));
        assert_eq!(table.len(), 1);
    }

    #[test]
    fn drained_handles_are_dead_and_their_slots_reused() {
        let table = HandleTable::new();
        let a = table.insert(std::sync::Arc::new("a"));
        let b = table.insert(std::sync::Arc::new("b"));
        table.remove(a);
        let drained = table.drain();
        assert_eq!(drained.len(), 1);
        assert_eq!(*drained[0], "b");
        assert!(table.is_empty());
        assert_eq!(table.get(b), None);
        let c = table.insert(std::sync::Arc::new("c"));
        assert_ne!(c, b);
        assert_eq!(table.len(), 1);
    }
}
