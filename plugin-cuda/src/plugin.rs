//! The plugin-wide calls: finds the driver and the devices, and keeps the process's pinned
//! ranges. The per-device calls are [`CudaDevice`]'s ([`Device`]), reached through
//! plugin-api's [`DevicePlugin`] forwarding.

use crate::device::{CudaDevice, DeviceIdentity};
use crate::driver::{sys, Driver};
use crate::image;
use gpu_plugin::device_slots::{DeviceSlot, DeviceSlots, StartedDevice};
use gpu_plugin::pinning::PinTable;
use gpu_plugin::zero_copy::ZeroCopySettings;
use gpu_plugin::Settings;
use plugin_api::*;
use std::sync::{Arc, Mutex};
use sync_util::lock;

type Result<T> = std::result::Result<T, PluginError>;

impl StartedDevice for CudaDevice {
    fn deinit(&self) -> Result<()> {
        CudaDevice::deinit(self)
    }
}

pub struct CudaPlugin {
    driver: Option<Arc<Driver>>,
    devices: DeviceSlots<DeviceIdentity, CudaDevice>,
    /// Host ranges page-locked through any device, with their pin counts: registration is
    /// the process's (`CU_MEMHOSTREGISTER_PORTABLE`), not a device's, so a range two devices
    /// pin stays locked until both unpin it. The table stays locked across the driver calls so
    /// that two threads never lock the same range twice.
    pinned: Mutex<PinTable>,
    /// Why there are no devices, or the driver's version and location.
    note: String,
    settings: Settings,
}

impl CudaPlugin {
    /// A plugin without devices, saying why (no driver, no GPU, a failing `cuInit`).
    fn without_devices(why: String) -> CudaPlugin {
        log::debug!("cuda plugin: 0 devices: {why}");
        CudaPlugin {
            driver: None,
            devices: DeviceSlots::new("cuda", Vec::new()),
            pinned: Mutex::default(),
            note: why,
            settings: Settings::from_env(),
        }
    }

    fn slot(&self, device: i32) -> Result<&DeviceSlot<DeviceIdentity, CudaDevice>> {
        self.devices.slot(device)
    }
}

impl DevicePlugin for CudaPlugin {
    type Device = CudaDevice;

    fn may_run_target(triple: &str) -> TargetClaim {
        TargetClaim::for_architectures(triple, &["nvptx"])
    }

    fn init() -> Result<Self> {
        let driver = match Driver::open() {
            Ok(d) => Arc::new(d),
            Err(why) => return Ok(CudaPlugin::without_devices(why)),
        };
        let count = match driver.device_count() {
            Ok(n) => n,
            Err(e) => return Ok(CudaPlugin::without_devices(e.to_string())),
        };
        let mut devices = Vec::new();
        for ordinal in 0..count {
            match DeviceIdentity::query(&driver, ordinal) {
                Ok(identity) => devices.push(identity),
                Err(e) => log::warn!("cuda device {ordinal} is skipped: {e}"),
            }
        }
        let version = driver.driver_version().unwrap_or(0);
        let note = if devices.is_empty() {
            format!(
                "the driver ({}) reports no CUDA devices",
                driver.path().display()
            )
        } else {
            format!(
                "CUDA driver {}.{} at {}",
                version / 1000,
                version % 1000 / 10,
                driver.path().display()
            )
        };
        log::debug!("cuda plugin: {} devices; {note}", devices.len());
        Ok(CudaPlugin {
            driver: Some(driver),
            devices: DeviceSlots::new("cuda", devices),
            pinned: Mutex::default(),
            note,
            settings: Settings::from_env(),
        })
    }

    fn deinit(&self) -> Result<()> {
        if let Some(driver) = &self.driver {
            let pinned = lock(&self.pinned).drain_ours();
            for range in pinned {
                let _ = driver.unregister_host(range.start);
            }
        }
        self.devices.deinit_all()
    }

    fn describe(&self) -> PluginDescription {
        PluginDescription {
            name: "cuda".into(),
            num_devices: self.devices.len() as i32,
            note: self.note.clone().into(),
        }
    }

    fn num_devices(&self) -> i32 {
        self.devices.len() as i32
    }

    fn check_image(&self, device: Option<i32>, image: ImageRef<'_>) -> ImageCompatibility {
        let bytes = image.bytes.as_slice();
        if let Err(why) = image::classify(bytes) {
            return ImageCompatibility::no(format!("cuda: {why}"));
        }
        let Some(d) = device else {
            return ImageCompatibility::yes();
        };
        // Everything loading checks before the driver, so that a damaged image is refused
        // here, where the runtime can still run the region elsewhere, not when it loads.
        match self.slot(d) {
            Err(e) => ImageCompatibility::no(e.message.to_string()),
            Ok(slot) => match image::check(bytes, slot.identity.sm) {
                Ok(_) => ImageCompatibility::yes(),
                Err(e) if e.code == ErrorCode::UNSUPPORTED => ImageCompatibility::no(format!(
                    "cuda device {d} ({}, {}): {}",
                    slot.identity.name, slot.identity.sm, e.message
                )),
                Err(e) => ImageCompatibility::no(format!("cuda: {}", e.message)),
            },
        }
    }

