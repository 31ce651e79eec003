//! Failures in the middle of a chain: faulting kernels (queue errors) and injected failures
//! of HSA calls. Nothing may hang, and the stream must stay usable where that makes sense.

use super::support::{addr_of, addr_of_mut, dispatch, watchdog, Fixture, Gate};
use crate::test_double::FaultOp;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn assert_names_fault<T: std::fmt::Debug>(result: Result<T, crate::hsa_interface::HsaError>) {
    let err = result.expect_err("the fault must be reported");
    assert!(
        err.message.contains("bad address 0xdead"),
        "error does not name the fault: {err}"
    );
}

/// A release action that counts its runs in the counter it comes with.
fn counted_release(runs: &Arc<AtomicUsize>) -> Option<Box<dyn FnOnce() + Send>> {
    let runs = Arc::clone(runs);
    Some(Box::new(move || {
        runs.fetch_add(1, Ordering::SeqCst);
    }))
}

#[test]
fn a_faulting_kernel_fails_synchronize_and_the_stream_goes_on_on_a_new_queue() {
    watchdog(|| {
        let fx = Fixture::new(1);
        let stream = fx.stream();
        let counter = fx.device_alloc(8);
        let step = fx.step_kernel(counter);
        let fault = fx.faulting_kernel("bad address 0xdead");
        let mut back = 0u64;
        stream.push_kernel(&dispatch(step, 0), None).unwrap();
        stream.push_kernel(&dispatch(fault, 0), None).unwrap();
        // Work behind the fault: may be refused at once, or accepted and then never run.
        let _ = stream.push_kernel(&dispatch(step, 1), None);
        // SAFETY: `back` outlives the stream, dropped below.
        let _ = unsafe { stream.push_device_to_host(addr_of_mut(&mut back), counter, 8, None) };
        let start = Instant::now();
        assert_names_fault(stream.synchronize());
        assert!(start.elapsed() < Duration::from_secs(5));
        assert_eq!(
            fx.read_u64(counter),
            1,
            "work before the fault ran, work after did not"
        );

        // The queue is dead; its failure was reported, so the stream goes on on a new queue
        // (defect 10 of issue 18: kernels were refused from then on).
        let dead = stream.hsa_queue();
        let released = Arc::new(AtomicUsize::new(0));
        stream
            .push_kernel(&dispatch(step, 1), counted_release(&released))
            .unwrap();
        assert_ne!(stream.hsa_queue(), dead);
        stream.synchronize().unwrap();
        assert_eq!(released.load(Ordering::SeqCst), 1);
        assert_eq!(fx.read_u64(counter), 2);

        // Copies do not need the queue and work.
        let value = 5u64;
        // SAFETY: `value` outlives the stream's synchronisation below.
        unsafe { stream.push_host_to_device(counter, addr_of(&value), 8, None) }.unwrap();
        // SAFETY: `back` outlives the stream's synchronisation below.
        unsafe { stream.push_device_to_host(addr_of_mut(&mut back), counter, 8, None) }.unwrap();
        stream.synchronize().unwrap();
        assert_eq!(back, 5);
        assert!(stream.query().unwrap());
        drop(stream);
        fx.finish_after_failure();
    });
}

#[test]
fn a_fault_fails_the_streams_sharing_its_queue() {
    watchdog(|| {
        let fx = Fixture::new(1);
        let a = fx.stream();
        let b = fx.stream();
        let gate = Gate::default();
        let nop = fx.kernel(|_| Ok(()));
        a.push_kernel(&dispatch(fx.gate_kernel(&gate), 0), None)
            .unwrap();
        a.push_kernel(&dispatch(fx.faulting_kernel("bad address 0xdead"), 0), None)
            .unwrap();
        b.push_kernel(&dispatch(nop, 0), None).unwrap();
        gate.open();
        assert_names_fault(b.synchronize());
        assert_names_fault(a.query().and_then(|_| a.synchronize()));
        drop((a, b));
        fx.finish_after_failure();
    });
}

