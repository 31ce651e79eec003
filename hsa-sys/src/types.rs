//! Types and constants of `hsa.h` and `hsa_ext_amd.h`, the subset the AMDGPU plugin uses.
//!
//! C enumerations are kept as `u32` aliases with one constant per value, not Rust enums: the
//! runtime may hand back values newer than these bindings (a newer status code, a new event
//! type), and an out-of-range value in a Rust enum would be undefined behaviour.

#![allow(non_camel_case_types)]

use std::ffi::c_void;

// --- Status codes (hsa_status_t; AMD's additions from hsa_ext_amd.h) ---------------------------

pub type hsa_status_t = u32;

pub const HSA_STATUS_SUCCESS: hsa_status_t = 0x0;
pub const HSA_STATUS_INFO_BREAK: hsa_status_t = 0x1;
pub const HSA_STATUS_ERROR: hsa_status_t = 0x1000;
pub const HSA_STATUS_ERROR_INVALID_ARGUMENT: hsa_status_t = 0x1001;
pub const HSA_STATUS_ERROR_INVALID_QUEUE_CREATION: hsa_status_t = 0x1002;
pub const HSA_STATUS_ERROR_INVALID_ALLOCATION: hsa_status_t = 0x1003;
pub const HSA_STATUS_ERROR_INVALID_AGENT: hsa_status_t = 0x1004;
pub const HSA_STATUS_ERROR_INVALID_REGION: hsa_status_t = 0x1005;
pub const HSA_STATUS_ERROR_INVALID_SIGNAL: hsa_status_t = 0x1006;
pub const HSA_STATUS_ERROR_INVALID_QUEUE: hsa_status_t = 0x1007;
pub const HSA_STATUS_ERROR_OUT_OF_RESOURCES: hsa_status_t = 0x1008;
pub const HSA_STATUS_ERROR_INVALID_PACKET_FORMAT: hsa_status_t = 0x1009;
pub const HSA_STATUS_ERROR_RESOURCE_FREE: hsa_status_t = 0x100A;
pub const HSA_STATUS_ERROR_NOT_INITIALIZED: hsa_status_t = 0x100B;
pub const HSA_STATUS_ERROR_REFCOUNT_OVERFLOW: hsa_status_t = 0x100C;
pub const HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS: hsa_status_t = 0x100D;
pub const HSA_STATUS_ERROR_INVALID_INDEX: hsa_status_t = 0x100E;
pub const HSA_STATUS_ERROR_INVALID_ISA: hsa_status_t = 0x100F;
pub const HSA_STATUS_ERROR_INVALID_CODE_OBJECT: hsa_status_t = 0x1010;
pub const HSA_STATUS_ERROR_INVALID_EXECUTABLE: hsa_status_t = 0x1011;
pub const HSA_STATUS_ERROR_FROZEN_EXECUTABLE: hsa_status_t = 0x1012;
pub const HSA_STATUS_ERROR_INVALID_SYMBOL_NAME: hsa_status_t = 0x1013;
pub const HSA_STATUS_ERROR_VARIABLE_ALREADY_DEFINED: hsa_status_t = 0x1014;
pub const HSA_STATUS_ERROR_VARIABLE_UNDEFINED: hsa_status_t = 0x1015;
pub const HSA_STATUS_ERROR_EXCEPTION: hsa_status_t = 0x1016;
pub const HSA_STATUS_ERROR_INVALID_ISA_NAME: hsa_status_t = 0x1017;
pub const HSA_STATUS_ERROR_INVALID_CODE_SYMBOL: hsa_status_t = 0x1018;
pub const HSA_STATUS_ERROR_INVALID_EXECUTABLE_SYMBOL: hsa_status_t = 0x1019;
pub const HSA_STATUS_ERROR_INVALID_FILE: hsa_status_t = 0x1020;
pub const HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER: hsa_status_t = 0x1021;
pub const HSA_STATUS_ERROR_INVALID_CACHE: hsa_status_t = 0x1022;
pub const HSA_STATUS_ERROR_INVALID_WAVEFRONT: hsa_status_t = 0x1023;
pub const HSA_STATUS_ERROR_INVALID_SIGNAL_GROUP: hsa_status_t = 0x1024;
pub const HSA_STATUS_ERROR_INVALID_RUNTIME_STATE: hsa_status_t = 0x1025;
pub const HSA_STATUS_ERROR_FATAL: hsa_status_t = 0x1026;
// AMD's additions: small numbers, outside the 0x1000 block.
pub const HSA_STATUS_ERROR_INVALID_MEMORY_POOL: hsa_status_t = 40;
pub const HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION: hsa_status_t = 41;
pub const HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION: hsa_status_t = 42;
pub const HSA_STATUS_ERROR_MEMORY_FAULT: hsa_status_t = 43;
pub const HSA_STATUS_CU_MASK_REDUCED: hsa_status_t = 44;
pub const HSA_STATUS_ERROR_OUT_OF_REGISTERS: hsa_status_t = 45;
pub const HSA_STATUS_ERROR_RESOURCE_BUSY: hsa_status_t = 46;
pub const HSA_STATUS_ERROR_NOT_SUPPORTED: hsa_status_t = 47;

