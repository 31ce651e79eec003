//! `ident_t` source locations, for diagnostics.

use std::ffi::{c_char, c_void, CStr};

#[repr(C)]
pub(crate) struct Ident {
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
pub(crate) unsafe fn describe(loc: *const Ident) -> Option<String> {
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

/// `file:line:col`, or LLVM's `unknown:0:0` when the program carries no locations.
///
/// # Safety
/// As [`describe`].
pub(crate) unsafe fn describe_or_unknown(loc: *const Ident) -> String {
    // SAFETY: caller's promise.
    unsafe { describe(loc) }.unwrap_or_else(|| "unknown:0:0".into())
}

/// A variable's `map_var_info_t` as the compiler hands it over: ";name;file;line;col;;", or a
/// global's plain symbol name. Made only from the compiler's arguments, so reading it is safe
/// afterwards; kept as an address so that mappings holding one stay `Send`.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct VarName(usize);

impl VarName {
    /// No name: the program was built without map names, or the runtime made the mapping.
    pub(crate) const UNKNOWN: VarName = VarName(0);

    /// # Safety
    /// `info` must be null or a C string that stays readable while the runtime may print it
    /// (the compiler emits them as constants of the program).
    pub(crate) unsafe fn from_compiler(info: *const c_void) -> VarName {
        VarName(info as usize)
    }

    /// The address, to hand back to compiler-generated code (mapper functions take it).
    pub(crate) fn as_ptr(self) -> *mut c_void {
        self.0 as *mut c_void
    }

    /// The whole string, or `None` when there is none.
    pub(crate) fn text(self) -> Option<String> {
        if self.0 == 0 {
            return None;
        }
        // SAFETY: a non-zero `VarName` is a C string (`from_compiler`'s contract).
        let text = unsafe { CStr::from_ptr(self.0 as *const c_char) };
        Some(text.to_string_lossy().into_owned())
    }

    /// The variable's name, or "unknown".
    pub(crate) fn variable(self) -> String {
        let Some(text) = self.text() else {
            return "unknown".into();
        };
        // A plain string (a global's symbol name) is the name itself, as in LLVM.
        match text.split(';').nth(1) {
            Some(name) => name.to_string(),
            None => text,
        }
    }
}

/// Parses clang's ";file;function;line;column;;" form.
pub(crate) fn parse(psource: &str) -> Option<String> {
    let parts: Vec<&str> = psource.split(';').collect();
    if parts.len() < 5 || parts[1] == "unknown" || parts[1].is_empty() {
        return None;
    }
    Some(format!("{}:{}:{}", base_name(parts[1]), parts[3], parts[4]))
}

/// LLVM prints file names without their directories.
pub(crate) fn base_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

#[test]
fn parses_clang_locations() {
    assert_eq!(parse(";a.c;main;12;3;;").as_deref(), Some("a.c:12:3"));
    assert_eq!(parse(";/src/b.c;f;1;2;;").as_deref(), Some("b.c:1:2"));
    assert_eq!(parse(";unknown;unknown;0;0;;"), None);
}
