//! The plugin-wide calls; the per-device ones are [`HostDevice`]'s ([`Device`]), reached
//! through plugin-api's [`DevicePlugin`] forwarding.

use crate::device::{total_memory_bytes, HostDevice};
use crate::elf_check;
use log::{debug, warn};
use plugin_api::*;

type Result<T> = std::result::Result<T, PluginError>;

/// Devices LLVM's host plugin exposes; ours too unless the variable below says otherwise.
const DEFAULT_DEVICES: i32 = 4;
/// Overrides the number of host devices (1 to 64).
pub const NUM_DEVICES_VAR: &str = "LIBOMPTARGET_HOST_NUM_DEVICES";

pub struct HostPlugin {
    devices: Vec<HostDevice>,
}

fn device_count_from_env() -> i32 {
    match std::env::var(NUM_DEVICES_VAR) {
        Err(_) => DEFAULT_DEVICES,
        Ok(text) => match text.trim().parse::<i32>() {
            Ok(n) if (1..=64).contains(&n) => n,
            _ => {
                warn!("{NUM_DEVICES_VAR}='{text}' is not a number from 1 to 64; using {DEFAULT_DEVICES}");
                DEFAULT_DEVICES
            }
        },
    }
}

impl DevicePlugin for HostPlugin {
    type Device = HostDevice;

    fn may_run_target(triple: &str) -> TargetClaim {
        TargetClaim::for_architectures(triple, &[std::env::consts::ARCH])
    }

    fn init() -> Result<Self> {
        let count = device_count_from_env();
        debug!("host plugin: {count} devices");
        Ok(HostPlugin {
            devices: (0..count).map(|d| HostDevice::new(d, count)).collect(),
        })
    }

    /// The plugin shuts down as the process exits: the partner threads of `nowait` kernels
    /// end their parallel region before libomp ends itself.
    fn deinit(&self) -> Result<()> {
        crate::helper_threads::close();
        Ok(())
    }

    fn describe(&self) -> PluginDescription {
        PluginDescription {
            name: "host".into(),
            num_devices: self.devices.len() as i32,
            note: format!(
                "the CPU as {} offload devices ({NUM_DEVICES_VAR})",
                self.devices.len()
            )
            .into(),
        }
    }

    fn num_devices(&self) -> i32 {
        self.devices.len() as i32
    }

    fn check_image(&self, device: Option<i32>, image: ImageRef<'_>) -> ImageCompatibility {
        if let Some(d) = device {
            if let Err(e) = self.device(d) {
                return ImageCompatibility::no(e.message.to_string());
            }
        }
        elf_check::check(&image)
    }

    fn init_device(&self, device: i32) -> Result<()> {
        self.device(device).map(|_| ())
    }

    fn device_info(&self, device: i32) -> Result<Vec<InfoEntry>> {
        let dev = self.device(device)?;
        let cores = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1);
        let mut info = vec![
            InfoEntry::new("name", "Host CPU (x86-64)"),
            InfoEntry::new("kind", "host"),
            // What LLVM's host plugin calls its compute unit (OMPT `device_initialize`).
            InfoEntry::new("compute unit kind", "generic-64bit"),
            InfoEntry::new("image format", "x86-64 ELF shared object"),
            InfoEntry::new("cores", cores),
            InfoEntry::new("loaded images", dev.image_count()),
            // The device's OpenMP UID, as LLVM 22's host plugin names it.
            InfoEntry::new("uid", format!("x86_64-{device}")),
        ];
        if let Some(bytes) = total_memory_bytes() {
            info.push(InfoEntry::new("memory bytes", bytes));
        }
        Ok(info)
    }

    fn device(&self, device: i32) -> Result<&HostDevice> {
        device_at("host", &self.devices, device)
    }
}
