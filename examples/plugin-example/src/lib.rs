//! `libomptarget.rtl.example.so`: an example omptarget-rs device plugin, meant to be copied as
//! the starting point of a vendor's plugin.
//!
//! The device it drives is a *simulated accelerator*: it runs clang's x86_64 offload images
//! (`-fopenmp-targets=x86_64-pc-linux-gnu`, x86-64 ELF shared objects) but behaves like a GPU
//! where the plugin contract is concerned:
//!
//! - it has its own memory: every allocation is tracked, copies are checked against live
//!   allocations and image globals, and a bad `free` is an error ([`memory`]);
//! - its queues are asynchronous: each one is a worker thread running operations in submission
//!   order, with events between queues and a pool of idle queues ([`queue`]);
//! - images are copied and loaded per device, kernels and globals are found by name ([`image`]);
//! - kernels are called with one pointer-sized value per argument ([`launch`]).
//!
//! The plugin is written as plugin-api's two traits: [`plugin::ExamplePlugin`] implements
//! `DevicePlugin` (the plugin-wide calls and the lookup of a device by number) and
//! [`device::ExampleDevice`] implements `Device` (the calls that name a device, without its
//! number). plugin-api turns the pair into the `Plugin` that `export_plugin!` exports: it checks
//! device numbers and the argument rules every plugin shares, so neither file repeats them.
//!
//! Porting to a real device, a vendor **replaces** the driver calls: the allocator in
//! `memory.rs` (`cuMemAlloc`-like), the loader and symbol lookup in `image.rs`
//! (`cuModuleLoadData`, `cuModuleGetFunction`, `cuModuleGetGlobal`), the copies and launch in
//! `device.rs`/`launch.rs` (`cuMemcpyAsync`, `cuLaunchKernel`), and the worker threads in
//! `queue.rs` (driver streams and events). They **keep** the structure: the two traits, the
//! handle tables that turn stale or foreign handles into errors, the queue pool, the
//! first-error-wins reporting at `synchronize`, and `export_plugin!` in this file.

pub mod device;
pub mod image;
pub mod launch;
pub mod memory;
pub mod plugin;
pub mod queue;

pub use plugin::ExamplePlugin;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

plugin_api::export_plugin!(ExamplePlugin);

/// Locks a mutex, recovering the data if another thread panicked while holding it: every
/// critical section here leaves the state consistent, and one failed call must not turn every
/// later call into a panic.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Waits on `changed` while `blocked` holds, with the same poisoning rule as [`lock`].
pub(crate) fn wait_while<'a, T>(
    mutex: &'a Mutex<T>,
    changed: &Condvar,
    blocked: impl FnMut(&mut T) -> bool,
) -> MutexGuard<'a, T> {
    let guard = lock(mutex);
    changed
        .wait_while(guard, blocked)
        .unwrap_or_else(PoisonError::into_inner)
}
