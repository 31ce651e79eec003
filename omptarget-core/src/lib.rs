//! omptarget-rs: LLVM's OpenMP offloading runtime (`libomptarget.so`) in Rust.
//!
//! - `entry_points`: the C ABI programs call (one module per API family).
//! - `abi`: the C data layouts those calls receive.
//! - `runtime`, `device`, `registry`: process state; `plugins`: finding and calling plugins.
//! - `mapping` (the table) and `data_ops` (the rules): host-to-device data mapping;
//!   `mapper` expands user-defined mappers; `memory_pool` reuses small device allocations;
//!   `kernel_table` finds a region's kernel without locks.
//! - `info`: `LIBOMPTARGET_INFO` lines in LLVM's wording.
//! - `ompt`: events for OMPT tools.
//! - `inventory`: what `omptarget-info` prints.
//!
//! Modules use only those below them (`scripts/module-cycles.py` checks): at the bottom
//! `panic_boundary`, `json`, `line_output`, `requires`, `info`, `logging` and `profile`, then
//! `plugins`, then `device`, `queue`, `host_openmp`, `interop` and `record_replay::block`, then
//! `device_list`, `runtime`, and on top `entry_points`, the C surface.

pub mod abi;
mod cache_hint;
pub mod config;
pub mod data_ops;
pub mod device;
pub mod device_list;
pub mod entry_points;
pub mod error;
pub mod host_openmp;
pub mod info;
pub mod interop;
pub mod inventory;
mod json;
pub mod kernel_language;
pub mod kernel_table;
mod line_output;
pub mod llvm_release;
pub mod lock;
pub mod logging;
pub mod mapper;
pub mod mapping;
pub mod memory_pool;
pub mod nowait;
pub use offload_image::offload_binary;
pub mod ompt;
mod os_memory;
mod panic_boundary;
pub mod plugins;
pub mod profile;
pub mod queue;
pub mod record_replay;
pub mod registry;
pub mod requires;
pub mod runtime;
