//! Kernel launches: OpenMP ones with geometry by LLVM's rules and kernel-language (CUDA/HIP)
//! ones with the grid and block asked for, the argument segment in a kernarg buffer, the
//! launch environment for kernels with team reductions, and what is released when the kernel
//! completed.

use super::{invalid_handle, AmdgpuDevice, Kernel, Result, DEFAULT_STACK_SIZE};
use crate::hsa_interface::{HsaError, HsaInterface, KernelDispatch};
use crate::hsa_real::RealHsa;
use crate::kernarg_pool::KernargBuffer;
use crate::kernel_args::{self, Explicit, LaunchShape};
use crate::stream::Stream;
use gpu_plugin::launch_buffers::LaunchBuffer;
use gpu_plugin::launch_traces::Geometry;
use gpu_plugin::{KernelLimits, NO_LAUNCH_ENVIRONMENT};
use plugin_api::{KernelHandle, LaunchConfig, PluginError, QueueHandle};

impl AmdgpuDevice {
    // ---- launch ----

    pub(super) fn launch_kernel(
        &self,
        handle: KernelHandle,
        args: &[usize],
        config: &LaunchConfig,
        queue: QueueHandle,
    ) -> Result<()> {
        self.launch(handle, Explicit::Values(args), config, queue, |kernel| {
            Ok(kernel.limits.dimensions(&self.grid, config))
        })
    }

    /// Launches a kernel-language (CUDA/HIP) kernel, LLVM 22's `llvmLaunchKernel`: its
    /// parameter buffer as the explicit arguments, exactly the grid and block asked for (no
    /// OpenMP team and thread rules), no launch environment.
    pub(super) fn launch_kernel_params(
        &self,
        handle: KernelHandle,
        params: &[u8],
        config: &LaunchConfig,
        queue: QueueHandle,
    ) -> Result<()> {
        self.launch(handle, Explicit::Buffer(params), config, queue, |kernel| {
            let blocks = config.num_teams.map(|n| n.max(1));
            let threads = config.thread_limit.map(|n| n.max(1));
            // The kernel's code is compiled for at most this many work-items per work-group
            // (`__launch_bounds__`, else 1024): more is undefined on the GPU.
            let most = kernel.metadata.max_flat_workgroup_size.max(1);
            let asked = threads.iter().map(|&t| u64::from(t)).product::<u64>();
            if asked > u64::from(most) {
                return Err(PluginError::invalid_argument(format!(
                    "kernel '{}' runs at most {most} threads per block; the launch asks for \
                     {}x{}x{}",
                    kernel.name, threads[0], threads[1], threads[2]
                )));
            }
            Ok((blocks, threads))
        })
    }

    /// What every launch does: finds the kernel, takes its geometry from `geometry`, reports
    /// the launch (`LIBOMPTARGET_INFO`) and dispatches it.
    fn launch(
        &self,
        handle: KernelHandle,
        explicit: Explicit<'_>,
        config: &LaunchConfig,
        queue: QueueHandle,
        geometry: impl FnOnce(&Kernel) -> Result<([u32; 3], [u32; 3])>,
    ) -> Result<()> {
        let kernel = self
            .kernels
            .get(handle.0)
            .ok_or_else(|| invalid_handle("kernel", handle.0))?;
        let (blocks, threads) = geometry(&kernel)?;
        plugin_api::info::kernel_launch(
            self.ordinal,
            config,
            &kernel.name,
            blocks,
            threads,
            kernel.limits.mode_name(config),
        );
        if let Explicit::Values(args) = explicit {
            // LLVM counts the launch environment it passes first among the arguments.
            let count = args.len() + usize::from(config.kernel_args_version >= 3);
            self.report_launch_details(&kernel, count, blocks, threads, config);
        }
        self.dispatch(&kernel, explicit, blocks, threads, config, queue)
    }

