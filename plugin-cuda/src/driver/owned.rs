//! Owners of what the plugin creates through the driver: each gives its object back to the
//! driver when dropped, so no path (an early return, a failed start) can leak one or give it
//! back twice. Code that must report the driver's answer gives the object back explicitly
//! (`release`, `unload`); a drop is the fallback and only logs a failure. Handles stay `Copy`:
//! an owner lends its handle to calls, which use it only while the owner lives.

use super::{codes, sys::CUdevice, Context, Driver, Event, Module, Result, Stream};
use std::sync::Arc;

/// A driver object that `D` (the driver; tests use fakes) can give back: destroy, unload or
/// release, whatever the object's kind needs.
pub trait Releasable<D>: Copy {
    fn release(self, driver: &D) -> Result<()>;
}

impl Releasable<Driver> for Stream {
    fn release(self, driver: &Driver) -> Result<()> {
        driver.destroy_stream(self)
    }
}

impl Releasable<Driver> for Event {
    fn release(self, driver: &Driver) -> Result<()> {
        driver.destroy_event(self)
    }
}

impl Releasable<Driver> for Module {
    fn release(self, driver: &Driver) -> Result<()> {
        driver.unload_module(self)
    }
}

/// One retain of a device's primary context, given back by releasing it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
struct PrimaryRetain(CUdevice);

impl Releasable<Driver> for PrimaryRetain {
    fn release(self, driver: &Driver) -> Result<()> {
        driver.release_primary_context(self.0)
    }
}

/// Owns one driver object; gives it back when dropped.
pub struct Owned<H, D = Driver>
where
    H: Releasable<D>,
{
    handle: H,
    driver: Arc<D>,
    /// False once the object was given back or forgotten: the drop then has nothing to do.
    live: bool,
}

pub type OwnedStream = Owned<Stream>;
pub type OwnedEvent = Owned<Event>;

impl<H: Releasable<D>, D> Owned<H, D> {
    /// Takes ownership of `handle`, which `driver` has just created and nobody else owns.
    pub fn adopt(driver: &Arc<D>, handle: H) -> Self {
        Owned {
            handle,
            driver: Arc::clone(driver),
            live: true,
        }
    }

    /// The object's handle, to lend to driver calls while this owner lives.
    #[inline]
    pub fn handle(&self) -> H {
        self.handle
    }

    /// Gives the object back now, with the driver's answer.
    pub fn release(mut self) -> Result<()> {
        self.release_now()
    }

    /// Lets go of the object without giving it back: something else has taken it or will (a
    /// released context takes what was created in it).
    pub fn forget(mut self) -> H {
        self.live = false;
        self.handle
    }

    fn release_now(&mut self) -> Result<()> {
        self.live = false;
        self.handle.release(&self.driver)
    }
}

impl<H: Releasable<D>, D> Drop for Owned<H, D> {
    fn drop(&mut self) {
        if !self.live {
            return;
        }
        match self.release_now() {
            Ok(()) => {}
            // The driver's exit handler ran first and gave back everything already.
            Err(e) if e.code == codes::DEINITIALIZED => {}
            Err(e) => log::debug!("cuda: giving back a dropped driver object: {e}"),
        }
    }
}

impl OwnedStream {
    pub fn create(driver: &Arc<Driver>) -> Result<Self> {
        Ok(Owned::adopt(driver, driver.create_stream()?))
    }
}

/// A device's primary context, retained once; released when dropped.
pub struct PrimaryContext {
    context: Context,
    retain: Owned<PrimaryRetain>,
}

impl PrimaryContext {
    pub fn retain(driver: &Arc<Driver>, device: CUdevice) -> Result<Self> {
        let context = driver.retain_primary_context(device)?;
        Ok(PrimaryContext {
            context,
            retain: Owned::adopt(driver, PrimaryRetain(device)),
        })
    }

    #[inline]
    pub fn handle(&self) -> Context {
        self.context
    }

    /// Releases the retain now, with the driver's answer.
    pub fn release(self) -> Result<()> {
        self.retain.release()
    }

    /// Lets go without releasing: the driver released the context itself (it shut down).
    pub fn forget(self) {
        self.retain.forget();
    }
}

/// A module loaded into a context; unloaded when dropped.
pub struct OwnedModule {
    context: Context,
    module: Owned<Module>,
}

impl OwnedModule {
    /// Loads a cubin or NUL-terminated PTX into `context`, which must be current.
    pub fn load(driver: &Arc<Driver>, context: Context, image: &[u8]) -> Result<Self> {
        let module = driver.load_module(image)?;
        Ok(OwnedModule {
            context,
            module: Owned::adopt(driver, module),
        })
    }

    #[inline]
    pub fn handle(&self) -> Module {
        self.module.handle()
    }

    /// Unloads the module now, with the driver's answer; its context must be current.
    pub fn unload(mut self) -> Result<()> {
        self.module.release_now()
    }
}

impl Drop for OwnedModule {
    fn drop(&mut self) {
        if self.module.live {
            // The driver unloads from the current context, and a drop may run on any thread;
            // a failure here shows in the unload that follows.
            let _ = self.module.driver.set_current(self.context);
        }
        // The field's own drop unloads it.
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::driver::DriverError;
    use std::sync::Mutex;
    use sync_util::lock;

    /// Records what it gives back; fails each release with `answer` when set.
    #[derive(Default)]
    struct Fake {
        released: Mutex<Vec<u32>>,
        answer: Mutex<Option<u32>>,
    }

    impl Releasable<Fake> for u32 {
        fn release(self, driver: &Fake) -> Result<()> {
            lock(&driver.released).push(self);
            match *lock(&driver.answer) {
                None => Ok(()),
                Some(code) => Err(DriverError {
                    call: "cuStreamDestroy",
                    code,
                    name: "CUDA_ERROR_TEST".into(),
                }),
            }
        }
    }

    #[test]
    fn a_dropped_owner_gives_its_object_back_once() {
        let fake = Arc::new(Fake::default());
        let owner = Owned::adopt(&fake, 7u32);
        assert_eq!(owner.handle(), 7);
        assert!(lock(&fake.released).is_empty());
        drop(owner);
        assert_eq!(*lock(&fake.released), [7]);
    }

    #[test]
    fn an_explicit_release_answers_and_the_drop_does_not_repeat_it() {
        let fake = Arc::new(Fake::default());
        *lock(&fake.answer) = Some(400);
        let error = Owned::adopt(&fake, 3u32).release().unwrap_err();
        assert_eq!(error.code, 400);
        assert_eq!(*lock(&fake.released), [3]);
    }

    #[test]
    fn a_forgotten_object_is_not_given_back() {
        let fake = Arc::new(Fake::default());
        assert_eq!(Owned::adopt(&fake, 5u32).forget(), 5);
        assert!(lock(&fake.released).is_empty());
    }

    #[test]
    fn a_drop_after_the_driver_shut_down_or_failing_is_quiet() {
        let fake = Arc::new(Fake::default());
        for code in [codes::DEINITIALIZED, 400] {
            *lock(&fake.answer) = Some(code);
            drop(Owned::adopt(&fake, code));
        }
        assert_eq!(*lock(&fake.released), [codes::DEINITIALIZED, 400]);
    }
}
