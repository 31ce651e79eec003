//! Allocation while a kernel runs. The non-blocking device allocation
//! (`AllocKind::DEVICE_NON_BLOCKING`, what device-side malloc pools grow with) must complete
//! while a kernel runs; a plain device allocation may wait for it (the CUDA driver's
//! `cuMemAlloc` and `cuMemFree` do). `check_program.c`'s waiting kernel runs until the checker
//! releases it through host memory, so the check never hangs on a plugin that gets it wrong.

use super::{failure, DeviceBuffer, Outcome};
use crate::program_image::{DeviceImage, WAIT_FUNCTION};
use crate::report::Report;
use omptarget_core::plugins::PluginLibrary;
use plugin_api::{AllocKind, ImageHandle, KernelHandle, LaunchConfig};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long a non-blocking allocation may take before it counts as waiting.
const PATIENCE: Duration = Duration::from_secs(5);
/// How long a launch may take before it counts as running the kernel itself (a plugin whose
/// queues complete work on submission, like the host plugin's).
const LAUNCH_PATIENCE: Duration = Duration::from_secs(1);
/// How long the plain allocation is watched while the kernel runs.
const PLAIN_WATCH: Duration = Duration::from_millis(300);
/// Bytes allocated each time.
const SIZE: u64 = 1 << 20;

enum Verdict {
    Pass(String),
    Skip(String),
}

pub fn run(
    report: &mut Report,
    plugin: &PluginLibrary,
    device: i32,
    handle: ImageHandle,
    image: &DeviceImage,
) {
    let check = format!("device {device}: allocation while a kernel runs");
    let Some(symbol) = image.kernel_name(WAIT_FUNCTION) else {
        return report.skip(
            &check,
            format!("the image has no {WAIT_FUNCTION} kernel (build it from this version's check_program.c)"),
        );
    };
    let kernel = match plugin.get_kernel(device, handle, &symbol) {
        Ok(k) => k,
        Err(e) => return report.fail(&check, failure(&symbol, e)),
    };
    match allocate_while_running(plugin, device, kernel) {
        Ok(Verdict::Pass(detail)) => report.pass(&check, detail),
        Ok(Verdict::Skip(detail)) => report.skip(&check, detail),
        Err(detail) => report.fail(&check, detail),
    }
}

/// Allocates and frees `kind` memory on a thread of its own; the result comes back on the
/// channel with the time it took.
fn allocate_and_free<'scope>(
    scope: &'scope std::thread::Scope<'scope, '_>,
    plugin: &'scope PluginLibrary,
    device: i32,
    kind: AllocKind,
) -> mpsc::Receiver<(Result<(), String>, Duration)> {
    let (tx, rx) = mpsc::channel();
    scope.spawn(move || {
        let start = Instant::now();
        let result = plugin
            .alloc(device, SIZE, 0, kind)
            .and_then(|p| plugin.free(device, p, kind))
            .map_err(|e| failure(&format!("{} allocation", kind.name()), e));
        let _ = tx.send((result, start.elapsed()));
    });
    rx
}

fn allocate_while_running(
    plugin: &PluginLibrary,
    device: i32,
    kernel: KernelHandle,
) -> Outcome<Verdict> {
    let flag = DeviceBuffer::new(plugin, device, 4, AllocKind::HOST)
        .map_err(|e| failure("host allocation", e))?;
    // SAFETY: a HOST allocation is host memory of at least 4 bytes, aligned for an i32, which
    // the device reads atomically; it stays allocated until `flag` is dropped below.
    let release = unsafe { &*(flag.address as *const AtomicI32) };
    release.store(0, Ordering::SeqCst);
    let queue = plugin
        .create_queue(device)
        .map_err(|e| failure("create queue", e))?;
    let config = LaunchConfig {
        kernel_args_version: 3,
        ..LaunchConfig::default()
    };
    let address = flag.address;
    let verdict = std::thread::scope(|s| {
        let (launched_tx, launched) = mpsc::channel();
        s.spawn(move || {
            let result = plugin.launch_kernel(device, kernel, &[address], &config, queue);
            let _ = launched_tx.send(result);
        });
        // Whatever happens below, the kernel is released before the scope joins its threads.
        let verdict = (|| {
            match launched.recv_timeout(LAUNCH_PATIENCE) {
                Err(_) => {
                    return Ok(Verdict::Skip(
                        "the launch runs the kernel before it returns: allocations cannot \
                         overlap a kernel here"
                            .into(),
                    ))
                }
                Ok(Err(e)) => return Err(failure("launch", e)),
                Ok(Ok(())) => {}
            }
            let running = || matches!(plugin.query_queue(device, queue), Ok(false));
            if !running() {
                return Ok(Verdict::Skip(
                    "the kernel completed on submission: allocations cannot overlap a kernel here"
                        .into(),
                ));
            }
            let non_blocking = allocate_and_free(s, plugin, device, AllocKind::DEVICE_NON_BLOCKING);
            let (result, took) = non_blocking.recv_timeout(PATIENCE).map_err(|_| {
                format!(
                    "a non-blocking allocation and its free did not complete in {PATIENCE:?} \
                     while a kernel ran: they wait for running kernels"
                )
            })?;
            result?;
            if !running() {
                return Err("the waiting kernel ended before it was released".into());
            }
            let plain = allocate_and_free(s, plugin, device, AllocKind::DEVICE);
            let plain_text = match plain.recv_timeout(PLAIN_WATCH) {
                Err(_) if running() => format!(
                    "a plain device allocation waited for the kernel (not done after {PLAIN_WATCH:?})"
                ),
                Err(_) => format!("a plain device allocation took over {PLAIN_WATCH:?}"),
                Ok((Err(e), _)) => return Err(e),
                Ok((Ok(()), plain_took)) => format!(
                    "a plain device allocation did not wait either ({plain_took:?})"
                ),
            };
            Ok(Verdict::Pass(format!(
                "a non-blocking allocation and its free completed in {took:?} while the kernel ran; \
                 {plain_text}"
            )))
        })();
        release.store(1, Ordering::SeqCst);
        verdict
    });
    let synced = plugin.synchronize(device, queue);
    let released = plugin.release_queue(device, queue);
    let verdict = verdict?;
    synced.map_err(|e| failure("synchronize", e))?;
    released.map_err(|e| failure("release queue", e))?;
    flag.free().map_err(|e| failure("free", e))?;
    Ok(verdict)
}
