//! Pools of driver objects that are costly to create (streams, events): taken per construct,
//! given back after it, grown on demand (LLVM's `GenericDeviceResourceManagerTy`).

use crate::driver::{self, Driver, Event, Stream};
use std::sync::Mutex;

/// A driver object the pool can create and destroy.
pub trait PooledResource: Copy + Send {
    fn create(driver: &Driver) -> driver::Result<Self>;
    fn destroy(self, driver: &Driver) -> driver::Result<()>;
}

impl PooledResource for Stream {
    fn create(driver: &Driver) -> driver::Result<Self> {
        driver.create_stream()
    }
    fn destroy(self, driver: &Driver) -> driver::Result<()> {
        driver.destroy_stream(self)
    }
}

impl PooledResource for Event {
    fn create(driver: &Driver) -> driver::Result<Self> {
        driver.create_event()
    }
    fn destroy(self, driver: &Driver) -> driver::Result<()> {
        driver.destroy_event(self)
    }
}

pub struct ResourcePool<T> {
    idle: Mutex<Vec<T>>,
    /// How many exist in all, idle or in use; the pool doubles when it runs dry.
    created: Mutex<usize>,
}

impl<T: PooledResource> ResourcePool<T> {
    /// Creates `initial` resources up front (the device's context must be current).
    pub fn new(driver: &Driver, initial: usize) -> driver::Result<Self> {
        let pool = ResourcePool {
            idle: Mutex::new(Vec::with_capacity(initial)),
            created: Mutex::new(0),
        };
        pool.grow(driver, initial.max(1))?;
        Ok(pool)
    }

    fn grow(&self, driver: &Driver, count: usize) -> driver::Result<()> {
        let mut fresh = Vec::with_capacity(count);
        for _ in 0..count {
            fresh.push(T::create(driver)?);
        }
        *self.created.lock().unwrap() += count;
        self.idle.lock().unwrap().extend(fresh);
        Ok(())
    }

    /// An idle resource (the device's context must be current, in case the pool grows).
    pub fn take(&self, driver: &Driver) -> driver::Result<T> {
        loop {
            if let Some(r) = self.idle.lock().unwrap().pop() {
                return Ok(r);
            }
            let more = (*self.created.lock().unwrap()).max(1);
            self.grow(driver, more)?;
        }
    }

    pub fn give_back(&self, resource: T) {
        self.idle.lock().unwrap().push(resource);
    }

    /// Destroys the idle resources; returns how many were still taken.
    pub fn destroy_all(&self, driver: &Driver) -> (usize, Option<driver::DriverError>) {
        let idle = std::mem::take(&mut *self.idle.lock().unwrap());
        let mut created = self.created.lock().unwrap();
        let outstanding = created.saturating_sub(idle.len());
        let mut first_error = None;
        for r in idle {
            if let Err(e) = r.destroy(driver) {
                first_error.get_or_insert(e);
            }
        }
        *created = outstanding;
        (outstanding, first_error)
    }
}