    /// The second launch line of LLVM's AMDGPU plugin (its `printLaunchInfoDetails`), with the
    /// code object's figures for the kernel, under its own prefix.
    fn report_launch_details(
        &self,
        kernel: &Kernel,
        args: usize,
        blocks: [u32; 3],
        threads: [u32; 3],
        config: &LaunchConfig,
    ) {
        if !plugin_api::info::enabled(plugin_api::info::PLUGIN_KERNEL) {
            return;
        }
        let m = &kernel.metadata;
        let teams: u64 = blocks.iter().map(|&b| u64::from(b)).product();
        let per_team: u64 = threads.iter().map(|&t| u64::from(t)).product();
        eprintln!(
            "AMDGPU device {} info: #Args: {args} Teams x Thrds: {teams:4}x{per_team:4} \
             (MaxFlatWorkGroupSize: {}) LDS Usage: {}B #SGPRs/VGPRs: {}/{} \
             #SGPR/VGPR Spills: {}/{} Tripcount: {}",
            self.ordinal,
            m.max_flat_workgroup_size,
            kernel.group_segment_size,
            m.sgpr_count,
            m.vgpr_count,
            m.sgpr_spill_count,
            m.vgpr_spill_count,
            config.tripcount
        );
    }

    /// Queues an AQL dispatch packet for `kernel` with the given geometry.
    pub(super) fn dispatch(
        &self,
        kernel: &Kernel,
        explicit: Explicit<'_>,
        blocks: [u32; 3],
        threads: [u32; 3],
        config: &LaunchConfig,
        queue: QueueHandle,
    ) -> Result<()> {
        let geometry = Geometry {
            teams: blocks,
            threads,
        };
        self.launches.record(&kernel.name, geometry, queue.0);
        // AQL counts the grid in work-items; a work-group's size is 16 bits per dimension.
        let mut grid_size = [0u32; 3];
        let mut workgroup_size = [0u16; 3];
        for d in 0..3 {
            let too_large = || {
                PluginError::invalid_argument(format!(
                    "{blocks:?} teams of {threads:?} threads exceed the device's grid"
                ))
            };
            grid_size[d] = blocks[d].checked_mul(threads[d]).ok_or_else(too_large)?;
            workgroup_size[d] = u16::try_from(threads[d]).map_err(|_| too_large())?;
        }
        let dynamic_lds = config.dyn_shared_mem.max(self.settings.shared_memory_size);
        // Static and dynamic group memory together must fit the work-group's LDS.
        let group_memory = kernel
            .group_segment_size
            .checked_add(dynamic_lds)
            .filter(|&bytes| bytes <= self.group_memory)
            .ok_or_else(|| {
                PluginError::invalid_argument(format!(
                    "kernel '{}' needs {} bytes of group memory of its own and {dynamic_lds} \
                     bytes of dynamic shared memory were asked for; a work-group of this \
                     device has {} bytes",
                    kernel.name, kernel.group_segment_size, self.group_memory
                ))
            })?;
        let private = if kernel.metadata.uses_dynamic_stack {
            self.settings.stack_size.unwrap_or(DEFAULT_STACK_SIZE) as u32
        } else {
            kernel.private_segment_size
        };
        let what = || format!("launching '{}'", kernel.name);
        self.rpc.launch(queue, || {
            self.on_queue(
                queue,
                |stream| {
                    let shape = LaunchShape {
                        blocks,
                        threads,
                        dynamic_lds,
                    };
                    let build = |explicit: Explicit<'_>| {
                        kernel_args::build(&kernel.metadata, explicit, shape)
                            .map_err(|m| HsaError::new(HsaError::STATUS_INVALID_ARGUMENT, m))
                    };
                    // An OpenMP launch takes the launch environment first (from KernelArgsTy
                    // version 3 on); a kernel-language one has none.
                    let environment =
                        matches!(explicit, Explicit::Values(_)) && config.kernel_args_version >= 3;
                    let mut values = Vec::new();
                    if let Explicit::Values(args) = explicit {
                        values.reserve(args.len() + 1);
                        if environment {
                            values.push(NO_LAUNCH_ENVIRONMENT);
                        }
                        values.extend_from_slice(args);
                    }
                    // Check the arguments against the kernel before anything is allocated or queued.
                    let mut segment = build(match explicit {
                        Explicit::Values(_) => Explicit::Values(&values),
                        buffer => buffer,
                    })?;
                    let mut launch_buffer = None;
                    let prepared = (|| {
                        if environment {
                            let env = self.launch_environment(
                                &kernel.limits,
                                stream,
                                &mut launch_buffer,
                            )?;
                            if env != NO_LAUNCH_ENVIRONMENT {
                                values[0] = env;
                                segment = build(Explicit::Values(&values))?;
                            }
                        }
                        self.host.kernargs.take(&segment)
                    })();
                    let buffer = match prepared {
                        Ok(buffer) => buffer,
                        Err(e) => {
                            self.discard_launch_buffer(stream, launch_buffer);
                            return Err(e);
                        }
                    };
                    let dispatch = KernelDispatch {
                        kernel_object: kernel.kernel_object,
                        kernarg_address: buffer.address,
                        workgroup_size,
                        grid_size,
                        group_segment_size: group_memory,
                        private_segment_size: private,
                    };
                    // The stream runs `release` when the kernel completed, or at once if it could
                    // not be queued.
                    let release = self.after_kernel(buffer, launch_buffer);
                    stream.push_kernel(&dispatch, Some(release))
                },
                &what,
            )
        })
    }

    /// Gives back the launch buffer of a launch that failed before its kernel was queued. The
    /// copy of its launch environment may have been queued: wait for it first, so the next
    /// launch's copy into the buffer cannot be overtaken.
    fn discard_launch_buffer(&self, stream: &Stream<RealHsa>, buffer: Option<LaunchBuffer>) {
        if let Some(buffer) = buffer {
            let _ = stream.synchronize();
            self.launch_buffers.give_back(buffer);
        }
    }

    /// What to release once a kernel completed: its argument buffer and launch buffer.
    fn after_kernel(
        &self,
        buffer: KernargBuffer,
        launch_buffer: Option<LaunchBuffer>,
    ) -> Box<dyn FnOnce() + Send> {
        let host = self.host.clone();
        let launch_buffers = self.launch_buffers.clone();
        Box::new(move || {
            host.kernargs.give_back(buffer);
            if let Some(launch_buffer) = launch_buffer {
                launch_buffers.give_back(launch_buffer);
            }
        })
    }

    /// The implicit first kernel argument: a launch environment with a team-reduction buffer
    /// for kernels that need one, from the device's pool (defect 8 of issue 18: two
    /// allocations and two frees per launch before), back to it once the kernel completed.
    fn launch_environment(
        &self,
        limits: &KernelLimits,
        stream: &Stream<RealHsa>,
        taken: &mut Option<LaunchBuffer>,
    ) -> std::result::Result<usize, HsaError> {
        let bytes = limits.environment.map_or(0, |e| e.reduction_buffer_bytes());
        if bytes == 0 {
            return Ok(NO_LAUNCH_ENVIRONMENT);
        }
        let buffer = self.launch_buffers.take(bytes, |size| {
            self.hsa
                .allocate(self.device_pool, size as usize)
                .map(|a| a as u64)
        })?;
        let host = buffer.host_environment();
        let (source, size, address) = (host.as_ptr() as usize, host.len(), buffer.address as usize);
        // Kept before the push: a failed push may have queued part of the copy, which reads
        // the buffer's host copy of the environment (rewritten every launch: the device
        // runtime counts teams in it).
        *taken = Some(buffer);
        // The plugin's own copy: not one of the program's, so never timed.
        // SAFETY: `source` is the boxed host environment of the launch buffer now in `taken`,
        // which nothing writes and which goes back to its pool only once the stream passed this
        // copy (the kernel's release, or `discard_launch_buffer`, which synchronises first).
        unsafe { stream.push_internal_host_to_device(address, source, size) }?;
        Ok(address)
    }
}
