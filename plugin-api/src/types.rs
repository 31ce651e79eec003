//! Plain data exchanged across the plugin boundary. Every type is `#[repr(C)]` and `StableAbi`.
//! Enumerations are newtypes over integers so that a value added later is not undefined behaviour
//! in an older reader: readers must accept values they do not know.
//!
//! abi_stable checks the layout of each of these types when a plugin loads, so none of them can
//! change within ABI major version 1. New constant values of the newtype enumerations are the
//! only additions possible.

use abi_stable::std_types::{RResult, RSlice, RStr, RString, RVec};
use abi_stable::StableAbi;
use std::fmt;

/// Error returned by every fallible plugin call.
///
/// The core shows `message` to users in context, for example `omptarget error: allocation of
/// 4096 bytes on device 2 failed: <message>`. Write one line that names the thing that failed
/// and why (with the driver's error name); the core adds the operation and the global device
/// number. `Display` prints `<message> (<code>)`.
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq)]
pub struct PluginError {
    pub code: ErrorCode,
    pub message: RString,
}

impl PluginError {
    /// An error with any code.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        PluginError {
            code,
            message: RString::from(message.into()),
        }
    }
    /// [`ErrorCode::INVALID_ARGUMENT`].
    pub fn invalid_argument(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::INVALID_ARGUMENT, message)
    }
    /// [`ErrorCode::UNSUPPORTED`].
    pub fn unsupported(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::UNSUPPORTED, message)
    }
    /// [`ErrorCode::FAILED`].
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

/// Result of a plugin call, as it crosses the C boundary (`RResult`, abi_stable's FFI-safe
/// `Result`; `.into_result()` converts it).
pub type PluginResult<T> = RResult<T, PluginError>;

/// What kind of failure a [`PluginError`] reports. An open set: a reader must accept values it
/// does not know (`Display` prints them as `error code N`). The current core does not act on
/// the code, only on the failure; tools such as the conformance checker and later cores do, so
/// return the right one.
#[repr(transparent)]
#[derive(StableAbi, Copy, Clone, Debug, PartialEq, Eq)]
pub struct ErrorCode(pub i32);

impl ErrorCode {
    /// A driver or device failure not covered by another code.
    pub const FAILED: ErrorCode = ErrorCode(1);
    /// An unknown handle or address, an unknown allocation kind, a malformed image, a size that
    /// does not match.
    pub const INVALID_ARGUMENT: ErrorCode = ErrorCode(2);
    /// A device number outside `0..num_devices`.
    pub const INVALID_DEVICE: ErrorCode = ErrorCode(3);
    /// Device memory or another resource is exhausted.
    pub const OUT_OF_MEMORY: ErrorCode = ErrorCode(4);
    /// A kernel or global name is not in the image.
    pub const NOT_FOUND: ErrorCode = ErrorCode(5);
    /// A valid request this plugin or device cannot do (an image for another architecture, an
    /// allocation kind it lacks).
    pub const UNSUPPORTED: ErrorCode = ErrorCode(6);
    /// A device used before `init_device`, or no driver. The shims also return it for any call
    /// made before a successful `init`.
    pub const NOT_INITIALIZED: ErrorCode = ErrorCode(7);
    /// The plugin panicked; the call's effects are unknown. Set by the shims only.
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

/// Kind of memory to allocate, with the values of LLVM's `TargetAllocTy` plus one. An open set:
/// return an error for a value you do not know.
#[repr(transparent)]
#[derive(StableAbi, Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct AllocKind(pub u32);

impl AllocKind {
    /// Memory on the device, not accessible from the host (`llvm_omp_target_alloc_device`).
    pub const DEVICE: AllocKind = AllocKind(0);
    /// Pinned host memory the device can access (`llvm_omp_target_alloc_host`).
    pub const HOST: AllocKind = AllocKind(1);
    /// Memory migrated between host and device on demand (managed;
    /// `llvm_omp_target_alloc_shared`).
    pub const SHARED: AllocKind = AllocKind(2);
    /// What the runtime uses for mapped data and `omp_target_alloc`: device memory unless the
    /// plugin prefers otherwise. The core rounds small requests (up to
    /// `LIBOMPTARGET_MEMORY_MANAGER_THRESHOLD`, 8 KiB by default) up to a power of two and reuses
    /// those blocks until shutdown.
    pub const DEFAULT: AllocKind = AllocKind(3);
    /// Device memory allocated without blocking running kernels (for device-side malloc pools).
    /// Not requested by the current core.
    pub const DEVICE_NON_BLOCKING: AllocKind = AllocKind(4);

