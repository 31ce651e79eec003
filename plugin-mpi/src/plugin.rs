//! The [`DevicePlugin`]: starts the link to the device processes and lists their devices.
//!
//! A program that uses MPI itself and initialises it in `main` has its offload images
//! registered, and the runtime started, before that: the plugin then starts without devices
//! and joins the job once the program has initialised MPI: at the bottom of `MPI_Init`, as an
//! Open MPI hook component (`init_hook`). Where that cannot be set up, a thread of its own
//! watches for `MPI_Init` (at `MPI_THREAD_MULTIPLE` it joins from there), and the runtime asks
//! again (`devices_may_appear`) before it answers `omp_get_num_devices` and before a construct
//! for a device it does not have, which joins from the program's main thread at lower levels.

use crate::device::MpiDevice;
use crate::link::{Late, Link, Start};
use crate::{init_hook, watchdog};
use mpi_wire::mpi::Mpi;
use mpi_wire::protocol::{Op, Reader, Writer};
use plugin_api::*;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

type Result<T> = std::result::Result<T, PluginError>;

/// `CheckImage` for "any device of the process" (as the device process reads it).
const ANY_DEVICE: u32 = u32::MAX;

/// The plugin's devices once it has joined the job (or why it has none).
struct Joined {
    devices: Vec<MpiDevice>,
    /// Why there are no devices, or what each device process offers.
    note: String,
}

pub struct MpiPlugin {
    /// Set at start, unless the plugin waits for the program to initialise MPI.
    joined: Option<Joined>,
}

/// A program that links MPI and had not initialised it when the plugin started: its MPI
/// library until the plugin joins (held while joining, so that callers wait for the outcome).
static WAITING: Mutex<Option<Mpi>> = Mutex::new(None);
/// The outcome of a late join.
static JOINED_LATE: OnceLock<Joined> = OnceLock::new();

const WAITING_NOTE: &str = "the program uses MPI itself and has not initialised it yet: the \
     remote devices appear once it has, at MPI_THREAD_MULTIPLE";

/// Joins the job if the program has initialised MPI and this thread may call MPI; otherwise
/// does nothing (see [`Link::can_join_late`]).
fn join_late() {
    let mut waiting = WAITING.lock().unwrap_or_else(|e| e.into_inner());
    let Some(mpi) = waiting.as_ref() else {
        return;
    };
    let joined = match Link::can_join_late(mpi) {
        Late::NotYet => return,
        Late::Finalized => MpiPlugin::without_devices(
            "the program finalised MPI before it used the MPI plugin's devices".into(),
        ),
        Late::Now => match Link::join(waiting.take().expect("checked above"), true) {
            Ok(link) => MpiPlugin::connect(Arc::new(link)),
            Err(why) => MpiPlugin::without_devices(why),
        },
    };
    waiting.take();
    let _ = JOINED_LATE.set(joined);
}

/// Watches for the program's MPI_Init and joins from here at MPI_THREAD_MULTIPLE; below it,
/// only the main thread may call MPI, and the runtime's next call from it joins.
fn watch_for_the_programs_mpi_init() {
    let mut pause = Duration::from_micros(200);
    loop {
        {
            let waiting = WAITING.lock().unwrap_or_else(|e| e.into_inner());
            let Some(mpi) = waiting.as_ref() else {
                return;
            };
            if mpi.is_initialized() {
                if matches!(Link::can_join_late(mpi), Late::NotYet) {
                    return;
                }
                drop(waiting);
                join_late();
                return;
            }
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(20));
    }
}

/// The link, for the exit handler.
static LINK: OnceLock<Arc<Link>> = OnceLock::new();

