//! Bad input must give an error, never a crash: devices that do not exist, addresses the plugin
//! never handed out, images for other machines, names and handles that do not exist.

use crate::program_image::{foreign_elf, DeviceImage};
use crate::report::Report;
use omptarget_core::plugins::PluginLibrary;
use plugin_api::{AllocKind, ErrorCode, ImageHandle, PluginError, QueueHandle};

/// `Ok` when the call failed with `code` (any code if `None`), as it should.
fn refused<T: std::fmt::Debug>(
    what: &str,
    outcome: Result<T, PluginError>,
    code: Option<ErrorCode>,
) -> Result<String, String> {
    match outcome {
        Ok(v) => Err(format!("{what} succeeded ({v:?}); it must fail")),
        Err(e) if code.is_some_and(|c| c != e.code) => Err(format!(
            "{what} failed with code {} instead of {}: {e}",
            e.code.0,
            code.unwrap().0
        )),
        Err(e) => Ok(format!("{what}: \"{}\"", e.message)),
    }
}

fn all(results: Vec<Result<String, String>>) -> Result<String, String> {
    let mut texts = Vec::new();
    for r in results {
        texts.push(r?);
    }
    Ok(texts.join("; "))
}

pub fn run(report: &mut Report, plugin: &PluginLibrary, image: Option<&DeviceImage>) {
    let count = plugin.num_devices();
    let invalid = Some(ErrorCode::INVALID_DEVICE);
    report.check(
        "error: invalid device",
        all(vec![
            refused(
                &format!("init_device({count})"),
                plugin.init_device(count),
                invalid,
            ),
            refused(
                "alloc on device -1",
                plugin.alloc(-1, 64, 0, AllocKind::DEVICE),
                invalid,
            ),
            refused(
                &format!("device_info({})", count + 7),
                plugin.device_info(count + 7),
                invalid,
            ),
            refused(
                &format!("create_queue({count})"),
                plugin.create_queue(count),
                invalid,
            ),
        ]),
    );

    let garbage = b"this is not a device image".as_slice();
    let foreign = foreign_elf();
    let mut checks = Vec::new();
    for (what, bytes) in [("text", garbage), ("an s390x ELF object", &foreign[..])] {
        let verdict = plugin.check_image(-1, bytes, "", "");
        checks.push(if verdict.compatible {
            Err(format!("check_image accepts {what}"))
        } else if verdict.reason.is_empty() {
            Err(format!("check_image refuses {what} without a reason"))
        } else {
            Ok(format!("refuses {what}: \"{}\"", verdict.reason))
        });
        if count > 0 {
            checks.push(refused(
                &format!("load_image of {what}"),
                plugin.load_image(0, bytes, "", ""),
                None,
            ));
        }
    }
    report.check("error: foreign image", all(checks));

    if count == 0 {
        report.skip("error: invalid pointer", "no devices");
        return;
    }
    let never_allocated = 0u64;
    let bogus = &never_allocated as *const u64 as usize;
    report.check(
        "error: invalid pointer",
        all(vec![
            refused(
                "free of an address never allocated",
                plugin.free(0, bogus, AllocKind::DEVICE),
                None,
            ),
            refused(
                "copy to device address 0",
                plugin.copy_to_device(0, 0, bogus, 8, QueueHandle::SYNC),
                None,
            ),
            refused(
                "alloc of kind 99",
                plugin.alloc(0, 64, 0, AllocKind(99)),
                None,
            ),
        ]),
    );

    let bad_handle = ImageHandle(u64::MAX - 7);
    let mut checks = vec![refused(
        "get_kernel on an image handle never returned",
        plugin.get_kernel(0, bad_handle, "kernel"),
        None,
    )];
    if let Some(image) = image.filter(|i| {
        plugin
            .check_image(0, &i.bytes, &i.triple, &i.arch)
            .compatible
    }) {
        match plugin.load_image(0, &image.bytes, &image.triple, &image.arch) {
            Err(e) => checks.push(Err(format!("load_image: {e}"))),
            Ok(handle) => {
                checks.push(refused(
                    "get_kernel of a missing kernel",
                    plugin.get_kernel(0, handle, "omptarget_plugin_check_no_such_kernel"),
                    None,
                ));
                checks.push(refused(
                    "get_global of a missing global",
                    plugin.get_global(0, handle, "omptarget_plugin_check_no_such_global", 4),
                    None,
                ));
                let _ = plugin.unload_image(0, handle);
            }
        }
    }
    report.check("error: unknown names and handles", all(checks));
}
