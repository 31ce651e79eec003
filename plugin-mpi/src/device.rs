//! One remote device: a device of a device process, reached with requests.
//!
//! A device process executes requests in arrival order, each to completion. So queue work here
//! is sent without waiting (the data of copies with non-blocking MPI), and the queue keeps what
//! it must still wait for: each request's reply and the data receives of copies from the
//! device. Synchronising a queue waits for those, in order. An event is the work its queue had
//! when it was recorded, waited for by whoever needs it first.

use crate::link::{mpi_error, Link};
use mpi_wire::mpi::Request;
use mpi_wire::protocol::{Op, Reader, Writer, CAN_FILL};
use plugin_api::*;
use smallvec::SmallVec;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

type Result<T> = std::result::Result<T, PluginError>;

/// A request whose reply has not been read yet.
struct InFlight {
    rank: i32,
    tag: i32,
    /// Sends of the program's data (copies to the device): their buffers are the program's,
    /// valid until the queue is synchronised.
    sends: Vec<Request>,
    /// Receives into the program's memory (copies from the device), posted before the request.
    receives: Vec<Request>,
}

impl InFlight {
    /// A request whose only completion is its reply.
    fn reply(rank: i32, tag: i32) -> Self {
        InFlight {
            rank,
            tag,
            sends: Vec::new(),
            receives: Vec::new(),
        }
    }
}

/// A queue's work in flight, in submission order: most often one request (a construct's
/// launch), kept inline so that a construct allocates nothing here.
type Work = SmallVec<[Pending; 2]>;

/// Work recorded by an event: completed once, by its first waiter.
#[derive(Default)]
struct Batch {
    work: Mutex<Work>,
    outcome: OnceLock<Result<()>>,
}

enum Pending {
    Request(InFlight),
    Batch(Arc<Batch>),
}

impl Batch {
    fn complete(&self, link: &Link) -> Result<()> {
        let mut work = self.work.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(done) = self.outcome.get() {
            return done.clone();
        }
        let outcome = complete_all(link, std::mem::take(&mut *work));
        let _ = self.outcome.set(outcome.clone());
        outcome
    }
}

/// Waits for every piece of work, in order; the first failure is the result (later work is
/// still waited for, so that no reply is left unread).
fn complete_all(link: &Link, work: Work) -> Result<()> {
    let mut first = Ok(());
    for piece in work {
        let outcome = match piece {
            Pending::Batch(batch) => batch.complete(link),
            Pending::Request(r) => complete(link, r),
        };
        if first.is_ok() {
            first = outcome;
        }
    }
    first
}

fn complete(link: &Link, r: InFlight) -> Result<()> {
    if r.sends.is_empty() && r.receives.is_empty() {
        return link.outcome(r.rank, r.tag);
    }
    // The reply first: it ends the wait also when the device process is gone, and the device
    // process replies to a copy to it once it has the data, so the sends have completed then.
    match link.outcome(r.rank, r.tag) {
        Ok(()) => link
            .wait(r.rank, r.sends)
            .and(link.wait(r.rank, r.receives)),
        Err(e) => {
            // No data follows a failed reply.
            for receive in r.receives {
                link.mpi.cancel(receive);
            }
            // Data the device process never took stays in MPI's hands (its buffer is the
            // program's, which outlives MPI's use of it here: the construct failed).
            if !link.is_dead(r.rank) {
                let _ = link.wait(r.rank, r.sends);
            }
            Err(e)
        }
    }
}

/// One queue of the program's: a queue of the device process (several of ours may share one,
/// as the host plugin gives the same queue to everyone) and the work in flight on it. Slots are
/// reused, not given back: the runtime takes and releases a queue per construct, and each
/// would otherwise cost a round trip.
struct QueueSlot {
    remote: QueueHandle,
    pending: Work,
    in_use: bool,
}

