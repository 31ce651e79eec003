//! `omptarget-plugin-check PATH [--image FILE]`: loads a plugin library through the runtime's own
//! loader and exercises every part of the plugin ABI, printing one line per check and a summary.
//! Exits 0 when nothing failed, 1 when a check failed, 2 on a usage error.

mod checks;
mod program_image;
mod report;

use omptarget_core::plugins::{discovery, load_plugins, Candidate, Origin, PluginStatus};
use plugin_api::ABI_VERSION;
use program_image::DeviceImage;
use report::Report;
use std::process::ExitCode;

const USAGE: &str = "usage: omptarget-plugin-check PLUGIN.so [--image FILE]

Loads PLUGIN.so as libomptarget does (ABI version first, then the interface layout, then
init) and exercises it: device count and info, allocation of each kind, copies each way with
their contents checked, queue and event ordering, error paths and concurrent use. With
--image (an offloading program built from check_program.c, or a bare device image) it also
checks image compatibility, loads the image, reads a global and launches a kernel.
A plugin with zero devices (no driver, no hardware) passes with its reason reported.";

struct Options {
    plugin: String,
    image: Option<String>,
}

fn parse(args: Vec<String>) -> Result<Options, String> {
    let mut plugin = None;
    let mut image = None;
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "-h" | "--help" => return Err(String::new()),
            "--image" => image = Some(args.next().ok_or("--image needs a file")?),
            other if other.starts_with('-') => return Err(format!("unknown option {other}")),
            _ if plugin.is_some() => return Err(format!("unexpected argument {arg}")),
            _ => plugin = Some(arg),
        }
    }
    let plugin = plugin.ok_or("no plugin library given")?;
    Ok(Options { plugin, image })
}

