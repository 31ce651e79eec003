//! Concurrent use: several threads allocating, copying on their own queues and launching at once.

use super::{failure, launch, pattern, same_content, DeviceBuffer, Outcome};
use crate::program_image::DeviceImage;
use crate::report::Report;
use omptarget_core::plugins::PluginLibrary;
use plugin_api::{AllocKind, KernelHandle};

const THREADS: usize = 4;
const ROUNDS: usize = 25;

pub fn run(report: &mut Report, plugin: &PluginLibrary, device: i32, image: Option<&DeviceImage>) {
    // One loaded image shared by all threads, as the runtime does.
    let loaded = image.and_then(|image| {
        let handle = plugin
            .load_image(device, &image.bytes, &image.triple, &image.arch)
            .ok()?;
        Some((
            handle,
            launch::find_kernel(plugin, device, handle, image)
                .ok()
                .map(|k| k.0),
        ))
    });
    let kernel = loaded.and_then(|(_, k)| k);
    let failures: Vec<String> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..THREADS)
            .map(|t| scope.spawn(move || worker(plugin, device, t, kernel)))
            .collect();
        workers
            .into_iter()
            .enumerate()
            .filter_map(|(t, w)| match w.join() {
                Ok(Ok(())) => None,
                Ok(Err(e)) => Some(format!("thread {t}: {e}")),
                Err(_) => Some(format!("thread {t} panicked")),
            })
            .collect()
    });
    if let Some((handle, _)) = loaded {
        let _ = plugin.unload_image(device, handle);
    }
    let work = if kernel.is_some() {
        "alloc, queue copies and a kernel launch"
    } else {
        "alloc and queue copies"
    };
    let result = if failures.is_empty() {
        Ok(format!(
            "{THREADS} threads x {ROUNDS} rounds of {work}, all correct"
        ))
    } else {
        Err(failures.join("; "))
    };
    report.check(&format!("device {device}: concurrent use"), result);
}

fn worker(
    plugin: &PluginLibrary,
    device: i32,
    thread: usize,
    kernel: Option<KernelHandle>,
) -> Outcome<()> {
    for round in 0..ROUNDS {
        let data = pattern(256 << 10, (thread * ROUNDS + round) as u8);
        let mut back = vec![0u8; data.len()];
        let size = data.len() as u64;
        let buffer = DeviceBuffer::new(plugin, device, size, AllocKind::DEVICE)
            .map_err(|e| failure("alloc", e))?;
        let queue = plugin
            .create_queue(device)
            .map_err(|e| failure("create queue", e))?;
        // SAFETY: `data` and `back` outlive the synchronisation below, which every path
        // reaches before `back` is read.
        let copied = unsafe {
            plugin
                .copy_to_device(device, buffer.address, data.as_ptr() as usize, size, queue)
                .and_then(|_| {
                    plugin.copy_from_device(
                        device,
                        back.as_mut_ptr() as usize,
                        buffer.address,
                        size,
                        queue,
                    )
                })
        };
        let synced = plugin.synchronize(device, queue);
        let released = plugin.release_queue(device, queue);
        copied.map_err(|e| failure("copy", e))?;
        synced.map_err(|e| failure("synchronize", e))?;
        released.map_err(|e| failure("release queue", e))?;
        same_content(&format!("round {round}"), &back, &data)?;
        buffer.free().map_err(|e| failure("free", e))?;
        if let Some(kernel) = kernel {
            launch::launch_and_check(plugin, device, kernel, plugin_api::QueueHandle::SYNC)
                .map_err(|e| format!("round {round} launch: {e}"))?;
        }
    }
    Ok(())
}