pub struct MpiDevice {
    pub link: Arc<Link>,
    pub rank: i32,
    /// The device's number in its device process.
    pub remote: u32,
    /// Its plugin there and the plugin's number for it, for messages.
    pub label: String,
    /// What its device process announced it can do (`mpi_wire::protocol::CAPABILITIES`).
    capabilities: u64,
    /// The program's queues of this device: `QueueHandle(i + 1)` is slot `i`.
    queues: Mutex<Vec<QueueSlot>>,
    events: Mutex<HashMap<u64, Arc<Batch>>>,
    next_event: AtomicU64,
}

impl MpiDevice {
    pub fn new(link: Arc<Link>, rank: i32, remote: u32, label: String, capabilities: u64) -> Self {
        MpiDevice {
            link,
            rank,
            remote,
            label,
            capabilities,
            queues: Mutex::default(),
            events: Mutex::default(),
            next_event: AtomicU64::new(1),
        }
    }

    /// A request and its reply's result.
    pub fn call(&self, op: Op, fill: impl FnOnce(&mut Writer)) -> Result<Vec<u8>> {
        let tag = self.link.tag();
        let mut request = Writer::request(op, tag, self.remote);
        fill(&mut request);
        self.link.call(self.rank, tag, &request)
    }

    fn slots(&self) -> std::sync::MutexGuard<'_, Vec<QueueSlot>> {
        self.queues.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Refuses a queue handle that is not `QueueHandle::SYNC` nor one of ours in use.
    fn check_queue(&self, queue: QueueHandle) -> Result<()> {
        self.remote_queue(queue).map(drop)
    }

    /// The device process's queue behind one of ours.
    fn remote_queue(&self, queue: QueueHandle) -> Result<QueueHandle> {
        if queue == QueueHandle::SYNC {
            return Ok(QueueHandle::SYNC);
        }
        self.slots()
            .get(queue.0.wrapping_sub(1) as usize)
            .filter(|s| s.in_use)
            .map(|s| s.remote)
            .ok_or_else(|| PluginError::invalid_argument(format!("unknown queue {}", queue.0)))
    }

    /// Queue work: waited for now on the synchronous queue, else when the queue is.
    fn submit(&self, queue: QueueHandle, work: InFlight) -> Result<()> {
        if queue == QueueHandle::SYNC {
            return complete(&self.link, work);
        }
        match self
            .slots()
            .get_mut(queue.0.wrapping_sub(1) as usize)
            .filter(|s| s.in_use)
        {
            Some(slot) => slot.pending.push(Pending::Request(work)),
            None => {
                return Err(PluginError::invalid_argument(format!(
                    "unknown queue {}",
                    queue.0
                )))
            }
        }
        Ok(())
    }

    fn take_queue(&self, queue: QueueHandle) -> Work {
        if queue == QueueHandle::SYNC {
            return Work::new();
        }
        self.slots()
            .get_mut(queue.0.wrapping_sub(1) as usize)
            .map(|slot| std::mem::take(&mut slot.pending))
            .unwrap_or_default()
    }

    fn event(&self, event: EventHandle) -> Result<Arc<Batch>> {
        self.events
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&event.0)
            .cloned()
            .ok_or_else(|| PluginError::invalid_argument(format!("unknown event {}", event.0)))
    }

    fn read_u64(bytes: &[u8]) -> Result<u64> {
        let mut r = Reader::new(bytes);
        r.reply()?;
        r.u64()
    }

    /// Both halves of a copy to a device of another device process: the destination's process
    /// receives from the source's, directly.
    pub fn copy_to_other_process(
        &self,
        src: usize,
        target: &MpiDevice,
        dst: usize,
        size: u64,
        queue: QueueHandle,
    ) -> Result<()> {
        // Neither half is sent when either process is known dead: the other would wait for it.
        self.link.check_alive(self.rank)?;
        self.link.check_alive(target.rank)?;
        let remote_queue = self.remote_queue(queue)?;
        let (data_tag, to_tag, from_tag) = (self.link.tag(), self.link.tag(), self.link.tag());
        let mut receive = Writer::request(Op::ReceiveFromPeer, to_tag, target.remote);
        receive
            .u64(dst as u64)
            .u64(size)
            .i32(self.rank)
            .i32(data_tag);
        self.link.send(target.rank, &receive)?;
        let mut send = Writer::request(Op::SendToPeer, from_tag, self.remote);
        send.u64(remote_queue.0)
            .u64(src as u64)
            .u64(size)
            .i32(target.rank)
            .i32(data_tag);
        self.link.send(self.rank, &send)?;
        // The copy is done when the destination has written the bytes.
        self.submit(queue, InFlight::reply(self.rank, from_tag))?;
        self.submit(queue, InFlight::reply(target.rank, to_tag))
    }
}

