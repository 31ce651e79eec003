//! AQL queues: a ring of 64-byte packets in memory with read and write indices and a doorbell
//! signal, and one packet processor per queue. The processor takes a packet only once its
//! header is published as valid, waits for every earlier packet to complete when the packet
//! has the barrier bit, runs barrier-AND and barrier-OR packets itself (they hold back the
//! packets behind them), and launches kernel dispatches without waiting for them, so packets
//! without the barrier bit run concurrently with earlier ones. A failed packet puts the queue
//! in the error state: the error callback is told, nothing more is processed. With profiling
//! enabled (`hsa_amd_profiling_set_profiler_enabled`) the processor writes when it started and
//! completed each packet into the packet's completion signal.

use crate::agents::AgentIndex;
use crate::dispatch;
use crate::runtime::Runtime;
use crate::signals::Signal;
use crate::status::{self, Result, Status};
use hsa_sys::*;
use omptarget_emu_support::calls::lock;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU16, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, LazyLock, Mutex};
use std::time::Duration;

type ErrorCallback = unsafe extern "C" fn(hsa_status_t, *mut hsa_queue_t, *mut std::ffi::c_void);

/// A queue; `public` first, so a pointer to the queue is the `hsa_queue_t *` the program holds.
#[repr(C)]
pub struct Queue {
    public: hsa_queue_t,
    read_index: AtomicU64,
    write_index: AtomicU64,
    pub agent: AgentIndex,
    ring: Ring,
    doorbell: Arc<Signal>,
    callback: Option<(ErrorCallback, usize)>,
    state: Mutex<State>,
    settled: Condvar,
    /// `hsa_amd_profiling_set_profiler_enabled` (ROCr's `AMD_QUEUE_PROPERTIES_ENABLE_PROFILING`
    /// bit, which the packet processor reads for each packet).
    profiling: AtomicBool,
}

// SAFETY: the only non-thread-safe field is `public.base_address`, the ring's address, which
// never changes; the ring itself is shared through atomics (see `Ring`).
unsafe impl Send for Queue {}
// SAFETY: as above.
unsafe impl Sync for Queue {}

#[derive(Default)]
struct State {
    /// Packets launched and not yet complete.
    in_flight: usize,
    failed: Option<Status>,
    stopping: bool,
    /// Packets processed so far (for the trace).
    processed: u64,
}

/// The ring's memory: `size` packets, 64-byte aligned.
struct Ring {
    base: *mut u8,
    layout: std::alloc::Layout,
}

// SAFETY: the ring is plain memory shared with the program by design; every access goes
// through atomics (headers) or copies of whole published packets.
unsafe impl Send for Ring {}
// SAFETY: as above.
unsafe impl Sync for Ring {}

impl Drop for Ring {
    fn drop(&mut self) {
        // SAFETY: `base` was allocated with `layout` and the processor has stopped.
        unsafe { std::alloc::dealloc(self.base, self.layout) };
    }
}

/// A live queue and its packet processor.
type LiveQueue = (Arc<Queue>, Option<std::thread::JoinHandle<()>>);

/// Every live queue by address.
#[derive(Default)]
pub struct Queues {
    live: Mutex<HashMap<usize, LiveQueue>>,
    next_id: AtomicU64,
}

/// The process's live queues. Kept here rather than in the `Runtime`, which their packet
/// processors run on, so that the runtime's state does not depend on its queues.
pub static QUEUES: LazyLock<Queues> = LazyLock::new(Queues::default);

