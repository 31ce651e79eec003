use abi_stable::StableAbi;
use std::fmt;

/// Version of the plugin ABI. A different `major` is incompatible; a higher `minor` only adds
/// optional module fields (and new values of the newtype enumerations).
///
/// Every plugin exports one as the plain C static [`ABI_VERSION_SYMBOL`]. The core reads it
/// before looking at anything else in the library, and refuses another major version with a
/// message naming both, e.g. `plugin ABI version 2.0 is incompatible with this runtime's ABI
/// version 1.0 (major versions differ); install a plugin built for ABI 1.x`.
#[repr(C)]
#[derive(StableAbi, Copy, Clone, Debug, PartialEq, Eq)]
pub struct AbiVersion {
    pub major: u32,
    pub minor: u32,
}

/// The ABI version this crate implements. The crate's own version has the same major number
/// (`plugin-api` 1.x is ABI 1.x), because abi_stable's layout check compares crate versions.
pub const ABI_VERSION: AbiVersion = AbiVersion { major: 1, minor: 7 };

/// Name of the plain C symbol (type [`AbiVersion`]) every plugin exports;
/// [`export_plugin!`](crate::export_plugin) defines it.
pub const ABI_VERSION_SYMBOL: &str = "omptarget_plugin_abi_version";

/// Name of the plain C function (ABI 1.4) that answers, before the plugin starts, whether
/// images for a target triple may run on it: `TargetClaim (const uint8_t *triple, size_t len)`.
/// [`export_plugin!`](crate::export_plugin) defines it from
/// [`Plugin::may_run_target`](crate::Plugin::may_run_target).
pub const MAY_RUN_TARGET_SYMBOL: &str = "omptarget_plugin_may_run_target";

impl AbiVersion {
    /// Whether a core implementing `self` can use a plugin built for `plugin`: the same major
    /// version, any minor version.
    pub fn accepts(self, plugin: AbiVersion) -> bool {
        self.major == plugin.major
    }
}

impl fmt::Display for AbiVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}