/// The fill request for a device of device process `rank`, or `UNSUPPORTED` where that process
/// did not announce fills (older than them: it could not read the request, and the runtime then
/// copies the pattern instead).
#[allow(clippy::too_many_arguments)]
fn fill_request(
    capabilities: u64,
    rank: i32,
    tag: i32,
    remote: u32,
    remote_queue: QueueHandle,
    dst: usize,
    pattern: &[u8],
    size: u64,
) -> Result<Writer> {
    if capabilities & CAN_FILL == 0 {
        return Err(PluginError::unsupported(format!(
            "the MPI device process (rank {rank}) cannot fill device memory (it is older than \
             this plugin)"
        )));
    }
    Ok(Writer::fill(
        tag,
        remote,
        remote_queue.0,
        dst as u64,
        size,
        pattern,
    ))
}

impl Device for MpiDevice {
    fn load_image(&self, image: ImageRef<'_>) -> Result<ImageHandle> {
        let id = self.link.image_id(self.rank, &image.bytes)?;
        let reply = self.call(Op::LoadImage, |w| {
            w.str(&image.triple).str(&image.arch).u64(id);
        })?;
        Ok(ImageHandle(Self::read_u64(&reply)?))
    }

    /// After the device processes finished (the runtime unloads at exit, possibly after MPI
    /// was finalised), or with a dead one, there is nothing left to unload.
    fn unload_image(&self, image: ImageHandle) -> Result<()> {
        if self.link.is_closed() || self.link.is_dead(self.rank) {
            return Ok(());
        }
        self.call(Op::UnloadImage, |w| {
            w.u64(image.0);
        })
        .map(drop)
    }

    fn get_kernel(&self, image: ImageHandle, name: &str) -> Result<KernelHandle> {
        let reply = self.call(Op::GetKernel, |w| {
            w.u64(image.0).str(name);
        })?;
        Ok(KernelHandle(Self::read_u64(&reply)?))
    }

    fn get_global(&self, image: ImageHandle, name: &str, size: u64) -> Result<GlobalInfo> {
        let reply = self.call(Op::GetGlobal, |w| {
            w.u64(image.0).str(name).u64(size);
        })?;
        let mut r = Reader::new(&reply);
        r.reply()?;
        Ok(GlobalInfo {
            address: r.usize()?,
            size: r.u64()?,
        })
    }

    fn alloc(&self, size: u64, _host_ptr: usize, kind: AllocKind) -> Result<usize> {
        if kind == AllocKind::HOST || kind == AllocKind::SHARED {
            return Err(PluginError::unsupported(format!(
                "{} memory cannot be allocated on a remote device: its memory is another \
                 process's, which this program cannot address",
                kind.name()
            )));
        }
        let reply = self.call(Op::Alloc, |w| {
            w.u64(size).u32(kind.0);
        })?;
        Ok(Self::read_u64(&reply)? as usize)
    }

    /// As `unload_image`: memory of a finished device process is gone with it.
    fn free(&self, ptr: usize, kind: AllocKind) -> Result<()> {
        if self.link.is_closed() {
            return Ok(());
        }
        self.call(Op::Free, |w| {
            w.u64(ptr as u64).u32(kind.0);
        })
        .map(drop)
    }

