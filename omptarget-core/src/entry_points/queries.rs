//! What libomp and tools ask the offload runtime.

use super::guard;
use crate::runtime::Runtime;
use std::ffi::c_void;

/// libomp polls this for `nowait` target tasks that left an asynchronous handle behind: the
/// construct is finished once its device work has completed (`crate::nowait`).
#[no_mangle]
pub extern "C" fn __tgt_target_nowait_query(async_handle: *mut *mut c_void) {
    guard("__tgt_target_nowait_query", (), || {
        // SAFETY: libomp passes the address of the task's handle slot, which only
        // `nowait::finish_or_defer` fills.
        unsafe { crate::nowait::query(async_handle) }
    })
}

/// Prints a device's properties; returns 1 when the device exists (LLVM's convention).
#[no_mangle]
pub extern "C" fn __tgt_print_device_info(device_id: i64) -> i32 {
    guard("__tgt_print_device_info", 0, || {
        let runtime = Runtime::get();
        let Ok(device) = runtime.device(device_id) else {
            return 0;
        };
        println!(
            "Device {} ({} plugin, device {}):",
            device.id, device.plugin.name, device.local
        );
        match device.plugin.device_info(device.local) {
            Ok(info) => {
                for entry in info {
                    println!("    {:<24} {}", entry.key, entry.value);
                }
                1
            }
            Err(e) => {
                println!("    (no information: {})", e.message);
                0
            }
        }
    })
}

/// LLVM's programmatic form of `LIBOMPTARGET_INFO`.
#[no_mangle]
pub extern "C" fn __tgt_set_info_flag(flag: u32) {
    crate::observe::info::set(flag);
}
