//! Facts about the running process that the core, the plugins and the driver bindings all need,
//! kept below them so none has to depend on another for them.
//!
//! - [`loaded_file`] / [`object_base`]: which file the dynamic loader took code from.
//! - [`process`]: which process state was set up in (a forked child is not its parent).
//! - [`clock`]: the host clock device timings are reported on.
//! - [`address_map`]: hash maps keyed by addresses, for the hot paths.

pub mod address_map;
pub mod clock;
mod loaded_file;
pub mod process;

pub use loaded_file::{loaded_file, object_base};
