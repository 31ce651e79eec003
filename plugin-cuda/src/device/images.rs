//! Images and kernels on a device: modules loaded by the driver, over which the shared image
//! life cycle runs (`gpu_plugin::images`), kernel and global lookup, and the kernels' shared
//! memory limits.

use super::*;
use gpu_plugin::rpc::protocol::Protocol;

impl CudaDevice {
    pub(super) fn load_image(&self, image_ref: ImageRef<'_>) -> Result<ImageHandle> {
        let bytes = image_ref.bytes.as_slice();
        let image::CheckedImage { kind, symbols } =
            image::check(bytes, self.identity.sm).map_err(|e| match e.code {
                ErrorCode::UNSUPPORTED => PluginError::unsupported(format!(
                    "device {} ({}, {}): {}",
                    self.identity.ordinal, self.identity.name, self.identity.sm, e.message
                )),
                _ => e,
            })?;
        self.activate()?;
        let module = match kind {
            ImageKind::Cubin { .. } => OwnedModule::load(&self.driver, self.context, bytes),
            ImageKind::Ptx { .. } => {
                let mut text = bytes.to_vec();
                if text.last() != Some(&0) {
                    text.push(0);
                }
                OwnedModule::load(&self.driver, self.context, &text)
            }
        }
        .map_err(|e| {
            failed(
                format!("loading the image on cuda device {}", self.identity.ordinal),
                e,
            )
        })?;
        self.images.add(self, CudaModule { module, symbols })
    }

    // ---- kernels and globals ----

    pub(super) fn get_kernel(&self, image: ImageHandle, name: &str) -> Result<KernelHandle> {
        let kernel = self.images.get(image)?.with_module(|loaded| {
            if !loaded.symbols.is_empty() && !loaded.symbols.functions().any(|f| f.name == name) {
                return Err(PluginError::new(
                    ErrorCode::NOT_FOUND,
                    format!("the image has no kernel '{name}'"),
                ));
            }
            self.activate()?;
            let function = self
                .driver
                .function(loaded.module.handle(), name)
                .map_err(|e| failed(format!("finding kernel '{name}'"), e))?;
            let function_max = self
                .driver
                .function_attribute(
                    function,
                    sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
                )
                .map_err(|e| failed(format!("reading the limits of '{name}'"), e))?;
            let environment = self.kernel_environment(loaded, name)?;
            if environment.is_none() {
                log::debug!(
                    "kernel '{name}' has no kernel environment: launching it as a bare kernel"
                );
            }
            Ok(Kernel {
                name: name.into(),
                image,
                function,
                limits: KernelLimits::new(environment, &self.grid, function_max.max(1) as u32),
                dynamic_shared: Arc::new(self.dynamic_shared_limit(function)),
            })
        })?;
        let mut kernels = write(&self.kernels);
        let kernel = share_limit_with_earlier_handles(&kernels, kernel);
        kernels.push(Arc::new(kernel));
        Ok(KernelHandle(kernels.len() as u64))
    }

    /// The kernel's dynamic shared memory limit as loaded (48 KiB less its static shared
    /// memory unless the image says otherwise), and its static shared memory.
    pub(super) fn dynamic_shared_limit(&self, function: Function) -> DynamicSharedLimit {
        use sys::CUfunction_attribute as F;
        let read = |a| self.driver.function_attribute(function, a).ok();
        let static_bytes = read(F::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)
            .unwrap_or(0)
            .max(0) as u32;
        let current = read(F::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)
            .map(|v| v.max(0) as u32)
            .unwrap_or(DEFAULT_SHARED_BYTES.saturating_sub(static_bytes));
        DynamicSharedLimit::new(current, static_bytes)
    }

    /// Opts the kernel in to `bytes` of dynamic shared memory if its limit is lower (launches
    /// above the default 48 KiB fail otherwise).
    pub(super) fn reserve_shared_memory(&self, kernel: &Kernel, bytes: u32) -> Result<()> {
        let set = |limit: u32| {
            self.driver.set_function_attribute(
                kernel.function,
                sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                limit as i32,
            )
        };
        match kernel
            .dynamic_shared
            .ensure(bytes, self.shared_memory_optin, set)
        {
            Ok(()) => Ok(()),
            Err(OptInError::TooLarge(e)) => Err(PluginError::invalid_argument(format!(
                "launching '{}' on cuda device {}: {e}",
                kernel.name, self.identity.ordinal
            ))),
            Err(OptInError::Driver(e)) => Err(failed(
                format!(
                    "allowing '{}' {bytes} bytes of dynamic shared memory",
                    kernel.name
                ),
                e,
            )),
        }
    }

    /// The kernel's `<name>_kernel_environment`, from the cubin's initial data as LLVM
    /// reads it, or from the device for PTX (whose symbols only the driver knows).
    pub(super) fn kernel_environment(
        &self,
        image: &CudaModule,
        kernel: &str,
    ) -> Result<Option<KernelEnvironment>> {
        let global = format!("{kernel}_kernel_environment");
        if !image.symbols.is_empty() {
            let initial = image
                .symbols
                .find(&global)
                .and_then(|s| s.initial.as_deref());
            return Ok(initial.and_then(KernelEnvironment::parse));
        }
        let Ok((address, size)) = self.driver.global(image.module.handle(), &global) else {
            return Ok(None);
        };
        let mut bytes = [0u8; KERNEL_ENVIRONMENT_SIZE];
        let n = (size as usize).min(bytes.len());
        gpu_plugin::images::SyncMemory::read(self, address, &mut bytes[..n])?;
        Ok(KernelEnvironment::parse(&bytes[..n]))
    }
}

