//! The runtime's status codes as the emulator returns them, and `hsa_status_string`'s texts
//! (ROCm's wording: the code's name, then what it means).

pub use hsa_sys::hsa_status_t as Status;
use hsa_sys::*;

/// An error status.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Error(pub Status);

pub type Result<T> = std::result::Result<T, Error>;

pub const INVALID_ARGUMENT: Error = Error(HSA_STATUS_ERROR_INVALID_ARGUMENT);
pub const INVALID_AGENT: Error = Error(HSA_STATUS_ERROR_INVALID_AGENT);
pub const INVALID_SIGNAL: Error = Error(HSA_STATUS_ERROR_INVALID_SIGNAL);
pub const INVALID_QUEUE: Error = Error(HSA_STATUS_ERROR_INVALID_QUEUE);
pub const INVALID_QUEUE_CREATION: Error = Error(HSA_STATUS_ERROR_INVALID_QUEUE_CREATION);
pub const INVALID_ALLOCATION: Error = Error(HSA_STATUS_ERROR_INVALID_ALLOCATION);
pub const OUT_OF_RESOURCES: Error = Error(HSA_STATUS_ERROR_OUT_OF_RESOURCES);
pub const NOT_INITIALIZED: Error = Error(HSA_STATUS_ERROR_NOT_INITIALIZED);
pub const INVALID_ISA: Error = Error(HSA_STATUS_ERROR_INVALID_ISA);
pub const INVALID_CODE_OBJECT: Error = Error(HSA_STATUS_ERROR_INVALID_CODE_OBJECT);
pub const INVALID_CODE_OBJECT_READER: Error = Error(HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER);
pub const INVALID_EXECUTABLE: Error = Error(HSA_STATUS_ERROR_INVALID_EXECUTABLE);
pub const FROZEN_EXECUTABLE: Error = Error(HSA_STATUS_ERROR_FROZEN_EXECUTABLE);
pub const INVALID_SYMBOL_NAME: Error = Error(HSA_STATUS_ERROR_INVALID_SYMBOL_NAME);
pub const INVALID_EXECUTABLE_SYMBOL: Error = Error(HSA_STATUS_ERROR_INVALID_EXECUTABLE_SYMBOL);
pub const INVALID_MEMORY_POOL: Error = Error(HSA_STATUS_ERROR_INVALID_MEMORY_POOL);
pub const GENERIC: Error = Error(HSA_STATUS_ERROR);

