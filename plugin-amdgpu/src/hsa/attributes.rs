//! Reading `*_get_info` attributes without trusting a Rust type to match the C one.
//!
//! The `*_get_info` calls write an attribute-dependent type through a `void *`. Each query here
//! hands the runtime a zeroed buffer larger than any attribute hsa.h documents (the largest,
//! `HSA_AGENT_INFO_EXTENSIONS`, is 128 bytes), then decodes the value from the bytes, so asking
//! for the wrong type reads a wrong value but never writes out of bounds.

use super::error::check;
use crate::hsa_interface::HsaError;
use hsa_sys::*;
use std::ffi::c_void;

/// Bytes handed to the runtime per query.
const VALUE_BYTES: usize = 256;

/// An attribute value as the runtime wrote it.
#[derive(Clone)]
pub(crate) struct AttributeValue {
    bytes: [u8; VALUE_BYTES],
}

impl AttributeValue {
    /// All bytes zero: every number 0, `false`, the empty string.
    pub fn zeroed() -> AttributeValue {
        AttributeValue {
            bytes: [0; VALUE_BYTES],
        }
    }

    fn as_mut_ptr(&mut self) -> *mut c_void {
        self.bytes.as_mut_ptr().cast()
    }

    fn array<const N: usize>(&self, at: usize) -> [u8; N] {
        let mut out = [0; N];
        out.copy_from_slice(&self.bytes[at..at + N]);
        out
    }

    /// A C `bool`.
    pub fn bool(&self) -> bool {
        self.bytes[0] != 0
    }

    pub fn u16(&self) -> u16 {
        u16::from_ne_bytes(self.array(0))
    }

    pub fn u32(&self) -> u32 {
        u32::from_ne_bytes(self.array(0))
    }

    /// A `u64` or a `size_t`.
    pub fn u64(&self) -> u64 {
        u64::from_ne_bytes(self.array(0))
    }

    /// `uint16_t[3]`.
    pub fn u16x3(&self) -> [u16; 3] {
        [0, 2, 4].map(|at| u16::from_ne_bytes(self.array(at)))
    }

    /// `hsa_dim3_t`.
    pub fn dim3(&self) -> [u32; 3] {
        [0, 4, 8].map(|at| u32::from_ne_bytes(self.array(at)))
    }

    /// A fixed `char[N]` holding a NUL-terminated string; surrounding blanks trimmed.
    pub fn string(&self) -> String {
        let end = self
            .bytes
            .iter()
            .position(|&b| b == 0)
            .unwrap_or(VALUE_BYTES);
        String::from_utf8_lossy(&self.bytes[..end])
            .trim()
            .to_string()
    }
}

/// `hsa_system_get_info`.
pub(crate) fn system(
    library: &HsaLibrary,
    attribute: hsa_system_info_t,
) -> Result<AttributeValue, HsaError> {
    let mut value = AttributeValue::zeroed();
    // SAFETY: `value` is a writable buffer larger than any system attribute.
    let status = unsafe { (library.hsa_system_get_info)(attribute, value.as_mut_ptr()) };
    check("hsa_system_get_info", status)?;
    Ok(value)
}

/// `hsa_agent_get_info`.
pub(crate) fn agent(
    library: &HsaLibrary,
    agent: hsa_agent_t,
    attribute: hsa_agent_info_t,
) -> Result<AttributeValue, HsaError> {
    let mut value = AttributeValue::zeroed();
    // SAFETY: `value` is a writable buffer larger than any agent attribute; an invalid agent
    // handle is reported as HSA_STATUS_ERROR_INVALID_AGENT.
    let status = unsafe { (library.hsa_agent_get_info)(agent, attribute, value.as_mut_ptr()) };
    check("hsa_agent_get_info", status)?;
    Ok(value)
}

/// `hsa_amd_memory_pool_get_info`.
pub(crate) fn pool(
    library: &HsaLibrary,
    pool: hsa_amd_memory_pool_t,
    attribute: hsa_amd_memory_pool_info_t,
) -> Result<AttributeValue, HsaError> {
    let mut value = AttributeValue::zeroed();
    // SAFETY: `value` is a writable buffer larger than any pool attribute.
    let status =
        unsafe { (library.hsa_amd_memory_pool_get_info)(pool, attribute, value.as_mut_ptr()) };
    check("hsa_amd_memory_pool_get_info", status)?;
    Ok(value)
}

/// `hsa_executable_symbol_get_info`, for every attribute but the name (whose length varies).
pub(crate) fn symbol(
    library: &HsaLibrary,
    symbol: hsa_executable_symbol_t,
    attribute: hsa_executable_symbol_info_t,
) -> Result<AttributeValue, HsaError> {
    let mut value = AttributeValue::zeroed();
    // SAFETY: `value` is a writable buffer larger than any fixed-size symbol attribute.
    let status =
        unsafe { (library.hsa_executable_symbol_get_info)(symbol, attribute, value.as_mut_ptr()) };
    check("hsa_executable_symbol_get_info", status)?;
    Ok(value)
}

/// The name of `isa` (`HSA_ISA_INFO_NAME`), e.g. `amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-`.
pub(crate) fn isa_name(library: &HsaLibrary, isa: hsa_isa_t) -> Result<String, HsaError> {
    let mut length = AttributeValue::zeroed();
    // SAFETY: `length` is a writable buffer larger than the u32 written.
    let status = unsafe {
        (library.hsa_isa_get_info_alt)(isa, HSA_ISA_INFO_NAME_LENGTH, length.as_mut_ptr())
    };
    check("hsa_isa_get_info_alt", status)?;
    // One spare byte, in case a runtime counts the name without its NUL.
    let mut name = vec![0u8; length.u32() as usize + 1];
    // SAFETY: `name` holds NAME_LENGTH bytes plus one, what HSA_ISA_INFO_NAME writes.
    let status =
        unsafe { (library.hsa_isa_get_info_alt)(isa, HSA_ISA_INFO_NAME, name.as_mut_ptr().cast()) };
    check("hsa_isa_get_info_alt", status)?;
    let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
    Ok(String::from_utf8_lossy(&name[..end]).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn value_of(bytes: &[u8]) -> AttributeValue {
        let mut value = AttributeValue::zeroed();
        value.bytes[..bytes.len()].copy_from_slice(bytes);
        value
    }

    #[test]
    fn decodes_integers_arrays_and_strings() {
        let value = value_of(&[1, 0, 2, 0, 3, 0, 0, 0, 9, 0, 0, 0]);
        assert_eq!(value.u16(), 1);
        assert_eq!(value.u32(), 0x0002_0001);
        assert_eq!(value.u16x3(), [1, 2, 3]);
        assert_eq!(value.dim3(), [0x0002_0001, 3, 9]);
        assert!(value.bool());
        assert_eq!(value_of(b"gfx90a\0garbage").string(), "gfx90a");
        assert_eq!(
            value_of(b"  AMD Instinct MI210  \0").string(),
            "AMD Instinct MI210"
        );
        assert_eq!(AttributeValue::zeroed().string(), "");
        assert!(!AttributeValue::zeroed().bool());
    }
}
