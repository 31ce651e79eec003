//! Pools of driver objects that are costly to create (streams, events): taken per construct,
//! given back after it, grown on demand (LLVM's `GenericDeviceResourceManagerTy`).

use crate::driver::{self, Driver, Event, Owned, Releasable, Stream};
use std::sync::{Arc, Mutex};
use sync_util::lock;

/// A driver object the pool can create with a `D` (the driver; tests use a fake); its owner
/// gives it back.
pub trait PooledResource<D>: Releasable<D> + Send + PartialEq {
    fn create(driver: &D) -> driver::Result<Self>;
}

impl PooledResource<Driver> for Stream {
    fn create(driver: &Driver) -> driver::Result<Self> {
        driver.create_stream()
    }
}

impl PooledResource<Driver> for Event {
    fn create(driver: &Driver) -> driver::Result<Self> {
        driver.create_event()
    }
}

/// Owns every object it created; lends their handles (`take`, `give_back`), which callers
/// use only while the pool lives. Dropping the pool destroys them all.
pub struct ResourcePool<T, D = Driver>
where
    T: Releasable<D>,
{
    idle: Mutex<Vec<T>>,
    /// Every object created, idle or lent; the pool doubles when it runs dry.
    owned: Mutex<Vec<Owned<T, D>>>,
}

impl<T: PooledResource<D>, D> ResourcePool<T, D> {
    /// Creates `initial` resources up front (the device's context must be current). Fails
    /// only if not even one could be created.
    pub fn new(driver: &Arc<D>, initial: usize) -> driver::Result<Self> {
        let pool = ResourcePool {
            idle: Mutex::new(Vec::with_capacity(initial)),
            owned: Mutex::new(Vec::with_capacity(initial)),
        };
        pool.grow(driver, initial.max(1))?;
        Ok(pool)
    }

