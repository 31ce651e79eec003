//! Facts about the running process that the core, the plugins and the driver bindings all need,
//! kept below them so none has to depend on another for them.
//!
//! - [`loaded_file`] / [`object_base`] / [`symbol_at`]: which file the dynamic loader took code
//!   from, and the name a function is exported under.
//! - [`process`]: which process state was set up in (a forked child is not its parent).
//! - [`clock`]: the host clock device timings are reported on.
//! - [`address_map`]: hash maps keyed by addresses, for the hot paths.
//! - [`kernel_faults`]: the catcher that turns a fault in a kernel's code (on the host: an
//!   emulated GPU's twin, or the host plugin's image) into a report instead of a bare crash.

pub mod address_map;
pub mod clock;
pub mod kernel_faults;
mod loaded_file;
pub mod process;

pub use loaded_file::{loaded_file, object_base, symbol_at};