// --- Handles: opaque 64-bit values, passed by value -------------------------------------------

macro_rules! handle_types {
    ($($(#[$doc:meta])* $name:ident;)*) => {$(
        $(#[$doc])*
        #[repr(C)]
        #[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
        pub struct $name {
            pub handle: u64,
        }
    )*};
}

handle_types! {
    /// A GPU or CPU agent.
    hsa_agent_t;
    /// A signal: a 64-bit value agents wait on and decrement.
    hsa_signal_t;
    /// A memory region (the pre-AMD-extension view of memory pools).
    hsa_region_t;
    /// An instruction set architecture an agent supports.
    hsa_isa_t;
    /// An AMD memory pool of an agent.
    hsa_amd_memory_pool_t;
    /// An executable: code objects loaded for agents.
    hsa_executable_t;
    /// A kernel or variable symbol of an executable.
    hsa_executable_symbol_t;
    /// A reader over a code object in memory or a file.
    hsa_code_object_reader_t;
    /// One code object loaded into an executable.
    hsa_loaded_code_object_t;
}

/// `hsa_signal_value_t` in the large (64-bit) machine model.
pub type hsa_signal_value_t = i64;

#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct hsa_dim3_t {
    pub x: u32,
    pub y: u32,
    pub z: u32,
}

// --- System and agent information ------------------------------------------------------------

pub type hsa_system_info_t = u32;
/// `u16`.
pub const HSA_SYSTEM_INFO_VERSION_MAJOR: hsa_system_info_t = 0;
/// `u16`.
pub const HSA_SYSTEM_INFO_VERSION_MINOR: hsa_system_info_t = 1;
/// `u64`, ticks.
pub const HSA_SYSTEM_INFO_TIMESTAMP: hsa_system_info_t = 2;
/// `u64`, Hz: the unit of signal wait timeouts.
pub const HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY: hsa_system_info_t = 3;
/// `u64`, ticks.
pub const HSA_SYSTEM_INFO_SIGNAL_MAX_WAIT: hsa_system_info_t = 4;
pub const HSA_SYSTEM_INFO_ENDIANNESS: hsa_system_info_t = 5;
pub const HSA_SYSTEM_INFO_MACHINE_MODEL: hsa_system_info_t = 6;
pub const HSA_SYSTEM_INFO_EXTENSIONS: hsa_system_info_t = 7;
/// `char *` of the runtime's build (ROCm 5.x and later).
pub const HSA_AMD_SYSTEM_INFO_BUILD_VERSION: hsa_system_info_t = 0x200;
/// `bool`.
pub const HSA_AMD_SYSTEM_INFO_SVM_SUPPORTED: hsa_system_info_t = 0x201;
/// `bool`.
pub const HSA_AMD_SYSTEM_INFO_SVM_ACCESSIBLE_BY_DEFAULT: hsa_system_info_t = 0x202;
/// `bool`.
pub const HSA_AMD_SYSTEM_INFO_XNACK_ENABLED: hsa_system_info_t = 0x206;

pub type hsa_device_type_t = u32;
pub const HSA_DEVICE_TYPE_CPU: hsa_device_type_t = 0;
pub const HSA_DEVICE_TYPE_GPU: hsa_device_type_t = 1;
pub const HSA_DEVICE_TYPE_DSP: hsa_device_type_t = 2;

pub type hsa_agent_feature_t = u32;
pub const HSA_AGENT_FEATURE_KERNEL_DISPATCH: hsa_agent_feature_t = 1;
pub const HSA_AGENT_FEATURE_AGENT_DISPATCH: hsa_agent_feature_t = 2;

/// Agent attributes; the comment on each says the type `hsa_agent_get_info` writes.
pub type hsa_agent_info_t = u32;
/// `char[64]`, NUL-terminated.
pub const HSA_AGENT_INFO_NAME: hsa_agent_info_t = 0;
/// `char[64]`, NUL-terminated.
pub const HSA_AGENT_INFO_VENDOR_NAME: hsa_agent_info_t = 1;
/// `hsa_agent_feature_t`.
pub const HSA_AGENT_INFO_FEATURE: hsa_agent_info_t = 2;
pub const HSA_AGENT_INFO_MACHINE_MODEL: hsa_agent_info_t = 3;
pub const HSA_AGENT_INFO_PROFILE: hsa_agent_info_t = 4;
pub const HSA_AGENT_INFO_DEFAULT_FLOAT_ROUNDING_MODE: hsa_agent_info_t = 5;
/// `u32`.
pub const HSA_AGENT_INFO_WAVEFRONT_SIZE: hsa_agent_info_t = 6;
/// `u16[3]`.
pub const HSA_AGENT_INFO_WORKGROUP_MAX_DIM: hsa_agent_info_t = 7;
/// `u32`.
pub const HSA_AGENT_INFO_WORKGROUP_MAX_SIZE: hsa_agent_info_t = 8;
/// `hsa_dim3_t`.
pub const HSA_AGENT_INFO_GRID_MAX_DIM: hsa_agent_info_t = 9;
/// `u32`.
pub const HSA_AGENT_INFO_GRID_MAX_SIZE: hsa_agent_info_t = 10;
pub const HSA_AGENT_INFO_FBARRIER_MAX_SIZE: hsa_agent_info_t = 11;
/// `u32`.
pub const HSA_AGENT_INFO_QUEUES_MAX: hsa_agent_info_t = 12;
/// `u32`.
pub const HSA_AGENT_INFO_QUEUE_MIN_SIZE: hsa_agent_info_t = 13;
/// `u32`.
pub const HSA_AGENT_INFO_QUEUE_MAX_SIZE: hsa_agent_info_t = 14;
pub const HSA_AGENT_INFO_QUEUE_TYPE: hsa_agent_info_t = 15;
/// `u32`: the KFD topology node, as tools such as rocm-smi number GPUs.
pub const HSA_AGENT_INFO_NODE: hsa_agent_info_t = 16;
/// `hsa_device_type_t`.
pub const HSA_AGENT_INFO_DEVICE: hsa_agent_info_t = 17;
/// `u32[4]`.
pub const HSA_AGENT_INFO_CACHE_SIZE: hsa_agent_info_t = 18;
pub const HSA_AGENT_INFO_ISA: hsa_agent_info_t = 19;
pub const HSA_AGENT_INFO_EXTENSIONS: hsa_agent_info_t = 20;
pub const HSA_AGENT_INFO_VERSION_MAJOR: hsa_agent_info_t = 21;
pub const HSA_AGENT_INFO_VERSION_MINOR: hsa_agent_info_t = 22;
pub const HSA_AGENT_INFO_FAST_F16_OPERATION: hsa_agent_info_t = 24;
// AMD's agent attributes (hsa_amd_agent_info_t), queried through hsa_agent_get_info too.
/// `u32`.
pub const HSA_AMD_AGENT_INFO_CHIP_ID: hsa_agent_info_t = 0xA000;
/// `u32`.
pub const HSA_AMD_AGENT_INFO_CACHELINE_SIZE: hsa_agent_info_t = 0xA001;
/// `u32`.
pub const HSA_AMD_AGENT_INFO_COMPUTE_UNIT_COUNT: hsa_agent_info_t = 0xA002;
/// `u32`, MHz.
pub const HSA_AMD_AGENT_INFO_MAX_CLOCK_FREQUENCY: hsa_agent_info_t = 0xA003;
/// `u32`.
pub const HSA_AMD_AGENT_INFO_DRIVER_NODE_ID: hsa_agent_info_t = 0xA004;
/// `u32`: PCI bus/device/function.
pub const HSA_AMD_AGENT_INFO_BDFID: hsa_agent_info_t = 0xA006;
/// `char[64]`: the marketing name.
pub const HSA_AMD_AGENT_INFO_PRODUCT_NAME: hsa_agent_info_t = 0xA009;
/// `u32`.
pub const HSA_AMD_AGENT_INFO_MAX_WAVES_PER_CU: hsa_agent_info_t = 0xA00A;
/// `u32`.
pub const HSA_AMD_AGENT_INFO_NUM_SIMDS_PER_CU: hsa_agent_info_t = 0xA00B;
/// `bool`.
pub const HSA_AMD_AGENT_INFO_COOPERATIVE_QUEUES: hsa_agent_info_t = 0xA010;
/// `char[21]`.
pub const HSA_AMD_AGENT_INFO_UUID: hsa_agent_info_t = 0xA011;
/// `u64`: free bytes over the agent's global pools (newer runtimes only).
pub const HSA_AMD_AGENT_INFO_MEMORY_AVAIL: hsa_agent_info_t = 0xA015;
/// `u64`, Hz.
pub const HSA_AMD_AGENT_INFO_TIMESTAMP_FREQUENCY: hsa_agent_info_t = 0xA016;
/// `u8[8]`: a bit array of `hsa_amd_agent_memory_properties_t` bits (test with
/// [`hsa_flag_isset64`]).
pub const HSA_AMD_AGENT_INFO_MEMORY_PROPERTIES: hsa_agent_info_t = 0xA114;

pub type hsa_amd_agent_memory_properties_t = u32;
/// The agent is an APU: its memory is the system's. The value is a bit *number* in
/// `HSA_AMD_AGENT_INFO_MEMORY_PROPERTIES` (ROCr sets and `hsa_flag_isset64` tests bit 1, the
/// byte's `0x02`), not a mask of the first byte.
pub const HSA_AMD_MEMORY_PROPERTY_AGENT_IS_APU: hsa_amd_agent_memory_properties_t = 1 << 0;

/// `hsa_flag_isset64` of `hsa_ext_amd.h`: whether bit number `bit` of an 8-byte bit array is
/// set (bit 0 is the first byte's lowest).
pub fn hsa_flag_isset64(value: &[u8; 8], bit: u32) -> bool {
    let (index, sub_bit) = ((bit / 8) as usize, bit % 8);
    index < 8 && value[index] & (1 << sub_bit) != 0
}

pub type hsa_isa_info_t = u32;
/// `u32`: bytes of the name, including the NUL.
pub const HSA_ISA_INFO_NAME_LENGTH: hsa_isa_info_t = 0;
/// `char[NAME_LENGTH]`, e.g. `amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-`.
pub const HSA_ISA_INFO_NAME: hsa_isa_info_t = 1;

// --- Memory pools -----------------------------------------------------------------------------

pub type hsa_amd_segment_t = u32;
pub const HSA_AMD_SEGMENT_GLOBAL: hsa_amd_segment_t = 0;
pub const HSA_AMD_SEGMENT_READONLY: hsa_amd_segment_t = 1;
pub const HSA_AMD_SEGMENT_PRIVATE: hsa_amd_segment_t = 2;
pub const HSA_AMD_SEGMENT_GROUP: hsa_amd_segment_t = 3;

/// Bits of `HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS`.
pub type hsa_amd_memory_pool_global_flag_t = u32;
pub const HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT: hsa_amd_memory_pool_global_flag_t = 1;
pub const HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED: hsa_amd_memory_pool_global_flag_t = 2;
pub const HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED: hsa_amd_memory_pool_global_flag_t = 4;
pub const HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_EXTENDED_SCOPE_FINE_GRAINED:
    hsa_amd_memory_pool_global_flag_t = 8;

/// Pool attributes; the comment on each says the type `hsa_amd_memory_pool_get_info` writes.
pub type hsa_amd_memory_pool_info_t = u32;
/// `hsa_amd_segment_t`.
pub const HSA_AMD_MEMORY_POOL_INFO_SEGMENT: hsa_amd_memory_pool_info_t = 0;
/// `u32` of `HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_*` bits.
pub const HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS: hsa_amd_memory_pool_info_t = 1;
/// `usize`.
pub const HSA_AMD_MEMORY_POOL_INFO_SIZE: hsa_amd_memory_pool_info_t = 2;
/// `bool`.
pub const HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED: hsa_amd_memory_pool_info_t = 5;
/// `usize`.
pub const HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_GRANULE: hsa_amd_memory_pool_info_t = 6;
/// `usize`.
pub const HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALIGNMENT: hsa_amd_memory_pool_info_t = 7;
/// `bool`.
pub const HSA_AMD_MEMORY_POOL_INFO_ACCESSIBLE_BY_ALL: hsa_amd_memory_pool_info_t = 15;
/// `usize`.
pub const HSA_AMD_MEMORY_POOL_INFO_ALLOC_MAX_SIZE: hsa_amd_memory_pool_info_t = 16;

pub type hsa_amd_agent_memory_pool_info_t = u32;
/// `hsa_amd_memory_pool_access_t`.
pub const HSA_AMD_AGENT_MEMORY_POOL_INFO_ACCESS: hsa_amd_agent_memory_pool_info_t = 0;

pub type hsa_amd_memory_pool_access_t = u32;
pub const HSA_AMD_MEMORY_POOL_ACCESS_NEVER_ALLOWED: hsa_amd_memory_pool_access_t = 0;
pub const HSA_AMD_MEMORY_POOL_ACCESS_ALLOWED_BY_DEFAULT: hsa_amd_memory_pool_access_t = 1;
pub const HSA_AMD_MEMORY_POOL_ACCESS_DISALLOWED_BY_DEFAULT: hsa_amd_memory_pool_access_t = 2;

// --- Signals ----------------------------------------------------------------------------------

pub type hsa_signal_condition_t = u32;
pub const HSA_SIGNAL_CONDITION_EQ: hsa_signal_condition_t = 0;
pub const HSA_SIGNAL_CONDITION_NE: hsa_signal_condition_t = 1;
pub const HSA_SIGNAL_CONDITION_LT: hsa_signal_condition_t = 2;
pub const HSA_SIGNAL_CONDITION_GTE: hsa_signal_condition_t = 3;

pub type hsa_wait_state_t = u32;
/// Sleep in the kernel until the signal changes (after a short spin inside the runtime).
pub const HSA_WAIT_STATE_BLOCKED: hsa_wait_state_t = 0;
/// Spin on the CPU.
pub const HSA_WAIT_STATE_ACTIVE: hsa_wait_state_t = 1;

/// Attribute bits of `hsa_amd_signal_create`.
pub type hsa_amd_signal_attribute_t = u64;
pub const HSA_AMD_SIGNAL_AMD_GPU_ONLY: hsa_amd_signal_attribute_t = 1;
pub const HSA_AMD_SIGNAL_IPC: hsa_amd_signal_attribute_t = 2;

// --- Queues and AQL packets -------------------------------------------------------------------

pub type hsa_queue_type32_t = u32;
pub const HSA_QUEUE_TYPE_MULTI: hsa_queue_type32_t = 0;
pub const HSA_QUEUE_TYPE_SINGLE: hsa_queue_type32_t = 1;
pub const HSA_QUEUE_TYPE_COOPERATIVE: hsa_queue_type32_t = 2;

pub type hsa_queue_feature_t = u32;
pub const HSA_QUEUE_FEATURE_KERNEL_DISPATCH: hsa_queue_feature_t = 1;
pub const HSA_QUEUE_FEATURE_AGENT_DISPATCH: hsa_queue_feature_t = 2;

/// A user-mode queue as the runtime lays it out (large machine model): a ring of `size`
/// 64-byte packets at `base_address`, and the doorbell signal that tells the packet processor
/// a packet was published. The read and write indices are not fields: they are reached through
/// `hsa_queue_load_read_index_*` and `hsa_queue_add_write_index_*`.
#[repr(C)]
#[derive(Debug)]
pub struct hsa_queue_t {
    pub type_: hsa_queue_type32_t,
    pub features: u32,
    pub base_address: *mut c_void,
    pub doorbell_signal: hsa_signal_t,
    /// Packets in the ring; a power of two.
    pub size: u32,
    pub reserved1: u32,
    pub id: u64,
}

pub type hsa_packet_type_t = u32;
pub const HSA_PACKET_TYPE_VENDOR_SPECIFIC: hsa_packet_type_t = 0;
/// The type the packet processor leaves in a slot it has consumed.
pub const HSA_PACKET_TYPE_INVALID: hsa_packet_type_t = 1;
pub const HSA_PACKET_TYPE_KERNEL_DISPATCH: hsa_packet_type_t = 2;
pub const HSA_PACKET_TYPE_BARRIER_AND: hsa_packet_type_t = 3;
pub const HSA_PACKET_TYPE_AGENT_DISPATCH: hsa_packet_type_t = 4;
pub const HSA_PACKET_TYPE_BARRIER_OR: hsa_packet_type_t = 5;

pub type hsa_fence_scope_t = u32;
pub const HSA_FENCE_SCOPE_NONE: hsa_fence_scope_t = 0;
pub const HSA_FENCE_SCOPE_AGENT: hsa_fence_scope_t = 1;
pub const HSA_FENCE_SCOPE_SYSTEM: hsa_fence_scope_t = 2;

/// Bit offsets of the fields of a packet's 16-bit header.
pub type hsa_packet_header_t = u32;
/// 8 bits: `hsa_packet_type_t`.
pub const HSA_PACKET_HEADER_TYPE: hsa_packet_header_t = 0;
/// 1 bit: the packet starts only after every packet before it completed.
pub const HSA_PACKET_HEADER_BARRIER: hsa_packet_header_t = 8;
/// 2 bits: `hsa_fence_scope_t` of the acquire fence before the packet runs.
pub const HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE: hsa_packet_header_t = 9;
pub const HSA_PACKET_HEADER_ACQUIRE_FENCE_SCOPE: hsa_packet_header_t = 9;
/// 2 bits: `hsa_fence_scope_t` of the release fence after the packet completes.
pub const HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE: hsa_packet_header_t = 11;
pub const HSA_PACKET_HEADER_RELEASE_FENCE_SCOPE: hsa_packet_header_t = 11;

/// Widths in bits of the header fields above.
pub const HSA_PACKET_HEADER_WIDTH_TYPE: u32 = 8;
pub const HSA_PACKET_HEADER_WIDTH_BARRIER: u32 = 1;
pub const HSA_PACKET_HEADER_WIDTH_SCACQUIRE_FENCE_SCOPE: u32 = 2;
pub const HSA_PACKET_HEADER_WIDTH_SCRELEASE_FENCE_SCOPE: u32 = 2;

/// Bit offset and width of the dimension count in a kernel dispatch packet's `setup` field.
pub const HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS: u32 = 0;
pub const HSA_KERNEL_DISPATCH_PACKET_SETUP_WIDTH_DIMENSIONS: u32 = 2;

/// An AQL kernel dispatch packet (64 bytes, large machine model). The first 32 bits (header
/// and setup) are written last, atomically: they make the packet valid.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct hsa_kernel_dispatch_packet_t {
    pub header: u16,
    pub setup: u16,
    pub workgroup_size_x: u16,
    pub workgroup_size_y: u16,
    pub workgroup_size_z: u16,
    pub reserved0: u16,
    pub grid_size_x: u32,
    pub grid_size_y: u32,
    pub grid_size_z: u32,
    pub private_segment_size: u32,
    pub group_segment_size: u32,
    pub kernel_object: u64,
    /// Address of the kernel arguments (`void *` in C; kept as an integer so the packet is
    /// plain data).
    pub kernarg_address: u64,
    pub reserved2: u64,
    pub completion_signal: hsa_signal_t,
}

