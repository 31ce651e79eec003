//! Pools of driver objects that are costly to create (streams, events): taken per construct,
//! given back after it, grown on demand (LLVM's `GenericDeviceResourceManagerTy`).

use crate::driver::{self, Driver, Event, Stream};
use std::sync::Mutex;
use sync_util::lock;

/// A driver object the pool can create and destroy with a `D` (the driver; tests use a fake).
pub trait PooledResource<D>: Copy + Send {
    fn create(driver: &D) -> driver::Result<Self>;
    fn destroy(self, driver: &D) -> driver::Result<()>;
}

impl PooledResource<Driver> for Stream {
    fn create(driver: &Driver) -> driver::Result<Self> {
        driver.create_stream()
    }
    fn destroy(self, driver: &Driver) -> driver::Result<()> {
        driver.destroy_stream(self)
    }
}

impl PooledResource<Driver> for Event {
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

impl<T: Copy + Send> ResourcePool<T> {
    /// Creates `initial` resources up front (the device's context must be current). Fails
    /// only if not even one could be created.
    pub fn new<D>(driver: &D, initial: usize) -> driver::Result<Self>
    where
        T: PooledResource<D>,
    {
        let pool = ResourcePool {
            idle: Mutex::new(Vec::with_capacity(initial)),
            created: Mutex::new(0),
        };
        pool.grow(driver, initial.max(1))?;
        Ok(pool)
    }

    /// Creates up to `count` more. What was created before a failure is kept in the pool
    /// (destroyed with it), so nothing leaks; the failure is returned only if nothing was
    /// created.
    fn grow<D>(&self, driver: &D, count: usize) -> driver::Result<()>
    where
        T: PooledResource<D>,
    {
        let mut fresh = Vec::with_capacity(count);
        let mut failure = None;
        for _ in 0..count {
            match T::create(driver) {
                Ok(r) => fresh.push(r),
                Err(e) => {
                    failure = Some(e);
                    break;
                }
            }
        }
        let made = fresh.len();
        *lock(&self.created) += made;
        lock(&self.idle).extend(fresh);
        match failure {
            Some(e) if made == 0 => Err(e),
            Some(e) => {
                log::debug!("cuda: the pool grew by {made} instead of {count}: {e}");
                Ok(())
            }
            None => Ok(()),
        }
    }

    /// An idle resource (the device's context must be current, in case the pool grows).
    pub fn take<D>(&self, driver: &D) -> driver::Result<T>
    where
        T: PooledResource<D>,
    {
        loop {
            if let Some(r) = lock(&self.idle).pop() {
                return Ok(r);
            }
            let more = (*lock(&self.created)).max(1);
            self.grow(driver, more)?;
        }
    }

    /// An idle resource, if there is one (no driver call).
    pub fn try_take(&self) -> Option<T> {
        lock(&self.idle).pop()
    }

    pub fn give_back(&self, resource: T) {
        lock(&self.idle).push(resource);
    }

    /// Destroys the idle resources; returns how many were still taken.
    pub fn destroy_all<D>(&self, driver: &D) -> (usize, Option<driver::DriverError>)
    where
        T: PooledResource<D>,
    {
        let idle = std::mem::take(&mut *lock(&self.idle));
        let mut created = lock(&self.created);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::DriverError;
    use std::cell::RefCell;

    /// A driver that can create `budget` objects, then fails, and records what it destroys.
    struct FakeDriver {
        budget: RefCell<usize>,
        next: RefCell<u32>,
        destroyed: RefCell<Vec<u32>>,
    }

    impl FakeDriver {
        fn new(budget: usize) -> FakeDriver {
            FakeDriver {
                budget: RefCell::new(budget),
                next: RefCell::new(1),
                destroyed: RefCell::new(Vec::new()),
            }
        }
        fn created(&self) -> u32 {
            *self.next.borrow() - 1
        }
    }

    impl PooledResource<FakeDriver> for u32 {
        fn create(driver: &FakeDriver) -> driver::Result<u32> {
            let mut budget = driver.budget.borrow_mut();
            if *budget == 0 {
                return Err(DriverError {
                    call: "cuStreamCreate",
                    code: 2,
                    name: "CUDA_ERROR_OUT_OF_MEMORY".into(),
                });
            }
            *budget -= 1;
            let mut next = driver.next.borrow_mut();
            *next += 1;
            Ok(*next - 1)
        }
        fn destroy(self, driver: &FakeDriver) -> driver::Result<()> {
            driver.destroyed.borrow_mut().push(self);
            Ok(())
        }
    }

    #[test]
    fn a_partly_failed_creation_keeps_what_was_created() {
        let driver = FakeDriver::new(3);
        let pool = ResourcePool::<u32>::new(&driver, 8).unwrap();
        assert_eq!(driver.created(), 3);
        let (outstanding, error) = pool.destroy_all(&driver);
        assert_eq!((outstanding, error), (0, None));
        assert_eq!(driver.destroyed.borrow().len(), 3);
    }

    #[test]
    fn a_failed_creation_leaks_nothing() {
        let driver = FakeDriver::new(0);
        assert!(ResourcePool::<u32>::new(&driver, 4).is_err());
        assert_eq!(driver.created(), 0);
    }

    #[test]
    fn a_partly_failed_growth_keeps_what_was_created() {
        let driver = FakeDriver::new(3);
        let pool = ResourcePool::<u32>::new(&driver, 2).unwrap();
        let taken: Vec<u32> = (0..3).map(|_| pool.take(&driver).unwrap()).collect();
        // The third take grew the pool by one of the two it asked for.
        assert_eq!(driver.created(), 3);
        assert!(pool.take(&driver).is_err());
        for r in taken {
            pool.give_back(r);
        }
        let (outstanding, _) = pool.destroy_all(&driver);
        assert_eq!(outstanding, 0);
        let mut destroyed = driver.destroyed.borrow().clone();
        destroyed.sort();
        assert_eq!(destroyed, [1, 2, 3]);
    }
}
