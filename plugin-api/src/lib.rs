//! The ABI between the omptarget-rs core runtime (`libomptarget.so`) and its device plugins
//! (`libomptarget.rtl.<name>.so`).
//!
//! A plugin is a shared library that exports two things:
//! - [`ABI_VERSION_SYMBOL`]: a plain C static of type [`AbiVersion`]. The core reads it first, so a
//!   plugin built for another major version is refused with a message naming both versions, before
//!   any layout-dependent code runs.
//! - an `abi_stable` root module of type [`PluginModule`], a prefix type: fields added in later minor
//!   versions come after the last prefix field, so a newer core reads them as `None` from an older
//!   plugin, and an older core ignores them in a newer plugin.
//!
//! Plugin authors implement the safe [`Plugin`] trait and call [`export_plugin!`]; the generated
//! shims catch panics and turn them into [`PluginError`]s so none crosses the C boundary. A
//! plugin whose work is per device implements [`DevicePlugin`] and a [`Device`] instead, and
//! gets [`Plugin`]'s forwarding and shared argument rules from this crate.
//!
//! Device numbers in this ABI are local to the plugin (0..num_devices); the core maps them to the
//! global OpenMP device numbers: plugins in load order, then each plugin's devices in its order.
//!
//! # Writing a plugin
//!
//! ```ignore
//! // Crate `omptarget_rtl_mydev`, crate-type = ["cdylib"], built with panic = "unwind";
//! // installed as `libomptarget.rtl.mydev.so` beside `libomptarget.so`.
//! use plugin_api::*;
//!
//! pub struct MyPlugin { /* driver, devices */ }
//!
//! impl Plugin for MyPlugin {
//!     fn init() -> Result<Self, PluginError> { /* ... */ }
//!     // ... every other method of the trait
//! }
//!
//! plugin_api::export_plugin!(MyPlugin);
//! ```
//!
//! Rules that keep a plugin loadable:
//! - Depend on a 1.x release of this crate, under its own name. abi_stable compares the crate
//!   name and version of every type: any 1.y matches 1.x.
//! - Use abi_stable only through the re-export [`abi_stable`] (0.11). A plugin built with
//!   another abi_stable is refused.
//! - Check device numbers and return [`ErrorCode::INVALID_DEVICE`]; write error messages for
//!   users; copy borrowed data you keep.
//!
//! The guide for plugin authors, with the order of calls, threading, ownership and versioning
//! rules, is `docs/plugin-abi.md` in the omptarget-rs repository. The example plugin is
//! `examples/plugin-example/`, and the conformance checker is `omptarget-plugin-check`.

mod devices;
mod logging;
mod module;
mod plugin;
mod shims;
mod types;
mod version;

pub use abi_stable;
pub use devices::{check_fill, device_at, no_such_device, Device, DevicePlugin};
pub use logging::{info, HostServices, LogLevel};
pub use module::{PluginModule, PluginModuleRef};
pub use plugin::{may_run_target_of, Plugin, PluginSlot, SlottedPlugin};
pub use types::*;
pub use version::{AbiVersion, ABI_VERSION, ABI_VERSION_SYMBOL, MAY_RUN_TARGET_SYMBOL};

/// Exports a [`Plugin`] implementation as an omptarget plugin library.
///
/// Use it once, in the crate root of a `cdylib` named `omptarget_rtl_<name>`:
/// `plugin_api::export_plugin!(MyPlugin);`
///
/// It generates:
/// - the static [`PluginSlot`] that holds the single instance (created by the first `init`);
/// - `omptarget_plugin_abi_version`, the plain C static [`ABI_VERSION`] that the core checks
///   first;
/// - the abi_stable root module function (exported under abi_stable's loader symbol), returning
///   [`PluginModule::for_plugin`]: one panic-catching shim per [`Plugin`] method.
#[macro_export]
macro_rules! export_plugin {
    ($plugin:ty) => {
        impl $crate::SlottedPlugin for $plugin {
            fn slot() -> &'static $crate::PluginSlot<Self> {
                static SLOT: $crate::PluginSlot<$plugin> = $crate::PluginSlot::new();
                &SLOT
            }
        }

        /// The plugin ABI version this library was built for. Read by the core before anything
        /// else in this library.
        #[no_mangle]
        pub static omptarget_plugin_abi_version: $crate::AbiVersion = $crate::ABI_VERSION;

        /// Whether images for a target triple may run on this plugin (ABI 1.4); the core calls
        /// it before it checks the function table or starts the plugin.
        #[no_mangle]
        pub unsafe extern "C" fn omptarget_plugin_may_run_target(
            triple: *const u8,
            len: usize,
        ) -> $crate::TargetClaim {
            // SAFETY: the core passes a triple's bytes and their length.
            unsafe { $crate::may_run_target_of::<$plugin>(triple, len) }
        }

        /// The abi_stable root module of this plugin: the table of C functions.
        #[$crate::abi_stable::export_root_module]
        pub fn omptarget_plugin_root_module() -> $crate::PluginModuleRef {
            $crate::PluginModule::for_plugin::<$plugin>()
        }
    };
}