/// An AQL barrier-AND packet (64 bytes): completes once every non-zero `dep_signal` is 0.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct hsa_barrier_and_packet_t {
    pub header: u16,
    pub reserved0: u16,
    pub reserved1: u32,
    pub dep_signal: [hsa_signal_t; 5],
    pub reserved2: u64,
    pub completion_signal: hsa_signal_t,
}

// Packets are slots of the queue ring: exactly 64 bytes each, or every index is wrong.
const _: () = assert!(std::mem::size_of::<hsa_kernel_dispatch_packet_t>() == 64);
const _: () = assert!(std::mem::size_of::<hsa_barrier_and_packet_t>() == 64);

// --- Code objects and executables -------------------------------------------------------------

pub type hsa_profile_t = u32;
pub const HSA_PROFILE_BASE: hsa_profile_t = 0;
pub const HSA_PROFILE_FULL: hsa_profile_t = 1;

pub type hsa_default_float_rounding_mode_t = u32;
pub const HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT: hsa_default_float_rounding_mode_t = 0;
pub const HSA_DEFAULT_FLOAT_ROUNDING_MODE_ZERO: hsa_default_float_rounding_mode_t = 1;
pub const HSA_DEFAULT_FLOAT_ROUNDING_MODE_NEAR: hsa_default_float_rounding_mode_t = 2;