impl Queues {
    /// `hsa_queue_create`.
    pub fn create(
        &self,
        runtime: &'static Runtime,
        agent: AgentIndex,
        size: u32,
        callback: Option<(ErrorCallback, usize)>,
    ) -> Result<*mut hsa_queue_t> {
        if !size.is_power_of_two()
            || !(crate::agents::QUEUE_MIN_SIZE..=crate::agents::QUEUE_MAX_SIZE).contains(&size)
        {
            return Err(status::INVALID_QUEUE_CREATION);
        }
        if lock(&self.live).len() >= crate::agents::QUEUES_MAX as usize {
            return Err(status::OUT_OF_RESOURCES);
        }
        let layout = std::alloc::Layout::from_size_align(size as usize * 64, 64)
            .map_err(|_| status::INVALID_QUEUE_CREATION)?;
        // SAFETY: `layout` has a non-zero size.
        let base = unsafe { std::alloc::alloc_zeroed(layout) };
        if base.is_null() {
            return Err(status::OUT_OF_RESOURCES);
        }
        let ring = Ring { base, layout };
        for slot in 0..size as usize {
            ring.header(slot).store(invalid_header(), Ordering::Relaxed);
        }
        let doorbell_handle = runtime.signals.create(-1);
        let doorbell = runtime.signals.get(doorbell_handle)?;
        let queue = Arc::new(Queue {
            public: hsa_queue_t {
                type_: HSA_QUEUE_TYPE_MULTI,
                features: HSA_QUEUE_FEATURE_KERNEL_DISPATCH,
                base_address: base.cast(),
                doorbell_signal: doorbell_handle,
                size,
                reserved1: 0,
                id: self.next_id.fetch_add(1, Ordering::Relaxed),
            },
            read_index: AtomicU64::new(0),
            write_index: AtomicU64::new(0),
            agent,
            ring,
            doorbell,
            callback,
            state: Mutex::new(State::default()),
            settled: Condvar::new(),
            profiling: AtomicBool::new(false),
        });
        let processor = queue.clone();
        let thread = std::thread::Builder::new()
            .name(format!("emu-hsa-queue{}", queue.public.id))
            .spawn(move || processor.process(runtime))
            .map_err(|_| status::OUT_OF_RESOURCES)?;
        let address = Arc::as_ptr(&queue) as usize;
        lock(&self.live).insert(address, (queue, Some(thread)));
        Ok(address as *mut hsa_queue_t)
    }

    pub fn get(&self, queue: *const hsa_queue_t) -> Result<Arc<Queue>> {
        lock(&self.live)
            .get(&(queue as usize))
            .map(|(q, _)| q.clone())
            .ok_or(status::INVALID_QUEUE)
    }

    /// `hsa_queue_destroy`: the processor stops after the packets it has launched complete.
    pub fn destroy(&self, runtime: &Runtime, queue: *mut hsa_queue_t) -> Result<()> {
        let (queue, thread) = lock(&self.live)
            .remove(&(queue as usize))
            .ok_or(status::INVALID_QUEUE)?;
        lock(&queue.state).stopping = true;
        queue.doorbell.store(i64::MAX);
        if let Some(thread) = thread {
            let _ = thread.join();
        }
        let _ = runtime.signals.destroy(queue.public.doorbell_signal);
        Ok(())
    }
}

fn invalid_header() -> u16 {
    (HSA_PACKET_TYPE_INVALID << HSA_PACKET_HEADER_TYPE) as u16
}

impl Ring {
    fn slot(&self, index: usize) -> *mut u8 {
        // SAFETY (of the arithmetic): callers pass index < size, within the allocation.
        self.base.wrapping_add(index * 64)
    }

    fn header(&self, index: usize) -> &AtomicU16 {
        // SAFETY: each slot starts with a 16-bit header, 64-byte aligned, inside the ring,
        // which lives as long as `self`; producers publish it with an atomic store.
        unsafe { &*(self.slot(index) as *const AtomicU16) }
    }
}

/// A packet copied out of the ring.
#[derive(Copy, Clone)]
pub struct Packet {
    pub bytes: [u8; 64],
}

impl Packet {
    pub fn header(&self) -> u16 {
        u16::from_le_bytes([self.bytes[0], self.bytes[1]])
    }

