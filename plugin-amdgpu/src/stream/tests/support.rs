//! Fixture, watchdog and kernels shared by the tests.

use crate::hsa_interface::KernelDispatch;
use crate::stream::{Stream, StreamConfig, StreamManager, StreamPolicy};
use crate::test_double::{DeviceMemory, SoftwareHsa};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::{Duration, Instant};

pub(super) type TestStream = Stream<SoftwareHsa>;

/// How long a test body may run before it counts as hung.
const WATCHDOG: Duration = Duration::from_secs(20);

/// Runs `body` on a thread; panics if it has not finished within the watchdog time, and
/// passes its panic on.
pub(super) fn watchdog(body: impl FnOnce() + Send + 'static) {
    let (done_tx, done_rx) = mpsc::channel();
    let handle = thread::spawn(move || {
        body();
        let _ = done_tx.send(());
    });
    match done_rx.recv_timeout(WATCHDOG) {
        Ok(()) | Err(mpsc::RecvTimeoutError::Disconnected) => {
            if let Err(panic) = handle.join() {
                std::panic::resume_unwind(panic);
            }
        }
        Err(mpsc::RecvTimeoutError::Timeout) => {
            panic!("test body still running after {WATCHDOG:?}: it hangs")
        }
    }
}

pub(super) struct Fixture {
    pub(super) hsa: Arc<SoftwareHsa>,
    pub(super) manager: StreamManager<SoftwareHsa>,
    pub(super) mem: DeviceMemory,
    next_kernel: AtomicU64,
}

impl Fixture {
    pub(super) fn new(num_queues: u32) -> Self {
        Self::with_config(|config| config.num_queues = num_queues)
    }

    /// Defaults: 4 queues, 8 initial signals, LLVM's other defaults (whatever the environment
    /// of the test run says).
    pub(super) fn with_config(adjust: impl FnOnce(&mut StreamConfig)) -> Self {
        Self::with_policy(adjust, StreamPolicy::LLVM_DEFAULTS)
    }

    pub(super) fn with_policy(
        adjust: impl FnOnce(&mut StreamConfig),
        policy: StreamPolicy,
    ) -> Self {
        let hsa = Arc::new(SoftwareHsa::new());
        let mut config =
            StreamConfig::with_defaults(hsa.gpu_agent(), hsa.host_agent(), hsa.host_pool());
        config.initial_signals = 8;
        adjust(&mut config);
        let manager =
            StreamManager::with_policy(Arc::clone(&hsa), config, policy).expect("stream manager");
        let mem = hsa.memory();
        Fixture {
            hsa,
            manager,
            mem,
            next_kernel: AtomicU64::new(0x100),
        }
    }

    pub(super) fn stream(&self) -> TestStream {
        self.manager.create_stream().expect("stream")
    }

    pub(super) fn device_alloc(&self, size: usize) -> usize {
        use crate::hsa_interface::HsaInterface;
        self.hsa
            .allocate(self.hsa.device_pool(), size)
            .expect("device memory")
    }

    /// Registers `kernel` under a fresh kernel object.
    pub(super) fn kernel(
        &self,
        kernel: impl Fn(usize) -> Result<(), String> + Send + Sync + 'static,
    ) -> u64 {
        let object = self.next_kernel.fetch_add(1, Ordering::Relaxed);
        self.hsa.register_kernel(object, kernel);
        object
    }

    /// A kernel that checks the u64 at `counter` equals its kernarg, then increments it:
    /// launched with kernargs 0, 1, 2, ... it fails unless the launches run in that order.
    pub(super) fn step_kernel(&self, counter: usize) -> u64 {
        let mem = self.mem.clone();
        self.kernel(move |expected| {
            let seen = mem.read_u64(counter)?;
            if seen != expected as u64 {
                return Err(format!("out of order: counter {seen}, expected {expected}"));
            }
            mem.write_u64(counter, seen + 1)
        })
    }

    /// A kernel that blocks until `gate` opens (a fault after 10 s).
    pub(super) fn gate_kernel(&self, gate: &Gate) -> u64 {
        let gate = gate.clone();
        self.kernel(move |_| gate.wait())
    }

    /// A kernel that fails like a memory fault with `message`.
    pub(super) fn faulting_kernel(&self, message: &'static str) -> u64 {
        self.kernel(move |_| Err(message.to_string()))
    }