pub type hsa_executable_state_t = u32;
pub const HSA_EXECUTABLE_STATE_UNFROZEN: hsa_executable_state_t = 0;
pub const HSA_EXECUTABLE_STATE_FROZEN: hsa_executable_state_t = 1;

pub type hsa_symbol_kind_t = u32;
pub const HSA_SYMBOL_KIND_VARIABLE: hsa_symbol_kind_t = 0;
pub const HSA_SYMBOL_KIND_KERNEL: hsa_symbol_kind_t = 1;
pub const HSA_SYMBOL_KIND_INDIRECT_FUNCTION: hsa_symbol_kind_t = 2;

/// Symbol attributes; the comment on each says the type `hsa_executable_symbol_get_info`
/// writes.
pub type hsa_executable_symbol_info_t = u32;
/// `hsa_symbol_kind_t`.
pub const HSA_EXECUTABLE_SYMBOL_INFO_TYPE: hsa_executable_symbol_info_t = 0;
/// `u32`.
pub const HSA_EXECUTABLE_SYMBOL_INFO_NAME_LENGTH: hsa_executable_symbol_info_t = 1;
/// `char[NAME_LENGTH]`, not NUL-terminated.
pub const HSA_EXECUTABLE_SYMBOL_INFO_NAME: hsa_executable_symbol_info_t = 2;
/// `u64`.
pub const HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_ADDRESS: hsa_executable_symbol_info_t = 21;
/// `u32`.
pub const HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_SIZE: hsa_executable_symbol_info_t = 9;
/// `u64`: the address of the kernel descriptor, for the dispatch packet.
pub const HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT: hsa_executable_symbol_info_t = 22;
/// `u32`.
pub const HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE: hsa_executable_symbol_info_t = 11;
/// `u32`.
pub const HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_ALIGNMENT:
    hsa_executable_symbol_info_t = 12;
