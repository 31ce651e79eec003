//! Kernel-language launches (CUDA/HIP compiled with `-foffload-via-llvm`, LLVM 22): clang's
//! `kernel<<<grid, block, shared, stream>>>(args)` pushes the launch configuration, pops it in
//! the kernel's host stub and calls `llvmLaunchKernel` with the stub's address and the
//! parameter buffer. As in LLVM, the kernel runs on device 0 and the launch completes before
//! the call returns (the stream is recorded, not used).

use crate::abi::kernel_language::Dim3;
use crate::error::{OffloadError, Result};
use crate::queue::ConstructQueue;
use crate::runtime::{Runtime, Target};
use plugin_api::LaunchConfig;
use std::cell::Cell;
use std::ffi::c_void;

/// The configuration of the next launch on this thread (LLVM keeps it thread-private too).
#[derive(Copy, Clone, Debug)]
pub(crate) struct CallConfiguration {
    pub grid: Dim3,
    pub block: Dim3,
    pub shared_memory: usize,
    pub stream: *mut c_void,
}

impl Default for CallConfiguration {
    fn default() -> Self {
        CallConfiguration {
            grid: Dim3::default(),
            block: Dim3::default(),
            shared_memory: 0,
            stream: std::ptr::null_mut(),
        }
    }
}

thread_local! {
    static CURRENT: Cell<CallConfiguration> = Cell::new(CallConfiguration::default());
}

/// `__llvmPushCallConfiguration`.
pub(crate) fn push(configuration: CallConfiguration) {
    CURRENT.with(|c| c.set(configuration));
}

/// `__llvmPopCallConfiguration`: the last configuration pushed on this thread.
pub(crate) fn pop() -> CallConfiguration {
    CURRENT.with(Cell::get)
}

/// The device kernel-language launches use: LLVM's is device 0, whatever the default device.
const LAUNCH_DEVICE: i64 = 0;

/// Launches the kernel whose host stub is `stub` with `params`, its parameter buffer, on a
/// `grid` of `block`s with `shared_memory` bytes of dynamic shared memory, and waits for it.
pub(crate) fn launch(
    stub: usize,
    grid: Dim3,
    block: Dim3,
    params: &[u8],
    shared_memory: usize,
) -> Result<()> {
    let runtime = Runtime::get();
    let Target::Device(device) = runtime.target(LAUNCH_DEVICE, std::ptr::null()) else {
        return Err(OffloadError::new(
            "no offload device to launch a kernel-language kernel on",
        ));
    };
    runtime.prepare(device)?;
    let kernel = device.kernel(stub).ok_or_else(|| {
        let registry = runtime.registry.read().unwrap();
        OffloadError::new(device.missing_kernel_reason(&registry, stub))
    })?;
    let config = LaunchConfig {
        num_teams: grid.to_array(),
        thread_limit: block.to_array(),
        dyn_shared_mem: u32::try_from(shared_memory).map_err(|_| {
            OffloadError::new(format!(
                "{shared_memory} bytes of dynamic shared memory is more than a launch can ask"
            ))
        })?,
        flags: kernel.launch_flags(0),
        ..Default::default()
    };
    let mut queue = ConstructQueue::new(device);
    let launched = queue.launch_params(kernel.handle, params, &config);
    let finished = queue.finish();
    launched.and(finished)
}
