//! Kernels compiled GPU-style, as flang compiles every target region even for x86-64: each has a
//! `<kernel>_kernel_environment` global and calls the GPU device runtime's entry points, which
//! omptarget-rs's host device runtime (host-device-runtime/, `libomptarget-host-device.a`)
//! provides when it is linked into the image. Such a kernel is not called directly: the
//! runtime's launcher runs it on a league of teams of real threads. The image's device
//! environment global, which the runtime's `omp_get_device_num` and kin read, is filled in when
//! the image is loaded, as LLVM's plugins fill theirs.

use offload_image::device_environment::{DeviceEnvironment, KernelConfiguration};
pub use offload_image::device_runtime::{fill_device_environment, RuntimeKernel, Shape};
use plugin_api::{LaunchConfig, PluginError};

/// Threads per team a kernel may use when neither the program nor the compiler bounds them
/// (what LLVM's GPU plugins default to).
const DEFAULT_THREAD_LIMIT: u32 = 256;

/// The league for a launch on a machine with `cpus` processors: the teams and thread limit the
/// program asked for, else the compiler's bounds; by default a team per processor. A parallel
/// region without `num_threads` gets the thread limit the program asked for, as on a GPU, else
/// the team's share of the processors.
pub fn shape(config: &KernelConfiguration, launch: &LaunchConfig, cpus: u32) -> Shape {
    let cpus = cpus.max(1);
    let thread_limit = match (launch.thread_limit[0], config.max_threads) {
        (0, max) if max > 0 => max as u32,
        (0, _) => DEFAULT_THREAD_LIMIT,
        (asked, _) => asked,
    };
    let teams = match (launch.num_teams[0], config.max_teams) {
        (0, max) if max > 0 => (max as u32).min(cpus),
        // No teams construct: one team (the core passes 1 for the compiler's -1 already).
        (0, max) if max < 0 => 1,
        (0, _) => cpus,
        (asked, _) => asked,
    };
    // flang records a thread_limit clause in the kernel environment also where the host code
    // passes none (OpenMP versions before 5.1); a bound below its default is the program's.
    let asked = launch.thread_limit[0] > 0
        || (1..DEFAULT_THREAD_LIMIT as i32).contains(&config.max_threads);
    let default_threads = match asked {
        true => thread_limit,
        false => (cpus / teams).clamp(1, thread_limit),
    };
    Shape {
        teams,
        thread_limit,
        default_threads,
    }
}

/// The device environment of host device `device_num` of `num_devices`.
pub fn device_environment(device_num: i32, num_devices: i32, cpus: u32) -> DeviceEnvironment {
    let number = |name: &str| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.trim().parse::<u32>().ok())
            .unwrap_or(0)
    };
    DeviceEnvironment {
        debug_kind: number("LIBOMPTARGET_DEVICE_RTL_DEBUG"),
        num_devices: num_devices as u32,
        device_num: device_num as u32,
        dynamic_mem_size: number("LIBOMPTARGET_SHARED_MEMORY_SIZE"),
        // The runtime's clock is libomp's omp_get_wtime, in nanoseconds.
        clock_frequency: 1_000_000_000,
        hardware_parallelism: u64::from(cpus),
        ..DeviceEnvironment::default()
    }
}

/// Runs `kernel` (its full argument words, launch environment first) on the league `shape`
/// through its image's runtime, returning when every team has finished.
///
/// # Safety
/// `kernel` is a kernel of a loaded image whose runtime is `runtime`, taking `words`.
pub unsafe fn launch(
    name: &str,
    kernel: usize,
    runtime: &RuntimeKernel,
    words: &[usize],
    shape: Shape,
    dyn_mem: u64,
) -> Result<(), PluginError> {
    use offload_image::device_runtime::LaunchError;
    // SAFETY: the caller's promise.
    let launched =
        unsafe { offload_image::device_runtime::launch(kernel, runtime, words, shape, dyn_mem) };
    launched.map_err(|e| {
        let message = e.message(name, "-Xoffload-linker");
        match e {
            LaunchError::Failed => PluginError::failed(message),
            LaunchError::NoRuntime | LaunchError::TooManyWords(_) => {
                PluginError::unsupported(message)
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(max_threads: i32, max_teams: i32) -> KernelConfiguration {
        KernelConfiguration {
            max_threads,
            max_teams,
            ..KernelConfiguration::default()
        }
    }

    fn launch(teams: u32, threads: u32) -> LaunchConfig {
        LaunchConfig {
            num_teams: [teams, 0, 0],
            thread_limit: [threads, 0, 0],
            dyn_shared_mem: 0,
            tripcount: 0,
            kernel_args_version: 3,
            flags: 0,
        }
    }

    #[test]
    fn the_league_follows_the_program_then_the_compiler_then_the_machine() {
        // target teams ... num_teams(3) thread_limit(5): as asked.
        let s = shape(&config(5, 3), &launch(3, 5), 8);
        assert_eq!((s.teams, s.thread_limit, s.default_threads), (3, 5, 5));
        // thread_limit(5) that only the kernel environment records.
        let s = shape(&config(5, 3), &launch(3, 0), 8);
        assert_eq!((s.teams, s.thread_limit, s.default_threads), (3, 5, 5));
        // num_teams(4) alone: the processors shared out.
        let s = shape(&config(256, 4), &launch(4, 0), 8);
        assert_eq!((s.teams, s.thread_limit, s.default_threads), (4, 256, 2));
        // target teams without clauses: a team per processor, one thread each by default, but
        // num_threads may ask for up to the compiler's 256.
        let s = shape(&config(256, 0), &launch(0, 0), 8);
        assert_eq!((s.teams, s.thread_limit, s.default_threads), (8, 256, 1));
        // target parallel: one team with every processor.
        let s = shape(&config(256, 1), &launch(1, 0), 8);
        assert_eq!((s.teams, s.default_threads), (1, 8));
        // A plain target region (the compiler's -1 teams).
        let s = shape(&config(-1, -1), &launch(0, 0), 8);
        assert_eq!((s.teams, s.thread_limit, s.default_threads), (1, 256, 8));
        // More teams than processors are run, a processor's worth at a time.
        assert_eq!(shape(&config(256, 0), &launch(100, 0), 2).teams, 100);
    }
}