/// `u32`.
pub const HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE: hsa_executable_symbol_info_t = 13;
/// `u32`.
pub const HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE: hsa_executable_symbol_info_t = 14;
/// `bool`.
pub const HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_DYNAMIC_CALLSTACK: hsa_executable_symbol_info_t = 15;

// --- System events (memory faults) ------------------------------------------------------------

pub type hsa_amd_event_type_t = u32;
pub const HSA_AMD_GPU_MEMORY_FAULT_EVENT: hsa_amd_event_type_t = 0;
pub const HSA_AMD_GPU_HW_EXCEPTION_EVENT: hsa_amd_event_type_t = 1;

/// Bits of `hsa_amd_gpu_memory_fault_info_t::fault_reason_mask`.
pub type hsa_amd_memory_fault_reason_t = u32;
pub const HSA_AMD_MEMORY_FAULT_PAGE_NOT_PRESENT: hsa_amd_memory_fault_reason_t = 1 << 0;
pub const HSA_AMD_MEMORY_FAULT_READ_ONLY: hsa_amd_memory_fault_reason_t = 1 << 1;
pub const HSA_AMD_MEMORY_FAULT_NX: hsa_amd_memory_fault_reason_t = 1 << 2;
pub const HSA_AMD_MEMORY_FAULT_HOST_ONLY: hsa_amd_memory_fault_reason_t = 1 << 3;
pub const HSA_AMD_MEMORY_FAULT_DRAMECC: hsa_amd_memory_fault_reason_t = 1 << 4;
pub const HSA_AMD_MEMORY_FAULT_IMPRECISE: hsa_amd_memory_fault_reason_t = 1 << 5;
pub const HSA_AMD_MEMORY_FAULT_SRAMECC: hsa_amd_memory_fault_reason_t = 1 << 6;
pub const HSA_AMD_MEMORY_FAULT_HANG: hsa_amd_memory_fault_reason_t = 1 << 31;