#[test]
fn waiting_on_the_event_of_a_failed_stream_fails() {
    watchdog(|| {
        let fx = Fixture::new(2);
        let a = fx.stream();
        let b = fx.stream();
        let gate = Gate::default();
        let nop = fx.kernel(|_| Ok(()));
        let event = fx.manager.create_event();
        a.push_kernel(&dispatch(fx.gate_kernel(&gate), 0), None)
            .unwrap();
        a.push_kernel(&dispatch(fx.faulting_kernel("bad address 0xdead"), 0), None)
            .unwrap();
        a.record(&event).unwrap();
        // The wait is pushed before the fault happens.
        b.wait_for(&event).unwrap();
        b.push_kernel(&dispatch(nop, 0), None).unwrap();
        gate.open();
        assert_names_fault(b.synchronize());
        assert_names_fault(event.synchronize());
        assert_names_fault(event.query());

        // A wait pushed after the fault is refused, or fails at synchronize.
        let c = fx.stream();
        let late = c.wait_for(&event).and_then(|()| c.synchronize());
        assert_names_fault(late);

        // B's queue holds a barrier that will never pass: it is blocked for good. B's failure
        // was reported, so its next kernel goes to a new queue; copies need no queue.
        let blocked = b.hsa_queue();
        b.push_kernel(&dispatch(nop, 0), None).unwrap();
        assert_ne!(b.hsa_queue(), blocked);
        let device = fx.device_alloc(8);
        let value = 9u64;
        let mut back = 0u64;
        // SAFETY: `value` outlives the synchronisation of `b` below.
        unsafe { b.push_host_to_device(device, addr_of(&value), 8, None) }.unwrap();
        // SAFETY: `back` outlives the synchronisation of `b` below.
        unsafe { b.push_device_to_host(addr_of_mut(&mut back), device, 8, None) }.unwrap();
        b.synchronize().unwrap();
        assert_eq!(back, 9);
        assert_names_fault(a.synchronize());
        drop((a, b, c, event));
        fx.finish_after_failure();
    });
}

#[test]
fn a_queue_blocked_by_a_barrier_on_failed_work_fails_its_other_streams() {
    watchdog(|| {
        // Three queues, each stream taking the least used: A q0, B q1, C q2, (spare q0), D q1
        // beside B.
        let fx = Fixture::new(3);
        let a = fx.stream();
        let b = fx.stream();
        let c = fx.stream();
        let spare = fx.stream();
        let d = fx.stream();
        assert_eq!(b.hsa_queue(), d.hsa_queue());
        assert_eq!(a.hsa_queue(), spare.hsa_queue());
        drop(spare);
        let gate = Gate::default();
        let nop = fx.kernel(|_| Ok(()));
        let (ea, ed) = (fx.manager.create_event(), fx.manager.create_event());
        a.push_kernel(&dispatch(fx.gate_kernel(&gate), 0), None)
            .unwrap();
        a.push_kernel(&dispatch(fx.faulting_kernel("bad address 0xdead"), 0), None)
            .unwrap();
        a.record(&ea).unwrap();
        // B's barrier on A's work sits in q1; D's kernel is queued behind it.
        b.wait_for(&ea).unwrap();
        d.push_kernel(&dispatch(nop, 0), None).unwrap();
        d.record(&ed).unwrap();
        // C waits on D, whose work only went through q1, which has no HSA error.
        c.wait_for(&ed).unwrap();
        c.push_kernel(&dispatch(nop, 0), None).unwrap();
        gate.open();
        assert_names_fault(d.synchronize());
        assert_names_fault(c.synchronize());
        assert_names_fault(ed.synchronize());
        assert_names_fault(b.synchronize());
        drop((a, b, c, d, ea, ed));
        fx.finish_after_failure();
    });
}

/// Host memory for the pushes of a `failure_mid_chain` closure. A push's host buffer must stay
/// valid until the stream is synchronised, also when the push failed (part of it may be queued):
/// these live in `failure_mid_chain` until after its synchronisation, not in the closure.
struct HostBuffers {
    /// A copy source, 1.
    value: u64,
    /// A copy destination, 0 until written.
    back: u64,
    /// A larger copy source, zeroes.
    bytes: [u8; 64],
}

