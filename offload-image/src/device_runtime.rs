//! Kernels compiled GPU-style into an x86-64 image, and omptarget-rs's host device runtime that
//! runs them (host-device-runtime/, `libomptarget-host-device.a`, linked into the image).
//!
//! flang compiles every target region GPU-style, also for x86-64: the kernel has a
//! `<kernel>_kernel_environment` global and calls the GPU device runtime's entry points. Such a
//! kernel is not called directly: the runtime's launcher, exported by the image, runs it on a
//! league of teams of real threads. Its users: the host plugin (a host device's image) and the
//! driver emulators (a GPU image's x86-64 twin, [`crate::twin`], whose kernels get the league
//! of the GPU launch: a team per block or work-group, its threads as the GPU runtime counts
//! them, [`Shape::of_gpu_launch`]).

use crate::device_environment::{
    DeviceEnvironment, KernelConfiguration, DEVICE_ENVIRONMENT_SYMBOL, KERNEL_ENVIRONMENT_SUFFIX,
};

/// The runtime's launch call, version 1 (host-device-runtime/host_device_runtime.c).
pub const LAUNCHER_SYMBOL: &str = "__omptarget_host_device_launch_v1";

/// The most words the launcher passes to a kernel (HDR_MAX_ARGS in host-device-runtime/arity.h).
pub const MAX_KERNEL_WORDS: usize = 64;

/// `OMP_TGT_EXEC_MODE_GENERIC`: the kernel environment's execution mode of a kernel whose team
/// runs its main thread apart from the workers (`OMPTgtExecModeFlags`).
pub const EXEC_MODE_GENERIC: u8 = 1;

type Launcher = unsafe extern "C" fn(
    kernel: usize,
    args: *const usize,
    nargs: u64,
    teams: u32,
    thread_limit: u32,
    default_threads: u32,
    dyn_mem: u64,
) -> i32;

/// A kernel with a kernel environment: compiled GPU-style.
#[derive(Copy, Clone, Debug)]
pub struct RuntimeKernel {
    /// The launcher of the kernel's image; `None` where the image lacks the runtime.
    pub launcher: Option<usize>,
    pub config: KernelConfiguration,
}

impl RuntimeKernel {
    /// The kernel `name` of a loaded image, if it is GPU-style: `symbol` finds the image's
    /// symbols.
    pub fn find(name: &str, symbol: impl Fn(&str) -> Option<usize>) -> Option<RuntimeKernel> {
        let environment = symbol(&format!("{name}{KERNEL_ENVIRONMENT_SUFFIX}"))?;
        // SAFETY: the compiler's `<kernel>_kernel_environment` starts with a
        // ConfigurationEnvironmentTy, in the loaded image's data.
        let bytes = unsafe {
            std::ptr::read_unaligned(environment as *const [u8; KernelConfiguration::SIZE])
        };
        Some(RuntimeKernel {
            launcher: symbol(LAUNCHER_SYMBOL),
            config: KernelConfiguration::from_bytes(&bytes),
        })
    }
}

/// The league a launch runs.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Shape {
    pub teams: u32,
    /// The most threads a team's parallel region gets.
    pub thread_limit: u32,
    /// A parallel region's threads without a `num_threads` clause.
    pub default_threads: u32,
}

impl Shape {
    /// The league of a GPU launch of `blocks` blocks (work-groups) of `block_threads` threads
    /// each, run through the kernel's x86-64 twin: a team per block, with the threads LLVM's
    /// GPU device runtime gives a team (`mapping::getMaxTeamThreads`): the block's, less the
    /// warp (wavefront) of `warp_size` threads that a generic-mode kernel (`exec_mode`, of the
    /// GPU image's kernel environment) keeps for its main thread. A parallel region without
    /// `num_threads` gets them all, as the GPU runtime's nthreads ICV starts at 0.
    pub fn of_gpu_launch(blocks: u64, block_threads: u64, exec_mode: u8, warp_size: u32) -> Shape {
        let block = u32::try_from(block_threads).unwrap_or(u32::MAX);
        let threads = match exec_mode {
            EXEC_MODE_GENERIC => block.saturating_sub(warp_size),
            _ => block,
        }
        .max(1);
        Shape {
            teams: u32::try_from(blocks).unwrap_or(u32::MAX).max(1),
            thread_limit: threads,
            default_threads: threads,
        }
    }
}

/// Why [`launch`] did not run a kernel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LaunchError {
    /// The kernel's image lacks the runtime's launcher.
    NoRuntime,
    /// More argument words than the launcher passes.
    TooManyWords(usize),
    /// The launcher refused the kernel.
    Failed,
}

impl LaunchError {
    /// The message for kernel `name`; `link` says how to link the runtime into the kernel's
    /// image (the offload linker's flags for its target).
    pub fn message(&self, name: &str, link: &str) -> String {
        match self {
            LaunchError::NoRuntime => format!(
                "kernel '{name}' was compiled GPU-style (as flang compiles target regions) and \
                 needs omptarget-rs's host device runtime, which its image lacks: link the image \
                 with it ({link} -lomptarget-host-device, from the lib directory of omptarget-rs)"
            ),
            LaunchError::TooManyWords(words) => format!(
                "kernel '{name}' takes {words} arguments; the host device runtime passes at most \
                 {MAX_KERNEL_WORDS}"
            ),
            LaunchError::Failed => {
                format!("the host device runtime could not run kernel '{name}'")
            }
        }
    }
}

