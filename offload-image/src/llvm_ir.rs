//! LLVM IR (bitcode) device images: what clang builds with `-fopenmp-target-jit`, for the
//! runtime to compile for the device when it loads them. LLVM's runtime does that with the LLVM
//! it links (its `LIBOMPTARGET_JIT_*` variables tune it); this runtime links no LLVM, so it
//! recognises such images only to refuse them with a message saying so.

/// Raw bitcode starts with `BC` 0xC0DE.
const RAW_MAGIC: [u8; 4] = [b'B', b'C', 0xC0, 0xDE];
/// Bitcode in its wrapper header (as Darwin's toolchains write it): 0x0B17C0DE, little-endian.
const WRAPPER_MAGIC: [u8; 4] = [0xDE, 0xC0, 0x17, 0x0B];

/// Whether `bytes` is an LLVM bitcode file (raw or wrapped), by its magic.
pub fn is_bitcode(bytes: &[u8]) -> bool {
    bytes.len() >= 4 && (bytes[..4] == RAW_MAGIC || bytes[..4] == WRAPPER_MAGIC)
}

/// Why a bitcode image is refused, in short (a plugin's answer).
pub const REFUSED: &str = "an LLVM IR (bitcode) image, which needs JIT compilation: not supported";

/// Why a bitcode image is refused, in full (said once to the user).
pub const NOT_SUPPORTED: &str = "device image is LLVM IR (bitcode), as clang builds with \
    -fopenmp-target-jit: JIT compilation of LLVM IR images is not supported, since this \
    runtime does not include LLVM's code generator, which LLVM's runtime uses to compile such \
    images when it loads them (the LIBOMPTARGET_JIT_* variables are ignored); build the \
    program without -fopenmp-target-jit";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bitcode_is_known_by_its_magic() {
        assert!(is_bitcode(b"BC\xC0\xDE\x35\x14\x00\x00"));
        assert!(is_bitcode(&[0xDE, 0xC0, 0x17, 0x0B, 0, 0, 0, 0]));
        assert!(!is_bitcode(b"\x7fELF\x02\x01\x01\x00"));
        assert!(!is_bitcode(b"BC\xC0"));
        assert!(!is_bitcode(&[0x10, 0xFF, 0x10, 0xAD]));
    }
}
