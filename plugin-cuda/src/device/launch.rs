//! Kernel launches on a device: the teams and threads LLVM's rules give them, the implicit
//! launch environment and its reduction buffer, kernel-language launches.

use super::*;
use gpu_plugin::launch_traces::Geometry;

impl CudaDevice {
    pub(super) fn launch_kernel(
        &self,
        handle: KernelHandle,
        args: &[usize],
        config: &LaunchConfig,
        queue: QueueHandle,
    ) -> Result<()> {
        let kernel = kernel_at(&self.kernels, handle)?;
        let (blocks, threads) = kernel.limits.dimensions(&self.grid, config);
        plugin_api::info::kernel_launch(
            self.identity.ordinal,
            config,
            &kernel.name,
            blocks,
            threads,
            kernel.limits.mode_name(config),
        );
        let shared = config.dyn_shared_mem.max(self.settings.shared_memory_size);
        // The driver launches in the current context (LLVM's plugin does not make it current
        // here, and fails on a thread whose first call is a launch).
        self.activate()?;
        self.reserve_shared_memory(&kernel, shared)?;
        let geometry = Geometry {
            teams: blocks,
            threads,
        };
        self.launches.record(&kernel.name, geometry, queue.0);
        self.rpc.launch(queue, || {
            self.on_queue(queue, |stream| {
                let mut packed = Vec::with_capacity(args.len() + 1);
                if config.kernel_args_version >= 3 {
                    packed.push(self.launch_environment(&kernel.limits, stream)?);
                }
                packed.extend_from_slice(args);
                self.timed(queue, stream, || {
                    self.driver
                        .launch(
                            kernel.function,
                            blocks,
                            threads,
                            shared,
                            stream,
                            &mut packed,
                        )
                        .map_err(|e| failed(format!("launching '{}'", kernel.name), e))
                })
            })
        })
    }

    /// Launches a kernel-language (CUDA) kernel: its own parameter layout, exactly the grid and
    /// block asked for, no launch environment.
    pub(super) fn launch_kernel_params(
        &self,
        handle: KernelHandle,
        params: &[u8],
        config: &LaunchConfig,
        queue: QueueHandle,
    ) -> Result<()> {
        let kernel = kernel_at(&self.kernels, handle)?;
        let grid = config.num_teams.map(|n| n.max(1));
        let block = config.thread_limit.map(|n| n.max(1));
        if plugin_api::info::enabled(plugin_api::info::PLUGIN_KERNEL) {
            plugin_api::info::line(
                self.identity.ordinal,
                &format!(
                    "Launching kernel {} with {grid:?} blocks and {block:?} threads (CUDA)",
                    kernel.name
                ),
            );
        }
        let shared = config.dyn_shared_mem;
        self.activate()?;
        self.reserve_shared_memory(&kernel, shared)?;
        let geometry = Geometry {
            teams: grid,
            threads: block,
        };
        self.launches.record(&kernel.name, geometry, queue.0);
        let mut owned = params.to_vec();
        self.rpc.launch(queue, || {
            self.on_queue(queue, |stream| {
                self.timed(queue, stream, || {
                    self.driver
                        .launch_grid(kernel.function, grid, block, shared, stream, &mut owned)
                        .map_err(|e| failed(format!("launching '{}'", kernel.name), e))
                })
            })
        })
    }

    /// The implicit first kernel argument: a launch environment with a team-reduction
    /// buffer for kernels that need one, from the device's pool and back to it once the
    /// stream is synchronised.
    pub(super) fn launch_environment(
        &self,
        limits: &KernelLimits,
        stream: Stream,
    ) -> Result<usize> {
        let bytes = limits.environment.map_or(0, |e| e.reduction_buffer_bytes());
        if bytes == 0 {
            return Ok(NO_LAUNCH_ENVIRONMENT);
        }
        let buffer = self.take_launch_buffer(bytes)?;
        let host = buffer.host_environment();
        // Rewritten every launch: the device runtime counts teams in it.
        // SAFETY: the buffer, and its host copy, is deferred until the stream is done.
        let copied = unsafe {
            self.driver.copy_to_device(
                buffer.address,
                host.as_ptr() as usize,
                host.len() as u64,
                stream,
            )
        };
        let address = buffer.address as usize;
        // Deferred even if the copy failed: the stream may still read the host copy.
        self.defer(stream, Deferred::LaunchBuffer(buffer));
        copied.map_err(|e| failed("copying a launch environment", e))?;
        Ok(address)
    }

    /// A pooled launch buffer; when the device is out of memory, the idle buffers (perhaps
    /// too small) are freed and the allocation tried once more.
    pub(super) fn take_launch_buffer(&self, bytes: u64) -> Result<LaunchBuffer> {
        let allocate = |size| self.driver.alloc_device(size);
        let out_of_memory = sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY as u32;
        let buffer = match self.launch_buffers.take(bytes, allocate) {
            Err(e) if e.code == out_of_memory && self.launch_buffers.idle_count() > 0 => {
                self.free_launch_buffers();
                self.launch_buffers.take(bytes, allocate)
            }
            other => other,
        };
        buffer.map_err(|e| failed(format!("allocating a {bytes}-byte reduction buffer"), e))
    }

    pub(super) fn free_launch_buffers(&self) {
        for address in self.launch_buffers.drain() {
            if let Err(e) = self.driver.free_device(address) {
                log::warn!("cuda device {}: {e}", self.identity.ordinal);
            }
        }
    }
}