/// Runs `kernel` (its full argument words, launch environment first) on the league `shape`
/// through its image's runtime, with `dyn_mem` bytes of dynamic shared memory per team,
/// returning when every team has finished.
///
/// # Safety
/// `kernel` is a kernel of a loaded image whose runtime is `runtime`, taking `words`; the
/// image stays loaded during the call.
pub unsafe fn launch(
    kernel: usize,
    runtime: &RuntimeKernel,
    words: &[usize],
    shape: Shape,
    dyn_mem: u64,
) -> Result<(), LaunchError> {
    let Some(launcher) = runtime.launcher else {
        return Err(LaunchError::NoRuntime);
    };
    if words.len() > MAX_KERNEL_WORDS {
        return Err(LaunchError::TooManyWords(words.len()));
    }
    // SAFETY: the launcher symbol of an image with the runtime is the launch call of this
    // signature (LAUNCHER_SYMBOL names its version).
    let launcher: Launcher = unsafe { std::mem::transmute::<usize, Launcher>(launcher) };
    // SAFETY: the caller's promise; the words outlive the call, which returns when the
    // kernel has finished on every team.
    let status = unsafe {
        launcher(
            kernel,
            words.as_ptr(),
            words.len() as u64,
            shape.teams,
            shape.thread_limit,
            shape.default_threads,
            dyn_mem,
        )
    };
    match status {
        0 => Ok(()),
        _ => Err(LaunchError::Failed),
    }
}

/// Writes `environment` into the image's device environment global, if it has one.
///
/// # Safety
/// `symbol` finds the symbols of a loaded image, none of whose kernels runs yet.
pub unsafe fn fill_device_environment(
    symbol: impl Fn(&str) -> Option<usize>,
    environment: &DeviceEnvironment,
) {
    if let Some(address) = symbol(DEVICE_ENVIRONMENT_SYMBOL) {
        let bytes = environment.to_bytes();
        // SAFETY: the runtime's `__omp_rtl_device_environment` is a writable
        // DeviceEnvironmentTy (48 bytes) of the loaded image, which no kernel reads yet.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), address as *mut u8, bytes.len()) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gpu_launch_is_a_team_per_block_with_the_runtimes_thread_count() {
        // SPMD and generic-SPMD kernels: every thread of the block.
        for mode in [2, 3] {
            let s = Shape::of_gpu_launch(4, 256, mode, 64);
            assert_eq!((s.teams, s.thread_limit, s.default_threads), (4, 256, 256));
        }
        // Generic mode: the main thread's warp is not the team's (thread_limit(3) on gfx90a
        // launches 3 + 64 threads a block).
        let s = Shape::of_gpu_launch(1, 67, EXEC_MODE_GENERIC, 64);
        assert_eq!((s.teams, s.thread_limit, s.default_threads), (1, 3, 3));
        let s = Shape::of_gpu_launch(2, 128, EXEC_MODE_GENERIC, 32);
        assert_eq!((s.teams, s.thread_limit), (2, 96));
        // Never below one thread, nor no team; a league past u32 saturates.
        assert_eq!(
            Shape::of_gpu_launch(0, 32, EXEC_MODE_GENERIC, 64).thread_limit,
            1
        );
        assert_eq!(Shape::of_gpu_launch(0, 32, 2, 64).teams, 1);
        assert_eq!(Shape::of_gpu_launch(1 << 40, 1, 2, 32).teams, u32::MAX);
    }

    #[test]
    fn a_kernel_environment_makes_a_runtime_kernel_and_the_launcher_is_optional() {
        // flang's `{ i8 0, i8 1, i8 1, i32 1, i32 256, i32 -1, i32 -1, i32 0, i32 0 }`.
        let mut environment = [0u8; 48];
        environment[..3].copy_from_slice(&[0, 1, 1]);
        for (i, v) in [1i32, 256, -1, -1, 0, 0].iter().enumerate() {
            environment[4 + 4 * i..8 + 4 * i].copy_from_slice(&v.to_le_bytes());
        }
        let at = environment.as_ptr() as usize;
        let symbols = |launcher: bool| {
            move |name: &str| match name {
                "k_kernel_environment" => Some(at),
                LAUNCHER_SYMBOL if launcher => Some(0x1000),
                _ => None,
            }
        };
        let found = RuntimeKernel::find("k", symbols(true)).expect("GPU-style");
        assert_eq!(found.launcher, Some(0x1000));
        assert_eq!(found.config.exec_mode, EXEC_MODE_GENERIC);
        assert_eq!(found.config.max_threads, 256);
        assert_eq!(
            RuntimeKernel::find("k", symbols(false)).unwrap().launcher,
            None
        );
        assert!(RuntimeKernel::find("other", symbols(true)).is_none());
        // Without a launcher nothing is called.
        let runtime = RuntimeKernel::find("k", symbols(false)).unwrap();
        let shape = Shape::of_gpu_launch(1, 1, 2, 32);
        // SAFETY: no launcher: the call returns before calling anything.
        let refused = unsafe { launch(0, &runtime, &[0], shape, 0) };
        assert_eq!(refused, Err(LaunchError::NoRuntime));
        let message = LaunchError::NoRuntime.message("k", "-Xoffload-linker");
        assert!(message.contains("-Xoffload-linker -lomptarget-host-device"));
    }
}