    fn create_queue(&self) -> Result<QueueHandle> {
        {
            let mut slots = self.slots();
            if let Some(i) = slots.iter().position(|s| !s.in_use) {
                slots[i].in_use = true;
                return Ok(QueueHandle(i as u64 + 1));
            }
        }
        let reply = self.call(Op::CreateQueue, |_| {})?;
        let remote = QueueHandle(Self::read_u64(&reply)?);
        let mut slots = self.slots();
        slots.push(QueueSlot {
            remote,
            pending: Work::new(),
            in_use: true,
        });
        Ok(QueueHandle(slots.len() as u64))
    }

    /// Kept for reuse; the device process releases its queues when it ends.
    fn release_queue(&self, queue: QueueHandle) -> Result<()> {
        let left = match self
            .slots()
            .get_mut(queue.0.wrapping_sub(1) as usize)
            .filter(|s| s.in_use)
        {
            Some(slot) => {
                slot.in_use = false;
                if slot.pending.is_empty() {
                    return Ok(());
                }
                std::mem::take(&mut slot.pending)
            }
            None => {
                return Err(PluginError::invalid_argument(format!(
                    "unknown queue {}",
                    queue.0
                )))
            }
        };
        // The core synchronised it; anything left is waited for so no reply stays unread.
        let _ = complete_all(&self.link, left);
        Ok(())
    }

    unsafe fn copy_to_device(
        &self,
        dst: usize,
        src: usize,
        size: u64,
        queue: QueueHandle,
    ) -> Result<()> {
        let (tag, data_tag) = (self.link.tag(), self.link.tag());
        let mut request = Writer::request(Op::CopyToDevice, tag, self.remote);
        request
            .u64(self.remote_queue(queue)?.0)
            .u64(dst as u64)
            .u64(size)
            .i32(data_tag);
        self.link.send(self.rank, &request)?;
        // SAFETY: the caller keeps the host buffer valid and unchanged until the queue is
        // synchronised, which waits for these sends.
        let sends = unsafe {
            self.link.mpi.isend(
                self.link.comm,
                src as *const u8,
                size as usize,
                self.rank,
                data_tag,
            )
        }
        .map_err(mpi_error)?;
        self.submit(
            queue,
            InFlight {
                rank: self.rank,
                tag,
                sends,
                receives: Vec::new(),
            },
        )
    }

    unsafe fn copy_from_device(
        &self,
        dst: usize,
        src: usize,
        size: u64,
        queue: QueueHandle,
    ) -> Result<()> {
        let (tag, data_tag) = (self.link.tag(), self.link.tag());
        // SAFETY: the caller keeps the host buffer valid, and does not read it, until the queue
        // is synchronised, which waits for these receives.
        let receives = unsafe {
            self.link.mpi.irecv(
                self.link.comm,
                dst as *mut u8,
                size as usize,
                self.rank,
                data_tag,
            )
        }
        .map_err(mpi_error)?;
        let mut request = Writer::request(Op::CopyFromDevice, tag, self.remote);
        request
            .u64(self.remote_queue(queue)?.0)
            .u64(src as u64)
            .u64(size)
            .i32(data_tag);
        if let Err(e) = self.link.send(self.rank, &request) {
            for r in receives {
                self.link.mpi.cancel(r);
            }
            return Err(e);
        }
        self.submit(
            queue,
            InFlight {
                rank: self.rank,
                tag,
                sends: Vec::new(),
                receives,
            },
        )
    }

    fn copy_to_peer(
        &self,
        src: usize,
        target: &Self,
        dst: usize,
        size: u64,
        queue: QueueHandle,
    ) -> Result<()> {
        if target.rank != self.rank {
            return self.copy_to_other_process(src, target, dst, size, queue);
        }
        let tag = self.link.tag();
        let mut request = Writer::request(Op::CopyWithin, tag, self.remote);
        request
            .u32(target.remote)
            .u64(self.remote_queue(queue)?.0)
            .u64(src as u64)
            .u64(dst as u64)
            .u64(size);
        self.link.send(self.rank, &request)?;
        self.submit(queue, InFlight::reply(self.rank, tag))
    }