impl ImageDriver for CudaDevice {
    type Module = CudaModule;

    const CONSTRUCTORS: Constructors = Constructors::GatheredArrays;

    fn connect_rpc(&self, protocol: Protocol, address: u64, size: u64) -> Result<()> {
        self.rpc.connect(self, protocol, address, size)
    }

    fn ordinal(&self) -> i32 {
        self.identity.ordinal
    }

    fn device_environment(&self) -> DeviceEnvironment {
        gpu_plugin::device_environment_for(
            &self.settings,
            self.identity.ordinal as u32,
            self.plugin_devices,
            // CUDA's device clock as LLVM reports it (omp_get_wtick on the device).
            1_000_000_000,
            self.hardware_parallelism,
        )
    }

    /// Device-side malloc on NVPTX is the driver's own (the device runtime defines no pool
    /// allocator for it): `LIBOMPTARGET_HEAP_SIZE` sizes the driver's heap instead.
    fn malloc_pool_size(&self) -> Option<u64> {
        None
    }

    fn global(&self, module: &CudaModule, name: &str) -> Result<Option<(u64, u64)>> {
        if !module.symbols.is_empty() && module.symbols.find(name).is_none() {
            return Ok(None);
        }
        self.activate()?;
        Ok(self.driver.global(module.module.handle(), name).ok())
    }

    fn has_kernel(&self, module: &CudaModule, name: &str) -> bool {
        if !module.symbols.is_empty() {
            return module.symbols.find(name).is_some();
        }
        // PTX: only the driver knows its names.
        self.activate().is_ok() && self.driver.function(module.module.handle(), name).is_ok()
    }

    fn globals_with_prefix(&self, module: &CudaModule, prefix: &str) -> Vec<String> {
        let symbols = module.symbols.with_prefix(prefix);
        symbols.map(|s| s.name.clone()).collect()
    }

    fn run_on_one_thread(&self, module: &CudaModule, name: &str) -> Result<()> {
        self.activate()?;
        let function = self
            .driver
            .function(module.module.handle(), name)
            .map_err(|e| failed(format!("finding '{name}'"), e))?;
        self.on_queue(QueueHandle::SYNC, |s| {
            self.driver
                .launch(function, [1; 3], [1; 3], 0, s, &mut [])
                .map_err(|e| failed(format!("running '{name}'"), e))
        })
    }

    /// Unloads explicitly, to report a failure; should the context not become current, the
    /// module's drop still tries.
    fn unload_module(&self, module: CudaModule) -> Result<()> {
        self.activate()?;
        module
            .module
            .unload()
            .map_err(|e| failed("unloading an image", e))
    }
}

/// A kernel looked up again (same image, same function) gets the earlier handle's shared
/// memory limit: two records of one driver limit could disagree, and one could lower it.
fn share_limit_with_earlier_handles(kernels: &[Arc<Kernel>], mut kernel: Kernel) -> Kernel {
    let earlier = kernels
        .iter()
        .find(|k| k.image == kernel.image && k.function == kernel.function);
    if let Some(earlier) = earlier {
        kernel.dynamic_shared = Arc::clone(&earlier.dynamic_shared);
    }
    kernel
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kernel(name: &str) -> Kernel {
        Kernel {
            name: name.into(),
            image: ImageHandle(1),
            function: Function(std::ptr::null_mut()),
            limits: KernelLimits::new(None, &GridValues::NVPTX, 1024),
            dynamic_shared: Arc::new(DynamicSharedLimit::new(DEFAULT_SHARED_BYTES, 0)),
        }
    }

    #[test]
    fn handles_to_one_function_share_its_shared_memory_limit() {
        let first = Arc::new(kernel("a"));
        first
            .dynamic_shared
            .ensure(64 * 1024, 100 * 1024, |_| Ok::<(), ()>(()))
            .unwrap();
        let table = vec![first];
        let again = share_limit_with_earlier_handles(&table, kernel("a"));
        assert_eq!(again.dynamic_shared.current(), 64 * 1024);
        // A smaller request through the second handle must not lower the driver's limit.
        let lowered = again
            .dynamic_shared
            .ensure(50 * 1024, 100 * 1024, |_| Err(()));
        assert!(lowered.is_ok());
        let other_image = Kernel {
            image: ImageHandle(2),
            ..kernel("a")
        };
        let other = share_limit_with_earlier_handles(&table, other_image);
        assert_eq!(other.dynamic_shared.current(), DEFAULT_SHARED_BYTES);
    }

    #[test]
    fn a_launch_does_not_hold_the_kernel_table() {
        let table = RwLock::new(vec![Arc::new(kernel("a"))]);
        let taken = kernel_at(&table, KernelHandle(1)).unwrap();
        // Another thread may add a kernel while this launch is under way.
        table.try_write().unwrap().push(Arc::new(kernel("b")));
        assert_eq!(&*taken.name, "a");
        assert_eq!(&*kernel_at(&table, KernelHandle(2)).unwrap().name, "b");
    }

    #[test]
    fn kernel_handles_are_one_based() {
        let table = RwLock::new(vec![Arc::new(kernel("a"))]);
        assert!(kernel_at(&table, KernelHandle(0)).is_err());
        assert!(kernel_at(&table, KernelHandle(2)).is_err());
    }
}
