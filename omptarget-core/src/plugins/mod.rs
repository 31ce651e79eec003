//! Finding, checking and calling plugin libraries.

pub mod discovery;
pub mod file_check;
pub(crate) mod library;
pub mod loader;

pub use discovery::{Candidate, Origin};
pub use library::PluginLibrary;
pub use loader::{load_plugins, open_plugins, PluginStatus};
pub(crate) use loader::{OpenedPlugin, PluginReport};
