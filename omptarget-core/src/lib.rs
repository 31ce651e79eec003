//! omptarget-rs: LLVM's OpenMP offloading runtime (`libomptarget.so`) in Rust.
//!
//! - `entry_points`: the C ABI programs call (one module per API family).
//! - `abi`: the C data layouts those calls receive.
//! - `runtime`, `device`, `registry`: process state; `plugins`: finding and calling plugins.
//! - `mapping` (the table) and `data_ops` (the rules): host-to-device data mapping;
//!   `mapper` expands user-defined mappers; `memory_pool` reuses small device allocations;
//!   `kernel_table` finds a region's kernel without locks.
//! - `observe`: what the runtime reports: `info` (`LIBOMPTARGET_INFO` lines in LLVM's
//!   wording), `logging`, `profile`, `ompt` (events for OMPT tools) and `inventory` (what
//!   `omptarget-info` prints).
//!
//! Modules use only those below them (`scripts/module-cycles.py` checks): at the bottom
//! `panic_boundary`, `json`, `line_output`, `requires`, `info`, `logging`, `profile` and `ompt`, then
//! `plugins`, then `device`, `queue`, `host_openmp`, `interop` and `record_replay::block`, then
//! `device_list`, `runtime`, and on top `entry_points`, the C surface.
//!
//! Only what other crates use is `pub` (the plugin loader for `omptarget-plugin-check` and
//! `omptarget-mpi-device`, the entry-table parser for the fuzzer, what `omptarget-info`
//! prints); the rest is `pub(crate)`.

// A `pub` item no other crate can reach would read as part of the crate's surface.
#![warn(unreachable_pub)]

pub mod abi;
mod cache_hint;
pub mod config;
mod data_ops;
mod device;
mod device_list;
// The C entry points are exported by `#[no_mangle]` and exports.map, not by Rust paths; their
// `pub` is what the exports test looks for.
#[allow(unreachable_pub)]
mod entry_points;
mod error;
mod host_openmp;
mod interop;
mod json;
mod kernel_language;
mod kernel_table;
mod line_output;
mod llvm_release;
mod lock;
mod mapper;
mod mapping;
mod memory_pool;
mod nowait;
mod observe;
// Other crates call these at their old top-level paths.
pub use observe::{info, inventory, logging};
pub use offload_image::offload_binary;
mod os_memory;
mod panic_boundary;
pub mod plugins;
mod queue;
mod record_replay;
mod registry;
mod requires;
pub mod runtime;