/// Pushes kernels 0 and 1, runs `failing` (which must fail), pushes kernel 2, and checks the
/// chain still ran all three in order and nothing leaked.
fn failure_mid_chain(
    fx: Fixture,
    failing: impl FnOnce(&Fixture, &super::support::TestStream, &mut HostBuffers),
) {
    let stream = fx.stream();
    let counter = fx.device_alloc(8);
    let step = fx.step_kernel(counter);
    let mut host = HostBuffers {
        value: 1,
        back: 0,
        bytes: [0; 64],
    };
    stream.push_kernel(&dispatch(step, 0), None).unwrap();
    stream.push_kernel(&dispatch(step, 1), None).unwrap();
    failing(&fx, &stream, &mut host);
    stream.push_kernel(&dispatch(step, 2), None).unwrap();
    stream.synchronize().unwrap();
    assert_eq!(fx.read_u64(counter), 3);

    // And the stream keeps working: a staged round trip.
    let device = fx.device_alloc(8);
    let value = 0xabcdu64;
    let mut back = 0u64;
    // SAFETY: `value` outlives the stream's synchronisation below.
    unsafe { stream.push_host_to_device(device, addr_of(&value), 8, None) }.unwrap();
    // SAFETY: `back` outlives the stream's synchronisation below.
    unsafe { stream.push_device_to_host(addr_of_mut(&mut back), device, 8, None) }.unwrap();
    stream.synchronize().unwrap();
    assert_eq!(back, 0xabcd);
    drop(stream);
    let stats = fx.manager.stats();
    assert_eq!(
        stats.signals_idle, stats.signals_created,
        "signals leaked: {stats:?}"
    );
    fx.finish_clean();
}

fn expect_injected<T: std::fmt::Debug>(result: Result<T, crate::hsa_interface::HsaError>) {
    let err = result.expect_err("the injected failure must be returned");
    assert!(err.message.contains("injected"), "unexpected error: {err}");
}

#[test]
fn failed_copy_submission_mid_chain() {
    watchdog(|| {
        failure_mid_chain(Fixture::new(1), |fx, stream, host| {
            let device = fx.device_alloc(8);
            fx.hsa.fail_after(FaultOp::AsyncCopy, 0);
            // SAFETY: `host` outlives the stream's synchronisation in `failure_mid_chain`.
            let pushed =
                unsafe { stream.push_host_to_device(device, addr_of(&host.value), 8, None) };
            expect_injected(pushed);
            fx.hsa.fail_after(FaultOp::AsyncCopy, 0);
            let back = addr_of_mut(&mut host.back);
            // SAFETY: `host` outlives the stream's synchronisation in `failure_mid_chain`.
            expect_injected(unsafe { stream.push_device_to_host(back, device, 8, None) });
            let gpu = fx.hsa.gpu_agent();
            fx.hsa.fail_after(FaultOp::AsyncCopy, 0);
            expect_injected(stream.push_device_to_device(device, gpu, device, gpu, 8));
        });
    });
}

#[test]
fn failed_copy_after_the_host_step_was_registered() {
    watchdog(|| {
        failure_mid_chain(Fixture::new(1), |fx, stream, host| {
            // A pending gate makes the staged copy register its host step first; then the
            // copy fails. The host step must still complete and the buffer come back.
            let gate = Gate::default();
            stream
                .push_kernel(&dispatch(fx.gate_kernel(&gate), 0), None)
                .unwrap();
            let device = fx.device_alloc(8);
            fx.hsa.fail_after(FaultOp::AsyncCopy, 0);
            // SAFETY: `host` lives in `failure_mid_chain` until after the stream's
            // synchronisation, so the registered host step still reads live memory.
            let pushed =
                unsafe { stream.push_host_to_device(device, addr_of(&host.value), 8, None) };
            expect_injected(pushed);
            assert_eq!(fx.hsa.stats().handlers_registered, 1);
            gate.open();
        });
    });
}

#[test]
fn failed_lock_of_a_large_copy() {
    watchdog(|| {
        let fx = Fixture::with_config(|config| config.max_async_copy_bytes = 16);
        failure_mid_chain(fx, |fx, stream, host| {
            let device = fx.device_alloc(64);
            let source = host.bytes.as_ptr() as usize;
            fx.hsa.fail_after(FaultOp::LockHostMemory, 0);
            // SAFETY: `host` outlives the stream's synchronisation in `failure_mid_chain`.
            expect_injected(unsafe { stream.push_host_to_device(device, source, 64, None) });
            // The lock succeeds, the copy fails: the buffer is unlocked at once.
            fx.hsa.fail_after(FaultOp::AsyncCopy, 0);
            // SAFETY: `host` outlives the stream's synchronisation in `failure_mid_chain`.
            expect_injected(unsafe { stream.push_host_to_device(device, source, 64, None) });
            assert_eq!(fx.hsa.stats().locks_live, 0);
        });
    });
}

