//! Images on a device: code objects loaded into executables, over which the shared image life
//! cycle (`gpu_plugin::images`: the device runtime's globals, constructors and destructors, the
//! indirect-call table) runs; kernel and global lookup.

use super::{failed, AmdgpuDevice, Kernel, Result, DEFAULT_HEAP_SIZE};
use crate::code_object::{self, CodeObject};
use crate::hsa::Executable;
use crate::kernel_args::Explicit;
use gpu_plugin::images::{Constructors, ImageDriver};
use gpu_plugin::rpc::protocol::Protocol;
use gpu_plugin::{DeviceEnvironment, KernelEnvironment, KernelLimits, KERNEL_ENVIRONMENT_SIZE};
use plugin_api::LaunchConfig;
use plugin_api::{ErrorCode, ImageHandle, KernelHandle};
use plugin_api::{PluginError, QueueHandle};
use std::sync::Arc;

/// A code object loaded on the device: the executable HSA made of it, and what the plugin read
/// of it (its symbols and kernel metadata).
pub struct AmdgpuModule {
    executable: Executable,
    code: CodeObject,
}

impl ImageDriver for AmdgpuDevice {
    type Module = AmdgpuModule;

    // The code object's own kernels walk its init and fini arrays.
    const CONSTRUCTORS: Constructors = Constructors::Kernels {
        init: "amdgcn.device.init",
        fini: "amdgcn.device.fini",
    };

    fn connect_rpc(&self, protocol: Protocol, address: u64, size: u64) -> Result<()> {
        self.rpc.connect(self, protocol, address, size)
    }

    fn ordinal(&self) -> i32 {
        self.ordinal
    }

    fn device_environment(&self) -> DeviceEnvironment {
        gpu_plugin::device_environment_for(
            &self.settings,
            self.ordinal as u32,
            self.plugin_devices,
            self.agent.timestamp_frequency,
            self.hardware_parallelism,
        )
    }

    /// `LIBOMPTARGET_HEAP_SIZE`, 512 MiB by default, as LLVM's AMDGPU plugin.
    fn malloc_pool_size(&self) -> Option<u64> {
        Some(self.settings.heap_size.unwrap_or(DEFAULT_HEAP_SIZE))
    }

    fn global(&self, module: &AmdgpuModule, name: &str) -> Result<Option<(u64, u64)>> {
        if module.code.symbol(name).is_none() {
            return Ok(None);
        }
        let (address, size) = module
            .executable
            .variable(self.agent.agent, name)
            .map_err(|e| failed(format!("finding global '{name}'"), e))?;
        Ok(Some((address as u64, size)))
    }

    fn has_kernel(&self, module: &AmdgpuModule, name: &str) -> bool {
        module.code.kernel(name).is_some()
    }

    fn globals_with_prefix(&self, module: &AmdgpuModule, prefix: &str) -> Vec<String> {
        let symbols = module.code.symbols();
        symbols
            .filter(|s| !s.is_kernel_descriptor && s.name.starts_with(prefix))
            .map(|s| s.name.clone())
            .collect()
    }

    fn run_on_one_thread(&self, module: &AmdgpuModule, name: &str) -> Result<()> {
        let kernel = self.make_kernel(module, name)?;
        let config = LaunchConfig {
            num_teams: [1, 1, 1],
            thread_limit: [1, 1, 1],
            ..Default::default()
        };
        self.dispatch(
            &kernel,
            Explicit::Values(&[]),
            [1; 3],
            [1; 3],
            &config,
            QueueHandle::SYNC,
        )
    }

    fn unload_module(&self, module: AmdgpuModule) -> Result<()> {
        module
            .executable
            .destroy()
            .map_err(|e| failed("destroying the executable", e))
    }
}

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
        self.images.add(self, AmdgpuModule { executable, code })
    }

    // ---- kernels and globals ----

    pub(super) fn get_kernel(&self, handle: ImageHandle, name: &str) -> Result<KernelHandle> {
        let image = self.images.get(handle)?;
        let kernel = image.with_module(|module| self.make_kernel(module, name))?;
        Ok(KernelHandle(self.kernels.insert(Arc::new(kernel))))
    }

    fn make_kernel(&self, module: &AmdgpuModule, name: &str) -> Result<Kernel> {
        let metadata = module.code.kernel(name).cloned().ok_or_else(|| {
            PluginError::new(
                ErrorCode::NOT_FOUND,
                format!("the image has no kernel '{name}'"),
            )
        })?;
        let symbol = module
            .executable
            .kernel(self.agent.agent, &format!("{name}.kd"))
            .map_err(|e| failed(format!("finding kernel '{name}'"), e))?;
        let environment = Self::kernel_environment(module, name);
        if environment.is_none() {
            log::debug!("kernel '{name}' has no kernel environment: launching it as a bare kernel");
        }
        Ok(Kernel {
            name: name.into(),
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
    fn kernel_environment(module: &AmdgpuModule, kernel: &str) -> Option<KernelEnvironment> {
        let bytes = module
            .code
            .symbol_bytes(&format!("{kernel}_kernel_environment"))?;
        KernelEnvironment::parse(&bytes[..bytes.len().min(KERNEL_ENVIRONMENT_SIZE)])
    }
}