#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct hsa_amd_gpu_memory_fault_info_t {
    pub agent: hsa_agent_t,
    pub virtual_address: u64,
    pub fault_reason_mask: u32,
}

/// A system event. In C the payload is a union over the event types; only the memory fault
/// variant is declared here, and it may be read only when `event_type` is
/// `HSA_AMD_GPU_MEMORY_FAULT_EVENT`. The runtime owns the event; we only read it through a
/// pointer, so a larger union in newer runtimes does not matter.
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub struct hsa_amd_event_t {
    pub event_type: hsa_amd_event_type_t,
    pub memory_fault: hsa_amd_gpu_memory_fault_info_t,
}

// --- Profiling (hsa_ext_amd.h) ----------------------------------------------------------------

/// `hsa_amd_profiling_get_dispatch_time`: when the packet processor started a packet and when
/// it completed it, in ticks of the HSA system clock (`HSA_SYSTEM_INFO_TIMESTAMP`).
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct hsa_amd_profiling_dispatch_time_t {
    pub start: u64,
    pub end: u64,
}

/// `hsa_amd_profiling_get_async_copy_time`: when a copy engine started and completed an
/// asynchronous copy, in ticks of the HSA system clock.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct hsa_amd_profiling_async_copy_time_t {
    pub start: u64,
    pub end: u64,
}