    pub(super) fn read_u64(&self, addr: usize) -> u64 {
        self.mem.read_u64(addr).expect("device read")
    }

    pub(super) fn write_u64(&self, addr: usize, value: u64) {
        self.mem.write_u64(addr, value).expect("device write")
    }

    pub(super) fn assert_no_misuse(&self) {
        let misuse = self.hsa.misuse();
        assert!(misuse.is_empty(), "the test double saw misuse: {misuse:?}");
    }

    /// Shuts down and checks every signal, queue, staging buffer and lock was given back.
    pub(super) fn finish_clean(self) {
        self.assert_no_misuse();
        let stats = self.manager.stats();
        assert_eq!(
            stats.staging_outstanding, 0,
            "staging buffers still out: {stats:?}"
        );
        assert_eq!(stats.signals_parked, 0, "parked signals: {stats:?}");
        self.manager.shutdown().expect("shutdown");
        let hsa = self.hsa.stats();
        assert_eq!(hsa.signals_live, 0, "signals leaked: {hsa:?}");
        assert_eq!(hsa.queues_live, 0, "queues leaked: {hsa:?}");
        assert_eq!(hsa.host_live, 0, "host-pool memory leaked: {hsa:?}");
        assert_eq!(hsa.locks_live, 0, "host memory still locked: {hsa:?}");
        self.assert_no_misuse();
    }

    /// Shuts down after a test that failed work on purpose: only checks for misuse.
    pub(super) fn finish_after_failure(self) {
        self.assert_no_misuse();
        let _ = self.manager.shutdown();
        self.assert_no_misuse();
    }
}

pub(super) fn dispatch(kernel_object: u64, kernarg: usize) -> KernelDispatch {
    KernelDispatch {
        kernel_object,
        kernarg_address: kernarg,
        workgroup_size: [64, 1, 1],
        grid_size: [64, 1, 1],
        group_segment_size: 0,
        private_segment_size: 0,
    }
}

/// Lets a gate kernel finish.
#[derive(Clone, Default)]
pub(super) struct Gate(Arc<AtomicBool>);

impl Gate {
    pub(super) fn open(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    fn wait(&self) -> Result<(), String> {
        let start = Instant::now();
        while !self.0.load(Ordering::SeqCst) {
            if start.elapsed() > Duration::from_secs(10) {
                return Err("the gate never opened".into());
            }
            thread::sleep(Duration::from_millis(1));
        }
        Ok(())
    }
}

/// Address of a host value, as the copy API takes it.
pub(super) fn addr_of<T>(value: &T) -> usize {
    value as *const T as usize
}

pub(super) fn addr_of_mut<T>(value: &mut T) -> usize {
    value as *mut T as usize
}

/// Runs `rounds` of host-to-device copy, a kernel checking and incrementing the value, and a
/// copy back, on `stream`; values are tagged so two streams' rounds cannot be confused.
/// Returns after synchronize with the values checked.
pub(super) fn copy_kernel_rounds(fx: &Fixture, stream: &TestStream, rounds: usize, tag: u64) {
    let buffer = fx.device_alloc(8);
    let mem = fx.mem.clone();
    let bump = fx.kernel(move |expected| {
        let seen = mem.read_u64(buffer)?;
        if seen != expected as u64 {
            return Err(format!(
                "kernel saw {seen}, expected {expected}: copy not ordered"
            ));
        }
        mem.write_u64(buffer, seen + 1)
    });
    let inputs: Vec<u64> = (0..rounds as u64).map(|r| r * 1000 + tag).collect();
    let mut outputs = vec![0u64; rounds];
    for round in 0..rounds {
        // SAFETY: `inputs` outlives the stream's synchronisation below.
        unsafe { stream.push_host_to_device(buffer, addr_of(&inputs[round]), 8, None) }
            .expect("push h2d");
        stream
            .push_kernel(&dispatch(bump, inputs[round] as usize), None)
            .expect("push kernel");
        // SAFETY: `outputs` outlives the stream's synchronisation below, one value per copy.
        unsafe { stream.push_device_to_host(addr_of_mut(&mut outputs[round]), buffer, 8, None) }
            .expect("push d2h");
    }
    stream.synchronize().expect("synchronize");
    let expected: Vec<u64> = inputs.iter().map(|v| v + 1).collect();
    assert_eq!(outputs, expected);
}
