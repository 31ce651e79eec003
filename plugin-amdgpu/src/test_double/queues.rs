//! Queues of the double: a worker thread per queue runs its packets in order. A barrier-AND
//! packet waits for its dependences; a kernel packet calls the closure registered for its
//! kernel object, and a closure's `Err` stops the queue as a memory fault would.

use super::profiling::system_ticks;
use super::{invalid, FaultOp, Inner, SoftwareHsa, GPU_AGENT, POLL};
use crate::hsa_interface::{Agent, HsaError, HsaResult, KernelDispatch, Queue, Signal};
use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::{self, JoinHandle};
use sync_util::{lock, wait_timeout};

/// `HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION`, what a faulting kernel reports.
const STATUS_MEMORY_FAULT: u32 = 0x1029;

/// A packet as a queue of the double keeps it.
pub(super) enum Packet {
    Barrier {
        deps: Vec<Signal>,
        completion: Signal,
    },
    Kernel {
        dispatch: KernelDispatch,
        completion: Signal,
    },
}

/// A queue of the double and its worker thread.
pub(super) struct QueueState {
    handle: u64,
    pending: Mutex<VecDeque<Packet>>,
    arrived: Condvar,
    error: Mutex<Option<HsaError>>,
    destroyed: AtomicBool,
    barriers: AtomicUsize,
    kernels: AtomicUsize,
    worker: Mutex<Option<JoinHandle<()>>>,
    /// `hsa_amd_profiling_set_profiler_enabled`.
    profiling: AtomicBool,
}

impl QueueState {
    /// Stops the worker (it polls the flag) and hands its thread over, to be joined.
    pub(super) fn stop(&self) -> Option<JoinHandle<()>> {
        self.destroyed.store(true, Ordering::SeqCst);
        self.arrived.notify_all();
        lock(&self.worker).take()
    }
}

/// Queue controls for tests.
impl SoftwareHsa {
    /// Barrier-AND and kernel packets submitted to `queue` so far.
    pub fn packets(&self, queue: Queue) -> (usize, usize) {
        lock(&self.inner.queues).get(&queue.0).map_or((0, 0), |q| {
            (
                q.barriers.load(Ordering::Relaxed),
                q.kernels.load(Ordering::Relaxed),
            )
        })
    }

    /// Stops `queue` writing profiling stamps, as a queue never profiled.
    pub fn unprofile_queue(&self, queue: Queue) {
        if let Some(state) = lock(&self.inner.queues).get(&queue.0) {
            state.profiling.store(false, Ordering::SeqCst);
        }
    }
}

/// `hsa_queue_*`, the packets written to queues and the worker that runs them.
impl Inner {
    pub(super) fn create_queue(self: &Arc<Self>, agent: Agent, size: u32) -> HsaResult<Queue> {
        self.check_fault(FaultOp::CreateQueue)?;
        if agent != GPU_AGENT {
            return Err(invalid(format!(
                "queue on agent {:#x}, not the GPU",
                agent.0
            )));
        }
        if size == 0 || !size.is_power_of_two() {
            return Err(invalid(format!("queue size {size} is not a power of two")));
        }
        let handle = self.handle();
        let state = Arc::new(QueueState {
            handle,
            pending: Mutex::new(VecDeque::new()),
            arrived: Condvar::new(),
            error: Mutex::new(None),
            destroyed: AtomicBool::new(false),
            barriers: AtomicUsize::new(0),
            kernels: AtomicUsize::new(0),
            worker: Mutex::new(None),
            profiling: AtomicBool::new(false),
        });
        let worker_state = Arc::clone(&state);
        let worker = self.spawn("swhsa-queue", move |inner| inner.run_queue(&worker_state))?;
        *lock(&state.worker) = Some(worker);
        lock(&self.queues).insert(handle, state);
        self.counters.queues_created.fetch_add(1, Ordering::Relaxed);
        Ok(Queue(handle))
    }

