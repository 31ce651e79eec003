//! A plugin's devices: what was learnt of each when the plugin started (enough to check
//! images), and the device itself once the core initialised it. Each device is started at
//! most once, also when several threads ask at the same time (a second start would retain
//! driver resources twice), and stopped once.

use plugin_api::{device_at, ErrorCode, PluginError};
use std::sync::{Mutex, OnceLock};
use sync_util::lock;

type Result<T> = std::result::Result<T, PluginError>;

/// A device the plugin can start: how it is stopped.
pub trait StartedDevice {
    /// Releases what the device holds; no call on it follows.
    fn deinit(&self) -> Result<()>;
}

pub struct DeviceSlot<I, D> {
    pub identity: I,
    device: OnceLock<D>,
    /// Held while the device starts, so that one thread starts it and the others wait.
    starting: Mutex<()>,
}

impl<I, D> DeviceSlot<I, D> {
    /// The device, if it was started.
    pub fn device(&self) -> Option<&D> {
        self.device.get()
    }
}

pub struct DeviceSlots<I, D> {
    /// The plugin's name, for messages.
    vendor: &'static str,
    slots: Vec<DeviceSlot<I, D>>,
}

impl<I, D: StartedDevice> DeviceSlots<I, D> {
    pub fn new(vendor: &'static str, identities: Vec<I>) -> Self {
        let slots = identities
            .into_iter()
            .map(|identity| DeviceSlot {
                identity,
                device: OnceLock::new(),
                starting: Mutex::new(()),
            })
            .collect();
        DeviceSlots { vendor, slots }
    }

    pub fn len(&self) -> usize {
        self.slots.len()
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// The slot of device `device`, or the ABI's `INVALID_DEVICE` error.
    pub fn slot(&self, device: i32) -> Result<&DeviceSlot<I, D>> {
        device_at(self.vendor, &self.slots, device)
    }

    /// Starts device `device` with `start` unless it runs already.
    pub fn init(&self, device: i32, start: impl FnOnce(&I) -> Result<D>) -> Result<()> {
        let slot = self.slot(device)?;
        if slot.device.get().is_some() {
            return Ok(());
        }
        let _starting = lock(&slot.starting);
        if slot.device.get().is_none() {
            let started = start(&slot.identity)?;
            if slot.device.set(started).is_err() {
                unreachable!("a device is started under its slot's lock");
            }
        }
        Ok(())
    }

    /// Device `device`, which must have been started.
    pub fn device(&self, device: i32) -> Result<&D> {
        self.slot(device)?.device.get().ok_or_else(|| {
            PluginError::new(
                ErrorCode::NOT_INITIALIZED,
                format!(
                    "{} device {device} is used before it was initialised",
                    self.vendor
                ),
            )
        })
    }

    /// Stops every started device; the first failure is returned after all were tried.
    pub fn deinit_all(&self) -> Result<()> {
        let mut result = Ok(());
        for device in self.slots.iter().filter_map(DeviceSlot::device) {
            if let Err(e) = device.deinit() {
                result = result.and(Err(e));
            }
        }
        result
    }

    pub fn iter(&self) -> impl Iterator<Item = &DeviceSlot<I, D>> {
        self.slots.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Barrier;

    struct Counted<'a>(&'a AtomicUsize);

    impl StartedDevice for Counted<'_> {
        fn deinit(&self) -> Result<()> {
            self.0.fetch_add(1, Ordering::SeqCst);
            Ok(())
        }
    }

    #[test]
    fn threads_starting_one_device_start_it_once() {
        let (starts, stops) = (AtomicUsize::new(0), AtomicUsize::new(0));
        let slots = DeviceSlots::new("test", vec!["a", "b"]);
        let barrier = Barrier::new(8);
        std::thread::scope(|s| {
            for _ in 0..8 {
                s.spawn(|| {
                    barrier.wait();
                    slots
                        .init(1, |_| {
                            starts.fetch_add(1, Ordering::SeqCst);
                            std::thread::sleep(std::time::Duration::from_millis(20));
                            Ok(Counted(&stops))
                        })
                        .unwrap();
                });
            }
        });
        assert_eq!(starts.load(Ordering::SeqCst), 1);
        assert!(slots.device(1).is_ok());
        let e = slots.device(0).err().unwrap();
        assert_eq!(e.code, ErrorCode::NOT_INITIALIZED);
        assert_eq!(
            slots.device(2).err().unwrap().code,
            ErrorCode::INVALID_DEVICE
        );
        slots.deinit_all().unwrap();
        assert_eq!(
            stops.load(Ordering::SeqCst),
            1,
            "only the started device is stopped"
        );
    }

    #[test]
    fn a_device_that_failed_to_start_can_be_started_again() {
        let stops = AtomicUsize::new(0);
        let slots = DeviceSlots::new("test", vec![()]);
        let e = slots
            .init(0, |_| Err(PluginError::invalid_argument("no")))
            .err()
            .unwrap();
        assert_eq!(e.message.as_str(), "no");
        slots.init(0, |_| Ok(Counted(&stops))).unwrap();
        assert!(slots.device(0).is_ok());
    }
}
