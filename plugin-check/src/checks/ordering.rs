//! Queues and events: work on one queue runs in submission order; an event recorded on one
//! queue orders work on another. Buffers are large so that a plugin which ignores the order
//! is likely to be caught reading before the write has landed.

use super::{failure, pattern, receive, same_content, send, DeviceBuffer, Outcome};
use crate::report::Report;
use omptarget_core::plugins::PluginLibrary;
use plugin_api::{AllocKind, QueueHandle};

const SIZE: usize = 16 << 20;

pub fn run(report: &mut Report, plugin: &PluginLibrary, device: i32) {
    report.check(
        &format!("device {device}: queue runs in submission order"),
        one_queue(plugin, device),
    );
    report.check(
        &format!("device {device}: event orders two queues"),
        two_queues(plugin, device),
    );
}

/// A queue that is released whatever happens to the check.
struct Queue<'a> {
    plugin: &'a PluginLibrary,
    device: i32,
    handle: QueueHandle,
}

impl<'a> Queue<'a> {
    fn new(plugin: &'a PluginLibrary, device: i32) -> Outcome<Self> {
        let handle = plugin
            .create_queue(device)
            .map_err(|e| failure("create queue", e))?;
        if handle == QueueHandle::SYNC {
            return Err("create queue returned the synchronous queue's handle (0)".into());
        }
        Ok(Queue {
            plugin,
            device,
            handle,
        })
    }

    fn synchronize(&self) -> Outcome<()> {
        self.plugin
            .synchronize(self.device, self.handle)
            .map_err(|e| failure("synchronize", e))
    }
}

impl Drop for Queue<'_> {
    fn drop(&mut self) {
        let _ = self.plugin.synchronize(self.device, self.handle);
        let _ = self.plugin.release_queue(self.device, self.handle);
    }
}

fn one_queue(plugin: &PluginLibrary, device: i32) -> Outcome<String> {
    let first = pattern(SIZE, 1);
    let second = pattern(SIZE, 2);
    // Declared before the queues: dropped after them, so never freed while a copy is pending.
    let mut back = vec![0u8; SIZE];
    let buffer = DeviceBuffer::new(plugin, device, SIZE as u64, AllocKind::DEVICE)
        .map_err(|e| failure("alloc", e))?;
    let queue = Queue::new(plugin, device)?;
    for data in [&first, &second] {
        // SAFETY: `first` and `second` are declared before the queue and outlive it.
        unsafe { send(plugin, device, buffer.address, data, queue.handle) }?;
    }
    // SAFETY: `back` outlives the queue, and is read after its synchronisation.
    unsafe { receive(plugin, device, &mut back, buffer.address, queue.handle) }?;
    queue.synchronize()?;
    same_content("after two writes and a read on one queue", &back, &second)?;
    match plugin.query_queue(device, queue.handle) {
        Ok(true) => {}
        Ok(false) => return Err("query_queue says work is pending after synchronize".into()),
        Err(e) => return Err(failure("query queue", e)),
    }
    drop(queue);
    buffer.free().map_err(|e| failure("free", e))?;
    Ok("write, write, read back: the second write was read; queue idle after synchronize".into())
}

fn two_queues(plugin: &PluginLibrary, device: i32) -> Outcome<String> {
    let data = pattern(SIZE, 9);
    let mut back = vec![0u8; SIZE];
    let buffer = DeviceBuffer::new(plugin, device, SIZE as u64, AllocKind::DEVICE)
        .map_err(|e| failure("alloc", e))?;
    let writer = Queue::new(plugin, device)?;
    let reader = Queue::new(plugin, device)?;
    let event = plugin
        .create_event(device)
        .map_err(|e| failure("create event", e))?;
    let result = (|| {
        // SAFETY: `data` is declared before the queues and outlives them.
        unsafe { send(plugin, device, buffer.address, &data, writer.handle) }?;
        plugin
            .record_event(device, event, writer.handle)
            .map_err(|e| failure("record event", e))?;
        plugin
            .wait_event(device, event, reader.handle)
            .map_err(|e| failure("wait event", e))?;
        // SAFETY: `back` outlives the queues, and is read after the reader's synchronisation.
        unsafe { receive(plugin, device, &mut back, buffer.address, reader.handle) }?;
        reader.synchronize()?;
        same_content("read on the second queue after the event", &back, &data)?;
        plugin
            .sync_event(device, event)
            .map_err(|e| failure("sync event", e))?;
        writer.synchronize()
    })();
    let destroyed = plugin.destroy_event(device, event);
    result?;
    destroyed.map_err(|e| failure("destroy event", e))?;
    drop((writer, reader));
    buffer.free().map_err(|e| failure("free", e))?;
    Ok("16 MiB written on one queue, read on another after waiting for its event".into())
}
