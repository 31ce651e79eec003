//! Images on a device: loading code objects into executables, the globals LLVM's device
//! runtime expects the host to fill in, global constructors and destructors, kernel and global
//! lookup.

use super::{failed, invalid_handle, AmdgpuDevice, Kernel, LoadedImage, Result, DEFAULT_HEAP_SIZE};
use crate::code_object;
use plugin_api::gpu::{
    place_indirect_call_table, DeviceEnvironment, KernelEnvironment, KernelLimits,
    KERNEL_ENVIRONMENT_SIZE,
};
use plugin_api::LaunchConfig;
use plugin_api::{
    AllocKind, Device, ErrorCode, GlobalInfo, ImageHandle, IndirectCall, KernelHandle,
};
use plugin_api::{PluginError, QueueHandle};
use std::sync::{Arc, Mutex};
use sync_util::lock;

impl AmdgpuDevice {
    // ---- images ----

    pub(super) fn load_image(&self, bytes: &[u8]) -> Result<ImageHandle> {
        let code = code_object::check(bytes).map_err(PluginError::invalid_argument)?;
        code_object::check_compatibility(code.target(), &self.targets)
            .map_err(PluginError::unsupported)?;
        let executable = self
            .runtime
            .load_executable(self.agent.agent, code.bytes())
            .map_err(|e| failed("loading the code object", e))?;
        let image = LoadedImage {
            executable: Mutex::new(Some(executable)),
            code,
            indirect_calls: Mutex::new(None),
        };
        let setup = || -> Result<()> {
            self.write_device_environment(&image, (0, 0))?;
            self.provide_malloc_pool(&image)?;
            self.run_init_kernel(&image, "amdgcn.device.init")
        };
        if let Err(e) = setup() {
            if let Some(executable) = lock(&image.executable).take() {
                let _ = executable.destroy();
            }
            return Err(e);
        }
        Ok(ImageHandle(self.images.insert(image)))
    }

    pub(super) fn unload_image(&self, handle: ImageHandle) -> Result<()> {
        let image = self
            .images
            .remove(handle.0)
            .ok_or_else(|| invalid_handle("image", handle.0))?;
        let destructors = self.run_init_kernel(&image, "amdgcn.device.fini");
        let executable = lock(&image.executable).take();
        let destroyed = match executable {
            Some(e) => e
                .destroy()
                .map_err(|e| failed("destroying the executable", e)),
            None => Ok(()),
        };
        let table = lock(&image.indirect_calls).take();
        let freed = match table {
            Some(table) => self.free(table, AllocKind::DEVICE),
            None => Ok(()),
        };
        destructors.and(destroyed).and(freed)
    }

    /// Gives the device runtime the image's indirect-call table (as LLVM's plugin does when it
    /// loads an image): device memory holding the sorted pairs, named in the device
    /// environment, which the device reads at each indirect call.
    pub(super) fn set_indirect_calls(
        &self,
        handle: ImageHandle,
        calls: &[IndirectCall],
    ) -> Result<()> {
        let image = self.image(handle)?;
        let mut slot = lock(&image.indirect_calls);
        if slot.is_some() {
            return Err(PluginError::invalid_argument(
                "the image's indirect calls were set already",
            ));
        }
        let address = place_indirect_call_table(
            calls,
            |size| self.alloc(size, 0, AllocKind::DEVICE),
            |address, table| {
                let (from, size) = (table.as_ptr() as usize, table.len() as u64);
                self.copy_to_device(address, from, size, QueueHandle::SYNC)
            },
            |table, count| self.write_device_environment(&image, (table, count)),
            |address| {
                let _ = self.free(address, AllocKind::DEVICE);
            },
        )?;
        *slot = Some(address);
        Ok(())
    }

    fn image(&self, handle: ImageHandle) -> Result<Arc<LoadedImage>> {
        self.images
            .get(handle.0)
            .ok_or_else(|| invalid_handle("image", handle.0))
    }

    /// The device address and size of a global of `image`.
    fn variable(&self, image: &LoadedImage, name: &str) -> Result<(usize, u64)> {
        let executable = lock(&image.executable);
        let executable = executable
            .as_ref()
            .ok_or_else(|| PluginError::invalid_argument("the image was unloaded"))?;
        executable
            .variable(self.agent.agent, name)
            .map_err(|e| failed(format!("finding global '{name}'"), e))
    }

    /// Copies `bytes` into the global `name` if the image has it; false if it does not.
    fn write_global(&self, image: &LoadedImage, name: &str, bytes: &[u8]) -> Result<bool> {
        if image.code.symbol(name).is_none() {
            return Ok(false);
        }
        let (address, size) = self.variable(image, name)?;
        let n = bytes.len().min(size as usize);
        self.copy_to_device(
            address,
            bytes.as_ptr() as usize,
            n as u64,
            QueueHandle::SYNC,
        )?;
        Ok(true)
    }

    /// Writes the image's device environment; `indirect_calls` is the indirect-call table's
    /// address and entry count.
    fn write_device_environment(
        &self,
        image: &LoadedImage,
        indirect_calls: (u64, u64),
    ) -> Result<()> {
        let env = DeviceEnvironment {
            debug_kind: self.settings.device_debug_kind,
            num_devices: self.plugin_devices,
            device_num: self.ordinal as u32,
            dynamic_mem_size: self.settings.shared_memory_size,
            clock_frequency: self.agent.timestamp_frequency,
            indirect_call_table: indirect_calls.0,
            indirect_call_table_size: indirect_calls.1,
            hardware_parallelism: self.hardware_parallelism,
        };
        if !self.write_global(image, "__omp_rtl_device_environment", &env.to_bytes())? {
            log::debug!("image has no __omp_rtl_device_environment; not an OpenMP image?");
        }
        Ok(())
    }