    /// Lower-case name for messages (`unknown` for a value not listed here).
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
///
/// Borrowed for the duration of the call only: copy what you keep.
#[repr(C)]
#[derive(StableAbi, Copy, Clone, Debug)]
pub struct ImageRef<'a> {
    pub bytes: RSlice<'a, u8>,
    /// Target triple from the container, e.g. `x86_64-pc-linux-gnu`; empty if unknown.
    pub triple: RStr<'a>,
    /// Architecture from the container, e.g. `sm_90`, `gfx90a`; empty if none.
    pub arch: RStr<'a>,
}

/// One `declare target indirect` function of a loaded image (ABI 1.3): the host function's
/// address, as the program's function pointers hold it, and the device function's address.
#[repr(C)]
#[derive(StableAbi, Copy, Clone, Debug, PartialEq, Eq)]
pub struct IndirectCall {
    pub host: u64,
    pub device: u64,
}

/// What a device's queues promise the core (ABI 1.4), as bits. An open set: a core ignores bits
/// it does not know, and a plugin sets only the bits whose promise it keeps.
#[repr(transparent)]
#[derive(StableAbi, Copy, Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct DeviceTraits(pub u64);

impl DeviceTraits {
    /// No promise: work may still run after the call that submitted it returns.
    pub const NONE: DeviceTraits = DeviceTraits(0);
    /// Every copy, launch and event operation has completed when the call that submitted it
    /// returns, whatever the queue. The core then records no events for other queues to wait
    /// for, asks no queue whether it is done and waits for none.
    pub const QUEUES_COMPLETE_ON_SUBMISSION: DeviceTraits = DeviceTraits(1);
    /// The device's addresses (allocations, globals) are addresses of the process
    /// that loaded the plugin, readable and writable by it (the host plugin). Code that moves
    /// data for such a device may then read and write its memory directly: the MPI device
    /// process receives copies straight into it.
    pub const MEMORY_IN_PROCESS: DeviceTraits = DeviceTraits(2);
    /// ABI 1.7: map host data in place (zero-copy), as for a program that requires
    /// `unified_shared_memory`: the device reaches host memory and the plugin judges that
    /// copying would only cost (an APU with XNACK, LLVM's automatic zero-copy; or the user
    /// asked for it). Maps with the `close` modifier and `declare target` variables still get
    /// device copies.
    pub const ZERO_COPY_MAPS: DeviceTraits = DeviceTraits(4);

    pub fn contains(self, other: DeviceTraits) -> bool {
        self.0 & other.0 == other.0
    }
}

impl std::ops::BitOr for DeviceTraits {
    type Output = DeviceTraits;
    fn bitor(self, other: DeviceTraits) -> DeviceTraits {
        DeviceTraits(self.0 | other.0)
    }
}

/// The device's own timing of one queued copy or launch (ABI 1.5), on the host's clock: nanoseconds
/// of `CLOCK_MONOTONIC`. A device with a clock of its own maps it onto the host's and says how far
/// that mapping may be off.
#[repr(C)]
#[derive(StableAbi, Copy, Clone, Debug, PartialEq, Eq, Default)]
pub struct WorkTime {
    /// When the device started the operation.
    pub start_ns: u64,
    /// When the device finished it.
    pub end_ns: u64,
    /// How far either time may be off, either way, from mapping the device's clock onto the
    /// host's (0 for a device that reads the host's clock).
    pub uncertainty_ns: u64,
}

/// Whether a plugin may run images built for a target triple, answered before it starts
/// (ABI 1.4).
#[repr(transparent)]
#[derive(StableAbi, Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct TargetClaim(pub u32);

impl TargetClaim {
    /// The plugin cannot tell without starting: the core starts it and asks `check_image`.
    pub const UNKNOWN: TargetClaim = TargetClaim(0);
    /// Images for this target never run here: the core does not start the plugin for them.
    pub const NO: TargetClaim = TargetClaim(1);
    /// Images for this target may run here (`check_image` decides, after start).
    pub const YES: TargetClaim = TargetClaim(2);

    /// `YES` for a triple whose architecture (its first component) starts with one of
    /// `architectures`, `NO` for another triple, `UNKNOWN` for an empty one (an image without
    /// an offload container names none).
    pub fn for_architectures(triple: &str, architectures: &[&str]) -> TargetClaim {
        let arch = triple.split('-').next().unwrap_or_default();
        if arch.is_empty() {
            TargetClaim::UNKNOWN
        } else if architectures.iter().any(|a| arch.starts_with(a)) {
            TargetClaim::YES
        } else {
            TargetClaim::NO
        }
    }
}

/// Answer to "can this plugin (or device) run this image?".
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq)]
pub struct ImageCompatibility {
    pub compatible: bool,
    /// Why not, when `compatible` is false; may describe the image when true. Shown to users:
    /// name the image's architecture and the device's.
    pub reason: RString,
}