extern "C" fn shut_down_at_exit() {
    if let Some(link) = LINK.get() {
        link.shut_down(watchdog::stop);
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
    fn without_devices(why: String) -> Joined {
        log::debug!("mpi plugin: 0 devices: {why}");
        Joined {
            devices: Vec::new(),
            note: why,
        }
    }

    /// The devices, once joined (at start or later).
    fn joined(&self) -> Option<&Joined> {
        self.joined.as_ref().or_else(|| JOINED_LATE.get())
    }

    fn devices(&self) -> &[MpiDevice] {
        self.joined().map_or(&[], |j| &j.devices)
    }

    fn note(&self) -> &str {
        self.joined().map_or(WAITING_NOTE, |j| &j.note)
    }

    /// After the roles were exchanged: finishing at exit and at the program's MPI_Finalize,
    /// and the devices of this rank's device processes.
    fn connect(link: Arc<Link>) -> Joined {
        let _ = LINK.set(Arc::clone(&link));
        register_exit_handler();
        if let Err(e) = link.mpi.on_finalize(shut_down_at_finalize) {
            log::warn!("mpi plugin: {e}; the device processes are told to finish at exit only");
        }
        if link.servers.is_empty() {
            return MpiPlugin::without_devices(
                "no device process serves this rank (more program ranks than device processes?)"
                    .into(),
            );
        }
        let (devices, notes) = match MpiPlugin::list_devices(&link) {
            Ok(found) => found,
            Err(e) => {
                return MpiPlugin::without_devices(format!(
                    "the device processes did not answer: {e}"
                ))
            }
        };
        watchdog::start(Arc::clone(&link));
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
        Joined { devices, note }
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
            let mut labels = Vec::with_capacity(count as usize);
            for _ in 0..count {
                let (plugin, local) = (r.str()?, r.i32()?);
                labels.push(format!("{plugin} device {local}"));
            }
            notes.push(format!("rank {rank}: {}", r.str()?));
            // After the summary, where a device process older than them sends nothing.
            let capabilities = r.capabilities();
            for (remote, label) in labels.into_iter().enumerate() {
                devices.push(MpiDevice::new(
                    Arc::clone(link),
                    rank,
                    remote as u32,
                    label,
                    capabilities,
                ));
            }
        }
        Ok((devices, notes))
    }
}

impl DevicePlugin for MpiPlugin {
    type Device = MpiDevice;

    fn init() -> Result<Self> {
        let joined = match Link::start() {
            Ok(Start::Joined(link)) => MpiPlugin::connect(Arc::new(link)),
            Ok(Start::WaitForProgram(mpi)) => {
                log::debug!("mpi plugin: 0 devices for now: {WAITING_NOTE}");
                let hook = init_hook::install(&mpi, join_late);
                *WAITING.lock().unwrap_or_else(|e| e.into_inner()) = Some(mpi);
                match hook {
                    Ok(dir) => log::debug!(
                        "mpi plugin: joins at the bottom of the program's MPI_Init (Open MPI \
                         hook component in {})",
                        dir.display()
                    ),
                    Err(why) => {
                        log::debug!(
                            "mpi plugin: no Open MPI hook ({why}); a thread watches for MPI_Init"
                        );
                        let watcher = std::thread::Builder::new()
                            .name("omptarget-mpi-join".into())
                            .spawn(watch_for_the_programs_mpi_init);
                        if let Err(e) = watcher {
                            log::warn!("mpi plugin: {e}; the runtime's next call joins the job");
                        }
                    }
                }
                return Ok(MpiPlugin { joined: None });
            }
            Err(why) => MpiPlugin::without_devices(why),
        };
        Ok(MpiPlugin {
            joined: Some(joined),
        })
    }

    fn deinit(&self) -> Result<()> {
        if let Some(link) = LINK.get() {
            link.shut_down(watchdog::stop);
        }
        Ok(())
    }

    fn describe(&self) -> PluginDescription {
        PluginDescription {
            name: "mpi".into(),
            num_devices: self.devices().len() as i32,
            note: self.note().into(),
        }
    }

    fn num_devices(&self) -> i32 {
        if self.joined().is_none() {
            join_late();
        }
        self.devices().len() as i32
    }

    fn devices_may_appear(&self) -> bool {
        self.joined().is_none()
    }

    fn check_image(&self, device: Option<i32>, image: ImageRef<'_>) -> ImageCompatibility {
        let (target, remote) = match device {
            Some(d) => match self.device(d) {
                Ok(dev) => (dev, dev.remote),
                Err(e) => return ImageCompatibility::no(e.message.to_string()),
            },
            None => match self.devices().first() {
                Some(dev) => (dev, ANY_DEVICE),
                None => return ImageCompatibility::no(format!("mpi: {}", self.note())),
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
        device_at("mpi", self.devices(), device)
    }
}