    pub fn kind(&self) -> u32 {
        (self.header() >> HSA_PACKET_HEADER_TYPE) as u32 & 0xff
    }

    pub fn barrier(&self) -> bool {
        self.header() >> HSA_PACKET_HEADER_BARRIER & 1 != 0
    }

    pub fn dispatch(&self) -> hsa_kernel_dispatch_packet_t {
        // SAFETY: 64 bytes of plain data read as a 64-byte repr(C) struct of integers.
        unsafe { std::ptr::read_unaligned(self.bytes.as_ptr().cast()) }
    }

    pub fn barrier_packet(&self) -> hsa_barrier_and_packet_t {
        // SAFETY: as above.
        unsafe { std::ptr::read_unaligned(self.bytes.as_ptr().cast()) }
    }

    /// The completion signal: the last 8 bytes in every AQL packet type.
    pub fn completion(&self) -> hsa_signal_t {
        hsa_signal_t {
            handle: u64::from_le_bytes(self.bytes[56..64].try_into().unwrap()),
        }
    }
}

impl Queue {
    pub fn public(&self) -> *mut hsa_queue_t {
        &self.public as *const hsa_queue_t as *mut hsa_queue_t
    }

    pub fn add_write_index(&self, count: u64) -> u64 {
        self.write_index.fetch_add(count, Ordering::AcqRel)
    }

    pub fn read_index(&self) -> u64 {
        self.read_index.load(Ordering::Acquire)
    }

    /// `hsa_amd_profiling_set_profiler_enabled`: packets processed from now on are timed.
    pub fn set_profiling(&self, enabled: bool) {
        self.profiling.store(enabled, Ordering::Release);
    }

    /// When a packet's processing starts now: its start stamp, if the queue is profiled.
    fn start_stamp(&self) -> Option<u64> {
        self.profiling
            .load(Ordering::Acquire)
            .then(crate::runtime::timestamp)
    }

    /// Writes a profiled packet's stamps, from `start` to now, into its completion signal,
    /// before the signal is decremented (the program may read them once it sees it done).
    fn stamp(&self, runtime: &Runtime, packet: &Packet, start: Option<u64>) {
        let (Some(start), completion) = (start, packet.completion()) else {
            return;
        };
        if let Ok(signal) = runtime.signals.get(completion) {
            let end = crate::runtime::timestamp();
            signal.change_stamps(|stamps| stamps.packet = (start, end));
        }
    }

    fn stopping(&self) -> bool {
        lock(&self.state).stopping
    }