// --- SDMA engines (hsa_ext_amd.h, ROCm 5.7 and later) -----------------------------------------

/// `hsa_amd_sdma_engine_id_t`: one bit per SDMA engine of an agent, as
/// `hsa_amd_memory_async_copy_on_engine` takes one and `hsa_amd_memory_copy_engine_status`
/// reports a set.
pub type hsa_amd_sdma_engine_id_t = u32;
pub const HSA_AMD_SDMA_ENGINE_0: hsa_amd_sdma_engine_id_t = 0x1;
pub const HSA_AMD_SDMA_ENGINE_1: hsa_amd_sdma_engine_id_t = 0x2;

// --- Shared virtual memory (hsa_ext_amd.h: hsa_amd_svm_attributes_set/get) -------------------

pub type hsa_amd_svm_model_t = u32;
pub const HSA_AMD_SVM_GLOBAL_FLAG_FINE_GRAINED: hsa_amd_svm_model_t = 0;
pub const HSA_AMD_SVM_GLOBAL_FLAG_COARSE_GRAINED: hsa_amd_svm_model_t = 1;
/// Only an answer of `hsa_amd_svm_attributes_get`: the range holds both models.
pub const HSA_AMD_SVM_GLOBAL_FLAG_INDETERMINATE: hsa_amd_svm_model_t = 2;