impl ImageCompatibility {
    /// Compatible, with no reason.
    pub fn yes() -> Self {
        ImageCompatibility {
            compatible: true,
            reason: RString::new(),
        }
    }
    /// Not compatible, and why.
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
    /// A device image loaded on one device. Like every handle: an opaque value the plugin
    /// chooses (an index, a pointer), meaningful only with the device that made it. Avoid 0, so
    /// that a zero handle is always an error.
    ImageHandle
);
handle_type!(
    /// A kernel of a loaded image, valid until the image is unloaded.
    KernelHandle
);
handle_type!(
    /// An ordered stream of work on one device: operations on one queue execute in submission
    /// order. [`QueueHandle::SYNC`] (0) means "run synchronously"; `create_queue` never returns
    /// it.
    QueueHandle
);
handle_type!(
    /// A point in a queue that other queues of the same device or the host can wait for.
    EventHandle
);

impl QueueHandle {
    /// Not a queue: the operation (a kernel launch included) completes before the call returns,
    /// and its failure is the call's error.
    pub const SYNC: QueueHandle = QueueHandle(0);
}

/// Address and size of a global variable in a loaded image. The core maps the host variable to
/// `address` for as long as the image is loaded.
#[repr(C)]
#[derive(StableAbi, Copy, Clone, Debug, PartialEq, Eq)]
pub struct GlobalInfo {
    pub address: usize,
    pub size: u64,
}

/// A device's memory, in bytes (ABI 1.1).
#[repr(C)]
#[derive(StableAbi, Copy, Clone, Debug, PartialEq, Eq, Default)]
pub struct MemoryInfo {
    /// Bytes the device could still allocate now.
    pub free: u64,
    /// Bytes of memory the device has.
    pub total: u64,
}

/// How to launch a kernel, from the compiler's `KernelArgsTy` and the `num_teams`/`thread_limit`
/// arguments of `__tgt_target_kernel`.
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
    /// The compiler's `KernelArgsTy` version (the core passes at most 3). From 3 on, kernels
    /// take the implicit launch environment pointer as their first argument. The plugin provides
    /// it and prepends it to the arguments it was given. What the pointer must hold depends on
    /// the device runtime. The host plugin passes 0. The CUDA plugin passes an environment with
    /// a team-reduction buffer, or all ones when the kernel needs none.
    pub kernel_args_version: u32,
    /// The `KernelArgsTy` flags word (bit 0: nowait). Nowait needs no action from the plugin: the
    /// core synchronises the construct's queue before returning anyway. The core also sets
    /// [`LaunchConfig::LLVM22_PROGRAM`] here.
    pub flags: u64,
}

impl LaunchConfig {
    /// A bit of `flags` the core sets (LLVM's `KernelArgsTy` leaves bits 2 to 63 unused): the
    /// kernel's program was built by clang 20 or newer and expects LLVM 22's runtime
    /// behaviour, such as the wording of its `LIBOMPTARGET_INFO` lines (see
    /// [`info::kernel_launch`](crate::info::kernel_launch)). Plugins that do not know it
    /// ignore it.
    pub const LLVM22_PROGRAM: u64 = 1 << 63;

    /// Whether the kernel's program expects LLVM 22's behaviour.
    pub fn is_llvm22_program(&self) -> bool {
        self.flags & Self::LLVM22_PROGRAM != 0
    }
}

/// The info key that says whether a device's kernels may use any host memory of the process,
/// including pageable memory the driver neither allocated nor page-locked (HMM or ATS): `1` or
/// `0`. Where it is `0` and the program requires `unified_shared_memory`, the core warns when
/// the device starts, since the program's kernels will use host addresses the device cannot
/// reach.
pub const PAGEABLE_MEMORY_ACCESS: &str = "pageable memory access";

/// One property of a device, for inventories (`omptarget-info`, `__tgt_print_device_info`) and
/// OMPT (the key `compute unit kind`).
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq)]
pub struct InfoEntry {
    pub key: RString,
    pub value: RString,
}

impl InfoEntry {
    /// An entry from any key and any displayable value.
    pub fn new(key: impl Into<String>, value: impl ToString) -> Self {
        InfoEntry {
            key: RString::from(key.into()),
            value: RString::from(value.to_string()),
        }
    }
}

/// What a plugin says about itself after `init`. `omptarget-info` shows it.
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq)]
pub struct PluginDescription {
    /// Short name, e.g. `host`, `cuda`. Informative: the core names a plugin after its file
    /// (`libomptarget.rtl.<name>.so`).
    pub name: RString,
    /// Same value as `num_devices()`.
    pub num_devices: i32,
    /// Why there are no devices, or other notes (driver version, ...). May be empty.
    pub note: RString,
}

/// Convenience: the device info list.
pub type DeviceInfo = RVec<InfoEntry>;

