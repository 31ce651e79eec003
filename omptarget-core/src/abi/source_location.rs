//! `ident_t` source locations, for diagnostics.

use std::ffi::{c_char, CStr};

#[repr(C)]
pub struct Ident {
    pub reserved_1: i32,
    pub flags: i32,
    pub reserved_2: i32,
    pub reserved_3: i32,
    pub psource: *const c_char,
}

/// `file:line:col` from an `ident_t`, when the program was compiled with debug locations.
///
/// # Safety
/// `loc` must be null or point to an `ident_t` whose `psource` is null or a C string.
pub unsafe fn describe(loc: *const Ident) -> Option<String> {
    if loc.is_null() {
        return None;
    }
    // SAFETY: caller's promise.
    let psource = unsafe { (*loc).psource };
    if psource.is_null() {
        return None;
    }
    // SAFETY: caller's promise: a C string.
    let text = unsafe { CStr::from_ptr(psource) }.to_string_lossy();
    parse(&text)
}

/// Parses clang's ";file;function;line;column;;" form.
pub fn parse(psource: &str) -> Option<String> {
    let parts: Vec<&str> = psource.split(';').collect();
    if parts.len() < 5 || parts[1] == "unknown" || parts[1].is_empty() {
        return None;
    }
    Some(format!("{}:{}:{}", parts[1], parts[3], parts[4]))
}

#[test]
fn parses_clang_locations() {
    assert_eq!(parse(";a.c;main;12;3;;").as_deref(), Some("a.c:12:3"));
    assert_eq!(parse(";unknown;unknown;0;0;;"), None);
}
