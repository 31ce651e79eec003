//! OpenMP 6.0 device identifiers (LLVM 22): a string that names a device the same way in every
//! process, where device numbers depend on the plugins and environment.

use super::guard;
use crate::observe::logging;
use crate::runtime::Runtime;
use std::ffi::{c_char, c_int, CStr};

/// `omp_invalid_device`.
const INVALID_DEVICE: c_int = -2;
/// The initial device's identifier, LLVM's.
const HOST_UID: &CStr = c"HOST";

/// The identifier of device `device_num`; null for `omp_invalid_device` or (with a message) a
/// number that is no device, where LLVM aborts.
#[no_mangle]
pub extern "C" fn omp_get_uid_from_device(device_num: c_int) -> *const c_char {
    guard("omp_get_uid_from_device", std::ptr::null(), || {
        let runtime = Runtime::get();
        if device_num == INVALID_DEVICE {
            return std::ptr::null();
        }
        // The initial device, also as OpenMP 5.2's `omp_initial_device` (-1).
        if device_num == runtime.initial_device() || device_num == -1 {
            return HOST_UID.as_ptr();
        }
        match runtime.device(device_num as i64) {
            Ok(device) => device.uid().as_ptr(),
            Err(e) => {
                logging::failure_message(&format!("omp_get_uid_from_device: {e}"));
                std::ptr::null()
            }
        }
    })
}

/// The device an identifier names; `omp_invalid_device` for null or an unknown identifier.
#[no_mangle]
pub extern "C" fn omp_get_device_from_uid(uid: *const c_char) -> c_int {
    guard("omp_get_device_from_uid", INVALID_DEVICE, || {
        if uid.is_null() {
            return INVALID_DEVICE;
        }
        // SAFETY: the program passes a NUL-terminated string.
        let uid = unsafe { CStr::from_ptr(uid) };
        let runtime = Runtime::get();
        if uid == HOST_UID {
            return runtime.initial_device();
        }
        (0..runtime.num_devices())
            .filter_map(|id| runtime.device(id as i64).ok())
            .find(|device| device.uid() == uid)
            .map_or(INVALID_DEVICE, |device| device.id)
    })
}