    /// Gives the image's device-side malloc its pool (`LIBOMPTARGET_HEAP_SIZE`, 512 MiB by
    /// default, as LLVM's AMDGPU plugin). One pool per device, shared by its images.
    fn provide_malloc_pool(&self, image: &LoadedImage) -> Result<()> {
        if image.code.symbol("__omp_rtl_device_memory_pool").is_none() {
            return Ok(());
        }
        let (ptr, size) = {
            let mut slot = lock(&self.malloc_pool);
            match *slot {
                Some(pool) => pool,
                None => {
                    let size = self.settings.heap_size.unwrap_or(DEFAULT_HEAP_SIZE);
                    let pool = match self.alloc(size, 0, AllocKind::DEVICE) {
                        Ok(p) => (p, size),
                        Err(e) => {
                            log::warn!("no device memory pool for device-side malloc: {e}");
                            (0, 0)
                        }
                    };
                    *slot = Some(pool);
                    pool
                }
            }
        };
        // {allocations, bytes, smallest, largest}
        let mut tracker = Vec::with_capacity(32);
        for v in [0u64, 0, u64::MAX, 0] {
            tracker.extend_from_slice(&v.to_le_bytes());
        }
        self.write_global(image, "__omp_rtl_device_memory_pool_tracker", &tracker)?;
        let mut pool = Vec::with_capacity(16);
        pool.extend_from_slice(&(ptr as u64).to_le_bytes());
        pool.extend_from_slice(&size.to_le_bytes());
        self.write_global(image, "__omp_rtl_device_memory_pool", &pool)?;
        Ok(())
    }

    /// Runs the constructor (`amdgcn.device.init`) or destructor (`amdgcn.device.fini`) kernel
    /// the compiler made for the image's globals, if it has one, on one thread.
    fn run_init_kernel(&self, image: &LoadedImage, name: &str) -> Result<()> {
        if image.code.kernel(name).is_none() {
            return Ok(());
        }
        let kernel = self.make_kernel(image, name)?;
        let config = LaunchConfig {
            num_teams: [1, 1, 1],
            thread_limit: [1, 1, 1],
            ..Default::default()
        };
        self.dispatch(&kernel, &[], [1; 3], [1; 3], &config, QueueHandle::SYNC)
    }

    // ---- kernels and globals ----

    pub(super) fn get_kernel(&self, handle: ImageHandle, name: &str) -> Result<KernelHandle> {
        let image = self.image(handle)?;
        let kernel = self.make_kernel(&image, name)?;
        Ok(KernelHandle(self.kernels.insert(kernel)))
    }

    fn make_kernel(&self, image: &LoadedImage, name: &str) -> Result<Kernel> {
        let metadata = image.code.kernel(name).cloned().ok_or_else(|| {
            PluginError::new(
                ErrorCode::NOT_FOUND,
                format!("the image has no kernel '{name}'"),
            )
        })?;
        let symbol = {
            let executable = lock(&image.executable);
            let executable = executable
                .as_ref()
                .ok_or_else(|| PluginError::invalid_argument("the image was unloaded"))?;
            executable
                .kernel(self.agent.agent, &format!("{name}.kd"))
                .map_err(|e| failed(format!("finding kernel '{name}'"), e))?
        };
        let environment = Self::kernel_environment(image, name);
        if environment.is_none() {
            log::debug!("kernel '{name}' has no kernel environment: launching it as a bare kernel");
        }
        Ok(Kernel {
            name: name.to_owned(),
            kernel_object: symbol.kernel_object,
            group_segment_size: symbol.group_segment_size,
            private_segment_size: symbol.private_segment_size,
            limits: KernelLimits::new(
                environment,
                &self.grid,
                metadata.max_flat_workgroup_size.max(1),
            ),
            metadata,
        })
    }

    /// The kernel's `<name>_kernel_environment`: its initial bytes in the code object, as LLVM
    /// reads them (the launch-relevant part holds no relocated addresses).
    fn kernel_environment(image: &LoadedImage, kernel: &str) -> Option<KernelEnvironment> {
        let bytes = image
            .code
            .symbol_bytes(&format!("{kernel}_kernel_environment"))?;
        KernelEnvironment::parse(&bytes[..bytes.len().min(KERNEL_ENVIRONMENT_SIZE)])
    }

    pub(super) fn get_global(
        &self,
        handle: ImageHandle,
        name: &str,
        size: u64,
    ) -> Result<GlobalInfo> {
        let image = self.image(handle)?;
        if image.code.symbol(name).is_none() {
            return Err(PluginError::new(
                ErrorCode::NOT_FOUND,
                format!("the image has no global '{name}'"),
            ));
        }
        let (address, actual) = self.variable(&image, name)?;
        if size != 0 && actual != size {
            return Err(PluginError::invalid_argument(format!(
                "global '{name}' has {actual} bytes on the device and {size} on the host"
            )));
        }
        Ok(GlobalInfo {
            address,
            size: actual,
        })
    }
}
