//! How many teams (blocks) and threads a kernel launch gets: LLVM's rules (GenericKernelTy in
//! `offload/plugins-nextgen/common/src/PluginInterface.cpp`), from the kernel environment the
//! compiler emitted, the device's limits, the construct's clauses and the loop trip count.

use offload_image::device_environment::KernelConfiguration;
use plugin_api::LaunchConfig;

/// A kernel's execution mode, from its kernel environment (`OMPTgtExecModeFlags`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ExecMode {
    Generic,
    Spmd,
    GenericSpmd,
    /// LLVM 22's SPMD kernel whose loop the compiler removed (`-fopenmp-assume-*-oversubscription`):
    /// each thread runs one iteration, so the launch must cover the trip count.
    SpmdNoLoop,
}

impl ExecMode {
    pub fn name(self) -> &'static str {
        match self {
            ExecMode::Generic => "Generic",
            ExecMode::Spmd => "SPMD",
            ExecMode::GenericSpmd => "Generic-SPMD",
            ExecMode::SpmdNoLoop => "SPMD-No-Loop",
        }
    }
}

/// The launch-relevant part of a kernel's `<name>_kernel_environment` global
/// (`ConfigurationEnvironmentTy`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct KernelEnvironment {
    pub exec_mode: ExecMode,
    pub min_threads: i32,
    pub max_threads: i32,
    pub min_teams: i32,
    pub max_teams: i32,
    pub reduction_data_size: i32,
    pub reduction_buffer_length: i32,
}

/// Bytes of `KernelEnvironmentTy`: the 28-byte configuration, padding, two pointers.
pub const KERNEL_ENVIRONMENT_SIZE: usize = 48;

impl KernelEnvironment {
    /// Parses the global's initial bytes; `None` if they are not a kernel environment.
    pub fn parse(bytes: &[u8]) -> Option<KernelEnvironment> {
        let bytes: &[u8; KernelConfiguration::SIZE] =
            bytes.get(..KernelConfiguration::SIZE)?.try_into().ok()?;
        let config = KernelConfiguration::from_bytes(bytes);
        let exec_mode = match config.exec_mode {
            1 => ExecMode::Generic,
            2 => ExecMode::Spmd,
            3 => ExecMode::GenericSpmd,
            6 => ExecMode::SpmdNoLoop,
            _ => return None,
        };
        Some(KernelEnvironment {
            exec_mode,
            min_threads: config.min_threads,
            max_threads: config.max_threads,
            min_teams: config.min_teams,
            max_teams: config.max_teams,
            reduction_data_size: config.reduction_data_size,
            reduction_buffer_length: config.reduction_buffer_length,
        })
    }

    /// Bytes of the team-reduction buffer a launch needs (0: no launch environment needed).
    pub fn reduction_buffer_bytes(&self) -> u64 {
        if self.reduction_data_size <= 0 || self.reduction_buffer_length <= 0 {
            return 0;
        }
        self.reduction_data_size as u64 * self.reduction_buffer_length as u64
    }
}

/// A device's grid limits and defaults (`llvm::omp::GV` after the device and the
/// environment adjusted it).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct GridValues {
    pub warp_size: u32,
    /// Most blocks per launch (`GV_Max_Teams`, lowered by `OMP_NUM_TEAMS`).
    pub max_teams: u32,
    /// Most threads per block (`GV_Max_WG_Size`, lowered by `OMP_TEAMS_THREAD_LIMIT`).
    pub max_threads: u32,
    pub default_teams: u32,
    pub default_threads: u32,
    /// `LIBOMPTARGET_MIN_THREADS_FOR_LOW_TRIP_COUNT`.
    pub min_threads_for_low_trip_count: u32,
    /// `LIBOMPTARGET_REUSE_BLOCKS_FOR_HIGH_TRIP_COUNT`.
    pub reuse_blocks_for_high_trip_count: bool,
}

impl GridValues {
    /// NVPTX defaults (`NVPTXGridValues`) before the device's attributes are read.
    pub const NVPTX: GridValues = GridValues {
        warp_size: 32,
        max_teams: 1 << 16,
        max_threads: 1024,
        default_teams: 3200,
        default_threads: 128,
        min_threads_for_low_trip_count: 32,
        reuse_blocks_for_high_trip_count: true,
    };

    /// AMDGPU defaults for 64-wide wavefronts (`AMDGPUGridValues64`); the device's limits and
    /// compute units replace most of them.
    pub const AMDGPU_WAVE64: GridValues = GridValues {
        warp_size: 64,
        max_teams: 1 << 16,
        max_threads: 1024,
        default_teams: 440,
        default_threads: 256,
        min_threads_for_low_trip_count: 32,
        reuse_blocks_for_high_trip_count: true,
    };

