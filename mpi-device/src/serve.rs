//! Executes the program's requests, one at a time and each to completion, in arrival order
//! (the protocol's rule: the program's queues then only wait for replies).

use crate::devices::Devices;
use crate::fill::{Allocations, FillTarget};
use crate::memory::BlockCache;
use mpi_wire::mpi::{self, Comm, Mpi};
use mpi_wire::protocol::{Op, Reader, Writer, CAPABILITIES, MAX_REPLY, MAX_REQUEST, REQUEST_TAG};
use omptarget_core::plugins::PluginLibrary;
use plugin_api::*;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

type Result<T> = std::result::Result<T, PluginError>;

/// An image's bytes at the alignment of the program's memory they came from: ELF readers
/// (the GPU plugins') refuse a misaligned header.
struct AlignedImage {
    words: Vec<u64>,
    len: usize,
}

impl AlignedImage {
    fn copy(bytes: &[u8]) -> Self {
        let mut words = vec![0u64; bytes.len().div_ceil(8)];
        // SAFETY: `words` holds at least `bytes.len()` bytes; the two do not overlap.
        unsafe {
            std::ptr::copy_nonoverlapping(
                bytes.as_ptr(),
                words.as_mut_ptr() as *mut u8,
                bytes.len(),
            )
        };
        AlignedImage {
            words,
            len: bytes.len(),
        }
    }

    fn bytes(&self) -> &[u8] {
        // SAFETY: the first `len` bytes of `words` were written by `copy`.
        unsafe { std::slice::from_raw_parts(self.words.as_ptr() as *const u8, self.len) }
    }
}

/// A request as received: its length in the receive buffer, or its own bytes.
enum Request {
    Small(usize),
    Large(Vec<u8>),
}

/// `CheckImage` for "any device of the process".
pub const ANY_DEVICE: u32 = u32::MAX;

pub struct Server {
    /// Lives for the process (`main` leaks it), so peer-copy threads may hold it.
    mpi: &'static Mpi,
    comm: Comm,
    program: i32,
    devices: Arc<Devices>,
    /// Copies to or from other device processes, running beside the request loop.
    peer_copies: Vec<JoinHandle<()>>,
    /// By rank: device processes the program found dead ([`Op::PeerGone`]).
    gone: Arc<[AtomicBool]>,
    /// Large freed blocks, kept for the next allocation of their size.
    blocks: BlockCache,
    /// The device memory the program holds, which its fills may write.
    allocations: Allocations,
    /// The reply buffer, reused.
    spare_reply: Writer,
    /// Images the program stored, by its number for them.
    images: std::collections::HashMap<u64, AlignedImage>,
    /// `OMPTARGET_MPI_TRACE` set: one line per request on stderr, with this process's rank.
    trace: Option<i32>,
}

/// Variable that makes device processes print each request they execute.
pub const TRACE_VAR: &str = "OMPTARGET_MPI_TRACE";

/// What a trace line says after the device: the bytes a copy moves (and its peer process), or
/// the bytes a fill writes (none of which crossed the wire).
fn trace_detail(op: Op, mut r: Reader<'_>) -> String {
    if op == Op::Fill {
        return match r.fill() {
            Ok(f) => format!(" filled={} pattern={}", f.size, f.pattern.len()),
            Err(_) => String::new(),
        };
    }
    match copy_extent(op, r) {
        Some((bytes, Some(peer))) => format!(" bytes={bytes} peer={peer}"),
        Some((bytes, None)) => format!(" bytes={bytes}"),
        None => String::new(),
    }
}

