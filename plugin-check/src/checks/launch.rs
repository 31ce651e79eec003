//! Images and kernels: compatibility of the supplied images, loading one, finding the kernel and
//! the global of `check_program.c` in it, launching the kernel and checking what it computed.

use super::{failure, receive, send, Outcome};
use crate::program_image::{DeviceImage, GLOBAL_NAME};
use crate::report::Report;
use omptarget_core::plugins::PluginLibrary;
use plugin_api::{AllocKind, ImageHandle, KernelHandle, LaunchConfig, QueueHandle};

/// Elements of the array `check_program.c`'s kernel maps.
const ELEMENTS: usize = 1024;
/// Version of clang 19's kernel argument record: kernels take a launch environment first.
const KERNEL_ARGS_VERSION: u32 = 3;

/// The image the plugin accepts, if any, with its compatibility check recorded.
pub fn choose_image<'a>(
    report: &mut Report,
    plugin: &PluginLibrary,
    images: &'a [DeviceImage],
) -> Option<&'a DeviceImage> {
    let mut refusals = Vec::new();
    for image in images {
        let verdict = plugin.check_image(-1, &image.bytes, &image.triple, &image.arch);
        if verdict.compatible {
            report.pass(
                "image compatibility",
                format!(
                    "accepts {} of {} image(s): {}",
                    1,
                    images.len(),
                    image.describe()
                ),
            );
            return Some(image);
        }
        refusals.push(format!("{}: {}", image.describe(), verdict.reason));
    }
    let check = "image compatibility";
    let detail = format!("no supplied image is accepted ({})", refusals.join("; "));
    if plugin.num_devices() == 0 {
        // A plugin without devices may not be able to judge images (no driver to ask).
        report.skip(check, detail);
    } else {
        report.fail(check, detail);
    }
    None
}

pub fn run(report: &mut Report, plugin: &PluginLibrary, device: i32, image: &DeviceImage) {
    let name = |what: &str| format!("device {device}: {what}");
    let verdict = plugin.check_image(device, &image.bytes, &image.triple, &image.arch);
    if !verdict.compatible {
        report.skip(
            &name("image"),
            format!("this device refuses it: {}", verdict.reason),
        );
        return;
    }
    let handle = match plugin.load_image(device, &image.bytes, &image.triple, &image.arch) {
        Ok(h) => {
            report.pass(&name("load image"), format!("handle {:#x}", h.0));
            h
        }
        Err(e) => return report.fail(&name("load image"), e),
    };
    report.check(&name("find global"), read_global(plugin, device, handle));
    match find_kernel(plugin, device, handle, image) {
        Err(e) => report.fail(&name("find kernel"), e),
        Ok((kernel, symbol)) => {
            report.pass(&name("find kernel"), &symbol);
            report.check(
                &name("launch kernel (synchronous)"),
                launch_and_check(plugin, device, kernel, QueueHandle::SYNC),
            );
            let on_queue = plugin
                .create_queue(device)
                .map_err(|e| failure("create queue", e))
                .and_then(|queue| {
                    let result = launch_and_check(plugin, device, kernel, queue);
                    let released = plugin.release_queue(device, queue);
                    result
                        .and_then(|r| released.map(|_| r).map_err(|e| failure("release queue", e)))
                });
            report.check(&name("launch kernel (on a queue)"), on_queue);
        }
    }
    super::allocation_while_running::run(report, plugin, device, handle, image);
    report.check(
        &name("unload image"),
        plugin
            .unload_image(device, handle)
            .map(|_| "unloaded".into())
            .map_err(|e| e.to_string()),
    );
}

pub fn find_kernel(
    plugin: &PluginLibrary,
    device: i32,
    handle: ImageHandle,
    image: &DeviceImage,
) -> Outcome<(KernelHandle, String)> {
    let symbol = image.check_kernel_name().ok_or_else(|| {
        "the image has no kernel made from check_program.c (build the image from \
         plugin-check/check_program.c)"
            .to_string()
    })?;
    let kernel = plugin
        .get_kernel(device, handle, &symbol)
        .map_err(|e| failure(&symbol, e))?;
    Ok((kernel, symbol))
}

fn read_global(plugin: &PluginLibrary, device: i32, handle: ImageHandle) -> Outcome<String> {
    let global = plugin
        .get_global(device, handle, GLOBAL_NAME, 4)
        .map_err(|e| failure(GLOBAL_NAME, e))?;
    let mut value = [0i32];
    // SAFETY: a synchronous copy.
    unsafe {
        super::receive(
            plugin,
            device,
            &mut value,
            global.address,
            QueueHandle::SYNC,
        )
    }?;
    let [value] = value;
    if value != 42 {
        return Err(format!(
            "{GLOBAL_NAME} reads {value}, its initial value is 42"
        ));
    }
    Ok(format!(
        "{GLOBAL_NAME} at {:#x} ({} bytes) holds its initial value 42",
        global.address, global.size
    ))
}

/// Launches the kernel on `a[i] = i` and checks `a[i] == 2 i + 1`.
pub fn launch_and_check(
    plugin: &PluginLibrary,
    device: i32,
    kernel: KernelHandle,
    queue: QueueHandle,
) -> Outcome<String> {
    let input: Vec<i32> = (0..ELEMENTS as i32).collect();
    let mut output = vec![0i32; ELEMENTS];
    let bytes = (ELEMENTS * 4) as u64;
    let array = super::DeviceBuffer::new(plugin, device, bytes, AllocKind::DEVICE)
        .map_err(|e| failure("alloc", e))?;
    let config = LaunchConfig {
        tripcount: ELEMENTS as u64,
        kernel_args_version: KERNEL_ARGS_VERSION,
        ..LaunchConfig::default()
    };
    let submitted = (|| {
        // SAFETY: `input` outlives the synchronisation below, which every path reaches.
        unsafe { send(plugin, device, array.address, &input, queue) }?;
        plugin
            .launch_kernel(device, kernel, &[array.address], &config, queue)
            .map_err(|e| failure("launch", e))?;
        // SAFETY: `output` is read only after the synchronisation below.
        unsafe { receive(plugin, device, &mut output, array.address, queue) }
    })();
    // Always wait before the buffers go away, even when a submission failed.
    let synced = plugin.synchronize(device, queue);
    submitted?;
    synced.map_err(|e| failure("synchronize", e))?;
    if let Some(i) = (0..ELEMENTS).find(|&i| output[i] != 2 * i as i32 + 1) {
        return Err(format!(
            "a[{i}] = {} after the kernel, expected {}",
            output[i],
            2 * i + 1
        ));
    }
    array.free().map_err(|e| failure("free", e))?;
    Ok(format!("{ELEMENTS} elements computed as expected"))
}
