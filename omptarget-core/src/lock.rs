//! Locks that stay usable after a panic on another thread: the runtime's shared state keeps its
//! invariants between any two statements that can panic, and the runtime must keep serving the
//! program's other threads (a poisoned lock would turn one failure into a failure of every
//! later construct). The helpers are the workspace's one copy, in the sync-util crate.

pub(crate) use sync_util::{into_inner, lock};
