//! Kernel record and replay entry points, which LLVM's `llvm-omp-kernel-replay` calls; the
//! logic is in `crate::record_replay`.

use super::guard;
use crate::abi::source_location::Ident;
use crate::observe::logging;
use crate::record_replay::{self, Replay};
use crate::runtime::Runtime;
use std::ffi::c_void;

/// `OMP_TGT_SUCCESS` / `OMP_TGT_FAIL` of LLVM's `omptarget.h`.
const SUCCESS: i32 = 0;
const FAIL: i32 = !0;

/// Starts recording (`is_record`) or replaying on device `device_id` with a block of device
/// memory of at least `memory_size` bytes starting, if possible, at `vaddr`. `*req_ptr_arg_offset`
/// receives how far pointer arguments must move when it cannot start there.
#[no_mangle]
pub extern "C" fn __tgt_activate_record_replay(
    device_id: i64,
    memory_size: u64,
    vaddr: *mut c_void,
    is_record: bool,
    save_output: bool,
    req_ptr_arg_offset: *mut u64,
) -> i32 {
    guard("__tgt_activate_record_replay", FAIL, || {
        let outcome = Runtime::get().device(device_id).and_then(|device| {
            device.initialize()?;
            device.activate_record_replay(!is_record, save_output, vaddr as usize, memory_size)
        });
        match outcome {
            Ok(offset) => {
                if !req_ptr_arg_offset.is_null() {
                    // SAFETY: the tool passes the address of its uint64_t.
                    unsafe { *req_ptr_arg_offset = offset };
                }
                SUCCESS
            }
            Err(e) => {
                logging::failure_message(&format!("__tgt_activate_record_replay: {e}"));
                FAIL
            }
        }
    })
}

/// Replays a recorded kernel: `device_memory` (`device_memory_size` bytes) is copied back to
/// the device and the kernel of `host_ptr` launched with `tgt_args[i] + tgt_offsets[i]`.
#[no_mangle]
pub extern "C" fn __tgt_target_kernel_replay(
    _loc: *const Ident,
    device_id: i64,
    host_ptr: *mut c_void,
    device_memory: *mut c_void,
    device_memory_size: i64,
    tgt_args: *mut *mut c_void,
    tgt_offsets: *mut isize,
    num_args: i32,
    num_teams: i32,
    thread_limit: i32,
    loop_tripcount: u64,
) -> i32 {
    guard("__tgt_target_kernel_replay", FAIL, || {
        let count = num_args.max(0) as usize;
        let args: Vec<usize> = (0..count)
            .map(|i| {
                // SAFETY: the tool passes `num_args` arguments and offsets.
                let (arg, offset) = unsafe {
                    (
                        *tgt_args.add(i) as usize,
                        if tgt_offsets.is_null() {
                            0
                        } else {
                            *tgt_offsets.add(i)
                        },
                    )
                };
                arg.wrapping_add_signed(offset)
            })
            .collect();
        let size = device_memory_size.max(0) as usize;
        let memory: &[u8] = if size == 0 || device_memory.is_null() {
            &[]
        } else {
            // SAFETY: the tool passes the recorded memory, `device_memory_size` bytes.
            unsafe { std::slice::from_raw_parts(device_memory as *const u8, size) }
        };
        let request = Replay {
            region_id: host_ptr as usize,
            memory,
            args: &args,
            num_teams: num_teams.max(0) as u32,
            thread_limit: thread_limit.max(0) as u32,
            tripcount: loop_tripcount,
        };
        let outcome = Runtime::get()
            .device(device_id)
            .and_then(|device| record_replay::replay(device, &request));
        match outcome {
            Ok(()) => SUCCESS,
            Err(e) => {
                logging::failure_message(&format!("__tgt_target_kernel_replay: {e}"));
                FAIL
            }
        }
    })
}