    pub(super) fn destroy_queue(&self, queue: Queue) -> HsaResult<()> {
        let state = lock(&self.queues)
            .remove(&queue.0)
            .ok_or_else(|| invalid(format!("destroying unknown queue {:#x}", queue.0)))?;
        if let Some(worker) = state.stop() {
            if worker.thread().id() != thread::current().id() {
                let _ = worker.join();
            }
        }
        self.counters
            .queues_destroyed
            .fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    pub(super) fn queue_error(&self, queue: Queue) -> Option<HsaError> {
        let state = lock(&self.queues).get(&queue.0).cloned()?;
        let error = lock(&state.error).clone();
        error
    }

    pub(super) fn enable_queue_profiling(&self, queue: Queue) -> HsaResult<()> {
        self.count_profiling_call();
        self.check_fault(FaultOp::EnableQueueProfiling)?;
        self.queue(queue)?.profiling.store(true, Ordering::SeqCst);
        Ok(())
    }

    fn run_queue(&self, queue: &QueueState) {
        let stopped =
            || queue.destroyed.load(Ordering::SeqCst) || self.shutdown.load(Ordering::SeqCst);
        loop {
            let packet = {
                let mut pending = lock(&queue.pending);
                loop {
                    if stopped() {
                        return;
                    }
                    if let Some(packet) = pending.pop_front() {
                        break packet;
                    }
                    pending = wait_timeout(&queue.arrived, pending, POLL).0;
                }
            };
            let started = queue.profiling.load(Ordering::SeqCst).then(system_ticks);
            match packet {
                Packet::Barrier { deps, completion } => {
                    for dep in deps {
                        if !self.wait_until_zero(dep, stopped) {
                            return;
                        }
                    }
                    self.stamp_packet(completion, started);
                    self.change_signal(completion, "barrier completion", |v| v - 1);
                }
                Packet::Kernel {
                    dispatch,
                    completion,
                } => {
                    let kernel = lock(&self.kernels).get(&dispatch.kernel_object).cloned();
                    let result = match kernel {
                        Some(kernel) => {
                            catch_unwind(AssertUnwindSafe(|| kernel(dispatch.kernarg_address)))
                                .unwrap_or_else(|_| Err("the kernel panicked".into()))
                        }
                        None => Err("no kernel registered for this object".into()),
                    };
                    if let Err(message) = result {
                        // As on a device: the queue stops, the completion never comes.
                        *lock(&queue.error) = Some(HsaError::new(
                            STATUS_MEMORY_FAULT,
                            format!(
                                "memory fault in kernel {:#x} on queue {:#x}: {message}",
                                dispatch.kernel_object, queue.handle
                            ),
                        ));
                        return;
                    }
                    self.stamp_packet(completion, started);
                    self.change_signal(completion, "kernel completion", |v| v - 1);
                }
            }
        }
    }

    /// A profiled packet that started at `started` completes `signal` now.
    fn stamp_packet(&self, signal: Signal, started: Option<u64>) {
        if let (Some(start), Some(state)) = (started, self.signal(signal)) {
            lock(&state.stamps).packet = (start, system_ticks());
        }
    }

    fn queue(&self, queue: Queue) -> HsaResult<Arc<QueueState>> {
        lock(&self.queues)
            .get(&queue.0)
            .cloned()
            .ok_or_else(|| invalid(format!("unknown queue {:#x}", queue.0)))
    }

    pub(super) fn submit(&self, queue: Queue, packet: Packet) -> HsaResult<()> {
        self.check_fault(FaultOp::Submit)?;
        let state = self.queue(queue)?;
        match &packet {
            Packet::Barrier { deps, completion } => {
                if deps.len() > 5 {
                    return Err(invalid("a barrier-AND packet takes at most 5 signals"));
                }
                self.check_signals(deps)?;
                self.check_signals(&[*completion])?;
                state.barriers.fetch_add(1, Ordering::Relaxed);
            }
            Packet::Kernel { completion, .. } => {
                self.check_signals(&[*completion])?;
                state.kernels.fetch_add(1, Ordering::Relaxed);
            }
        }
        lock(&state.pending).push_back(packet);
        state.arrived.notify_all();
        Ok(())
    }
}