    fn init_device(&self, device: i32) -> Result<()> {
        self.devices.init(device, |identity| {
            let driver = self.driver.clone().ok_or_else(|| {
                PluginError::new(ErrorCode::NOT_INITIALIZED, "the CUDA driver is not loaded")
            })?;
            CudaDevice::initialize(
                driver,
                identity.clone(),
                self.devices.len() as u32,
                self.settings.clone(),
            )
        })
    }

    fn deinit_device(&self, device: i32) -> Result<()> {
        self.device(device)?.deinit()
    }

    fn device_info(&self, device: i32) -> Result<Vec<InfoEntry>> {
        let slot = self.slot(device)?;
        let driver = self.driver.as_ref().ok_or_else(|| {
            PluginError::new(ErrorCode::NOT_INITIALIZED, "the CUDA driver is not loaded")
        })?;
        let id = &slot.identity;
        let mut info = vec![
            InfoEntry::new("name", &id.name),
            InfoEntry::new("kind", "gpu"),
            InfoEntry::new("compute unit kind", id.sm),
            InfoEntry::new(
                "compute capability",
                format!("{}.{}", id.sm.major(), id.sm.minor()),
            ),
            InfoEntry::new("image format", format!("cubin for {} (or PTX)", id.sm)),
        ];
        if let Ok(bytes) = driver.total_memory(id.handle) {
            info.push(InfoEntry::new("memory bytes", bytes));
        }
        // The device's OpenMP UID, as LLVM 22 forms it: its plugin name and the UUID in hex.
        if let Ok(uuid) = driver.device_uuid(id.handle) {
            let hex: String = uuid.iter().map(|b| format!("{b:02x}")).collect();
            info.push(InfoEntry::new("uid", format!("CUDA-{hex}")));
        }
        use sys::CUdevice_attribute as A;
        let attributes = [
            (
                "multiprocessors",
                A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
            ),
            ("clock rate kHz", A::CU_DEVICE_ATTRIBUTE_CLOCK_RATE),
            (
                "memory clock rate kHz",
                A::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE,
            ),
            (
                "memory bus width bits",
                A::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH,
            ),
            ("L2 cache bytes", A::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE),
            ("warp size", A::CU_DEVICE_ATTRIBUTE_WARP_SIZE),
            (
                "max threads per block",
                A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
            ),
            (
                "max threads per multiprocessor",
                A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR,
            ),
            ("max block dim x", A::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X),
            ("max grid dim x", A::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X),
            (
                "shared memory per block bytes",
                A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK,
            ),
            (
                "registers per block",
                A::CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK,
            ),
            (
                "constant memory bytes",
                A::CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY,
            ),
            (
                "concurrent kernels",
                A::CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS,
            ),
            (
                "async copy engines",
                A::CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT,
            ),
            (
                "unified addressing",
                A::CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING,
            ),
            ("managed memory", A::CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY),
            (
                plugin_api::PAGEABLE_MEMORY_ACCESS,
                A::CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS,
            ),
            ("ECC enabled", A::CU_DEVICE_ATTRIBUTE_ECC_ENABLED),
            ("PCI bus id", A::CU_DEVICE_ATTRIBUTE_PCI_BUS_ID),
        ];
        for (key, attribute) in attributes {
            if let Ok(v) = driver.attribute(id.handle, attribute) {
                info.push(InfoEntry::new(key, v));
            }
        }
        if let Ok(v) = driver.driver_version() {
            info.push(InfoEntry::new(
                "driver version",
                format!("{}.{}", v / 1000, v % 1000 / 10),
            ));
        }
        let reach = crate::device::host_memory_reach(driver, id.handle);
        let maps = gpu_plugin::zero_copy::choose(reach, ZeroCopySettings::from_env());
        info.push(InfoEntry::new("maps", maps.reason));
        if let Some(device) = slot.device() {
            info.extend(device.info());
        }
        Ok(info)
    }

    fn device(&self, device: i32) -> Result<&CudaDevice> {
        self.devices.device(device)
    }

    /// A range inside one already pinned (through any device) counts on it.
    fn pin_memory(&self, device: &CudaDevice, host_ptr: usize, size: u64) -> Result<usize> {
        let mut table = lock(&self.pinned);
        let address = table.pin(host_ptr, size, || device.page_lock(host_ptr, size))?;
        Ok(address as usize)
    }

    /// Undoes a pin made with `host_ptr`; the range is unlocked with its last pin.
    fn unpin_memory(&self, device: &CudaDevice, host_ptr: usize) -> Result<()> {
        let mut table = lock(&self.pinned);
        let last = table.unpin(host_ptr)?;
        match last.filter(|r| r.ours) {
            Some(range) => device.page_unlock(range.start),
            None => Ok(()),
        }
    }
}