pub type hsa_amd_svm_attribute_t = u32;
/// `hsa_amd_svm_model_t`.
pub const HSA_AMD_SVM_ATTRIB_GLOBAL_FLAG: hsa_amd_svm_attribute_t = 0;
/// `bool`.
pub const HSA_AMD_SVM_ATTRIB_READ_ONLY: hsa_amd_svm_attribute_t = 1;
/// `bool`.
pub const HSA_AMD_SVM_ATTRIB_HIVE_LOCAL: hsa_amd_svm_attribute_t = 2;
/// `u64`: log2 of the pages migrated at once.
pub const HSA_AMD_SVM_ATTRIB_MIGRATION_GRANULARITY: hsa_amd_svm_attribute_t = 3;
/// `hsa_agent_t` (handle 0: none).
pub const HSA_AMD_SVM_ATTRIB_PREFERRED_LOCATION: hsa_amd_svm_attribute_t = 4;
/// `hsa_agent_t`; get only.
pub const HSA_AMD_SVM_ATTRIB_PREFETCH_LOCATION: hsa_amd_svm_attribute_t = 5;
/// `bool`.
pub const HSA_AMD_SVM_ATTRIB_READ_MOSTLY: hsa_amd_svm_attribute_t = 6;
/// `bool`; set only.
pub const HSA_AMD_SVM_ATTRIB_GPU_EXEC: hsa_amd_svm_attribute_t = 7;
/// `hsa_agent_t`; set only (and the answer of an access query).
pub const HSA_AMD_SVM_ATTRIB_AGENT_ACCESSIBLE: hsa_amd_svm_attribute_t = 0x200;
/// `hsa_agent_t`; set only (and the answer of an access query).
pub const HSA_AMD_SVM_ATTRIB_AGENT_ACCESSIBLE_IN_PLACE: hsa_amd_svm_attribute_t = 0x201;
/// `hsa_agent_t`; set only (and the answer of an access query).
pub const HSA_AMD_SVM_ATTRIB_AGENT_NO_ACCESS: hsa_amd_svm_attribute_t = 0x202;
/// `hsa_agent_t`; get only: the pair's `attribute` is replaced by the agent's access.
pub const HSA_AMD_SVM_ATTRIB_ACCESS_QUERY: hsa_amd_svm_attribute_t = 0x203;

/// One attribute of `hsa_amd_svm_attributes_set/get` (an `hsa_amd_svm_attribute_t` and its
/// value, both 64 bits wide as in the C struct).
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct hsa_amd_svm_attribute_pair_t {
    pub attribute: u64,
    pub value: u64,
}

// --- Callback types ---------------------------------------------------------------------------

/// `hsa_iterate_agents`: return `HSA_STATUS_SUCCESS` to go on, `HSA_STATUS_INFO_BREAK` to stop.
pub type hsa_agent_callback_t =
    Option<unsafe extern "C" fn(agent: hsa_agent_t, data: *mut c_void) -> hsa_status_t>;
/// `hsa_agent_iterate_isas`.
pub type hsa_isa_callback_t =
    Option<unsafe extern "C" fn(isa: hsa_isa_t, data: *mut c_void) -> hsa_status_t>;
/// `hsa_amd_agent_iterate_memory_pools`.
pub type hsa_amd_memory_pool_callback_t =
    Option<unsafe extern "C" fn(pool: hsa_amd_memory_pool_t, data: *mut c_void) -> hsa_status_t>;
/// `hsa_queue_create`: called on a runtime thread when the queue hits an error.
pub type hsa_queue_error_callback_t =
    Option<unsafe extern "C" fn(status: hsa_status_t, source: *mut hsa_queue_t, data: *mut c_void)>;
/// `hsa_amd_signal_async_handler`: return `true` to stay registered, `false` to be removed.
pub type hsa_amd_signal_handler =
    Option<unsafe extern "C" fn(value: hsa_signal_value_t, arg: *mut c_void) -> bool>;
/// `hsa_amd_register_system_event_handler`.
pub type hsa_amd_system_event_callback_t =
    Option<unsafe extern "C" fn(event: *const hsa_amd_event_t, data: *mut c_void) -> hsa_status_t>;
