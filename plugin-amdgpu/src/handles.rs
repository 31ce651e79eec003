//! Tables that turn the plugin ABI's opaque `u64` handles into the objects behind them.
//! Handles are indices plus one, so 0 (the ABI's "none" and `QueueHandle::SYNC`) never names
//! an object, and a freed slot is reused.

use std::sync::{Arc, Mutex};
use sync_util::lock;

pub struct HandleTable<T> {
    slots: Mutex<Vec<Option<Arc<T>>>>,
}

impl<T> HandleTable<T> {
    pub fn new() -> Self {
        HandleTable {
            slots: Mutex::new(Vec::new()),
        }
    }

    /// Stores `value` and returns its handle (never 0).
    pub fn insert(&self, value: T) -> u64 {
        let mut slots = lock(&self.slots);
        let value = Some(Arc::new(value));
        match slots.iter().position(Option::is_none) {
            Some(i) => {
                slots[i] = value;
                i as u64 + 1
            }
            None => {
                slots.push(value);
                slots.len() as u64
            }
        }
    }

    fn index(handle: u64) -> Option<usize> {
        usize::try_from(handle).ok()?.checked_sub(1)
    }

    pub fn get(&self, handle: u64) -> Option<Arc<T>> {
        let slots = lock(&self.slots);
        slots.get(Self::index(handle)?)?.clone()
    }

    pub fn remove(&self, handle: u64) -> Option<Arc<T>> {
        let mut slots = lock(&self.slots);
        slots.get_mut(Self::index(handle)?)?.take()
    }

    /// Every live object (at shutdown).
    pub fn drain(&self) -> Vec<Arc<T>> {
        let mut slots = lock(&self.slots);
        slots.drain(..).flatten().collect()
    }
}

impl<T> Default for HandleTable<T> {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_start_at_one_and_slots_are_reused() {
        let table = HandleTable::new();
        assert_eq!(table.insert("a"), 1);
        assert_eq!(table.insert("b"), 2);
        assert!(table.get(0).is_none());
        assert_eq!(*table.remove(1).unwrap(), "a");
        assert!(table.get(1).is_none());
        assert!(table.remove(1).is_none());
        assert_eq!(table.insert("c"), 1);
        assert_eq!(*table.get(2).unwrap(), "b");
        assert!(table.get(u64::MAX).is_none());
    }
}