    /// AMDGPU defaults for 32-wide wavefronts (`AMDGPUGridValues32`, RDNA).
    pub const AMDGPU_WAVE32: GridValues = GridValues {
        warp_size: 32,
        ..GridValues::AMDGPU_WAVE64
    };

    /// Applies `OMP_NUM_TEAMS` and `OMP_TEAMS_THREAD_LIMIT` (only ever lowering a limit).
    pub fn limited_by(mut self, num_teams: Option<u32>, teams_thread_limit: Option<u32>) -> Self {
        if let Some(n) = num_teams.filter(|&n| n > 0) {
            self.max_teams = self.max_teams.min(n);
        }
        if let Some(n) = teams_thread_limit.filter(|&n| n > 0) {
            self.max_threads = self.max_threads.min(n);
        }
        self
    }
}

/// What the launch rules need to know about one kernel.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct KernelLimits {
    /// `None` for a bare kernel (no kernel environment: `ompx_bare` or foreign code).
    pub environment: Option<KernelEnvironment>,
    pub max_threads: u32,
    pub preferred_threads: u32,
}

impl KernelLimits {
    /// Combines the kernel environment with the device's limits and the most threads the
    /// compiled function allows (`CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK`).
    pub fn new(
        environment: Option<KernelEnvironment>,
        grid: &GridValues,
        function_max_threads: u32,
    ) -> KernelLimits {
        let (min, max) = environment.map_or((-1, -1), |e| (e.min_threads, e.max_threads));
        let max_threads = if max > 0 {
            (max as u32).min(grid.max_threads)
        } else {
            grid.max_threads
        };
        let preferred_threads = if min > 0 {
            (min as u32).max(grid.default_threads)
        } else {
            grid.default_threads
        };
        KernelLimits {
            environment,
            max_threads: max_threads.min(function_max_threads.max(1)),
            preferred_threads,
        }
    }

    fn mode(&self) -> ExecMode {
        // A bare kernel runs as SPMD (LLVM's default environment).
        self.environment.map_or(ExecMode::Spmd, |e| e.exec_mode)
    }

    pub fn is_bare(&self) -> bool {
        self.environment.is_none()
    }