    /// The packet processor.
    fn process(self: Arc<Queue>, runtime: &'static Runtime) {
        let size = self.public.size as u64;
        loop {
            let next = self.read_index();
            // Wait for the doorbell to announce packet `next` (producers store the index of
            // the last packet they published).
            self.doorbell.wait(
                HSA_SIGNAL_CONDITION_GTE,
                next as i64,
                Some(Duration::from_millis(50)),
            );
            if self.stopping() {
                break;
            }
            if (self.doorbell.load()) < next as i64 || lock(&self.state).failed.is_some() {
                continue;
            }
            let slot = (next % size) as usize;
            let header = self.ring.header(slot).load(Ordering::Acquire);
            if (header >> HSA_PACKET_HEADER_TYPE) as u32 & 0xff == HSA_PACKET_TYPE_INVALID {
                // Rung before the header was published: the hardware waits for it too.
                std::thread::sleep(Duration::from_micros(20));
                continue;
            }
            let mut packet = Packet { bytes: [0; 64] };
            // SAFETY: the slot holds a published packet; copy all 64 bytes before releasing it.
            unsafe {
                std::ptr::copy_nonoverlapping(self.ring.slot(slot), packet.bytes.as_mut_ptr(), 64)
            };
            packet.bytes[..2].copy_from_slice(&header.to_le_bytes());
            if packet.barrier() {
                self.settle();
            }
            self.trace_packet(next, &packet);
            match packet.kind() {
                HSA_PACKET_TYPE_BARRIER_AND | HSA_PACKET_TYPE_BARRIER_OR => {
                    self.release_slot(slot, next);
                    // The hardware writes stamps for barrier packets too (HIP times its
                    // markers with them).
                    let start = self.start_stamp();
                    self.delay();
                    let result = wait_dependencies(runtime, &packet, || self.stopping());
                    if self.stopping() {
                        break;
                    }
                    self.trace_packet_done(next);
                    if result.is_ok() {
                        self.stamp(runtime, &packet, start);
                    }
                    self.complete(runtime, &packet, result);
                }
                HSA_PACKET_TYPE_KERNEL_DISPATCH => {
                    self.release_slot(slot, next);
                    let launch = match dispatch::launch(runtime, self.agent, &packet.dispatch()) {
                        Ok(launch) => launch,
                        Err(status::Error(code)) => {
                            self.fail(code);
                            continue;
                        }
                    };
                    lock(&self.state).in_flight += 1;
                    let queue = self.clone();
                    // The kernel starts now; the delay stands for its work on the device.
                    let start = self.start_stamp();
                    crate::faults::prepare();
                    let launched =
                        omptarget_emu_support::workers::run("emu-hsa-dispatch", move || {
                            queue.delay();
                            crate::faults::run(&queue, queue.agent, launch);
                            queue.trace_packet_done(next);
                            queue.stamp(runtime, &packet, start);
                            queue.complete(runtime, &packet, Ok(()));
                            let mut state = lock(&queue.state);
                            state.in_flight -= 1;
                            drop(state);
                            queue.settled.notify_all();
                        });
                    if launched.is_err() {
                        lock(&self.state).in_flight -= 1;
                        self.fail(HSA_STATUS_ERROR_OUT_OF_RESOURCES);
                    }
                }
                _ => {
                    self.release_slot(slot, next);
                    self.fail(HSA_STATUS_ERROR_INVALID_PACKET_FORMAT);
                }
            }
        }
        self.settle();
    }

    /// Marks the slot free for the producer and moves past it.
    fn release_slot(&self, slot: usize, index: u64) {
        self.ring
            .header(slot)
            .store(invalid_header(), Ordering::Release);
        self.read_index.store(index + 1, Ordering::Release);
        lock(&self.state).processed += 1;
    }

    /// Waits until every launched packet completed.
    fn settle(&self) {
        let mut state = lock(&self.state);
        while state.in_flight > 0 {
            state = self.settled.wait(state).unwrap_or_else(|e| e.into_inner());
        }
    }

    fn delay(&self) {
        let delay = crate::config::get().delay_us;
        if delay > 0 {
            std::thread::sleep(Duration::from_micros(delay));
        }
    }

    fn complete(&self, runtime: &Runtime, packet: &Packet, result: Result<()>) {
        match result {
            Ok(()) => {
                let completion = packet.completion();
                if completion.handle != 0 {
                    match runtime.signals.get(completion) {
                        Ok(signal) => signal.subtract(1),
                        Err(_) => self.fail(HSA_STATUS_ERROR_INVALID_SIGNAL),
                    }
                }
            }
            Err(status::Error(code)) => self.fail(code),
        }
    }

    /// One trace line per completed packet (after its work, before its completion signal).
    fn trace_packet_done(&self, index: u64) {
        crate::trace::calls().trace_line(|| {
            format!(
                "packet-done queue={:#x} index={index}",
                self.public() as usize
            )
        });
    }

