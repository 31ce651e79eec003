//! Launch decisions that need no driver: the grid and block of a launch, and whether a
//! kernel must be opted in to more dynamic shared memory before it.

use plugin_api::gpu::{GridValues, KernelLimits};
use plugin_api::LaunchConfig;
use std::sync::Mutex;

/// The grid (blocks) and block (threads) dimensions of an OpenMP launch. LLVM's rules decide
/// the first dimension; a bare kernel (`ompx_bare`) gets the other two exactly as its
/// `num_teams` and `thread_limit` clauses give them (0, an unset dimension, counts as 1, as
/// LLVM's `__tgt_target_kernel` corrects it). Other kernels use one dimension only.
pub fn dimensions(
    limits: &KernelLimits,
    grid: &GridValues,
    config: &LaunchConfig,
) -> ([u32; 3], [u32; 3]) {
    let (blocks, threads) = limits.geometry(grid, config);
    if !limits.is_bare() {
        return ([blocks, 1, 1], [threads, 1, 1]);
    }
    let (teams, limit) = (config.num_teams, config.thread_limit);
    (
        [blocks, teams[1].max(1), teams[2].max(1)],
        [threads, limit[1].max(1), limit[2].max(1)],
    )
}

/// The execution mode's name in `LIBOMPTARGET_INFO` launch lines: LLVM 22 names a kernel
/// without a (recognised) kernel environment `BARE`; LLVM 19 launches it as SPMD.
pub fn mode_name(limits: &KernelLimits, config: &LaunchConfig) -> &'static str {
    match limits.environment {
        Some(e) => e.exec_mode.name(),
        None if config.is_llvm22_program() => "BARE",
        None => "SPMD",
    }
}

/// What a kernel may use of dynamic shared memory by default: 48 KiB less its static shared
/// memory. Beyond that the kernel must opt in (`CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`).
pub const DEFAULT_SHARED_BYTES: u32 = 48 * 1024;

/// A launch asked for more dynamic shared memory than the device can give one block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SharedMemoryTooLarge {
    pub requested: u32,
    /// The device's opt-in maximum per block (`CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN`).
    pub device_max: u32,
    /// The kernel's static shared memory, which counts against `device_max`.
    pub static_bytes: u32,
}

impl std::fmt::Display for SharedMemoryTooLarge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} bytes of dynamic shared memory requested, but the device allows at most {} bytes \
             per block (with opt-in), {} of which the kernel's static shared memory uses",
            self.requested, self.device_max, self.static_bytes
        )
    }
}

/// The new limit a launch needs: `None` when `requested` fits the kernel's `current` limit,
/// `Some(requested)` when the kernel must be opted in first, an error when not even the
/// device's opt-in maximum fits it.
pub fn opt_in_needed(
    requested: u32,
    current: u32,
    device_max: u32,
    static_bytes: u32,
) -> Result<Option<u32>, SharedMemoryTooLarge> {
    if requested <= current {
        return Ok(None);
    }
    if requested > device_max.saturating_sub(static_bytes) {
        return Err(SharedMemoryTooLarge {
            requested,
            device_max,
            static_bytes,
        });
    }
    Ok(Some(requested))
}

/// A kernel's dynamic shared memory limit as last set in the driver. It only grows, so a
/// launch that checked it never races with one that would lower it.
pub struct DynamicSharedLimit {
    current: Mutex<u32>,
    static_bytes: u32,
}

/// Why a launch could not get the dynamic shared memory it asked for.
#[derive(Debug, PartialEq, Eq)]
pub enum OptInError<E> {
    TooLarge(SharedMemoryTooLarge),
    /// Setting the attribute failed.
    Driver(E),
}

impl DynamicSharedLimit {
    /// `current`: the kernel's limit as the driver reports it after loading.
    pub fn new(current: u32, static_bytes: u32) -> DynamicSharedLimit {
        DynamicSharedLimit {
            current: Mutex::new(current),
            static_bytes,
        }
    }

    /// Raises the limit to `requested` through `set` if the launch needs it. The lock is held
    /// across `set` (a quick attribute call) so that concurrent launches set it in order.
    pub fn ensure<E>(
        &self,
        requested: u32,
        device_max: u32,
        set: impl FnOnce(u32) -> Result<(), E>,
    ) -> Result<(), OptInError<E>> {
        let mut current = self.current.lock().unwrap();
        match opt_in_needed(requested, *current, device_max, self.static_bytes) {
            Ok(None) => Ok(()),
            Ok(Some(limit)) => {
                set(limit).map_err(OptInError::Driver)?;
                *current = limit;
                Ok(())
            }
            Err(e) => Err(OptInError::TooLarge(e)),
        }
    }

