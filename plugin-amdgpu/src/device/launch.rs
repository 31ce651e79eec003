//! Kernel launches: geometry by LLVM's rules, the argument segment in a kernarg buffer, the
//! launch environment for kernels with team reductions, and what is released when the kernel
//! completed.

use super::{invalid_handle, AmdgpuDevice, Kernel, Result, DEFAULT_STACK_SIZE};
use crate::hsa_interface::{HsaError, HsaInterface, KernelDispatch};
use crate::hsa_real::RealHsa;
use crate::kernarg_pool::KernargBuffer;
use crate::kernel_args::{self, LaunchShape};
use crate::stream::Stream;
use plugin_api::gpu::{KernelLaunchEnvironment, KernelLimits, NO_LAUNCH_ENVIRONMENT};
use plugin_api::{KernelHandle, LaunchConfig, PluginError, QueueHandle};

impl AmdgpuDevice {
    // ---- launch ----

    pub fn launch(
        &self,
        handle: KernelHandle,
        args: &[usize],
        config: &LaunchConfig,
        queue: QueueHandle,
    ) -> Result<()> {
        let kernel = self
            .kernels
            .get(handle.0)
            .ok_or_else(|| invalid_handle("kernel", handle.0))?;
        let (blocks, threads) = kernel.limits.dimensions(&self.grid, config);
        plugin_api::info::kernel_launch(
            self.ordinal,
            config,
            &kernel.name,
            blocks,
            threads,
            kernel.limits.mode_name(config),
        );
        self.launch_kernel(&kernel, args, blocks, threads, config, queue)
    }

    pub(super) fn launch_kernel(
        &self,
        kernel: &Kernel,
        args: &[usize],
        blocks: [u32; 3],
        threads: [u32; 3],
        config: &LaunchConfig,
        queue: QueueHandle,
    ) -> Result<()> {
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
        self.on_queue(
            queue,
            |stream| {
                let shape = LaunchShape {
                    blocks,
                    threads,
                    dynamic_lds,
                };
                let build = |values: &[usize]| {
                    kernel_args::build(&kernel.metadata, values, shape)
                        .map_err(|m| HsaError::new(HsaError::STATUS_INVALID_ARGUMENT, m))
                };
                let mut values = Vec::with_capacity(args.len() + 1);
                if config.kernel_args_version >= 3 {
                    values.push(NO_LAUNCH_ENVIRONMENT);
                }
                values.extend_from_slice(args);
                // Check the arguments against the kernel before anything is allocated or queued.
                let mut segment = build(&values)?;
                let mut launch_memory = Vec::new();
                let prepared = (|| {
                    if config.kernel_args_version >= 3 {
                        let env =
                            self.launch_environment(&kernel.limits, stream, &mut launch_memory)?;
                        if env != NO_LAUNCH_ENVIRONMENT {
                            values[0] = env;
                            segment = build(&values)?;
                        }
                    }
                    self.host.kernargs.take(&segment)
                })();
                let buffer = match prepared {
                    Ok(buffer) => buffer,
                    Err(e) => {
                        self.discard_launch_memory(stream, launch_memory);
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
                let release = self.after_kernel(buffer, launch_memory);
                stream.push_kernel(&dispatch, Some(release))
            },
            &what,
        )
    }

    /// Frees the launch memory of a launch that failed before its kernel was queued. A copy
    /// of the launch environment may have been queued: wait for it before freeing what it
    /// touches.
    fn discard_launch_memory(&self, stream: &Stream<RealHsa>, memory: Vec<LaunchMemory>) {
        if memory.iter().any(|m| matches!(m, LaunchMemory::Host(_))) {
            let _ = stream.synchronize();
        }
        for m in memory {
            if let LaunchMemory::Device(ptr) = m {
                let _ = self.hsa.free(ptr);
            }
        }
    }

    /// What to release once a kernel completed: its argument buffer and launch memory.
    fn after_kernel(
        &self,
        buffer: KernargBuffer,
        launch_memory: Vec<LaunchMemory>,
    ) -> Box<dyn FnOnce() + Send> {
        let host = self.host.clone();
        let hsa = self.hsa.clone();
        Box::new(move || {
            host.kernargs.give_back(buffer);
            for memory in launch_memory {
                if let LaunchMemory::Device(ptr) = memory {
                    if let Err(e) = hsa.free(ptr) {
                        log::warn!("amdgpu: freeing launch memory: {e}");
                    }
                }
            }
        })
    }

    /// The implicit first kernel argument: a launch environment with a team-reduction buffer
    /// for kernels that need one, freed once the kernel completed.
    fn launch_environment(
        &self,
        limits: &KernelLimits,
        stream: &Stream<RealHsa>,
        memory: &mut Vec<LaunchMemory>,
    ) -> std::result::Result<usize, HsaError> {
        let bytes = limits.environment.map_or(0, |e| e.reduction_buffer_bytes());
        if bytes == 0 {
            return Ok(NO_LAUNCH_ENVIRONMENT);
        }
        let buffer = self.hsa.allocate(self.device_pool, bytes as usize)?;
        memory.push(LaunchMemory::Device(buffer));
        let device_env = self
            .hsa
            .allocate(self.device_pool, KernelLaunchEnvironment::SIZE)?;
        memory.push(LaunchMemory::Device(device_env));
        // The host copy must live until the stream has read it, which is before the kernel
        // completes: the kernel's release drops it.
        let host = Box::new(
            KernelLaunchEnvironment {
                reduction_count: 0,
                reduction_iteration_count: 0,
                reduction_buffer: buffer as u64,
            }
            .to_bytes(),
        );
        let (source, size) = (host.as_ptr() as usize, host.len());
        // Kept before the push: a failed push may have queued part of the copy.
        memory.push(LaunchMemory::Host(host));
        stream.push_host_to_device(device_env, source, size, None)?;
        Ok(device_env)
    }
}

/// Memory a launch allocated for the kernel, released when it completed.
enum LaunchMemory {
    Device(usize),
    /// Host bytes an asynchronous copy reads; dropped, never read, afterwards.
    Host(#[allow(dead_code)] Box<[u8; KernelLaunchEnvironment::SIZE]>),
}