    /// The request is encoded in a buffer of the thread's, and the queue table is looked at
    /// once: an empty region is this and one reply.
    fn launch_kernel(
        &self,
        kernel: KernelHandle,
        args: &[usize],
        config: &LaunchConfig,
        queue: QueueHandle,
    ) -> Result<()> {
        thread_local! {
            static REQUEST: std::cell::RefCell<Writer> = std::cell::RefCell::new(Writer::default());
        }
        let tag = self.link.tag();
        let encode = |request: &mut Writer, remote: QueueHandle| {
            request.launch(tag, self.remote, kernel.0, remote.0, config, args);
        };
        REQUEST.with(|request| {
            let mut request = request.borrow_mut();
            if queue == QueueHandle::SYNC {
                encode(&mut request, QueueHandle::SYNC);
                self.link.send(self.rank, &request)?;
                return complete(&self.link, InFlight::reply(self.rank, tag));
            }
            let index = queue.0.wrapping_sub(1) as usize;
            {
                let mut slots = self.slots();
                let slot = slots.get_mut(index).filter(|s| s.in_use).ok_or_else(|| {
                    PluginError::invalid_argument(format!("unknown queue {}", queue.0))
                })?;
                encode(&mut request, slot.remote);
                slot.pending
                    .push(Pending::Request(InFlight::reply(self.rank, tag)));
            }
            if let Err(e) = self.link.send(self.rank, &request) {
                // No reply will come for a request that was not sent.
                if let Some(slot) = self.slots().get_mut(index) {
                    slot.pending.pop();
                }
                return Err(e);
            }
            Ok(())
        })
    }

    fn synchronize(&self, queue: QueueHandle) -> Result<()> {
        self.check_queue(queue)?;
        complete_all(&self.link, self.take_queue(queue))
    }

    fn query_queue(&self, queue: QueueHandle) -> Result<bool> {
        if queue == QueueHandle::SYNC {
            return Ok(true);
        }
        let mut slots = self.slots();
        let Some(slot) = slots
            .get_mut(queue.0.wrapping_sub(1) as usize)
            .filter(|s| s.in_use)
        else {
            return Err(PluginError::invalid_argument(format!(
                "unknown queue {}",
                queue.0
            )));
        };
        for piece in slot.pending.iter_mut() {
            let done = match piece {
                Pending::Batch(batch) => batch.outcome.get().is_some(),
                Pending::Request(r) => {
                    let mut moved = true;
                    for request in r.sends.iter_mut().chain(r.receives.iter_mut()) {
                        moved &= self.link.mpi.test(request).map_err(mpi_error)?;
                    }
                    moved && self.link.has_reply(r.rank, r.tag)?
                }
            };
            if !done {
                return Ok(false);
            }
        }
        // Everything has arrived: read the replies (no waiting) and report their outcome.
        let work = std::mem::take(&mut slot.pending);
        drop(slots);
        complete_all(&self.link, work).map(|()| true)
    }

