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
pub mod kernel_language;
pub mod kernel_table;
pub mod llvm_release;
pub mod lock;
pub mod logging;
pub mod mapper;
pub mod mapping;
pub mod memory_pool;
pub mod nowait;
pub use plugin_api::offload_binary;
pub mod ompt;
mod os_memory;
pub mod plugins;
pub mod profile;
pub mod queue;
pub mod record_replay;
pub mod registry;
pub mod runtime;
