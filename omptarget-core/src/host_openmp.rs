//! Values owned by the host OpenMP runtime (libomp), looked up at run time so that our library
//! does not link against it.

use once_cell::sync::OnceCell;
use std::ffi::{c_char, c_int, c_void};

extern "C" {
    fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
}

/// `RTLD_DEFAULT`: search the global scope.
const RTLD_DEFAULT: *mut c_void = std::ptr::null_mut();

fn lookup(name: &std::ffi::CStr) -> Option<extern "C" fn() -> c_int> {
    // SAFETY: dlsym with RTLD_DEFAULT and a NUL-terminated name has no preconditions.
    let address = unsafe { dlsym(RTLD_DEFAULT, name.as_ptr()) };
    if address.is_null() {
        return None;
    }
    // SAFETY: libomp's omp_get_default_device has the signature `int (void)`.
    Some(unsafe { std::mem::transmute::<*mut c_void, extern "C" fn() -> c_int>(address) })
}

/// `omp_get_default_device()` of libomp (OMP_DEFAULT_DEVICE, `omp_set_default_device`); 0 when
/// no host OpenMP runtime is loaded.
pub fn default_device() -> i32 {
    static FUNCTION: OnceCell<Option<extern "C" fn() -> c_int>> = OnceCell::new();
    FUNCTION
        .get_or_init(|| lookup(c"omp_get_default_device"))
        .map_or(0, |f| f())
}