#[test]
fn failed_staging_allocation() {
    watchdog(|| {
        failure_mid_chain(Fixture::new(1), |fx, stream, host| {
            let device = fx.device_alloc(8);
            fx.hsa.fail_after(FaultOp::Allocate, 0);
            // SAFETY: `host` outlives the stream's synchronisation in `failure_mid_chain`.
            let pushed =
                unsafe { stream.push_host_to_device(device, addr_of(&host.value), 8, None) };
            expect_injected(pushed);
            fx.hsa.fail_after(FaultOp::AllowAccess, 0);
            let back = addr_of_mut(&mut host.back);
            // SAFETY: `host` outlives the stream's synchronisation in `failure_mid_chain`.
            expect_injected(unsafe { stream.push_device_to_host(back, device, 8, None) });
            assert_eq!(
                fx.hsa.stats().host_live,
                0,
                "a half-made staging buffer leaked"
            );
        });
    });
}

#[test]
fn failed_kernel_submission() {
    watchdog(|| {
        failure_mid_chain(Fixture::new(1), |fx, stream, _host| {
            let nop = fx.kernel(|_| Ok(()));
            let released = Arc::new(AtomicUsize::new(0));
            fx.hsa.fail_after(FaultOp::Submit, 0);
            expect_injected(stream.push_kernel(&dispatch(nop, 0), counted_release(&released)));
            // The release of a refused kernel waits for the stream's earlier work, which may
            // still read what it frees (defect 4 of issue 18), then runs.
            stream.synchronize().unwrap();
            assert_eq!(
                released.load(Ordering::SeqCst),
                1,
                "release runs for a refused kernel"
            );
            // With nothing pending it runs at once.
            fx.hsa.fail_after(FaultOp::Submit, 0);
            expect_injected(stream.push_kernel(&dispatch(nop, 0), counted_release(&released)));
            assert_eq!(released.load(Ordering::SeqCst), 2);
        });
    });
}

/// Defect 4 of issue 18: the release of a kernel that could not be queued (its launch
/// environment, its argument buffer) ran at once, while the stream's earlier work of the same
/// launch (the copy of that environment) could still read or write it. It now waits for that
/// work: here a kernel held back by a gate.
#[test]
fn a_refused_kernels_release_waits_for_the_streams_earlier_work() {
    watchdog(|| {
        failure_mid_chain(Fixture::new(1), |fx, stream, _host| {
            let gate = Gate::default();
            stream
                .push_kernel(&dispatch(fx.gate_kernel(&gate), 0), None)
                .unwrap();
            let nop = fx.kernel(|_| Ok(()));
            let released = Arc::new(AtomicUsize::new(0));
            fx.hsa.fail_after(FaultOp::Submit, 0);
            expect_injected(stream.push_kernel(&dispatch(nop, 0), counted_release(&released)));
            std::thread::sleep(Duration::from_millis(20));
            assert_eq!(
                released.load(Ordering::SeqCst),
                0,
                "released while the stream's earlier work still ran"
            );
            gate.open();
            stream.synchronize().unwrap();
            assert_eq!(released.load(Ordering::SeqCst), 1);
        });
    });
}

#[test]
fn failed_barrier_or_kernel_after_a_pending_copy() {
    watchdog(|| {
        failure_mid_chain(Fixture::new(1), |fx, stream, _host| {
            fx.hsa.set_copy_jitter(Duration::from_millis(20));
            let nop = fx.kernel(|_| Ok(()));
            let (a, b) = (fx.device_alloc(8), fx.device_alloc(8));
            let gpu = fx.hsa.gpu_agent();
            // A pending copy makes the kernel need a barrier; the barrier fails.
            stream.push_device_to_device(a, gpu, b, gpu, 8).unwrap();
            fx.hsa.fail_after(FaultOp::Submit, 0);
            expect_injected(stream.push_kernel(&dispatch(nop, 0), None));
            // Again, now the barrier goes in and the kernel fails: the barrier stays a link.
            stream.push_device_to_device(a, gpu, b, gpu, 8).unwrap();
            fx.hsa.fail_after(FaultOp::Submit, 1);
            expect_injected(stream.push_kernel(&dispatch(nop, 0), None));
            fx.hsa.set_copy_jitter(Duration::ZERO);
        });
    });
}