/// The bytes a copy request moves, and the peer process of a copy between processes.
fn copy_extent(op: Op, mut r: Reader<'_>) -> Option<(u64, Option<i32>)> {
    match op {
        Op::CopyToDevice | Op::CopyFromDevice => {
            let _ = (r.u64().ok()?, r.u64().ok()?);
            Some((r.u64().ok()?, None))
        }
        Op::SendToPeer => {
            let _ = (r.u64().ok()?, r.u64().ok()?);
            Some((r.u64().ok()?, Some(r.i32().ok()?)))
        }
        Op::ReceiveFromPeer => {
            let _ = r.u64().ok()?;
            Some((r.u64().ok()?, Some(r.i32().ok()?)))
        }
        Op::CopyWithin => {
            let _ = (r.u32().ok()?, r.u64().ok()?, r.u64().ok()?, r.u64().ok()?);
            Some((r.u64().ok()?, None))
        }
        _ => None,
    }
}

fn mpi_error(e: String) -> PluginError {
    PluginError::new(ErrorCode::FAILED, e)
}

/// How a transfer with another device process ended.
enum Transfer {
    Done,
    /// The program said the peer died: the requests, and their buffer, are left to MPI.
    PeerGone,
}

/// Waits for the requests of a transfer with `peer`. Where the launcher keeps a job whose
/// process died, MPI would wait for a dead peer for ever: there it polls, and the program's
/// notice that the peer is gone ([`Op::PeerGone`]) ends the wait.
fn finish_transfer(
    mpi: &Mpi,
    mut requests: Vec<mpi::Request>,
    peer: i32,
    gone: &[AtomicBool],
) -> std::result::Result<Transfer, String> {
    if !mpi_wire::launcher_recovers() {
        for request in requests {
            mpi.wait(request)?;
        }
        return Ok(Transfer::Done);
    }
    let peer_gone = || {
        gone.get(peer as usize)
            .is_some_and(|g| g.load(Ordering::Acquire))
    };
    while let Some(mut request) = requests.pop() {
        while !mpi.test(&mut request)? {
            if peer_gone() {
                mpi.abandon(request);
                requests.into_iter().for_each(|r| mpi.abandon(r));
                return Ok(Transfer::PeerGone);
            }
            std::thread::sleep(Duration::from_micros(100));
        }
    }
    Ok(Transfer::Done)
}

fn peer_gone(peer: i32) -> PluginError {
    PluginError::new(
        ErrorCode::FAILED,
        format!(
            "the other device process of the copy (rank {peer}) is gone; the copy did not complete"
        ),
    )
}

/// A device's plugin and local number, with its traits.
struct Target<'a> {
    plugin: &'a PluginLibrary,
    local: i32,
    traits: DeviceTraits,
}

impl Target<'_> {
    /// Waits for `queue`'s work unless the device completes work on submission.
    fn finish(&self, queue: QueueHandle) -> Result<()> {
        if queue == QueueHandle::SYNC
            || self
                .traits
                .contains(DeviceTraits::QUEUES_COMPLETE_ON_SUBMISSION)
        {
            return Ok(());
        }
        self.plugin.synchronize(self.local, queue)
    }

    /// `size` bytes of device memory at `src`, read in `queue`'s order.
    fn read(&self, src: usize, size: usize, queue: QueueHandle) -> Result<Vec<u8>> {
        let mut staging = vec![0u8; size];
        // SAFETY: `staging` is read only after `finish` has completed the queue's work; on an
        // early return it is leaked rather than freed under a pending copy.
        let copied = unsafe {
            self.plugin.copy_from_device(
                self.local,
                staging.as_mut_ptr() as usize,
                src,
                size as u64,
                queue,
            )
        };
        if let Err(e) = copied.and_then(|()| self.finish(queue)) {
            std::mem::forget(staging);
            return Err(e);
        }
        Ok(staging)
    }

    /// Whether copies may go straight to and from the device's memory.
    fn direct(&self) -> bool {
        self.traits
            .contains(DeviceTraits::MEMORY_IN_PROCESS | DeviceTraits::QUEUES_COMPLETE_ON_SUBMISSION)
    }
}