    /// Creates up to `count` more. What was created before a failure is kept in the pool
    /// (destroyed with it), so nothing leaks; the failure is returned only if nothing was
    /// created.
    fn grow(&self, driver: &Arc<D>, count: usize) -> driver::Result<()> {
        let mut fresh = Vec::with_capacity(count);
        let mut failure = None;
        for _ in 0..count {
            match T::create(driver) {
                Ok(r) => fresh.push(Owned::adopt(driver, r)),
                Err(e) => {
                    failure = Some(e);
                    break;
                }
            }
        }
        let made = fresh.len();
        let handles: Vec<T> = fresh.iter().map(Owned::handle).collect();
        lock(&self.owned).extend(fresh);
        lock(&self.idle).extend(handles);
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
    pub fn take(&self, driver: &Arc<D>) -> driver::Result<T> {
        loop {
            if let Some(r) = lock(&self.idle).pop() {
                return Ok(r);
            }
            let more = lock(&self.owned).len().max(1);
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

    /// Destroys the idle resources, in the order they wait in the pool; returns how many were
    /// still taken. Those are in use (a queue nobody released): they are left to the
    /// context's release, which takes them along, and the pool no longer owns them.
    pub fn destroy_all(&self) -> (usize, Option<driver::DriverError>) {
        let idle = std::mem::take(&mut *lock(&self.idle));
        let mut owned = lock(&self.owned);
        let mut first_error = None;
        for handle in idle {
            let Some(i) = owned.iter().position(|o| o.handle() == handle) else {
                continue;
            };
            if let Err(e) = owned.swap_remove(i).release() {
                first_error.get_or_insert(e);
            }
        }
        let outstanding = owned.len();
        for lent in owned.drain(..) {
            lent.forget();
        }
        (outstanding, first_error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::DriverError;
    use std::sync::Mutex;
    use sync_util::lock;

    /// A driver that can create `budget` objects, then fails, and records what it destroys.
    struct FakeDriver {
        budget: Mutex<usize>,
        next: Mutex<u32>,
        destroyed: Mutex<Vec<u32>>,
    }

    impl FakeDriver {
        fn new(budget: usize) -> Arc<FakeDriver> {
            Arc::new(FakeDriver {
                budget: Mutex::new(budget),
                next: Mutex::new(1),
                destroyed: Mutex::new(Vec::new()),
            })
        }
        fn created(&self) -> u32 {
            *lock(&self.next) - 1
        }
        /// What was destroyed, sorted: each object once, or a number repeats.
        fn destroyed(&self) -> Vec<u32> {
            let mut destroyed = lock(&self.destroyed).clone();
            destroyed.sort();
            destroyed
        }
    }

    impl Releasable<FakeDriver> for u32 {
        fn release(self, driver: &FakeDriver) -> driver::Result<()> {
            lock(&driver.destroyed).push(self);
            Ok(())
        }
    }

    impl PooledResource<FakeDriver> for u32 {
        fn create(driver: &FakeDriver) -> driver::Result<u32> {
            let mut budget = lock(&driver.budget);
            if *budget == 0 {
                return Err(DriverError {
                    call: "cuStreamCreate",
                    code: 2,
                    name: "CUDA_ERROR_OUT_OF_MEMORY".into(),
                });
            }
            *budget -= 1;
            let mut next = lock(&driver.next);
            *next += 1;
            Ok(*next - 1)
        }
    }

    #[test]
    fn a_partly_failed_creation_keeps_what_was_created() {
        let driver = FakeDriver::new(3);
        let pool = ResourcePool::<u32, FakeDriver>::new(&driver, 8).unwrap();
        assert_eq!(driver.created(), 3);
        let (outstanding, error) = pool.destroy_all();
        assert_eq!((outstanding, error), (0, None));
        assert_eq!(driver.destroyed(), [1, 2, 3]);
        // Nothing is left for the pool's drop.
        drop(pool);
        assert_eq!(driver.destroyed(), [1, 2, 3]);
    }

    #[test]
    fn a_failed_creation_leaks_nothing() {
        let driver = FakeDriver::new(0);
        assert!(ResourcePool::<u32, FakeDriver>::new(&driver, 4).is_err());
        assert_eq!(driver.created(), 0);
        assert!(driver.destroyed().is_empty());
    }

    #[test]
    fn a_partly_failed_growth_keeps_what_was_created() {
        let driver = FakeDriver::new(3);
        let pool = ResourcePool::<u32, FakeDriver>::new(&driver, 2).unwrap();
        let taken: Vec<u32> = (0..3).map(|_| pool.take(&driver).unwrap()).collect();
        // The third take grew the pool by one of the two it asked for.
        assert_eq!(driver.created(), 3);
        assert!(pool.take(&driver).is_err());
        for r in taken {
            pool.give_back(r);
        }
        let (outstanding, _) = pool.destroy_all();
        assert_eq!(outstanding, 0);
        assert_eq!(driver.destroyed(), [1, 2, 3]);
    }

    #[test]
    fn a_dropped_pool_destroys_everything_it_created_once() {
        let driver = FakeDriver::new(5);
        let pool = ResourcePool::<u32, FakeDriver>::new(&driver, 4).unwrap();
        // Lent or idle, the pool owns it.
        let lent = pool.take(&driver).unwrap();
        assert!(driver.destroyed().is_empty());
        drop(pool);
        assert!(driver.destroyed().contains(&lent));
        assert_eq!(driver.destroyed(), [1, 2, 3, 4]);
    }

    #[test]
    fn what_is_still_taken_is_left_to_the_context() {
        let driver = FakeDriver::new(3);
        let pool = ResourcePool::<u32, FakeDriver>::new(&driver, 3).unwrap();
        let lent = pool.take(&driver).unwrap();
        let (outstanding, error) = pool.destroy_all();
        assert_eq!((outstanding, error), (1, None));
        assert_eq!(driver.destroyed().len(), 2);
        assert!(!driver.destroyed().contains(&lent));
        // Given back late and dropped with the pool, it is still not destroyed.
        pool.give_back(lent);
        drop(pool);
        assert_eq!(driver.destroyed().len(), 2);
    }
}
