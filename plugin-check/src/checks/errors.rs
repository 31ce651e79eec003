//! Bad input must give an error, never a crash: devices that do not exist, addresses the plugin
//! never handed out, images for other machines, names and handles that do not exist, queue and
//! event handles the plugin never gave out.

use super::DeviceBuffer;
use crate::program_image::{foreign_elf, DeviceImage};
use crate::report::Report;
use omptarget_core::plugins::PluginLibrary;
use plugin_api::{AllocKind, ErrorCode, EventHandle, ImageHandle, PluginError, QueueHandle};

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
        Err(e) if e.message.is_empty() => Err(format!(
            "{what} failed with code {} but no message",
            e.code.0
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
                // SAFETY: refused before anything is read; were it not, `bogus` is a
                // readable word of this stack (see above) and the copy synchronous.
                unsafe { plugin.copy_to_device(0, 0, bogus, 8, QueueHandle::SYNC) },
                None,
            ),
            refused(
                "alloc of kind 99",
                plugin.alloc(0, 64, 0, AllocKind(99)),
                None,
            ),
        ]),
    );

    report.check(
        "error: bogus queue and event handles",
        bogus_queues_and_events(plugin),
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

/// Queue and event handles the plugin never gave out must be refused with an error, on every
/// call that takes one, and never reach the device's driver (where a plugin that turns handles
/// into driver pointers would pass a wild pointer): one that no plugin gives out, and one that
/// looks like a driver object (the address of a host variable, as a `CUstream` or an HSA
/// signal is). The real queue and event used alongside still work afterwards.
fn bogus_queues_and_events(plugin: &PluginLibrary) -> Result<String, String> {
    let buffer =
        DeviceBuffer::new(plugin, 0, 64, AllocKind::DEVICE).map_err(|e| format!("alloc: {e}"))?;
    let queue = plugin
        .create_queue(0)
        .map_err(|e| format!("create_queue: {e}"))?;
    let event = match plugin.create_event(0) {
        Ok(event) => event,
        Err(e) => {
            let _ = plugin.release_queue(0, queue);
            return Err(format!("create_event: {e}"));
        }
    };
    let result = refuse_bogus_handles(plugin, buffer.address, queue, event);
    let destroyed = plugin.destroy_event(0, event);
    let released = plugin.release_queue(0, queue);
    let freed = buffer.free();
    let count = result?;
    destroyed.map_err(|e| format!("destroy_event of the real event: {e}"))?;
    released.map_err(|e| format!("release_queue of the real queue: {e}"))?;
    freed.map_err(|e| format!("free: {e}"))?;
    Ok(format!(
        "{count} calls with a bogus queue or event refused; the real ones still work"
    ))
}

/// The calls of [`bogus_queues_and_events`] on a live queue, event and buffer: how many were
/// refused, or the first that was not.
fn refuse_bogus_handles(
    plugin: &PluginLibrary,
    buffer: usize,
    queue: QueueHandle,
    event: EventHandle,
) -> Result<usize, String> {
    // Static: a copy a plugin wrongly took on a bogus queue, or one left queued by an early
    // return, still reads live memory.
    static SOURCE: [u8; 8] = [7; 8];
    let src = SOURCE.as_ptr() as usize;
    // Recorded once, so that a wait on it has something to wait for on the bogus queue.
    plugin
        .record_event(0, event, QueueHandle::SYNC)
        .map_err(|e| format!("record_event on the synchronous queue: {e}"))?;
    let stack_word = 0u64;
    let pointer_like = &stack_word as *const u64 as u64;
    let mut refusals = Vec::new();
    for bogus in [u64::MAX - 7, pointer_like] {
        let (q, e) = (QueueHandle(bogus), EventHandle(bogus));
        let name = format!("{bogus:#x}");
        refusals.extend([
            refused(
                &format!("synchronize({name})"),
                plugin.synchronize(0, q),
                None,
            ),
            refused(
                &format!("query_queue({name})"),
                plugin.query_queue(0, q),
                None,
            ),
            refused(
                &format!("copy_to_device on queue {name}"),
                // SAFETY: `src` is static data.
                unsafe { plugin.copy_to_device(0, buffer, src, 8, q) },
                None,
            ),
            refused(
                &format!("record_event on queue {name}"),
                plugin.record_event(0, event, q),
                None,
            ),
            refused(
                &format!("wait_event on queue {name}"),
                plugin.wait_event(0, event, q),
                None,
            ),
            refused(
                &format!("release_queue({name})"),
                plugin.release_queue(0, q),
                None,
            ),
            refused(
                &format!("record_event({name})"),
                plugin.record_event(0, e, queue),
                None,
            ),
            refused(
                &format!("wait_event({name})"),
                plugin.wait_event(0, e, QueueHandle::SYNC),
                None,
            ),
            refused(
                &format!("sync_event({name})"),
                plugin.sync_event(0, e),
                None,
            ),
            refused(
                &format!("destroy_event({name})"),
                plugin.destroy_event(0, e),
                None,
            ),
        ]);
    }
    let count = refusals.len();
    all(refusals)?;
    // The plugin still serves the handles it gave out.
    // SAFETY: `src` is static data.
    unsafe { plugin.copy_to_device(0, buffer, src, 8, queue) }
        .map_err(|e| format!("copy_to_device on the real queue: {e}"))?;
    plugin
        .record_event(0, event, queue)
        .map_err(|e| format!("record_event of the real event: {e}"))?;
    plugin
        .wait_event(0, event, QueueHandle::SYNC)
        .map_err(|e| format!("wait_event of the real event: {e}"))?;
    plugin
        .sync_event(0, event)
        .map_err(|e| format!("sync_event of the real event: {e}"))?;
    plugin
        .synchronize(0, queue)
        .map_err(|e| format!("synchronize of the real queue: {e}"))?;
    Ok(count)
}