    fn create_event(&self) -> Result<EventHandle> {
        let id = self.next_event.fetch_add(1, Ordering::Relaxed);
        self.events
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id, Arc::new(Batch::default()));
        Ok(EventHandle(id))
    }

    /// The queue's work so far becomes the event's, and the queue waits for it through the
    /// event (so it is waited for once).
    fn record_event(&self, event: EventHandle, queue: QueueHandle) -> Result<()> {
        // Both handles are checked before the queue's work moves to the event.
        self.event(event)?;
        self.check_queue(queue)?;
        let batch = Arc::new(Batch::default());
        *batch.work.lock().unwrap_or_else(|e| e.into_inner()) = self.take_queue(queue);
        if queue != QueueHandle::SYNC {
            if let Some(slot) = self.slots().get_mut(queue.0.wrapping_sub(1) as usize) {
                slot.pending.push(Pending::Batch(Arc::clone(&batch)));
            }
        }
        let mut events = self.events.lock().unwrap_or_else(|e| e.into_inner());
        match events.get_mut(&event.0) {
            Some(slot) => *slot = batch,
            None => {
                return Err(PluginError::invalid_argument(format!(
                    "unknown event {}",
                    event.0
                )))
            }
        }
        Ok(())
    }

    /// A device process runs requests in arrival order, so later work on any queue already
    /// follows the event's requests there; but the event's copies between processes, and its
    /// data in flight, finish on their own: waited for here.
    fn wait_event(&self, event: EventHandle, queue: QueueHandle) -> Result<()> {
        self.check_queue(queue)?;
        self.event(event)?.complete(&self.link)
    }

    fn sync_event(&self, event: EventHandle) -> Result<()> {
        self.event(event)?.complete(&self.link)
    }

    fn destroy_event(&self, event: EventHandle) -> Result<()> {
        let batch = self
            .events
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&event.0);
        match batch {
            Some(_) => Ok(()),
            None => Err(PluginError::invalid_argument(format!(
                "unknown event {}",
                event.0
            ))),
        }
    }

    /// Nothing to lock: copies are MPI messages from and to the program's memory.
    fn pin_memory(&self, host_ptr: usize, _size: u64) -> Result<usize> {
        Ok(host_ptr)
    }

    fn unpin_memory(&self, _host_ptr: usize) -> Result<()> {
        Ok(())
    }

    fn memory_info(&self) -> Result<MemoryInfo> {
        let reply = self.call(Op::MemoryInfo, |_| {})?;
        let mut r = Reader::new(&reply);
        r.reply()?;
        Ok(MemoryInfo {
            free: r.u64()?,
            total: r.u64()?,
        })
    }

    /// One request carrying the pattern, in the queue's order as a copy is; the device process
    /// writes the bytes, so none cross the wire.
    fn fill_memory(&self, dst: usize, pattern: &[u8], size: u64, queue: QueueHandle) -> Result<()> {
        let tag = self.link.tag();
        let request = fill_request(
            self.capabilities,
            self.rank,
            tag,
            self.remote,
            self.remote_queue(queue)?,
            dst,
            pattern,
            size,
        )?;
        self.link.send(self.rank, &request)?;
        self.submit(queue, InFlight::reply(self.rank, tag))
    }

    fn set_indirect_calls(&self, _image: ImageHandle, _calls: &[IndirectCall]) -> Result<()> {
        Err(PluginError::unsupported(
            "`declare target indirect` functions cannot be called on a remote device: the \
             program's function pointers are addresses in another process",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fill_is_one_request_only_to_a_device_process_that_can_fill() {
        let Err(older) = fill_request(0, 3, 40, 1, QueueHandle(2), 0x1000, &[7], 1 << 20) else {
            panic!("a fill request for a device process that cannot fill");
        };
        assert_eq!(older.code, ErrorCode::UNSUPPORTED, "{}", older.message);
        assert!(older.message.contains("rank 3"), "{}", older.message);

        let request =
            fill_request(CAN_FILL, 3, 40, 1, QueueHandle(2), 0x1001, &[7], 1 << 20).unwrap();
        // The size filled travels as a number: a mebibyte's fill is a few dozen bytes.
        assert!(request.0.len() < 64, "{} bytes", request.0.len());
        let mut r = Reader::new(&request.0);
        assert_eq!(r.request().unwrap(), (Op::Fill, 40, 1));
        let fill = r.fill().unwrap();
        assert_eq!(
            (fill.queue, fill.dst, fill.size, fill.pattern),
            (2, 0x1001, 1 << 20, &[7][..])
        );
    }
}
