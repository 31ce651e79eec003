//! Allocation of each kind, copies each way with their contents checked, pinning.

use super::{
    failure, pattern, receive, round_trip, same_content, send, write_and_read_back, DeviceBuffer,
    Outcome,
};
use crate::report::Report;
use omptarget_core::plugins::PluginLibrary;
use plugin_api::{AllocKind, ErrorCode, QueueHandle};

const KINDS: [(AllocKind, &str, bool); 5] = [
    // (kind, name, whether the host may touch the memory directly)
    (AllocKind::DEVICE, "device", false),
    (AllocKind::HOST, "host (pinned)", true),
    (AllocKind::SHARED, "shared (managed)", true),
    (AllocKind::DEFAULT, "default", false),
    (AllocKind::DEVICE_NON_BLOCKING, "device non-blocking", false),
];

pub fn run(report: &mut Report, plugin: &PluginLibrary, device: i32, num_devices: i32) {
    for (kind, name, host_accessible) in KINDS {
        let check = format!("device {device}: alloc {name}");
        match DeviceBuffer::new(plugin, device, 1 << 20, kind) {
            Err(e) if e.code == ErrorCode::UNSUPPORTED => report.skip(&check, e),
            Err(e) => report.fail(&check, e),
            Ok(buffer) => {
                let result =
                    use_allocation(plugin, device, &buffer, host_accessible).and_then(|detail| {
                        buffer.free().map_err(|e| failure("free", e))?;
                        Ok(detail)
                    });
                report.check(&check, result);
            }
        }
    }

    // Sizes that are not multiples of anything, and one large enough to be split by drivers.
    let result = [1usize, 4099, 3 << 20].iter().try_for_each(|&size| {
        round_trip(plugin, device, &pattern(size, size as u8))
            .map_err(|e| format!("{size} bytes: {e}"))
    });
    report.check(
        &format!("device {device}: copy host to device to host"),
        result.map(|_| "1 B, 4099 B and 3 MiB read back as written".into()),
    );

    report.check(
        &format!("device {device}: copy device to device"),
        device_to_device(plugin, device, device),
    );
    if num_devices > 1 {
        let other = (device + 1) % num_devices;
        report.check(
            &format!("device {device}: copy to device {other}"),
            device_to_device(plugin, device, other),
        );
    }

    let check = format!("device {device}: pin and unpin host memory");
    match pin_and_copy(plugin, device) {
        Err((true, detail)) => report.skip(&check, detail),
        Err((false, detail)) => report.fail(&check, detail),
        Ok(detail) => report.pass(&check, detail),
    }
}

fn use_allocation(
    plugin: &PluginLibrary,
    device: i32,
    buffer: &DeviceBuffer,
    host_accessible: bool,
) -> Outcome<String> {
    let data = pattern(1 << 20, 7);
    write_and_read_back(plugin, device, buffer.address, &data)?;
    if !host_accessible {
        return Ok(format!("1 MiB at {:#x}, copied in and out", buffer.address));
    }
    // SAFETY: this kind is host-accessible by the ABI's definition and the buffer holds 1 MiB;
    // the plugin has finished with it (synchronous copies above).
    let direct = unsafe { std::slice::from_raw_parts(buffer.address as *const u8, data.len()) };
    same_content("read directly by the host", direct, &data)?;
    Ok(format!(
        "1 MiB at {:#x}, copied in and out, readable by the host",
        buffer.address
    ))
}

fn device_to_device(plugin: &PluginLibrary, src_device: i32, dst_device: i32) -> Outcome<String> {
    // The other device may not have had its turn yet: initialise it first, as the core does
    // before a device's first use.
    plugin
        .init_device(dst_device)
        .map_err(|e| failure("init destination device", e))?;
    let data = pattern(1 << 20, 42);
    let size = data.len() as u64;
    let src = DeviceBuffer::new(plugin, src_device, size, AllocKind::DEVICE)
        .map_err(|e| failure("alloc source", e))?;
    let dst = DeviceBuffer::new(plugin, dst_device, size, AllocKind::DEVICE)
        .map_err(|e| failure("alloc destination", e))?;
    // SAFETY: a synchronous copy.
    unsafe { send(plugin, src_device, src.address, &data, QueueHandle::SYNC) }?;
    plugin
        .copy_device_to_device(
            src_device,
            src.address,
            dst_device,
            dst.address,
            size,
            QueueHandle::SYNC,
        )
        .map_err(|e| failure("copy device to device", e))?;
    let mut back = vec![0u8; data.len()];
    // SAFETY: a synchronous copy.
    unsafe {
        receive(
            plugin,
            dst_device,
            &mut back,
            dst.address,
            QueueHandle::SYNC,
        )
    }?;
    same_content("destination", &back, &data)?;
    Ok("1 MiB arrived intact".into())
}

/// `Err((true, _))` when the plugin says pinning is unsupported.
fn pin_and_copy(plugin: &PluginLibrary, device: i32) -> Result<String, (bool, String)> {
    let data = pattern(1 << 20, 3);
    let pinned = plugin
        .pin_memory(device, data.as_ptr() as usize, data.len() as u64)
        .map_err(|e| (e.code == ErrorCode::UNSUPPORTED, failure("pin", e)))?;
    if pinned == 0 {
        return Err((
            false,
            "pin returned a null device-accessible address".into(),
        ));
    }
    let copied = round_trip(plugin, device, &data);
    let unpinned = plugin.unpin_memory(device, data.as_ptr() as usize);
    copied.map_err(|e| (false, format!("copy from pinned memory: {e}")))?;
    unpinned.map_err(|e| (false, failure("unpin", e)))?;
    Ok(format!(
        "1 MiB pinned (device address {pinned:#x}), copied, unpinned"
    ))
}