    pub fn current(&self) -> u32 {
        *self.current.lock().unwrap()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use plugin_api::gpu::{ExecMode, KernelEnvironment};

    fn config(num_teams: [u32; 3], thread_limit: [u32; 3]) -> LaunchConfig {
        LaunchConfig {
            num_teams,
            thread_limit,
            dyn_shared_mem: 0,
            tripcount: 0,
            kernel_args_version: 3,
            flags: 0,
        }
    }

    fn spmd() -> KernelEnvironment {
        KernelEnvironment {
            exec_mode: ExecMode::Spmd,
            min_threads: -1,
            max_threads: -1,
            min_teams: -1,
            max_teams: -1,
            reduction_data_size: 0,
            reduction_buffer_length: 0,
        }
    }

    #[test]
    fn bare_launches_keep_all_three_dimensions() {
        let grid = GridValues::NVPTX;
        let bare = KernelLimits::new(None, &grid, 1024);
        let c = config([4, 3, 2], [8, 4, 2]);
        assert_eq!(dimensions(&bare, &grid, &c), ([4, 3, 2], [8, 4, 2]));
        // Unset dimensions (0) are 1, as LLVM's interface corrects them.
        let c = config([4, 0, 0], [8, 0, 0]);
        assert_eq!(dimensions(&bare, &grid, &c), ([4, 1, 1], [8, 1, 1]));
    }

    #[test]
    fn openmp_kernels_use_one_dimension() {
        let grid = GridValues::NVPTX;
        let limits = KernelLimits::new(Some(spmd()), &grid, 1024);
        let c = config([4, 3, 2], [64, 4, 2]);
        assert_eq!(dimensions(&limits, &grid, &c), ([4, 1, 1], [64, 1, 1]));
    }

    #[test]
    fn bare_kernels_are_named_as_each_llvm_names_them() {
        let grid = GridValues::NVPTX;
        let bare = KernelLimits::new(None, &grid, 1024);
        let mut c = config([1, 1, 1], [1, 1, 1]);
        assert_eq!(mode_name(&bare, &c), "SPMD");
        c.flags = LaunchConfig::LLVM22_PROGRAM;
        assert_eq!(mode_name(&bare, &c), "BARE");
        let limits = KernelLimits::new(Some(spmd()), &grid, 1024);
        assert_eq!(mode_name(&limits, &c), "SPMD");
    }

    const KIB: u32 = 1024;

    #[test]
    fn small_requests_need_no_opt_in() {
        assert_eq!(opt_in_needed(0, 48 * KIB, 227 * KIB, 0), Ok(None));
        assert_eq!(opt_in_needed(48 * KIB, 48 * KIB, 227 * KIB, 0), Ok(None));
    }

    #[test]
    fn requests_above_the_limit_opt_in() {
        assert_eq!(
            opt_in_needed(48 * KIB + 1, 48 * KIB, 227 * KIB, 0),
            Ok(Some(48 * KIB + 1))
        );
        // Static shared memory lowers the default limit the driver reports.
        assert_eq!(
            opt_in_needed(40 * KIB, 32 * KIB, 227 * KIB, 16 * KIB),
            Ok(Some(40 * KIB))
        );
    }

    #[test]
    fn requests_above_the_device_fail_naming_both_sizes() {
        let e = opt_in_needed(228 * KIB, 48 * KIB, 227 * KIB, 0).unwrap_err();
        let text = e.to_string();
        assert!(text.contains(&(228 * KIB).to_string()), "{text}");
        assert!(text.contains(&(227 * KIB).to_string()), "{text}");
        // The kernel's static shared memory counts against the device's maximum.
        assert!(opt_in_needed(220 * KIB, 48 * KIB, 227 * KIB, 8 * KIB).is_err());
        assert!(opt_in_needed(219 * KIB, 48 * KIB, 227 * KIB, 8 * KIB).is_ok());
    }

    #[test]
    fn the_limit_is_set_once_and_only_raised() {
        let limit = DynamicSharedLimit::new(48 * KIB, 0);
        let mut calls = Vec::new();
        let mut launch = |bytes| {
            limit.ensure(bytes, 100 * KIB, |v| {
                calls.push(v);
                Ok::<(), ()>(())
            })
        };
        launch(1024).unwrap();
        launch(64 * KIB).unwrap();
        launch(64 * KIB).unwrap();
        launch(50 * KIB).unwrap();
        launch(80 * KIB).unwrap();
        assert_eq!(calls, [64 * KIB, 80 * KIB]);
        assert_eq!(limit.current(), 80 * KIB);
    }

    #[test]
    fn a_failed_opt_in_leaves_the_limit() {
        let limit = DynamicSharedLimit::new(48 * KIB, 0);
        assert_eq!(
            limit.ensure(64 * KIB, 100 * KIB, |_| Err("refused")),
            Err(OptInError::Driver("refused"))
        );
        assert_eq!(limit.current(), 48 * KIB);
        let too_large = limit.ensure(200 * KIB, 100 * KIB, |_| -> Result<(), ()> {
            panic!("the driver must not be asked")
        });
        assert!(matches!(too_large, Err(OptInError::TooLarge(_))));
    }
}