impl FillTarget for Target<'_> {
    fn fill_memory(
        &self,
        dst: usize,
        pattern: &[u8],
        size: u64,
        queue: QueueHandle,
    ) -> Option<Result<()>> {
        self.plugin
            .fill_memory(self.local, dst, pattern, size, queue)
    }

    unsafe fn copy_to_device(
        &self,
        dst: usize,
        src: usize,
        size: u64,
        queue: QueueHandle,
    ) -> Result<()> {
        // SAFETY: the caller's promise (`FillTarget::copy_to_device`) is the plugin's.
        unsafe {
            self.plugin
                .copy_to_device(self.local, dst, src, size, queue)
        }
    }

    fn finish(&self, queue: QueueHandle) -> Result<()> {
        Target::finish(self, queue)
    }
}

impl Server {
    pub fn new(mpi: &'static Mpi, comm: Comm, program: i32, devices: Devices) -> Self {
        let trace = std::env::var_os(TRACE_VAR)
            .is_some()
            .then(|| mpi.rank(comm).unwrap_or(-1));
        Server {
            trace,
            mpi,
            comm,
            program,
            devices: Arc::new(devices),
            peer_copies: Vec::new(),
            gone: (0..mpi.size(comm).unwrap_or(0))
                .map(|_| AtomicBool::new(false))
                .collect(),
            blocks: BlockCache::from_env(),
            allocations: Allocations::default(),
            spare_reply: Writer::default(),
            images: std::collections::HashMap::new(),
        }
    }

    fn image(&self, id: u64) -> Result<&AlignedImage> {
        self.images
            .get(&id)
            .ok_or_else(|| PluginError::invalid_argument(format!("no stored image {id}")))
    }