#[test]
fn failed_handler_registration() {
    watchdog(|| {
        failure_mid_chain(Fixture::new(1), |fx, stream, _host| {
            let device = fx.device_alloc(8);
            fx.write_u64(device, 3);
            let mut back = 0u64;
            fx.hsa.fail_after(FaultOp::OnSignalZero, 0);
            // SAFETY: `back` outlives the stream's synchronisation below.
            let pushed =
                unsafe { stream.push_device_to_host(addr_of_mut(&mut back), device, 8, None) };
            expect_injected(pushed);
            // Staged host-to-device behind pending work registers a handler too.
            let gate = Gate::default();
            stream
                .push_kernel(&dispatch(fx.gate_kernel(&gate), 0), None)
                .unwrap();
            let value = 1u64;
            fx.hsa.fail_after(FaultOp::OnSignalZero, 0);
            // SAFETY: `value` outlives the stream's synchronisation below.
            let pushed = unsafe { stream.push_host_to_device(device, addr_of(&value), 8, None) };
            expect_injected(pushed);
            gate.open();
            stream.synchronize().unwrap();
            assert_eq!(
                back, 0,
                "a copy whose host step never registered writes nothing"
            );
            assert_eq!(
                fx.read_u64(device),
                3,
                "nor does the refused host-to-device copy"
            );
        });
    });
}

#[test]
fn failed_signal_creation() {
    watchdog(|| {
        let fx = Fixture::with_config(|config| config.initial_signals = 0);
        failure_mid_chain(fx, |fx, stream, host| {
            let nop = fx.kernel(|_| Ok(()));
            fx.hsa.fail_after(FaultOp::CreateSignal, 0);
            expect_injected(stream.push_kernel(&dispatch(nop, 0), None));
            // The second signal of a staged copy fails.
            let device = fx.device_alloc(8);
            let back = addr_of_mut(&mut host.back);
            fx.hsa.fail_after(FaultOp::CreateSignal, 1);
            // SAFETY: `host` outlives the stream's synchronisation in `failure_mid_chain`.
            let result = unsafe { stream.push_device_to_host(back, device, 8, None) };
            // The pool may have had one idle signal, then the failure hits the next creation.
            if result.is_ok() {
                stream.synchronize().unwrap();
            }
            fx.hsa.fail_after(FaultOp::CreateSignal, usize::MAX);
        });
    });
}

#[test]
fn failed_wait_barrier_submission() {
    watchdog(|| {
        failure_mid_chain(Fixture::new(2), |fx, stream, _host| {
            let other = fx.stream();
            let gate = Gate::default();
            let event = fx.manager.create_event();
            other
                .push_kernel(&dispatch(fx.gate_kernel(&gate), 0), None)
                .unwrap();
            other.record(&event).unwrap();
            fx.hsa.fail_after(FaultOp::Submit, 0);
            expect_injected(stream.wait_for(&event));
            gate.open();
            other.synchronize().unwrap();
        });
    });
}

#[test]
fn failed_queue_creation_is_returned_by_create_stream() {
    watchdog(|| {
        let fx = Fixture::new(2);
        fx.hsa.fail_after(FaultOp::CreateQueue, 0);
        expect_injected(fx.manager.create_stream());
        // The next stream gets the other queue, and the one after retries the first.
        let a = fx.stream();
        let b = fx.stream();
        assert_ne!(a.hsa_queue(), b.hsa_queue());
        drop((a, b));
        fx.finish_clean();
    });
}

/// A wait with a time limit ends when the limit passes (the work stays the stream's), when the
/// work completes, and when a queue the work went through fails: `synchronize` then reports it.
#[test]
fn a_wait_with_a_time_limit_leaves_the_work_and_its_fault_to_synchronize() {
    watchdog(|| {
        let fx = Fixture::new(1);
        let stream = fx.stream();
        let gate = Gate::default();
        stream
            .push_kernel(&dispatch(fx.gate_kernel(&gate), 0), None)
            .unwrap();
        let start = Instant::now();
        assert!(!stream.wait_within(Duration::from_millis(20), true));
        assert!(start.elapsed() >= Duration::from_millis(20));
        assert!(!stream.query().unwrap(), "the work is still the stream's");
        gate.open();
        assert!(stream.wait_within(Duration::from_secs(5), false));
        stream.synchronize().unwrap();

        let fault = fx.faulting_kernel("bad address 0xdead");
        stream.push_kernel(&dispatch(fault, 0), None).unwrap();
        let start = Instant::now();
        assert!(stream.wait_within(Duration::from_secs(5), false));
        assert!(start.elapsed() < Duration::from_secs(5));
        assert_names_fault(stream.synchronize());
        drop(stream);
        fx.finish_after_failure();
    });
}
