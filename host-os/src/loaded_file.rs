//! Which object the dynamic loader took a piece of code from: driver libraries are opened by
//! soname, and messages (and the MPI plugin, looking for its own directory and Open MPI's)
//! need the file; OMPT's return addresses need the object's load address.

use std::ffi::{c_char, c_int, c_void};
use std::path::PathBuf;

/// The file that holds `address` (a function or static of a loaded library), as the dynamic
/// loader recorded it when it was opened: the name searched for may be a symbolic link.
pub fn loaded_file(address: usize) -> Option<PathBuf> {
    let info = dl_info(address)?;
    if info.dli_fname.is_null() {
        return None;
    }
    // SAFETY: dli_fname is a NUL-terminated string in the loader's tables, valid while the
    // library stays loaded; it is copied at once.
    let name = unsafe { std::ffi::CStr::from_ptr(info.dli_fname) };
    Some(PathBuf::from(name.to_string_lossy().into_owned()))
}

/// The load address of the object (shared library or executable) that holds `address`.
pub fn object_base(address: usize) -> Option<usize> {
    dl_info(address).map(|info| info.dli_fbase as usize)
}

/// The name of the exported symbol that starts exactly at `address` (a function the loader
/// can look up by name, such as a kernel of a loaded image).
pub fn symbol_at(address: usize) -> Option<String> {
    let info = dl_info(address)?;
    if info.dli_sname.is_null() || info.dli_saddr as usize != address {
        return None;
    }
    // SAFETY: dli_sname is a NUL-terminated string in the loader's tables, valid while the
    // object stays loaded; it is copied at once.
    let name = unsafe { std::ffi::CStr::from_ptr(info.dli_sname) };
    Some(name.to_string_lossy().into_owned())
}

fn dl_info(address: usize) -> Option<DlInfo> {
    let mut info = DlInfo {
        dli_fname: std::ptr::null(),
        dli_fbase: std::ptr::null_mut(),
        dli_sname: std::ptr::null(),
        dli_saddr: std::ptr::null_mut(),
    };
    // SAFETY: dladdr only reads the address, as a lookup key, and fills `info`, a valid
    // out-parameter.
    let found = unsafe { dladdr(address as *const c_void, &mut info) };
    (found != 0).then_some(info)
}

/// `Dl_info` of `<dlfcn.h>`.
#[repr(C)]
struct DlInfo {
    dli_fname: *const c_char,
    dli_fbase: *mut c_void,
    dli_sname: *const c_char,
    dli_saddr: *mut c_void,
}

extern "C" {
    fn dladdr(address: *const c_void, info: *mut DlInfo) -> c_int;
}

#[test]
fn finds_the_file_of_a_libc_function() {
    extern "C" {
        fn malloc(size: usize) -> *mut c_void;
    }
    let file = loaded_file(malloc as *const () as usize).expect("malloc's library");
    assert!(
        file.to_string_lossy().contains("libc"),
        "{}",
        file.display()
    );
    assert!(loaded_file(0).is_none());
    assert!(object_base(malloc as *const () as usize).is_some_and(|base| base != 0));
    assert_eq!(
        symbol_at(malloc as *const () as usize).as_deref(),
        Some("malloc")
    );
    assert_eq!(symbol_at(malloc as *const () as usize + 1), None);
}