/// A foreign runtime an interop object can stand for (ABI 1.2): LLVM's `tgt_foreign_runtime_id_t`,
/// whose 1 to 6 are the OpenMP spec's `omp_ifr_*` values. An open set: accept values you do not
/// know.
#[repr(transparent)]
#[derive(StableAbi, Copy, Clone, Debug, PartialEq, Eq, Default)]
pub struct ForeignRuntime(pub i32);

impl ForeignRuntime {
    /// No foreign runtime: the interop object carries no native handles.
    pub const NONE: ForeignRuntime = ForeignRuntime(0);
    /// The CUDA runtime API (`omp_ifr_cuda`). LLVM's CUDA plugin answers this one, with the
    /// primary context, which the CUDA runtime shares.
    pub const CUDA: ForeignRuntime = ForeignRuntime(1);
    /// The CUDA driver API (`omp_ifr_cuda_driver`).
    pub const CUDA_DRIVER: ForeignRuntime = ForeignRuntime(2);
    pub const OPENCL: ForeignRuntime = ForeignRuntime(3);
    pub const SYCL: ForeignRuntime = ForeignRuntime(4);
    pub const HIP: ForeignRuntime = ForeignRuntime(5);
    pub const LEVEL_ZERO: ForeignRuntime = ForeignRuntime(6);
    /// ROCm's HSA runtime (LLVM's extension `tgt_fr_hsa`).
    pub const HSA: ForeignRuntime = ForeignRuntime(7);

    /// The name `omp_get_interop_str(.., omp_ipr_fr_name, ..)` gives, as LLVM spells it.
    pub fn name(self) -> &'static str {
        self.c_name().to_str().unwrap_or("unknown")
    }

    /// [`ForeignRuntime::name`] as a C string, for handing to C programs.
    pub fn c_name(self) -> &'static std::ffi::CStr {
        const NAMES: [&std::ffi::CStr; 8] = [
            c"none",
            c"cuda",
            c"cuda_driver",
            c"opencl",
            c"sycl",
            c"hip",
            c"level_zero",
            c"hsa",
        ];
        usize::try_from(self.0)
            .ok()
            .and_then(|i| NAMES.get(i))
            .copied()
            .unwrap_or(c"unknown")
    }
}

/// The vendor of a device, as the OpenMP "additional definitions" number them (LLVM's
/// `omp_vendor_id_t`; ABI 1.2). An open set.
#[repr(transparent)]
#[derive(StableAbi, Copy, Clone, Debug, PartialEq, Eq, Default)]
pub struct Vendor(pub i32);

impl Vendor {
    pub const UNKNOWN: Vendor = Vendor(0);
    pub const AMD: Vendor = Vendor(1);
    pub const INTEL: Vendor = Vendor(8);
    pub const LLVM: Vendor = Vendor(9);
    pub const NVIDIA: Vendor = Vendor(11);

    /// The vendor's name (`omp_ipr_vendor_name`), as LLVM spells it.
    pub fn name(self) -> &'static str {
        self.c_name().to_str().unwrap_or("unknown")
    }

    /// [`Vendor::name`] as a C string, for handing to C programs.
    pub fn c_name(self) -> &'static std::ffi::CStr {
        const NAMES: [&std::ffi::CStr; 13] = [
            c"unknown", c"amd", c"arm", c"bsc", c"fujitsu", c"gnu", c"hpe", c"ibm", c"intel",
            c"llvm", c"nec", c"nvidia", c"ti",
        ];
        usize::try_from(self.0)
            .ok()
            .and_then(|i| NAMES.get(i))
            .copied()
            .unwrap_or(c"unknown")
    }
}

/// What an OpenMP interop object of a device carries (ABI 1.2): the foreign runtime the
/// program may use beside OpenMP, and that runtime's native handles as plain integers (0: no
/// value). The core hands these to the program through `omp_get_interop_ptr`.
#[repr(C)]
#[derive(StableAbi, Copy, Clone, Debug, PartialEq, Eq, Default)]
pub struct InteropInfo {
    pub foreign_runtime: ForeignRuntime,
    pub vendor: Vendor,
    /// `omp_ipr_platform`: a handle spanning several devices, if the runtime has one.
    pub platform: usize,
    /// `omp_ipr_device`: the native device (CUDA: the `CUdevice` ordinal; HSA: the agent).
    pub device: usize,
    /// `omp_ipr_device_context` (CUDA: the primary `CUcontext`).
    pub context: usize,
    /// `omp_ipr_targetsync`: the native handle of the queue asked about (CUDA: its `CUstream`;
    /// HSA: its `hsa_queue_t *`), 0 for `QueueHandle::SYNC` or when the queue has none.
    pub targetsync: usize,
}

impl InteropInfo {
    /// No foreign runtime and no handles: what a core assumes for a plugin older than ABI 1.2.
    pub fn none(vendor: Vendor) -> Self {
        InteropInfo {
            vendor,
            ..Default::default()
        }
    }
}
