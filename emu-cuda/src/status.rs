//! The driver's result codes that the emulator returns, with the driver's names and texts.

/// A `CUresult`.
pub type CuResult = u32;

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Error(pub CuResult);

pub type Result<T> = std::result::Result<T, Error>;

macro_rules! codes {
    ($($name:ident = $value:literal, $text:literal;)*) => {
        $(pub const $name: Error = Error($value);)*

        /// The driver's name for a code (`cuGetErrorName`).
        pub fn name(code: CuResult) -> Option<&'static str> {
            match code {
                $($value => Some(concat!("CUDA_ERROR_", stringify!($name))),)*
                _ => None,
            }
        }

        /// The driver's description of a code (`cuGetErrorString`).
        pub fn text(code: CuResult) -> Option<&'static str> {
            match code {
                $($value => Some($text),)*
                _ => None,
            }
        }
    };
}

codes! {
    INVALID_VALUE = 1, "invalid argument";
    OUT_OF_MEMORY = 2, "out of memory";
    NOT_INITIALIZED = 3, "initialization error";
    DEINITIALIZED = 4, "driver shutting down";
    NO_DEVICE = 100, "no CUDA-capable device is detected";
    INVALID_DEVICE = 101, "invalid device ordinal";
    INVALID_IMAGE = 200, "device kernel image is invalid";
    INVALID_CONTEXT = 201, "invalid device context";
    NO_BINARY_FOR_GPU = 209, "no kernel image is available for execution on the device";
    INVALID_PTX = 218, "a PTX JIT compilation failed";
    INVALID_HANDLE = 400, "invalid resource handle";
    NOT_FOUND = 500, "named symbol not found";
    NOT_READY = 600, "device not ready";
    ILLEGAL_ADDRESS = 700, "an illegal memory access was encountered";
    PEER_ACCESS_ALREADY_ENABLED = 704, "peer access is already enabled";
    HOST_MEMORY_ALREADY_REGISTERED = 712, "part or all of the requested memory range is already mapped";
    HOST_MEMORY_NOT_REGISTERED = 713, "pointer does not correspond to a registered memory region";
    ILLEGAL_INSTRUCTION = 715, "an illegal instruction was encountered";
    LAUNCH_FAILED = 719, "unspecified launch failure";
    NOT_SUPPORTED = 801, "operation not supported";
    UNKNOWN = 999, "unknown error";
}

pub const SUCCESS: CuResult = 0;

/// The name of any code, for traces.
pub fn describe(code: CuResult) -> String {
    if code == SUCCESS {
        "CUDA_SUCCESS".into()
    } else {
        name(code).map_or_else(|| format!("CUresult {code}"), str::to_owned)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_texts_match_the_driver() {
        assert_eq!(name(1), Some("CUDA_ERROR_INVALID_VALUE"));
        assert_eq!(name(201), Some("CUDA_ERROR_INVALID_CONTEXT"));
        assert_eq!(text(2), Some("out of memory"));
        assert_eq!(name(700), Some("CUDA_ERROR_ILLEGAL_ADDRESS"));
        assert_eq!(name(715), Some("CUDA_ERROR_ILLEGAL_INSTRUCTION"));
        assert_eq!(name(12345), None);
        assert_eq!(describe(0), "CUDA_SUCCESS");
    }
}
