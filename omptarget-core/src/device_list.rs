//! The OpenMP devices, numbered as they are found: a list that only grows (when a registered
//! image starts a plugin, as in LLVM's runtime), read without a lock by every construct.

use crate::device::Device;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

/// More devices than any node has; past it, devices are left unnumbered with a warning.
pub(crate) const MAX_DEVICES: usize = 1024;

pub(crate) struct DeviceList {
    slots: Box<[OnceLock<Box<Device>>]>,
    /// Devices published so far: slots below it are set.
    len: AtomicUsize,
    /// Serialises appends (numbering must not interleave).
    append: Mutex<()>,
}

impl Default for DeviceList {
    fn default() -> Self {
        DeviceList {
            slots: (0..MAX_DEVICES).map(|_| OnceLock::new()).collect(),
            len: AtomicUsize::new(0),
            append: Mutex::new(()),
        }
    }
}

impl DeviceList {
    pub(crate) fn len(&self) -> usize {
        self.len.load(Ordering::Acquire)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub(crate) fn get(&self, index: usize) -> Option<&Device> {
        if index >= self.len() {
            return None;
        }
        self.slots[index].get().map(|d| &**d)
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &Device> + '_ {
        (0..self.len()).filter_map(|i| self.get(i))
    }

    /// Appends the device `make` builds from its number; `None` when the list is full.
    pub(crate) fn push(&self, make: impl FnOnce(i32) -> Device) -> Option<&Device> {
        let _guard = self.append.lock().unwrap_or_else(|e| e.into_inner());
        let index = self.len.load(Ordering::Relaxed);
        if index >= MAX_DEVICES {
            return None;
        }
        let device = self.slots[index].get_or_init(|| Box::new(make(index as i32)));
        // Published after the slot is set: readers below `len` always find a device.
        self.len.store(index + 1, Ordering::Release);
        Some(&**device)
    }
}
