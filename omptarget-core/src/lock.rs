//! Locks that stay usable after a panic on another thread: the runtime's shared state keeps its
//! invariants between any two statements that can panic, and the runtime must keep serving the
//! program's other threads (a poisoned lock would turn one failure into a failure of every
//! later construct).

use std::sync::{Mutex, MutexGuard, PoisonError};

pub fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

pub fn into_inner<T>(mutex: Mutex<T>) -> T {
    mutex.into_inner().unwrap_or_else(PoisonError::into_inner)
}