    /// One trace line per processed packet: type, barrier bit, signals, geometry.
    fn trace_packet(&self, index: u64, packet: &Packet) {
        let calls = crate::trace::calls();
        if !calls.tracing() {
            return;
        }
        calls.trace_line(|| {
            let head = format!(
                "packet queue={:#x} index={index} barrier={}",
                self.public() as usize,
                packet.barrier() as u8
            );
            match packet.kind() {
                HSA_PACKET_TYPE_KERNEL_DISPATCH => {
                    let d = packet.dispatch();
                    format!(
                        "{head} type=dispatch kernel={:#x} grid={}x{}x{} group={}x{}x{} \
                         group_memory={} completion={:#x}",
                        d.kernel_object,
                        d.grid_size_x,
                        d.grid_size_y,
                        d.grid_size_z,
                        d.workgroup_size_x,
                        d.workgroup_size_y,
                        d.workgroup_size_z,
                        d.group_segment_size,
                        d.completion_signal.handle
                    )
                }
                kind @ (HSA_PACKET_TYPE_BARRIER_AND | HSA_PACKET_TYPE_BARRIER_OR) => {
                    let b = packet.barrier_packet();
                    let deps: Vec<String> = b
                        .dep_signal
                        .iter()
                        .filter(|s| s.handle != 0)
                        .map(|s| format!("{:#x}", s.handle))
                        .collect();
                    format!(
                        "{head} type={} deps=[{}] completion={:#x}",
                        if kind == HSA_PACKET_TYPE_BARRIER_AND {
                            "barrier-and"
                        } else {
                            "barrier-or"
                        },
                        deps.join(","),
                        b.completion_signal.handle
                    )
                }
                other => format!("{head} type={other}"),
            }
        });
    }

    /// Puts the queue in the error state and tells the program (once).
    pub fn fail(&self, code: Status) {
        let mut state = lock(&self.state);
        if state.failed.is_some() {
            return;
        }
        state.failed = Some(code);
        drop(state);
        crate::trace::calls()
            .trace_line(|| format!("queue {} error {}", self.public.id, status::describe(code)));
        if let Some((callback, data)) = self.callback {
            // SAFETY: the callback and its data are what the program gave hsa_queue_create;
            // HSA calls it on a runtime thread with the queue, as here.
            unsafe { callback(code, self.public(), data as *mut std::ffi::c_void) };
        }
    }
}

/// A barrier-AND packet completes once all its dependency signals are 0, a barrier-OR packet
/// once any is (a zero handle is no dependency). Gives up when the queue is destroyed
/// (`stopping`): a barrier waiting for work that never completes must not keep it alive.
fn wait_dependencies(
    runtime: &Runtime,
    packet: &Packet,
    stopping: impl Fn() -> bool,
) -> Result<()> {
    let dependencies: Vec<Arc<Signal>> = packet
        .barrier_packet()
        .dep_signal
        .iter()
        .filter(|s| s.handle != 0)
        .map(|&s| runtime.signals.get(s))
        .collect::<Result<_>>()?;
    let satisfied = || {
        if packet.kind() == HSA_PACKET_TYPE_BARRIER_AND || dependencies.is_empty() {
            dependencies.iter().all(|s| s.load() == 0)
        } else {
            dependencies.iter().any(|s| s.load() == 0)
        }
    };
    while !satisfied() && !stopping() {
        // Woken by the first dependency; the others are looked at every millisecond.
        let first_pending = dependencies
            .iter()
            .find(|s| s.load() != 0)
            .unwrap_or(&dependencies[0]);
        first_pending.wait(HSA_SIGNAL_CONDITION_EQ, 0, Some(Duration::from_millis(1)));
    }
    Ok(())
}

impl crate::faults::FaultedQueue for Queue {
    /// A running dispatch's kernel faulted: the queue goes into the error state, and the
    /// dispatch, which never completes (its signal stays), no longer counts as in flight, so
    /// that `hsa_queue_destroy` does not wait for it.
    fn kernel_faulted(&self, code: Status) {
        self.fail(code);
        let mut state = lock(&self.state);
        state.in_flight = state.in_flight.saturating_sub(1);
        drop(state);
        self.settled.notify_all();
    }
}
