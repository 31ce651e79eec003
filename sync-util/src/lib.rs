//! Locks that stay usable after a panic on another thread.
//!
//! The runtime, its plugins and the emulated drivers catch panics at their C boundaries and
//! turn them into error results, and they keep serving the program's other threads. A
//! `Mutex::lock().unwrap()` would turn that one caught panic into a panic of every later call
//! that takes the same lock (the panic poisoned it). Every critical section of these crates
//! leaves its data consistent between any two statements that can panic (one insert, one
//! remove, one counter), so the data behind a poisoned lock is used as it is.
//!
//! One copy for the whole workspace: use these instead of `.lock().unwrap()`,
//! `.read().unwrap()`, `.write().unwrap()` and `Condvar::wait(..).unwrap()`.

use std::sync::{
    Condvar, Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard,
    WaitTimeoutResult,
};
use std::time::Duration;

/// Locks `mutex`, also after a panicking thread poisoned it.
#[inline]
pub fn lock<T: ?Sized>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The value of a mutex no one else holds any more, poisoned or not.
#[inline]
pub fn into_inner<T>(mutex: Mutex<T>) -> T {
    mutex.into_inner().unwrap_or_else(PoisonError::into_inner)
}

/// The value of a mutex borrowed mutably (no locking needed), poisoned or not.
#[inline]
pub fn get_mut<T: ?Sized>(mutex: &mut Mutex<T>) -> &mut T {
    mutex.get_mut().unwrap_or_else(PoisonError::into_inner)
}

/// Shared access to `lock`'s data, also after a panicking writer poisoned it.
#[inline]
pub fn read<T: ?Sized>(lock: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(PoisonError::into_inner)
}

/// Exclusive access to `lock`'s data, also after a panicking writer poisoned it.
#[inline]
pub fn write<T: ?Sized>(lock: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(PoisonError::into_inner)
}

/// `Condvar::wait`, keeping the guard if the mutex is poisoned meanwhile.
#[inline]
pub fn wait<'a, T>(changed: &Condvar, guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
    changed.wait(guard).unwrap_or_else(PoisonError::into_inner)
}

/// `Condvar::wait_while`: waits while `blocked` holds, keeping the guard if the mutex is
/// poisoned meanwhile (and, unlike `wait_while(..).unwrap_or_else(..)`, still returning only
/// once `blocked` is false).
#[inline]
pub fn wait_while<'a, T>(
    changed: &Condvar,
    mut guard: MutexGuard<'a, T>,
    mut blocked: impl FnMut(&mut T) -> bool,
) -> MutexGuard<'a, T> {
    while blocked(&mut *guard) {
        guard = wait(changed, guard);
    }
    guard
}

/// `Condvar::wait_timeout`, keeping the guard if the mutex is poisoned meanwhile.
#[inline]
pub fn wait_timeout<'a, T>(
    changed: &Condvar,
    guard: MutexGuard<'a, T>,
    timeout: Duration,
) -> (MutexGuard<'a, T>, WaitTimeoutResult) {
    changed
        .wait_timeout(guard, timeout)
        .unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// Poisons `mutex` by panicking while holding it, on another thread.
    fn poison<T: Send + 'static>(mutex: &Arc<Mutex<T>>) {
        let held = Arc::clone(mutex);
        let joined = std::thread::spawn(move || {
            let _guard = held.lock().unwrap();
            panic!("a panic while the lock is held (expected by the test)");
        })
        .join();
        assert!(joined.is_err());
        assert!(mutex.is_poisoned());
    }

    #[test]
    fn a_poisoned_mutex_is_recovered_with_its_data() {
        let mutex = Arc::new(Mutex::new(vec![1, 2]));
        poison(&mutex);
        // What `.lock().unwrap()` would do: panic on every later call.
        assert!(mutex.lock().is_err());
        lock(&mutex).push(3);
        assert_eq!(*lock(&mutex), [1, 2, 3]);
        // It stays poisoned; every later call still gets through.
        assert!(mutex.is_poisoned());
        assert_eq!(lock(&mutex).len(), 3);
        let mut owned = Arc::try_unwrap(mutex).unwrap();
        get_mut(&mut owned).push(4);
        assert_eq!(into_inner(owned), [1, 2, 3, 4]);
    }

    #[test]
    fn a_poisoned_rwlock_is_recovered() {
        let rw = Arc::new(RwLock::new(7));
        let held = Arc::clone(&rw);
        let joined = std::thread::spawn(move || {
            let _guard = held.write().unwrap();
            panic!("a panic while writing (expected by the test)");
        })
        .join();
        assert!(joined.is_err() && rw.is_poisoned());
        *write(&rw) += 1;
        assert_eq!(*read(&rw), 8);
    }

    #[test]
    fn waits_go_on_with_a_poisoned_mutex() {
        let pair = Arc::new((Mutex::new(0u32), Condvar::new()));
        // Poisoned while a waiter sleeps: the waiter wakes up to the poisoned mutex.
        let waiter = {
            let pair = Arc::clone(&pair);
            std::thread::spawn(move || {
                let guard = lock(&pair.0);
                *wait_while(&pair.1, guard, |n| *n == 0)
            })
        };
        let poisoner = {
            let pair = Arc::clone(&pair);
            std::thread::spawn(move || {
                let mut guard = pair.0.lock().unwrap();
                *guard = 5;
                pair.1.notify_all();
                panic!("a panic while the lock is held (expected by the test)");
            })
        };
        assert!(poisoner.join().is_err());
        assert_eq!(waiter.join().unwrap(), 5);
        assert!(pair.0.is_poisoned());
        let guard = lock(&pair.0);
        let (guard, timeout) = wait_timeout(&pair.1, guard, Duration::from_millis(1));
        assert!(timeout.timed_out());
        assert_eq!(*guard, 5);
        drop(guard);
        // A notified plain wait also keeps the guard.
        let notifier = {
            let pair = Arc::clone(&pair);
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(10));
                *lock(&pair.0) = 6;
                pair.1.notify_all();
            })
        };
        let mut guard = lock(&pair.0);
        while *guard != 6 {
            guard = wait(&pair.1, guard);
        }
        drop(guard);
        notifier.join().unwrap();
    }
}