fn main() -> ExitCode {
    let options = match parse(std::env::args().skip(1).collect()) {
        Ok(o) => o,
        Err(e) if e.is_empty() => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("omptarget-plugin-check: {e}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    omptarget_core::logging::init();
    let images = match &options.image {
        None => None,
        Some(path) => match std::fs::read(path)
            .map_err(|e| e.to_string())
            .and_then(|bytes| program_image::images_in(&bytes))
        {
            Ok(images) => Some(images),
            Err(e) => {
                eprintln!("omptarget-plugin-check: cannot read image {path}: {e}");
                return ExitCode::from(2);
            }
        },
    };
    let mut report = Report::default();
    run(&mut report, &options, images.as_deref());
    report.print_summary();
    if report.failed() > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

fn run(report: &mut Report, options: &Options, images: Option<&[DeviceImage]>) {
    // Absolute, so the loader opens this file and not one of the same name on its search path.
    let location = std::fs::canonicalize(&options.plugin)
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| options.plugin.clone());
    let file = std::path::Path::new(&location)
        .file_name()
        .and_then(|f| f.to_str())
        .unwrap_or("");
    let candidate = Candidate {
        name: discovery::plugin_name(file).unwrap_or(file).to_string(),
        location,
        origin: Origin::PluginPathVariable,
    };
    let (reports, mut libraries) = load_plugins(std::slice::from_ref(&candidate), &None);
    let Some(plugin) = libraries.pop() else {
        let reason = match reports.first().map(|r| &r.status) {
            Some(PluginStatus::Skipped(reason)) => reason.clone(),
            _ => "not loaded".into(),
        };
        report.fail("load", format!("{}: {reason}", candidate.location));
        return;
    };
    report.pass(
        "load",
        format!(
            "{} as plugin '{}': {}",
            plugin.location, plugin.description.name, plugin.description.note
        ),
    );
    report.check(
        "ABI version",
        if ABI_VERSION.accepts(plugin.abi_version) {
            Ok(format!(
                "plugin {}, runtime {}",
                plugin.abi_version, ABI_VERSION
            ))
        } else {
            Err(format!(
                "plugin {}, runtime {}",
                plugin.abi_version, ABI_VERSION
            ))
        },
    );

    let count = plugin.num_devices();
    let described = plugin.description.num_devices;
    report.check(
        "device count",
        if count == described {
            Ok(if count == 0 {
                format!(
                    "0 devices ({}): a passing state, device checks are skipped",
                    plugin.description.note
                )
            } else {
                format!("{count} device(s)")
            })
        } else {
            Err(format!(
                "num_devices says {count}, the plugin's description says {described}"
            ))
        },
    );

    let image = images.and_then(|images| checks::launch::choose_image(report, &plugin, images));
    if images.is_none() {
        report.skip("image compatibility", "no --image given");
    }
    for device in 0..count {
        device_checks(report, &plugin, device, count, image);
    }
    if count == 0 {
        report.skip("device checks", "no devices");
    }
    checks::errors::run(report, &plugin, image);
    if count > 0 {
        checks::threads::run(report, &plugin, 0, image);
    }
    for device in 0..count {
        report.check(
            &format!("device {device}: deinit"),
            plugin
                .deinit_device(device)
                .map(|_| "released".into())
                .map_err(|e| e.to_string()),
        );
    }
    report.check(
        "deinit",
        plugin
            .deinit()
            .map(|_| "plugin released".into())
            .map_err(|e| e.to_string()),
    );
}

fn device_checks(
    report: &mut Report,
    plugin: &omptarget_core::plugins::PluginLibrary,
    device: i32,
    count: i32,
    image: Option<&DeviceImage>,
) {
    let name = |what: &str| format!("device {device}: {what}");
    if let Err(e) = plugin.init_device(device) {
        report.fail(&name("init"), e);
        return;
    }
    report.pass(&name("init"), "initialised");
    report.check(
        &name("info"),
        match plugin.device_info(device) {
            Err(e) => Err(e.to_string()),
            Ok(entries) if entries.is_empty() => Err("no properties".into()),
            Ok(entries) => match entries
                .iter()
                .find(|e| e.key.as_str() == "compute unit kind")
            {
                None => {
                    Err("no 'compute unit kind' property (the architecture, e.g. sm_90)".into())
                }
                Some(kind) => Ok(format!(
                    "{} properties, compute unit kind {}",
                    entries.len(),
                    kind.value
                )),
            },
        },
    );
    let check = name("memory info (ABI 1.1)");
    match plugin.memory_info(device) {
        None => report.skip(
            &check,
            format!(
                "the plugin is built for ABI {}, which lacks the call",
                plugin.abi_version
            ),
        ),
        Some(Err(e)) if e.code == plugin_api::ErrorCode::UNSUPPORTED => report.skip(&check, e),
        Some(Err(e)) => report.fail(&check, e),
        Some(Ok(m)) if m.total == 0 || m.free > m.total => report.fail(
            &check,
            format!("{} bytes free of {}: impossible", m.free, m.total),
        ),
        Some(Ok(m)) => report.pass(&check, format!("{} bytes free of {}", m.free, m.total)),
    }
    check_interop_info(report, plugin, device, count);
    checks::memory::run(report, plugin, device, count);
    checks::fill::run(report, plugin, device);
    checks::ordering::run(report, plugin, device);
    match image {
        Some(image) => checks::launch::run(report, plugin, device, image),
        None => report.skip(&name("kernel launch"), "no image accepted by the plugin"),
    }
}

/// ABI 1.2's `interop_info`: no `targetsync` handle without a queue, the same device handles
/// with one, the queue still usable and releasable afterwards, an invalid device refused.
fn check_interop_info(
    report: &mut Report,
    plugin: &omptarget_core::plugins::PluginLibrary,
    device: i32,
    count: i32,
) {
    let check = format!("device {device}: interop info (ABI 1.2)");
    let Some(without_queue) = plugin.interop_info(device, plugin_api::QueueHandle::SYNC) else {
        return report.skip(
            &check,
            format!(
                "the plugin is built for ABI {}, which lacks the call",
                plugin.abi_version
            ),
        );
    };
    let result = (|| -> Result<String, String> {
        let without_queue = without_queue.map_err(|e| e.to_string())?;
        if without_queue.targetsync != 0 {
            return Err("a targetsync handle for QueueHandle::SYNC".into());
        }
        let queue = plugin.create_queue(device).map_err(|e| e.to_string())?;
        let with_queue = plugin.interop_info(device, queue);
        let synced = plugin.synchronize(device, queue);
        let released = plugin.release_queue(device, queue);
        let with_queue = with_queue
            .expect("the call exists")
            .map_err(|e| format!("with a queue: {e}"))?;
        synced.map_err(|e| format!("synchronize after interop_info: {e}"))?;
        released.map_err(|e| format!("release_queue after interop_info: {e}"))?;
        if (
            with_queue.foreign_runtime,
            with_queue.device,
            with_queue.context,
        ) != (
            without_queue.foreign_runtime,
            without_queue.device,
            without_queue.context,
        ) {
            return Err("the device handles change with the queue".into());
        }
        if plugin
            .interop_info(count, plugin_api::QueueHandle::SYNC)
            .and_then(Result::ok)
            .is_some()
        {
            return Err(format!("device {count} (invalid) answered"));
        }
        Ok(format!(
            "foreign runtime {}, vendor {}, targetsync {}",
            with_queue.foreign_runtime.name(),
            with_queue.vendor.name(),
            if with_queue.targetsync != 0 {
                "given"
            } else {
                "none"
            }
        ))
    })();
    report.check(&check, result);
}
