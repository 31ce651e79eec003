//! Fills on the device (plugin ABI 1.6): each pattern width, at an unaligned start and of an
//! odd length, with the bytes around the filled range untouched, and in order with copies on a
//! queue.

use super::{failure, pattern, receive, same_content, send, DeviceBuffer, Outcome};
use crate::report::Report;
use omptarget_core::plugins::PluginLibrary;
use plugin_api::{AllocKind, ErrorCode, QueueHandle};

/// The buffer filled in part, and where the fill starts in it: an odd offset, so that no
/// plugin gets an aligned start for free.
const BUFFER: usize = 64 << 10;
const START: usize = 3;

pub fn run(report: &mut Report, plugin: &PluginLibrary, device: i32) {
    let check = format!("device {device}: fill on the device (ABI 1.6)");
    let Some(first) = plugin.fill_memory(device, 0, &[0], 0, QueueHandle::SYNC) else {
        report.skip(&check, "the plugin is older than ABI 1.6 (no fill)");
        return;
    };
    if let Err(e) = first {
        report.fail(&check, failure("a fill of 0 bytes", e));
        return;
    }
    let mut filled = Vec::new();
    for pattern in [&[0xa5u8][..], &[0x12, 0x34], &[0xde, 0xad, 0xbe, 0xef]] {
        match fill_inside(plugin, device, pattern) {
            Ok(true) => filled.push(pattern),
            Ok(false) => {}
            Err(e) => {
                report.fail(&check, format!("{}-byte pattern: {e}", pattern.len()));
                return;
            }
        }
    }
    if filled.is_empty() {
        report.skip(
            &check,
            "the plugin answers UNSUPPORTED for every pattern width",
        );
        return;
    }
    report.check(
        &check,
        in_order_on_a_queue(plugin, device, filled[0]).map(|()| {
            let widths: Vec<String> = filled.iter().map(|p| p.len().to_string()).collect();
            format!(
                "{}-byte patterns filled from an odd offset with their surroundings intact, \
                 and in order between copies on a queue",
                widths.join(", ")
            )
        }),
    );
    report.check(
        &format!("device {device}: fill refuses a size that is not a whole number of patterns"),
        refuses_a_partial_pattern(plugin, device),
    );
}

/// `Ok(false)` when the plugin cannot fill with this width.
fn fill_inside(plugin: &PluginLibrary, device: i32, with: &[u8]) -> Outcome<bool> {
    let buffer = DeviceBuffer::new(plugin, device, BUFFER as u64, AllocKind::DEVICE)
        .map_err(|e| failure("alloc", e))?;
    let before = pattern(BUFFER, 11);
    // SAFETY: a synchronous copy.
    unsafe { send(plugin, device, buffer.address, &before, QueueHandle::SYNC) }?;
    // An odd number of patterns ending well before the buffer does.
    let size = (BUFFER / 2 / with.len()) * with.len() + with.len();
    let filled = plugin.fill_memory(
        device,
        buffer.address + START,
        with,
        size as u64,
        QueueHandle::SYNC,
    );
    match filled {
        Some(Err(e)) if e.code == ErrorCode::UNSUPPORTED => return Ok(false),
        Some(Err(e)) => return Err(failure("fill", e)),
        None => return Ok(false),
        Some(Ok(())) => {}
    }
    let mut expected = before;
    for (i, byte) in expected[START..START + size].iter_mut().enumerate() {
        *byte = with[i % with.len()];
    }
    let mut back = vec![0u8; BUFFER];
    // SAFETY: a synchronous copy.
    unsafe { receive(plugin, device, &mut back, buffer.address, QueueHandle::SYNC) }?;
    same_content("filled buffer", &back, &expected)?;
    buffer.free().map_err(|e| failure("free", e))?;
    Ok(true)
}

/// A copy in, a fill over part of it and a copy out on one queue: the fill sees the copy's
/// bytes and the copy out sees the fill's.
fn in_order_on_a_queue(plugin: &PluginLibrary, device: i32, with: &[u8]) -> Outcome<()> {
    let buffer = DeviceBuffer::new(plugin, device, BUFFER as u64, AllocKind::DEVICE)
        .map_err(|e| failure("alloc", e))?;
    let queue = plugin
        .create_queue(device)
        .map_err(|e| failure("create queue", e))?;
    let data = pattern(BUFFER, 29);
    let mut back = vec![0u8; BUFFER];
    let half = BUFFER / 2;
    // SAFETY: `data` and `back` outlive the queue's synchronisation below.
    let queued = unsafe {
        send(plugin, device, buffer.address, &data, queue).and_then(|()| {
            plugin
                .fill_memory(device, buffer.address + half, with, half as u64, queue)
                .unwrap_or(Ok(()))
                .map_err(|e| failure("fill on a queue", e))?;
            receive(plugin, device, &mut back, buffer.address, queue)
        })
    };
    let synchronized = plugin
        .synchronize(device, queue)
        .map_err(|e| failure("synchronize", e));
    let _ = plugin.release_queue(device, queue);
    queued?;
    synchronized?;
    let mut expected = data;
    for (i, byte) in expected[half..].iter_mut().enumerate() {
        *byte = with[i % with.len()];
    }
    same_content("buffer after copy, fill, copy", &back, &expected)?;
    buffer.free().map_err(|e| failure("free", e))
}

fn refuses_a_partial_pattern(plugin: &PluginLibrary, device: i32) -> Outcome<String> {
    let buffer = DeviceBuffer::new(plugin, device, 64, AllocKind::DEVICE)
        .map_err(|e| failure("alloc", e))?;
    let answer = plugin.fill_memory(device, buffer.address, &[1, 2, 3, 4], 6, QueueHandle::SYNC);
    buffer.free().map_err(|e| failure("free", e))?;
    match answer {
        Some(Err(e)) if e.code == ErrorCode::INVALID_ARGUMENT => {
            Ok(format!("6 bytes of a 4-byte pattern: {}", e.message))
        }
        Some(Err(e)) => Err(format!("expected INVALID_ARGUMENT, got {e:?}")),
        Some(Ok(())) => Err("a 6-byte fill with a 4-byte pattern succeeded".into()),
        None => Ok("no fill in this plugin".into()),
    }
}