    fn target(&self, device: u32) -> Result<Target<'_>> {
        let (plugin, d) = self.devices.get(device)?;
        Ok(Target {
            plugin,
            local: d.local,
            traits: d.traits(),
        })
    }

    fn reply(&self, tag: i32, reply: &Writer) {
        let too_long;
        let reply = if reply.0.len() > MAX_REPLY {
            too_long = Writer::error(&PluginError::new(
                ErrorCode::FAILED,
                format!(
                    "the device process's reply ({} bytes) is too long",
                    reply.0.len()
                ),
            ));
            &too_long
        } else {
            reply
        };
        if let Err(e) = self.mpi.send(self.comm, &reply.0, self.program, tag) {
            eprintln!("omptarget-mpi-device: cannot reply to the program: {e}");
        }
    }

    /// Serves until the program's `Shutdown`.
    pub fn run(mut self) {
        let mut buffer = vec![0u8; MAX_REQUEST];
        loop {
            let message = match self.next_request(&mut buffer) {
                Ok(m) => m,
                Err(e) => {
                    eprintln!("omptarget-mpi-device: the program is gone ({e}); exiting");
                    std::process::exit(1);
                }
            };
            let message: &[u8] = match &message {
                Request::Large(bytes) => bytes,
                Request::Small(len) => &buffer[..*len],
            };
            let mut r = Reader::new(message);
            let (op, tag, device) = match r.request() {
                Ok(h) => h,
                Err(e) => {
                    eprintln!("omptarget-mpi-device: {}", e.message);
                    // A newer program's request: refused on its tag, or the program would wait
                    // for the reply for ever.
                    if let Some(tag) = Reader::unknown_request_tag(message) {
                        self.reply(
                            tag,
                            &Writer::error(&PluginError::unsupported(format!(
                                "the device process does not know request {} (it is older \
                                 than the program's MPI plugin)",
                                message[0]
                            ))),
                        );
                    }
                    continue;
                }
            };
            if let Some(rank) = self.trace {
                let extent = trace_detail(op, r.clone());
                // One write per line (`eprintln!` writes each piece apart, which the launcher
                // may interleave with other processes' lines).
                omptarget_core::logging::stderr_line(format_args!(
                    "omptarget-mpi-device rank {rank}: {op:?} device={device}{extent}"
                ));
            }
            if op == Op::Shutdown {
                for copy in self.peer_copies.drain(..) {
                    let _ = copy.join();
                }
                self.reply(tag, &Writer::ok());
                return;
            }
            // One reply buffer for the life of the loop: no allocation per request.
            let mut ok = std::mem::take(&mut self.spare_reply);
            ok.0.clear();
            ok.i32(0);
            let outcome = self.execute(op, tag, device, &mut r, &mut ok);
            match outcome {
                Ok(true) => self.reply(tag, &ok),
                // Replied already (copies from the device send data after the reply), or a
                // peer copy thread replies when done.
                Ok(false) => {}
                Err(e) => self.reply(tag, &Writer::error(&e)),
            }
            self.spare_reply = ok;
        }
    }

    /// Receives the next request into `buffer` (of [`MAX_REQUEST`] bytes), or a large one.
    fn next_request(&self, buffer: &mut [u8]) -> std::result::Result<Request, String> {
        let len = self
            .mpi
            .recv_up_to(self.comm, buffer, self.program, REQUEST_TAG)?;
        let mut r = Reader::new(&buffer[..len]);
        if !matches!(r.request(), Ok((Op::Large, _, _))) {
            return Ok(Request::Small(len));
        }
        let (len, data_tag) = match (r.usize(), r.i32()) {
            (Ok(len), Ok(tag)) => (len, tag),
            _ => return Err("a malformed large request".into()),
        };
        let mut large = vec![0u8; len];
        self.mpi
            .recv(self.comm, &mut large, self.program, data_tag)?;
        Ok(Request::Large(large))
    }

    fn execute(
        &mut self,
        op: Op,
        tag: i32,
        device: u32,
        r: &mut Reader<'_>,
        ok: &mut Writer,
    ) -> Result<bool> {
        match op {
            Op::ListDevices => {
                ok.u32(self.devices.count() as u32);
                for d in &self.devices.list {
                    ok.str(&self.devices.plugins[d.plugin].name).i32(d.local);
                }
                ok.str(&self.devices.summary()).u64(CAPABILITIES);
            }
            Op::StoreImage => {
                let id = r.u64()?;
                self.images.insert(id, AlignedImage::copy(r.bytes()?));
            }
            Op::CheckImage => {
                let (triple, arch) = (r.str()?, r.str()?);
                let bytes = self.image(r.u64()?)?.bytes();
                let answer = if device == ANY_DEVICE {
                    let answers: Vec<_> = self
                        .devices
                        .plugins
                        .iter()
                        .map(|p| p.check_image(-1, bytes, triple, arch))
                        .collect();
                    answers
                        .iter()
                        .find(|a| a.compatible)
                        .or(answers.first())
                        .cloned()
                        .unwrap_or_else(|| {
                            ImageCompatibility::no("the device process has no plugins")
                        })
                } else {
                    let t = self.target(device)?;
                    t.plugin.check_image(t.local, bytes, triple, arch)
                };
                ok.u8(answer.compatible as u8).str(&answer.reason);
            }
            Op::InitDevice => {
                let t = self.target(device)?;
                t.plugin.init_device(t.local)?;
                let traits = t.plugin.device_traits(t.local);
                self.devices.list[device as usize].set_traits(traits);
            }
            Op::DeviceInfo => {
                let t = self.target(device)?;
                let info = t.plugin.device_info(t.local)?;
                ok.u32(info.len() as u32);
                for entry in &info {
                    ok.str(&entry.key).str(&entry.value);
                }
            }
            Op::LoadImage => {
                let (triple, arch) = (r.str()?, r.str()?);
                let bytes = self.image(r.u64()?)?.bytes();
                let t = self.target(device)?;
                // The images' runtime dependency, from this process's own tree (whatever
                // LD_LIBRARY_PATH says: see runtime_libs).
                crate::runtime_libs::load_once(|| self.devices.runtime_directories());
                ok.u64(t.plugin.load_image(t.local, bytes, triple, arch)?.0);
            }
            Op::UnloadImage => {
                let image = ImageHandle(r.u64()?);
                let t = self.target(device)?;
                t.plugin.unload_image(t.local, image)?;
                self.allocations.unloaded(device, image.0);
            }
            Op::GetKernel => {
                let (image, name) = (ImageHandle(r.u64()?), r.str()?);
                let t = self.target(device)?;
                ok.u64(t.plugin.get_kernel(t.local, image, name)?.0);
            }
            Op::GetGlobal => {
                let (image, name, size) = (ImageHandle(r.u64()?), r.str()?, r.u64()?);
                let t = self.target(device)?;
                let global = t.plugin.get_global(t.local, image, name, size)?;
                self.allocations
                    .global(device, image.0, global.address, global.size);
                ok.u64(global.address as u64).u64(global.size);
            }
            Op::Alloc => {
                let (size, kind) = (r.u64()?, AllocKind(r.u32()?));
                let address = self.allocate(device, size, kind)?;
                self.allocations.allocated(device, address, size);
                ok.u64(address as u64);
            }
            Op::Free => {
                let (ptr, kind) = (r.usize()?, AllocKind(r.u32()?));
                self.target(device)?;
                self.allocations.freed(device, ptr);
                if !self.blocks.keep(device, ptr) {
                    let t = self.target(device)?;
                    t.plugin.free(t.local, ptr, kind)?;
                }
            }
            Op::CreateQueue => {
                let t = self.target(device)?;
                ok.u64(t.plugin.create_queue(t.local)?.0);
            }
            Op::CopyToDevice => {
                let (queue, dst, size) = (QueueHandle(r.u64()?), r.usize()?, r.usize()?);
                self.copy_to_device(r.i32()?, device, queue, dst, size)?;
            }
            Op::CopyFromDevice => {
                let (queue, src, size) = (QueueHandle(r.u64()?), r.usize()?, r.usize()?);
                self.copy_from_device(tag, r.i32()?, device, queue, src, size)?;
                return Ok(false);
            }
            Op::CopyWithin => {
                let (dst_device, queue) = (r.u32()?, QueueHandle(r.u64()?));
                let (src, dst, size) = (r.usize()?, r.usize()?, r.u64()?);
                self.copy_within(device, dst_device, queue, src, dst, size)?;
            }
            Op::SendToPeer => {
                let (queue, src, size) = (QueueHandle(r.u64()?), r.usize()?, r.usize()?);
                let (peer, data_tag) = (r.i32()?, r.i32()?);
                self.send_to_peer(tag, device, queue, src, size, peer, data_tag)?;
                return Ok(false);
            }
            Op::ReceiveFromPeer => {
                let (dst, size) = (r.usize()?, r.usize()?);
                let (peer, data_tag) = (r.i32()?, r.i32()?);
                self.receive_from_peer(tag, device, dst, size, peer, data_tag)?;
                return Ok(false);
            }
            Op::Fill => {
                let request = r.fill()?;
                let t = self.target(device)?;
                crate::fill::fill(&t, &self.allocations, device, &request)?;
            }
            Op::Launch => {
                let (kernel, queue, config, count) = r.launch()?;
                let (kernel, queue) = (KernelHandle(kernel), QueueHandle(queue));
                let mut args: smallvec::SmallVec<[usize; 16]> =
                    smallvec::SmallVec::with_capacity(count);
                for _ in 0..count {
                    args.push(r.usize()?);
                }
                let t = self.target(device)?;
                t.plugin
                    .launch_kernel(t.local, kernel, &args, &config, queue)?;
                t.finish(queue)?;
            }
            Op::MemoryInfo => {
                let t = self.target(device)?;
                let info = t.plugin.memory_info(t.local).ok_or_else(|| {
                    PluginError::unsupported("the remote plugin does not report free memory")
                })??;
                ok.u64(info.free).u64(info.total);
            }
            Op::Large => {
                return Err(PluginError::invalid_argument(
                    "a large request announced inside a large request",
                ))
            }
            Op::Shutdown => unreachable!("handled by the loop"),
            Op::PeerGone => {
                let rank = r.i32()?;
                if let Some(flag) = self.gone.get(rank as usize) {
                    flag.store(true, Ordering::Release);
                }
                // MPI_Finalize's barrier would wait for the dead process.
                self.mpi.skip_finalize_barrier();
                return Ok(false); // a notice: nobody waits for a reply
            }
        }
        Ok(true)
    }

    /// A kept block of the size, or a new allocation; when the device is out of memory, the
    /// kept blocks are given back first.
    fn allocate(&mut self, device: u32, size: u64, kind: AllocKind) -> Result<usize> {
        if let Some(address) = self.blocks.take(device, kind, size) {
            return Ok(address);
        }
        let (plugin, d) = self.devices.get(device)?;
        let address = match plugin.alloc(d.local, size, 0, kind) {
            Err(e) if e.code == ErrorCode::OUT_OF_MEMORY => {
                for (block, kind) in self.blocks.drain(device) {
                    let _ = plugin.free(d.local, block, kind);
                }
                plugin.alloc(d.local, size, 0, kind)?
            }
            outcome => outcome?,
        };
        let in_process = d.traits().contains(DeviceTraits::MEMORY_IN_PROCESS);
        self.blocks
            .allocated(device, kind, size, address, in_process);
        Ok(address)
    }

    /// Receives the program's bytes (always: they were sent whatever happens here), then
    /// writes them to the device.
    fn copy_to_device(
        &self,
        data_tag: i32,
        device: u32,
        queue: QueueHandle,
        dst: usize,
        size: usize,
    ) -> Result<()> {
        let t = self.target(device);
        if let Ok(t) = &t {
            if t.direct() {
                // SAFETY: the device's memory is this process's (MEMORY_IN_PROCESS), and `dst`
                // is a device address the program got from this device.
                let buffer = unsafe { std::slice::from_raw_parts_mut(dst as *mut u8, size) };
                return self
                    .mpi
                    .recv(self.comm, buffer, self.program, data_tag)
                    .map_err(mpi_error);
            }
        }
        let mut staging = vec![0u8; size];
        self.mpi
            .recv(self.comm, &mut staging, self.program, data_tag)
            .map_err(mpi_error)?;
        let t = t?;
        // SAFETY: `staging` is kept until `finish` has completed the queue's work, and leaked
        // if that fails.
        let copied = unsafe {
            t.plugin
                .copy_to_device(t.local, dst, staging.as_ptr() as usize, size as u64, queue)
        };
        let finished = copied.and_then(|()| t.finish(queue));
        if finished.is_err() {
            std::mem::forget(staging);
        }
        finished
    }

    /// Reads the device's bytes, replies, then sends them (no data after an error reply).
    fn copy_from_device(
        &self,
        tag: i32,
        data_tag: i32,
        device: u32,
        queue: QueueHandle,
        src: usize,
        size: usize,
    ) -> Result<()> {
        let t = self.target(device)?;
        let send = |bytes: &[u8]| {
            self.reply(tag, &Writer::ok());
            if let Err(e) = self.mpi.send(self.comm, bytes, self.program, data_tag) {
                eprintln!("omptarget-mpi-device: cannot send data to the program: {e}");
            }
        };
        if t.direct() {
            // SAFETY: as in `copy_to_device`: `src` is this process's memory.
            send(unsafe { std::slice::from_raw_parts(src as *const u8, size) });
            return Ok(());
        }
        send(&t.read(src, size, queue)?);
        Ok(())
    }

    fn copy_within(
        &self,
        src_device: u32,
        dst_device: u32,
        queue: QueueHandle,
        src: usize,
        dst: usize,
        size: u64,
    ) -> Result<()> {
        let (s, d) = (self.target(src_device)?, self.target(dst_device)?);
        if std::ptr::eq(s.plugin, d.plugin) {
            s.plugin
                .copy_device_to_device(s.local, src, d.local, dst, size, queue)?;
            return s.finish(queue);
        }
        // Devices of two plugins: through this process's memory.
        let mut staging = vec![0u8; size as usize];
        let through = staging.as_mut_ptr() as usize;
        // SAFETY: `staging` holds `size` bytes and outlives both synchronous copies.
        unsafe {
            s.plugin
                .copy_from_device(s.local, through, src, size, QueueHandle::SYNC)?;
            d.plugin
                .copy_to_device(d.local, dst, through, size, QueueHandle::SYNC)
        }
    }

    /// Reads the bytes now (in queue order), sends them to the peer process on a thread of
    /// their own, which replies once they are sent.
    #[allow(clippy::too_many_arguments)]
    fn send_to_peer(
        &mut self,
        tag: i32,
        device: u32,
        queue: QueueHandle,
        src: usize,
        size: usize,
        peer: i32,
        data_tag: i32,
    ) -> Result<()> {
        let staging = self.target(device)?.read(src, size, queue)?;
        let (mpi, comm, program) = (self.mpi, self.comm, self.program);
        let gone = Arc::clone(&self.gone);
        self.peer_copies.push(std::thread::spawn(move || {
            // SAFETY: `staging` lives until the requests complete, or for ever if abandoned.
            let outcome =
                unsafe { mpi.isend(comm, staging.as_ptr(), staging.len(), peer, data_tag) }
                    .and_then(|requests| finish_transfer(mpi, requests, peer, &gone));
            let reply = match outcome {
                Ok(Transfer::Done) => Writer::ok(),
                Ok(Transfer::PeerGone) => {
                    std::mem::forget(staging);
                    Writer::error(&peer_gone(peer))
                }
                Err(e) => Writer::error(&mpi_error(e)),
            };
            let _ = mpi.send(comm, &reply.0, program, tag);
        }));
        Ok(())
    }

    /// Receives the peer's bytes on a thread of its own, writes them, then replies.
    fn receive_from_peer(
        &mut self,
        tag: i32,
        device: u32,
        dst: usize,
        size: usize,
        peer: i32,
        data_tag: i32,
    ) -> Result<()> {
        self.target(device)?;
        let (mpi, comm, program) = (self.mpi, self.comm, self.program);
        let devices = Arc::clone(&self.devices);
        let gone = Arc::clone(&self.gone);
        self.peer_copies.push(std::thread::spawn(move || {
            let mut staging = vec![0u8; size];
            // SAFETY: `staging` lives until the requests complete, or for ever if abandoned.
            let received =
                unsafe { mpi.irecv(comm, staging.as_mut_ptr(), staging.len(), peer, data_tag) }
                    .and_then(|requests| finish_transfer(mpi, requests, peer, &gone))
                    .map_err(mpi_error);
            let outcome = match received {
                Ok(Transfer::Done) => devices.get(device).and_then(|(plugin, d)| {
                    // SAFETY: `staging` outlives the synchronous copy.
                    unsafe {
                        plugin.copy_to_device(
                            d.local,
                            dst,
                            staging.as_ptr() as usize,
                            size as u64,
                            QueueHandle::SYNC,
                        )
                    }
                }),
                Ok(Transfer::PeerGone) => {
                    std::mem::forget(staging);
                    Err(peer_gone(peer))
                }
                Err(e) => Err(e),
            };
            let reply = match outcome {
                Ok(()) => Writer::ok(),
                Err(e) => Writer::error(&e),
            };
            let _ = mpi.send(comm, &reply.0, program, tag);
        }));
        Ok(())
    }
}
