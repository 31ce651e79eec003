//! The plugin-wide calls ([`DevicePlugin`]): counting, describing and finding devices. Every
//! other call names a device; plugin-api's forwarding looks it up with
//! [`DevicePlugin::device`] and hands the call to [`ExampleDevice`], so no method here or there
//! checks a device number. This file is mostly what a vendor keeps.

use crate::device::ExampleDevice;
use crate::image;
use plugin_api::*;

type Result<T> = std::result::Result<T, PluginError>;

/// Number of simulated devices, 1 to `MAX_DEVICES` (default 1).
pub const NUM_DEVICES_VAR: &str = "LIBOMPTARGET_EXAMPLE_NUM_DEVICES";
const MAX_DEVICES: i32 = 8;

pub struct ExamplePlugin {
    devices: Vec<ExampleDevice>,
}

/// A real plugin asks its driver how many devices there are; ours asks the environment.
fn device_count() -> i32 {
    let Ok(text) = std::env::var(NUM_DEVICES_VAR) else {
        return 1;
    };
    match text.trim().parse::<i32>() {
        Ok(n) if (1..=MAX_DEVICES).contains(&n) => n,
        _ => {
            log::warn!(
                "{NUM_DEVICES_VAR}='{text}' is not a number from 1 to {MAX_DEVICES}; using 1"
            );
            1
        }
    }
}

impl DevicePlugin for ExamplePlugin {
    type Device = ExampleDevice;

    fn init() -> Result<Self> {
        let count = device_count();
        log::debug!("example plugin: {count} simulated devices");
        Ok(ExamplePlugin {
            devices: (0..count).map(ExampleDevice::new).collect(),
        })
    }

    fn describe(&self) -> PluginDescription {
        PluginDescription {
            name: "example".into(),
            num_devices: self.devices.len() as i32,
            note: format!(
                "{} simulated accelerator(s) running x86_64 images ({NUM_DEVICES_VAR})",
                self.devices.len()
            )
            .into(),
        }
    }

    fn num_devices(&self) -> i32 {
        self.devices.len() as i32
    }

    fn check_image(&self, device: Option<i32>, image: ImageRef<'_>) -> ImageCompatibility {
        match device.map(|d| self.device(d)) {
            Some(Err(e)) => ImageCompatibility::no(e.message.to_string()),
            _ => image::check(&image),
        }
    }

    /// Our devices are ready when created; a real plugin creates the device's context here.
    fn init_device(&self, device: i32) -> Result<()> {
        self.device(device).map(drop)
    }

    fn device_info(&self, device: i32) -> Result<Vec<InfoEntry>> {
        let dev = self.device(device)?;
        Ok(vec![
            InfoEntry::new("name", "Example simulated accelerator"),
            InfoEntry::new("kind", "simulated"),
            // Read by the core and reported to OMPT tools: LLVM's name for x86-64 images.
            InfoEntry::new("compute unit kind", "generic-64bit"),
            InfoEntry::new("image format", "x86-64 ELF shared object"),
            InfoEntry::new("loaded images", dev.images.count()),
            InfoEntry::new("live allocations", dev.memory.live_allocations()),
            InfoEntry::new("queue threads", dev.queues.threads_started()),
        ])
    }

    /// The one device-number check: `device_at` words the error as every plugin does.
    fn device(&self, device: i32) -> Result<&ExampleDevice> {
        device_at("example", &self.devices, device)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plugin(devices: i32) -> ExamplePlugin {
        ExamplePlugin {
            devices: (0..devices).map(ExampleDevice::new).collect(),
        }
    }

    // The calls below go through `Plugin`, with device numbers, as the core makes them.

    #[test]
    fn device_numbers_are_checked() {
        let p = plugin(2);
        let e = p.alloc(2, 8, 0, AllocKind::DEFAULT).unwrap_err();
        assert_eq!(e.code, ErrorCode::INVALID_DEVICE);
        assert!(e.message.contains("device 2") && e.message.contains("there are 2"));
        assert_eq!(
            p.synchronize(-1, QueueHandle::SYNC).unwrap_err().code,
            ErrorCode::INVALID_DEVICE
        );
        let empty = ImageRef {
            bytes: Default::default(),
            triple: Default::default(),
            arch: Default::default(),
        };
        assert!(!Plugin::check_image(&p, Some(7), empty).compatible);
        let info = Plugin::device_info(&p, 1).unwrap();
        assert!(info
            .iter()
            .any(|i| i.key == "compute unit kind" && i.value == "generic-64bit"));
    }

    #[test]
    fn copies_round_trip_through_device_memory_asynchronously() {
        let p = plugin(2);
        let q = p.create_queue(0).unwrap();
        let d0 = p.alloc(0, 16, 0, AllocKind::DEFAULT).unwrap();
        let d1 = p.alloc(1, 16, 0, AllocKind::DEVICE).unwrap();
        let input = *b"sixteen bytes!!!";
        let mut output = [0u8; 16];
        let (inp, out) = (input.as_ptr() as usize, output.as_mut_ptr() as usize);
        // SAFETY: `input` and `output` outlive the queue's synchronisation below.
        unsafe { p.copy_to_device(0, d0, inp, 16, q) }.unwrap();
        p.copy_device_to_device(0, d0, 1, d1, 16, q).unwrap();
        p.synchronize(0, q).unwrap();
        // SAFETY: as above; a synchronous copy.
        unsafe { p.copy_from_device(1, out, d1, 16, QueueHandle::SYNC) }.unwrap();
        assert_eq!(output, input);
        // Out of bounds, on the wrong device, or freed: refused before anything is queued.
        // SAFETY: refused before anything is queued.
        assert!(unsafe { p.copy_to_device(0, d0 + 8, inp, 16, q) }.is_err());
        // SAFETY: as above.
        assert!(unsafe { p.copy_to_device(0, d1, inp, 16, q) }.is_err());
        assert!(p.copy_device_to_device(0, d0, 1, d0, 16, q).is_err());
        p.free(0, d0, AllocKind::DEFAULT).unwrap();
        // SAFETY: as above.
        assert!(unsafe { p.copy_from_device(0, out, d0, 1, q) }.is_err());
        assert_eq!(
            p.free(0, d0, AllocKind::DEFAULT).unwrap_err().code,
            ErrorCode::INVALID_ARGUMENT
        );
        p.release_queue(0, q).unwrap();
    }
}
