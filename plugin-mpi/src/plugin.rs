//! The [`DevicePlugin`]: starts the link to the device processes and lists their devices.

use crate::device::MpiDevice;
use crate::link::Link;
use mpi_wire::protocol::{Op, Reader, Writer};
use plugin_api::*;
use std::sync::{Arc, OnceLock};

type Result<T> = std::result::Result<T, PluginError>;

/// `CheckImage` for "any device of the process" (as the device process reads it).
const ANY_DEVICE: u32 = u32::MAX;

pub struct MpiPlugin {
    link: Option<Arc<Link>>,
    devices: Vec<MpiDevice>,
    /// Why there are no devices, or what each device process offers.
    note: String,
}

/// The link, for the exit handler.
static LINK: OnceLock<Arc<Link>> = OnceLock::new();

extern "C" fn shut_down_at_exit() {
    if let Some(link) = LINK.get() {
        link.shut_down();
    }
}

/// Runs when MPI_Finalize starts: a program that initialised MPI itself finalises it before
/// our exit handler runs, and its MPI_Finalize waits for every process of the job, the device
/// processes too, which finish only when told.
unsafe extern "C" fn shut_down_at_finalize(
    _: *mut std::ffi::c_void,
    _: std::ffi::c_int,
    _: *mut std::ffi::c_void,
    _: *mut std::ffi::c_void,
) -> std::ffi::c_int {
    // No unwinding out of an MPI callback.
    let _ = std::panic::catch_unwind(|| shut_down_at_exit());
    0
}

fn register_exit_handler() {
    extern "C" {
        fn atexit(f: extern "C" fn()) -> std::ffi::c_int;
    }
    // SAFETY: registering a plain function without arguments; it catches nothing that could
    // unwind (shut_down only logs).
    unsafe { atexit(shut_down_at_exit) };
}

impl MpiPlugin {
    fn without_devices(why: String) -> MpiPlugin {
        log::debug!("mpi plugin: 0 devices: {why}");
        MpiPlugin {
            link: None,
            devices: Vec::new(),
            note: why,
        }
    }

    /// Asks each device process for its devices.
    fn list_devices(link: &Arc<Link>) -> Result<(Vec<MpiDevice>, Vec<String>)> {
        let mut devices = Vec::new();
        let mut notes = Vec::new();
        for &rank in &link.servers {
            let tag = link.tag();
            let reply = link.call(rank, tag, &Writer::request(Op::ListDevices, tag, 0))?;
            let mut r = Reader::new(&reply);
            r.reply()?;
            let count = r.u32()?;
            for remote in 0..count {
                let (plugin, local) = (r.str()?, r.i32()?);
                devices.push(MpiDevice::new(
                    Arc::clone(link),
                    rank,
                    remote,
                    format!("{plugin} device {local}"),
                ));
            }
            notes.push(format!("rank {rank}: {}", r.str()?));
        }
        Ok((devices, notes))
    }
}

impl DevicePlugin for MpiPlugin {
    type Device = MpiDevice;

    fn init() -> Result<Self> {
        let link = match Link::start() {
            Ok(link) => Arc::new(link),
            Err(why) => return Ok(MpiPlugin::without_devices(why)),
        };
        let _ = LINK.set(Arc::clone(&link));
        register_exit_handler();
        if let Err(e) = link.mpi.on_finalize(shut_down_at_finalize) {
            log::warn!("mpi plugin: {e}; the device processes are told to finish at exit only");
        }
        if link.servers.is_empty() {
            return Ok(MpiPlugin::without_devices(
                "no device process serves this rank (more program ranks than device processes?)"
                    .into(),
            ));
        }
        let (devices, notes) = match MpiPlugin::list_devices(&link) {
            Ok(found) => found,
            Err(e) => {
                return Ok(MpiPlugin::without_devices(format!(
                    "the device processes did not answer: {e}"
                )))
            }
        };
        let note = format!(
            "{} device process{} (ranks {}): {}",
            link.servers.len(),
            if link.servers.len() == 1 { "" } else { "es" },
            link.servers
                .iter()
                .map(|r| r.to_string())
                .collect::<Vec<_>>()
                .join(", "),
            notes.join("; ")
        );
        log::debug!("mpi plugin: {} devices; {note}", devices.len());
        Ok(MpiPlugin {
            link: Some(link),
            devices,
            note,
        })
    }

    fn deinit(&self) -> Result<()> {
        if let Some(link) = &self.link {
            link.shut_down();
        }
        Ok(())
    }

    fn describe(&self) -> PluginDescription {
        PluginDescription {
            name: "mpi".into(),
            num_devices: self.devices.len() as i32,
            note: self.note.clone().into(),
        }
    }

    fn num_devices(&self) -> i32 {
        self.devices.len() as i32
    }

    fn check_image(&self, device: Option<i32>, image: ImageRef<'_>) -> ImageCompatibility {
        let (target, remote) = match device {
            Some(d) => match self.device(d) {
                Ok(dev) => (dev, dev.remote),
                Err(e) => return ImageCompatibility::no(e.message.to_string()),
            },
            None => match self.devices.first() {
                Some(dev) => (dev, ANY_DEVICE),
                None => return ImageCompatibility::no(format!("mpi: {}", self.note)),
            },
        };
        let answer = target
            .link
            .image_id(target.rank, &image.bytes)
            .and_then(|id| {
                let tag = target.link.tag();
                let mut request = Writer::request(Op::CheckImage, tag, remote);
                request.str(&image.triple).str(&image.arch).u64(id);
                target.link.call(target.rank, tag, &request)
            })
            .and_then(|reply| {
                let mut r = Reader::new(&reply);
                r.reply()?;
                Ok((r.u8()? != 0, r.str()?.to_string()))
            });
        match answer {
            Ok((true, reason)) => ImageCompatibility {
                compatible: true,
                reason: reason.into(),
            },
            Ok((false, reason)) => ImageCompatibility::no(format!(
                "mpi rank {} ({}): {reason}",
                target.rank, target.label
            )),
            Err(e) => ImageCompatibility::no(format!("mpi rank {}: {}", target.rank, e.message)),
        }
    }

    fn init_device(&self, device: i32) -> Result<()> {
        self.device(device)?.call(Op::InitDevice, |_| {}).map(drop)
    }

    fn device_info(&self, device: i32) -> Result<Vec<InfoEntry>> {
        let dev = self.device(device)?;
        let reply = dev.call(Op::DeviceInfo, |_| {})?;
        let mut r = Reader::new(&reply);
        r.reply()?;
        let count = r.u32()?;
        let mut info = Vec::with_capacity(count as usize + 2);
        for _ in 0..count {
            let (key, value) = (r.str()?, r.str()?);
            if key == "uid" {
                // Unique in the job, not only in its device process (OpenMP 6 device UIDs).
                info.push(InfoEntry::new(key, format!("MPI-{}-{value}", dev.rank)));
            } else {
                info.push(InfoEntry::new(key, value));
            }
        }
        // The remote device's own entries, then where it is.
        info.push(InfoEntry::new("mpi rank", dev.rank));
        info.push(InfoEntry::new("remote device", &dev.label));
        Ok(info)
    }

    fn device(&self, device: i32) -> Result<&MpiDevice> {
        device_at("mpi", &self.devices, device)
    }
}
