//! LLVM 22's kernel-language (CUDA/HIP `-foffload-via-llvm`) entry points: what clang emits
//! for `kernel<<<grid, block, shared, stream>>>(args)`. The logic is in
//! `crate::kernel_language`.

use super::{guard, OFFLOAD_FAIL, OFFLOAD_SUCCESS};
use crate::abi::kernel_language::{Dim3, KernelLaunchParams};
use crate::kernel_language::{self, CallConfiguration};
use crate::observe::logging;
use std::ffi::{c_uint, c_void};

/// Records the configuration of the launch that follows on this thread; returns 0.
#[no_mangle]
pub extern "C" fn __llvmPushCallConfiguration(
    grid: Dim3,
    block: Dim3,
    shared_memory: usize,
    stream: *mut c_void,
) -> c_uint {
    guard("__llvmPushCallConfiguration", 0, || {
        kernel_language::push(CallConfiguration {
            grid,
            block,
            shared_memory,
            stream,
        });
        0
    })
}

/// Hands the kernel's host stub the configuration pushed last on this thread; returns 0.
/// `stream` is a `void **` in all but its C type.
#[no_mangle]
pub extern "C" fn __llvmPopCallConfiguration(
    grid: *mut Dim3,
    block: *mut Dim3,
    shared_memory: *mut usize,
    stream: *mut c_void,
) -> c_uint {
    guard("__llvmPopCallConfiguration", 0, || {
        if grid.is_null() || block.is_null() || shared_memory.is_null() || stream.is_null() {
            logging::failure_message("__llvmPopCallConfiguration: a null output pointer");
            return OFFLOAD_FAIL as c_uint;
        }
        let configuration = kernel_language::pop();
        // SAFETY: the stub passes its locals: two dim3, a size_t and a void * slot.
        unsafe {
            *grid = configuration.grid;
            *block = configuration.block;
            *shared_memory = configuration.shared_memory;
            *(stream as *mut *mut c_void) = configuration.stream;
        }
        0
    })
}

/// Launches the kernel of host stub `function` on device 0 and waits for it. `args` points to
/// the parameter block (`KernelLaunchParamsTy`) clang builds. 0 on success.
#[no_mangle]
pub extern "C" fn llvmLaunchKernel(
    function: *const c_void,
    grid: Dim3,
    block: Dim3,
    args: *const KernelLaunchParams,
    shared_memory: usize,
    _stream: *mut c_void,
) -> c_uint {
    guard("llvmLaunchKernel", OFFLOAD_FAIL as c_uint, || {
        if args.is_null() {
            logging::failure_message("llvmLaunchKernel: no parameter block");
            return OFFLOAD_FAIL as c_uint;
        }
        // SAFETY: clang passes a valid KernelLaunchParamsTy.
        let block_of_params = unsafe { *args };
        let params: &[u8] = if block_of_params.size == 0 || block_of_params.data.is_null() {
            &[]
        } else {
            // SAFETY: `data` holds `size` bytes of parameters.
            unsafe {
                std::slice::from_raw_parts(block_of_params.data as *const u8, block_of_params.size)
            }
        };
        match kernel_language::launch(function as usize, grid, block, params, shared_memory) {
            Ok(()) => OFFLOAD_SUCCESS as c_uint,
            Err(e) => {
                logging::failure_message(&format!("llvmLaunchKernel: {e}"));
                OFFLOAD_FAIL as c_uint
            }
        }
    })
}