/// `hsa_status_string`'s text for `status`; `None` for a code HSA does not define.
pub fn text(status: Status) -> Option<&'static str> {
    Some(match status {
        HSA_STATUS_SUCCESS => "HSA_STATUS_SUCCESS: The function has been executed successfully.",
        HSA_STATUS_INFO_BREAK => {
            "HSA_STATUS_INFO_BREAK: A traversal over a list of elements has been interrupted \
             by the application before completing."
        }
        HSA_STATUS_ERROR => "HSA_STATUS_ERROR: A generic error has occurred.",
        HSA_STATUS_ERROR_INVALID_ARGUMENT => {
            "HSA_STATUS_ERROR_INVALID_ARGUMENT: One of the actual arguments does not meet a \
             precondition stated in the documentation of the corresponding formal argument."
        }
        HSA_STATUS_ERROR_INVALID_QUEUE_CREATION => {
            "HSA_STATUS_ERROR_INVALID_QUEUE_CREATION: The requested queue creation is not \
             valid."
        }
        HSA_STATUS_ERROR_INVALID_ALLOCATION => {
            "HSA_STATUS_ERROR_INVALID_ALLOCATION: The requested allocation is not valid."
        }
        HSA_STATUS_ERROR_INVALID_AGENT => "HSA_STATUS_ERROR_INVALID_AGENT: The agent is invalid.",
        HSA_STATUS_ERROR_INVALID_REGION => {
            "HSA_STATUS_ERROR_INVALID_REGION: The memory region is invalid."
        }
        HSA_STATUS_ERROR_INVALID_SIGNAL => {
            "HSA_STATUS_ERROR_INVALID_SIGNAL: The signal is invalid."
        }
        HSA_STATUS_ERROR_INVALID_QUEUE => "HSA_STATUS_ERROR_INVALID_QUEUE: The queue is invalid.",
        HSA_STATUS_ERROR_OUT_OF_RESOURCES => {
            "HSA_STATUS_ERROR_OUT_OF_RESOURCES: The runtime failed to allocate the necessary \
             resources. This error may also occur when the core runtime library needs to spawn \
             threads or create internal OS-specific events."
        }
        HSA_STATUS_ERROR_INVALID_PACKET_FORMAT => {
            "HSA_STATUS_ERROR_INVALID_PACKET_FORMAT: The AQL packet is malformed."
        }
        HSA_STATUS_ERROR_RESOURCE_FREE => {
            "HSA_STATUS_ERROR_RESOURCE_FREE: An error has been detected while releasing a \
             resource."
        }
        HSA_STATUS_ERROR_NOT_INITIALIZED => {
            "HSA_STATUS_ERROR_NOT_INITIALIZED: An API other than hsa_init has been invoked \
             while the reference count of the HSA runtime is zero."
        }
        HSA_STATUS_ERROR_REFCOUNT_OVERFLOW => {
            "HSA_STATUS_ERROR_REFCOUNT_OVERFLOW: The maximum reference count for the object \
             has been reached."
        }
        HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS => {
            "HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS: The arguments passed to a functions are \
             not compatible."
        }
        HSA_STATUS_ERROR_INVALID_INDEX => "HSA_STATUS_ERROR_INVALID_INDEX: The index is invalid.",
        HSA_STATUS_ERROR_INVALID_ISA => {
            "HSA_STATUS_ERROR_INVALID_ISA: The instruction set architecture is invalid."
        }
        HSA_STATUS_ERROR_INVALID_CODE_OBJECT => {
            "HSA_STATUS_ERROR_INVALID_CODE_OBJECT: The code object is invalid."
        }
        HSA_STATUS_ERROR_INVALID_EXECUTABLE => {
            "HSA_STATUS_ERROR_INVALID_EXECUTABLE: The executable is invalid."
        }
        HSA_STATUS_ERROR_FROZEN_EXECUTABLE => {
            "HSA_STATUS_ERROR_FROZEN_EXECUTABLE: The executable is frozen."
        }
        HSA_STATUS_ERROR_INVALID_SYMBOL_NAME => {
            "HSA_STATUS_ERROR_INVALID_SYMBOL_NAME: There is no symbol with the given name."
        }
        HSA_STATUS_ERROR_VARIABLE_ALREADY_DEFINED => {
            "HSA_STATUS_ERROR_VARIABLE_ALREADY_DEFINED: The variable is already defined."
        }
        HSA_STATUS_ERROR_VARIABLE_UNDEFINED => {
            "HSA_STATUS_ERROR_VARIABLE_UNDEFINED: The variable is undefined."
        }
        HSA_STATUS_ERROR_EXCEPTION => {
            "HSA_STATUS_ERROR_EXCEPTION: An HSAIL operation resulted in a hardware exception."
        }
        HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER => {
            "HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER: The code object reader is invalid."
        }
        HSA_STATUS_ERROR_INVALID_EXECUTABLE_SYMBOL => {
            "HSA_STATUS_ERROR_INVALID_EXECUTABLE_SYMBOL: The executable symbol is invalid."
        }
        HSA_STATUS_ERROR_INVALID_MEMORY_POOL => {
            "HSA_STATUS_ERROR_INVALID_MEMORY_POOL: The memory pool is invalid."
        }
        HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION => {
            "HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION: The agent attempted to access memory \
             beyond the largest legal address."
        }
        HSA_STATUS_ERROR_MEMORY_FAULT => {
            "HSA_STATUS_ERROR_MEMORY_FAULT: Agent attempted to access an inaccessible address."
        }
        HSA_STATUS_ERROR_OUT_OF_REGISTERS => {
            "HSA_STATUS_ERROR_OUT_OF_REGISTERS: Kernel has requested more VGPRs than are \
             available on this agent"
        }
        HSA_STATUS_ERROR_RESOURCE_BUSY => "HSA_STATUS_ERROR_RESOURCE_BUSY: The resource is busy.",
        HSA_STATUS_ERROR_NOT_SUPPORTED => {
            "HSA_STATUS_ERROR_NOT_SUPPORTED: The requested feature is not supported."
        }
        HSA_STATUS_ERROR_FATAL => {
            "HSA_STATUS_ERROR_FATAL: A fatal error has occurred in the runtime."
        }
        _ => return None,
    })
}

/// The status's C name, for the trace.
pub fn describe(status: Status) -> String {
    match hsa_sys::status_name(status) {
        "HSA_STATUS_UNKNOWN" => format!("hsa_status_t {status:#x}"),
        name => name.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_named_code_has_a_text_starting_with_its_name() {
        for status in (0..0x1030).chain(40..48) {
            if let Some(text) = text(status) {
                assert!(text.starts_with(hsa_sys::status_name(status)), "{text}");
            }
        }
        assert_eq!(text(0x9999), None);
        assert!(text(HSA_STATUS_ERROR_MEMORY_FAULT).is_some());
    }
}