    /// The grid (blocks) and block (threads) dimensions of a launch. LLVM's rules decide the
    /// first dimension ([`KernelLimits::geometry`]); a bare kernel (`ompx_bare`) gets the other
    /// two exactly as its `num_teams` and `thread_limit` clauses give them (0, an unset
    /// dimension, counts as 1, as LLVM's `__tgt_target_kernel` corrects it). Other kernels use
    /// one dimension only.
    pub fn dimensions(&self, grid: &GridValues, config: &LaunchConfig) -> ([u32; 3], [u32; 3]) {
        let (blocks, threads) = self.geometry(grid, config);
        if !self.is_bare() {
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
    pub fn mode_name(&self, config: &LaunchConfig) -> &'static str {
        match self.environment {
            Some(e) => e.exec_mode.name(),
            None if config.is_llvm22_program() => "BARE",
            None => "SPMD",
        }
    }

    /// Threads per block and blocks for a launch.
    pub fn geometry(&self, grid: &GridValues, config: &LaunchConfig) -> (u32, u32) {
        let threads = self.threads(grid, config.thread_limit[0]);
        let (blocks, threads) = self.blocks(
            grid,
            config.num_teams[0],
            config.tripcount,
            threads,
            config.thread_limit[0] > 0,
        );
        (blocks, threads)
    }

    fn threads(&self, grid: &GridValues, mut thread_limit: u32) -> u32 {
        if self.is_bare() && thread_limit > 0 {
            return thread_limit;
        }
        // Generic mode runs one extra warp for the main thread's state machine.
        if thread_limit > 0 && self.mode() == ExecMode::Generic {
            thread_limit = thread_limit.saturating_add(grid.warp_size);
        }
        let wanted = if thread_limit > 0 {
            thread_limit
        } else {
            self.preferred_threads
        };
        self.max_threads.min(wanted)
    }

    fn blocks(
        &self,
        grid: &GridValues,
        num_teams: u32,
        trip_count: u64,
        mut threads: u32,
        threads_from_user: bool,
    ) -> (u32, u32) {
        if self.is_bare() && num_teams > 0 {
            return (num_teams, threads);
        }
        if num_teams > 0 {
            return (num_teams.min(grid.max_teams), threads);
        }
        if self.mode() == ExecMode::SpmdNoLoop {
            // One iteration per thread and no loop to take more: as many blocks as that takes,
            // whatever the default.
            let blocks = match trip_count {
                0 => 1,
                n => ((n - 1) / u64::from(threads.max(1)) + 1).min(u64::from(u32::MAX)) as u32,
            };
            return (blocks, threads);
        }
        let default_blocks = grid.default_teams as u64;
        let mut trip_blocks = u64::MAX;
        if trip_count > 0 {
            if self.mode() == ExecMode::Spmd {
                // One loop iteration per thread; with too few iterations, fewer threads per
                // block so that more blocks run.
                let min_threads = grid.min_threads_for_low_trip_count.min(threads).max(1);
                if trip_count >= default_blocks * threads as u64 || threads_from_user {
                    trip_blocks = (trip_count - 1) / threads as u64 + 1;
                } else if trip_count >= default_blocks * min_threads as u64 {
                    let per_block = trip_count.div_ceil(default_blocks).next_power_of_two();
                    threads = threads.min(per_block.min(u32::MAX as u64) as u32);
                    trip_blocks = (trip_count - 1) / threads as u64 + 1;
                } else {
                    threads = threads.min(min_threads);
                    trip_blocks = (trip_count - 1) / threads as u64 + 1;
                }
            } else {
                // `teams distribute` with a nested parallel region: one iteration per team.
                trip_blocks = trip_count;
            }
        }
        // LLVM truncates the 64-bit count to 32 bits here; we saturate instead.
        let mut preferred = trip_blocks.min(u32::MAX as u64) as u32;
        if grid.reuse_blocks_for_high_trip_count {
            preferred = preferred.min(grid.default_teams);
        }
        (preferred.min(grid.max_teams), threads)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(mode: ExecMode) -> KernelEnvironment {
        KernelEnvironment {
            exec_mode: mode,
            min_threads: -1,
            max_threads: -1,
            min_teams: -1,
            max_teams: -1,
            reduction_data_size: 0,
            reduction_buffer_length: 0,
        }
    }

    /// An H100-like device: 2^31-1 blocks, 1024 threads.
    fn h100() -> GridValues {
        GridValues {
            max_teams: i32::MAX as u32,
            ..GridValues::NVPTX
        }
    }

    fn config(num_teams: [u32; 3], thread_limit: [u32; 3]) -> LaunchConfig {
        LaunchConfig {
            num_teams,
            thread_limit,
            kernel_args_version: 3,
            ..Default::default()
        }
    }

    fn launch(teams: u32, limit: u32, trip: u64) -> LaunchConfig {
        LaunchConfig {
            num_teams: [teams, 0, 0],
            thread_limit: [limit, 0, 0],
            tripcount: trip,
            ..Default::default()
        }
    }

    #[test]
    fn parses_a_kernel_environment() {
        let mut bytes = [0u8; 48];
        bytes[0] = 1;
        bytes[2] = 3;
        bytes[4..8].copy_from_slice(&(-1i32).to_le_bytes());
        bytes[8..12].copy_from_slice(&256i32.to_le_bytes());
        bytes[20..24].copy_from_slice(&8i32.to_le_bytes());
        bytes[24..28].copy_from_slice(&1024i32.to_le_bytes());
        let e = KernelEnvironment::parse(&bytes).unwrap();
        assert_eq!(e.exec_mode, ExecMode::GenericSpmd);
        assert_eq!(e.max_threads, 256);
        assert_eq!(e.reduction_buffer_bytes(), 8 * 1024);
        bytes[2] = 9;
        assert_eq!(KernelEnvironment::parse(&bytes), None);
        assert_eq!(KernelEnvironment::parse(&bytes[..20]), None);
    }

    #[test]
    fn no_loop_kernels_cover_the_trip_count_whatever_the_default() {
        let mut bytes = [0u8; 48];
        bytes[2] = 6;
        let parsed = KernelEnvironment::parse(&bytes).unwrap();
        assert_eq!(parsed.exec_mode, ExecMode::SpmdNoLoop);
        let grid = h100();
        let k = KernelLimits::new(Some(env(ExecMode::SpmdNoLoop)), &grid, 1024);
        assert_eq!(k.mode_name(&launch(0, 16, 1024)), "SPMD-No-Loop");
        // target-no-loop.f90: 1024 iterations, 16 threads each: 64 blocks.
        assert_eq!(k.geometry(&grid, &launch(0, 16, 1024)), (64, 16));
        // A num_teams clause still decides; no trip count is one block.
        assert_eq!(k.geometry(&grid, &launch(3, 16, 1024)), (3, 16));
        assert_eq!(k.geometry(&grid, &launch(0, 16, 0)), (1, 16));
    }

    #[test]
    fn generic_kernels_get_an_extra_warp_and_default_geometry() {
        let grid = h100();
        let k = KernelLimits::new(Some(env(ExecMode::Generic)), &grid, 1024);
        // No clauses, no trip count: default threads, default teams.
        assert_eq!(k.geometry(&grid, &launch(0, 0, 0)), (3200, 128));
        // thread_limit(64) in generic mode: 64 workers plus the main warp.
        assert_eq!(k.geometry(&grid, &launch(4, 64, 0)), (4, 96));
        // Generic with a trip count: one team per iteration, capped at the default.
        assert_eq!(k.geometry(&grid, &launch(0, 0, 10)), (10, 128));
        assert_eq!(k.geometry(&grid, &launch(0, 0, 100_000)), (3200, 128));
    }

    #[test]
    fn spmd_kernels_spread_the_trip_count() {
        let grid = h100();
        let k = KernelLimits::new(Some(env(ExecMode::Spmd)), &grid, 1024);
        // Enough iterations for all default teams and threads.
        assert_eq!(k.geometry(&grid, &launch(0, 0, 1 << 30)), (3200, 128));
        // Enough for the teams, not the threads: fewer threads, a power of two.
        assert_eq!(k.geometry(&grid, &launch(0, 0, 3200 * 40)), (2000, 64));
        // Too few: 32 threads per team.
        assert_eq!(k.geometry(&grid, &launch(0, 0, 1000)), (32, 32));
        // A user thread limit is honoured and the blocks follow from it.
        assert_eq!(k.geometry(&grid, &launch(0, 256, 1000)), (4, 256));
    }

    #[test]
    fn limits_come_from_the_environment_the_device_and_the_function() {
        let grid = h100().limited_by(Some(100), Some(512));
        let k = KernelLimits::new(Some(env(ExecMode::Spmd)), &grid, 1024);
        assert_eq!(k.geometry(&grid, &launch(1000, 2000, 0)), (100, 512));
        let mut e = env(ExecMode::Spmd);
        e.max_threads = 64;
        e.min_threads = 256;
        let k = KernelLimits::new(Some(e), &grid, 1024);
        assert_eq!(k.max_threads, 64);
        assert_eq!(k.preferred_threads, 256);
        let k = KernelLimits::new(Some(env(ExecMode::Spmd)), &grid, 255);
        assert_eq!(k.max_threads, 255);
    }

    #[test]
    fn bare_kernels_take_the_clauses_as_given() {
        let grid = h100().limited_by(Some(8), None);
        let k = KernelLimits::new(None, &grid, 1024);
        assert_eq!(k.geometry(&grid, &launch(20, 2000, 0)), (20, 2000));
        assert_eq!(k.geometry(&grid, &launch(0, 0, 0)), (8, 128));
    }

    #[test]
    fn bare_launches_keep_all_three_dimensions() {
        let grid = GridValues::NVPTX;
        let bare = KernelLimits::new(None, &grid, 1024);
        let c = config([4, 3, 2], [8, 4, 2]);
        assert_eq!(bare.dimensions(&grid, &c), ([4, 3, 2], [8, 4, 2]));
        // Unset dimensions (0) are 1, as LLVM's interface corrects them.
        let c = config([4, 0, 0], [8, 0, 0]);
        assert_eq!(bare.dimensions(&grid, &c), ([4, 1, 1], [8, 1, 1]));
    }

    #[test]
    fn openmp_kernels_use_one_dimension() {
        let grid = GridValues::NVPTX;
        let limits = KernelLimits::new(Some(env(ExecMode::Spmd)), &grid, 1024);
        let c = config([4, 3, 2], [64, 4, 2]);
        assert_eq!(limits.dimensions(&grid, &c), ([4, 1, 1], [64, 1, 1]));
    }

    #[test]
    fn bare_kernels_are_named_as_each_llvm_names_them() {
        let grid = GridValues::NVPTX;
        let bare = KernelLimits::new(None, &grid, 1024);
        let mut c = config([1, 1, 1], [1, 1, 1]);
        assert_eq!(bare.mode_name(&c), "SPMD");
        c.flags = LaunchConfig::LLVM22_PROGRAM;
        assert_eq!(bare.mode_name(&c), "BARE");
        let limits = KernelLimits::new(Some(env(ExecMode::Spmd)), &grid, 1024);
        assert_eq!(limits.mode_name(&c), "SPMD");
    }
}
