//! Plain data exchanged across the plugin boundary. Every type is `#[repr(C)]` and `StableAbi`.
//! Enumerations are newtypes over integers so that a value added later is not undefined behaviour
//! in an older reader.

use abi_stable::std_types::{RResult, RSlice, RStr, RString, RVec};
use abi_stable::StableAbi;
use std::fmt;

/// Error returned by every fallible plugin call.
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq)]
pub struct PluginError {
    pub code: ErrorCode,
    pub message: RString,
}

impl PluginError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        PluginError {
            code,
            message: RString::from(message.into()),
        }
    }
    pub fn invalid_argument(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::INVALID_ARGUMENT, message)
    }
    pub fn unsupported(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::UNSUPPORTED, message)
    }
    pub fn failed(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::FAILED, message)
    }
}

impl fmt::Display for PluginError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.message, self.code)
    }
}

impl std::error::Error for PluginError {}

/// Result of a plugin call.
pub type PluginResult<T> = RResult<T, PluginError>;

#[repr(transparent)]
#[derive(StableAbi, Copy, Clone, Debug, PartialEq, Eq)]
pub struct ErrorCode(pub i32);

impl ErrorCode {
    pub const FAILED: ErrorCode = ErrorCode(1);
    pub const INVALID_ARGUMENT: ErrorCode = ErrorCode(2);
    pub const INVALID_DEVICE: ErrorCode = ErrorCode(3);
    pub const OUT_OF_MEMORY: ErrorCode = ErrorCode(4);
    pub const NOT_FOUND: ErrorCode = ErrorCode(5);
    pub const UNSUPPORTED: ErrorCode = ErrorCode(6);
    pub const NOT_INITIALIZED: ErrorCode = ErrorCode(7);
    /// The plugin panicked; the call's effects are unknown.
    pub const PANIC: ErrorCode = ErrorCode(100);
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match *self {
            ErrorCode::FAILED => "failed",
            ErrorCode::INVALID_ARGUMENT => "invalid argument",
            ErrorCode::INVALID_DEVICE => "invalid device",
            ErrorCode::OUT_OF_MEMORY => "out of memory",
            ErrorCode::NOT_FOUND => "not found",
            ErrorCode::UNSUPPORTED => "unsupported",
            ErrorCode::NOT_INITIALIZED => "not initialized",
            ErrorCode::PANIC => "plugin panicked",
            _ => return write!(f, "error code {}", self.0),
        };
        f.write_str(name)
    }
}

/// Kind of memory to allocate, with the values of LLVM's `TargetAllocTy` plus one.
#[repr(transparent)]
#[derive(StableAbi, Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct AllocKind(pub u32);

impl AllocKind {
    /// Memory on the device, not accessible from the host.
    pub const DEVICE: AllocKind = AllocKind(0);
    /// Pinned host memory the device can access.
    pub const HOST: AllocKind = AllocKind(1);
    /// Memory migrated between host and device on demand (managed).
    pub const SHARED: AllocKind = AllocKind(2);
    /// What the runtime uses for mapped data: device memory unless the plugin prefers otherwise.
    pub const DEFAULT: AllocKind = AllocKind(3);
    /// Device memory allocated without blocking running kernels (for device-side malloc pools).
    pub const DEVICE_NON_BLOCKING: AllocKind = AllocKind(4);

    pub fn name(self) -> &'static str {
        match self {
            AllocKind::DEVICE => "device",
            AllocKind::HOST => "host",
            AllocKind::SHARED => "shared",
            AllocKind::DEFAULT => "default",
            AllocKind::DEVICE_NON_BLOCKING => "device-non-blocking",
            _ => "unknown",
        }
    }
}

/// A device image handed to a plugin: the executable bytes (already unwrapped from LLVM's
/// offload-binary container) and what the container said about them.
#[repr(C)]
#[derive(StableAbi, Copy, Clone, Debug)]
pub struct ImageRef<'a> {
    pub bytes: RSlice<'a, u8>,
    /// Target triple from the container, e.g. `x86_64-pc-linux-gnu`; empty if unknown.
    pub triple: RStr<'a>,
    /// Architecture from the container, e.g. `sm_90`, `gfx90a`; empty if none.
    pub arch: RStr<'a>,
}

/// Answer to "can this plugin (or device) run this image?".
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq)]
pub struct ImageCompatibility {
    pub compatible: bool,
    /// Why not, when `compatible` is false; may describe the image when true.
    pub reason: RString,
}

impl ImageCompatibility {
    pub fn yes() -> Self {
        ImageCompatibility {
            compatible: true,
            reason: RString::new(),
        }
    }
    pub fn no(reason: impl Into<String>) -> Self {
        ImageCompatibility {
            compatible: false,
            reason: RString::from(reason.into()),
        }
    }
}

macro_rules! handle_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[repr(transparent)]
        #[derive(StableAbi, Copy, Clone, Debug, PartialEq, Eq, Hash)]
        pub struct $name(pub u64);
    };
}

handle_type!(
    /// A device image loaded on one device.
    ImageHandle
);
handle_type!(
    /// A kernel of a loaded image.
    KernelHandle
);
handle_type!(
    /// An ordered stream of work on one device. [`QueueHandle::SYNC`] means "run synchronously".
    QueueHandle
);
handle_type!(
    /// A point in a queue that other queues or the host can wait for.
    EventHandle
);

impl QueueHandle {
    /// Not a queue: the operation completes before the call returns.
    pub const SYNC: QueueHandle = QueueHandle(0);
}

/// Address and size of a global variable in a loaded image.
#[repr(C)]
#[derive(StableAbi, Copy, Clone, Debug, PartialEq, Eq)]
pub struct GlobalInfo {
    pub address: usize,
    pub size: u64,
}

/// How to launch a kernel.
#[repr(C)]
#[derive(StableAbi, Copy, Clone, Debug, PartialEq, Eq, Default)]
pub struct LaunchConfig {
    /// Requested teams per dimension; 0 means "the plugin decides".
    pub num_teams: [u32; 3],
    /// Requested threads per team per dimension; 0 means "the plugin decides".
    pub thread_limit: [u32; 3],
    /// Bytes of dynamic shared (group) memory per team.
    pub dyn_shared_mem: u32,
    /// Loop trip count of the distribute loop, 0 if unknown.
    pub tripcount: u64,
    /// The compiler's `KernelArgsTy` version. From 3 on, kernels take the implicit launch
    /// environment pointer as their first argument, which the plugin provides.
    pub kernel_args_version: u32,
    /// The `KernelArgsTy` flags word (bit 0: nowait).
    pub flags: u64,
}

/// One property of a device, for inventories and `LIBOMPTARGET_INFO`.
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq)]
pub struct InfoEntry {
    pub key: RString,
    pub value: RString,
}

impl InfoEntry {
    pub fn new(key: impl Into<String>, value: impl ToString) -> Self {
        InfoEntry {
            key: RString::from(key.into()),
            value: RString::from(value.to_string()),
        }
    }
}

/// What a plugin says about itself after `init`.
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq)]
pub struct PluginDescription {
    /// Short name, e.g. `host`, `cuda`.
    pub name: RString,
    pub num_devices: i32,
    /// Why there are no devices, or other notes (driver version, ...). May be empty.
    pub note: RString,
}

/// Convenience: the device info list.
pub type DeviceInfo = RVec<InfoEntry>;
