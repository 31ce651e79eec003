use abi_stable::StableAbi;
use std::fmt;

/// Version of the plugin ABI. A different `major` is incompatible; a higher `minor` only adds
/// optional module fields.
#[repr(C)]
#[derive(StableAbi, Copy, Clone, Debug, PartialEq, Eq)]
pub struct AbiVersion {
    pub major: u32,
    pub minor: u32,
}

/// The ABI version this crate implements.
pub const ABI_VERSION: AbiVersion = AbiVersion { major: 1, minor: 0 };

/// Name of the plain C symbol (type [`AbiVersion`]) every plugin exports.
pub const ABI_VERSION_SYMBOL: &str = "omptarget_plugin_abi_version";

impl AbiVersion {
    /// Whether a core implementing `self` can use a plugin built for `plugin`.
    pub fn accepts(self, plugin: AbiVersion) -> bool {
        self.major == plugin.major
    }
}

impl fmt::Display for AbiVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}
