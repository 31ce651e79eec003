//! The device's timing of a stream's work (plugin ABI 1.5): one span per counted push, in push
//! order, on the host's clock, read before the signals are recycled; nothing for internal
//! copies, failed pushes or discarded work; no profiling call while timing is off.

use super::support::{addr_of, addr_of_mut, dispatch, watchdog, Fixture, Gate};
use crate::stream::{monotonic_ns, WorkSpan};
use crate::test_double::FaultOp;
use std::time::Duration;

/// A fixture whose device times its work, with host copies of 64 KiB and more locked.
fn timed_fixture(num_queues: u32) -> Fixture {
    let fx = Fixture::with_config(|config| {
        config.num_queues = num_queues;
        config.max_async_copy_bytes = 64 * 1024;
    });
    fx.manager.start_work_timing().expect("timing starts");
    fx
}

/// Each span is ordered, lies within `[before, after]` give or take its uncertainty, and
/// starts after the one before it ended (a stream's work runs in order).
fn check_spans(spans: &[WorkSpan], before: u64, after: u64) {
    for (i, span) in spans.iter().enumerate() {
        let slack = span.uncertainty_ns;
        assert!(span.start_ns <= span.end_ns, "span {i}: {span:?}");
        assert!(
            span.start_ns + slack >= before,
            "span {i} before the pushes: {span:?}"
        );
        assert!(
            span.end_ns <= after + slack,
            "span {i} after synchronize: {span:?}"
        );
        if let Some(next) = spans.get(i + 1) {
            assert!(
                span.end_ns <= next.start_ns + slack + next.uncertainty_ns,
                "span {i} ends after span {} starts: {span:?} {next:?}",
                i + 1
            );
        }
    }
}

#[test]
fn each_counted_push_is_one_span_in_push_order() {
    watchdog(|| {
        let fx = timed_fixture(1);
        let stream = fx.stream();
        assert!(stream.start_timing());
        let device = fx.device_alloc(128 * 1024);
        let other = fx.device_alloc(128 * 1024);
        let slow = fx.kernel(|_| {
            std::thread::sleep(Duration::from_millis(3));
            Ok(())
        });
        let small = [7u8; 100];
        let large = vec![9u8; 128 * 1024];
        let mut back = [0u8; 100];
        let environment = [1u8; 64];
        let before = monotonic_ns();
        // Staged with nothing pending (host step at once), a kernel, locked, staged behind
        // pending work (two steps), device to device, the plugin's own copy (not counted),
        // and a last kernel.
        // SAFETY: `small` outlives the stream's synchronisation below.
        unsafe { stream.push_host_to_device(device, small.as_ptr() as usize, 100, None) }.unwrap();
        stream.push_kernel(&dispatch(slow, 0), None).unwrap();
        // SAFETY: `large` outlives the stream's synchronisation below.
        unsafe { stream.push_host_to_device(device, large.as_ptr() as usize, large.len(), None) }
            .unwrap();
        // SAFETY: `back` outlives the stream's synchronisation below.
        unsafe { stream.push_device_to_host(back.as_mut_ptr() as usize, device, 100, None) }
            .unwrap();
        let gpu = fx.hsa.gpu_agent();
        stream
            .push_device_to_device(other, gpu, device, gpu, 4096)
            .unwrap();
        // SAFETY: `environment` outlives the stream's synchronisation below.
        unsafe { stream.push_internal_host_to_device(other, environment.as_ptr() as usize, 64) }
            .unwrap();
        stream.push_kernel(&dispatch(slow, 0), None).unwrap();
        stream.synchronize().unwrap();
        let after = monotonic_ns();
        assert_eq!(back, [9u8; 100]);
        let spans = stream.take_work_times().unwrap();
        assert_eq!(spans.len(), 6, "{spans:?}");
        check_spans(&spans, before, after);
        for kernel in [spans[1], spans[5]] {
            assert!(
                kernel.end_ns - kernel.start_ns + 2 * kernel.uncertainty_ns >= 3_000_000,
                "a 3 ms kernel timed {kernel:?}"
            );
        }
        assert!(
            spans.iter().all(|s| s.uncertainty_ns < 1_000_000),
            "{spans:?}"
        );
        // Handed out once.
        assert_eq!(stream.take_work_times().unwrap(), Vec::new());
        drop(stream);
        fx.finish_clean();
    });
}

#[test]
fn a_staged_copy_is_one_span_from_its_first_step_to_its_last() {
    watchdog(|| {
        let fx = timed_fixture(1);
        fx.hsa.set_copy_duration(Duration::from_millis(4));
        let stream = fx.stream();
        stream.start_timing();
        let device = fx.device_alloc(4096);
        let source = [3u8; 4096];
        let mut back = [0u8; 4096];
        // Nothing pending: the host step runs inside the push, before the copy starts.
        let pushed = monotonic_ns();
        // SAFETY: `source` outlives the stream's synchronisation below.
        unsafe { stream.push_host_to_device(device, source.as_ptr() as usize, 4096, None) }
            .unwrap();
        let returned = monotonic_ns();
        // Behind the copy: the copy into the staging buffer, then the handler's memcpy.
        // SAFETY: `back` outlives the stream's synchronisation below.
        unsafe { stream.push_device_to_host(back.as_mut_ptr() as usize, device, 4096, None) }
            .unwrap();
        stream.synchronize().unwrap();
        assert_eq!(back, source);
        let spans = stream.take_work_times().unwrap();
        assert_eq!(spans.len(), 2, "two copies of two steps each: {spans:?}");
        let to_device = spans[0];
        assert!(
            (pushed..=returned).contains(&to_device.start_ns),
            "the span starts with the host step run by the push: {to_device:?}, pushed \
             {pushed}..{returned}"
        );
        for span in &spans {
            assert!(
                span.end_ns - span.start_ns + 2 * span.uncertainty_ns >= 4_000_000,
                "the 4 ms copy step is inside the span: {span:?}"
            );
        }
        drop(stream);
        fx.finish_clean();
    });
}

#[test]
fn releasing_the_timing_discards_what_was_not_asked_for() {
    watchdog(|| {
        let fx = timed_fixture(1);
        let stream = fx.stream();
        stream.start_timing();
        let device = fx.device_alloc(8);
        let value = 5u64;
        let nothing = fx.kernel(|_| Ok(()));
        // SAFETY: `value` outlives the stream's synchronisation below.
        unsafe { stream.push_host_to_device(device, addr_of(&value), 8, None) }.unwrap();
        stream.push_kernel(&dispatch(nothing, 0), None).unwrap();
        stream.synchronize().unwrap();
        // The queue is released and the stream handed to the next user.
        stream.stop_timing();
        assert_eq!(stream.take_work_times().unwrap(), Vec::new());
        stream.start_timing();
        assert_eq!(stream.take_work_times().unwrap(), Vec::new());
        stream.push_kernel(&dispatch(nothing, 0), None).unwrap();
        stream.synchronize().unwrap();
        assert_eq!(stream.take_work_times().unwrap().len(), 1);
        drop(stream);
        fx.finish_clean();
    });
}

#[test]
fn untimed_work_makes_no_profiling_call() {
    watchdog(|| {
        let fx = Fixture::new(1);
        let stream = fx.stream();
        assert!(!stream.start_timing(), "the device does not time its work");
        super::support::copy_kernel_rounds(&fx, &stream, 3, 1);
        assert_eq!(stream.take_work_times().unwrap(), Vec::new());
        assert_eq!(fx.hsa.stats().profiling_calls, 0);
        // Timing started for the device, but not for this stream (synchronous work).
        fx.manager.start_work_timing().unwrap();
        let calls = fx.hsa.stats().profiling_calls;
        super::support::copy_kernel_rounds(&fx, &stream, 3, 2);
        assert_eq!(stream.take_work_times().unwrap(), Vec::new());
        assert_eq!(fx.hsa.stats().profiling_calls, calls);
        drop(stream);
        fx.finish_clean();
    });
}

#[test]
fn queues_created_before_and_after_timing_started_are_profiled() {
    watchdog(|| {
        let fx = Fixture::new(2);
        let early = fx.stream();
        fx.manager.start_work_timing().unwrap();
        let late = fx.stream();
        assert_ne!(early.hsa_queue(), late.hsa_queue());
        let nothing = fx.kernel(|_| Ok(()));
        for stream in [&early, &late] {
            assert!(stream.start_timing());
            stream.push_kernel(&dispatch(nothing, 0), None).unwrap();
            stream.synchronize().unwrap();
            assert_eq!(stream.take_work_times().unwrap().len(), 1);
        }
        drop((early, late));
        fx.finish_clean();
    });
}

#[test]
fn stamps_of_an_unprofiled_queue_are_an_error_not_a_wrong_span() {
    watchdog(|| {
        let fx = timed_fixture(1);
        let stream = fx.stream();
        stream.start_timing();
        let nothing = fx.kernel(|_| Ok(()));
        // A profiled kernel leaves its stamps in the signal, which the pool hands out again.
        stream.push_kernel(&dispatch(nothing, 0), None).unwrap();
        stream.synchronize().unwrap();
        assert_eq!(stream.take_work_times().unwrap().len(), 1);
        fx.hsa.unprofile_queue(stream.hsa_queue());
        std::thread::sleep(Duration::from_millis(2));
        stream.push_kernel(&dispatch(nothing, 0), None).unwrap();
        stream.synchronize().unwrap();
        let error = stream.take_work_times().unwrap_err();
        assert!(error.message.contains("not within"), "{}", error.message);
        // Handed out (as an error) once.
        assert_eq!(stream.take_work_times().unwrap(), Vec::new());
        drop(stream);
        fx.finish_clean();
    });
}

#[test]
fn a_push_that_failed_is_not_counted() {
    watchdog(|| {
        let fx = timed_fixture(1);
        let stream = fx.stream();
        stream.start_timing();
        let gate = Gate::default();
        let device = fx.device_alloc(4096);
        let source = [1u8; 4096];
        stream
            .push_kernel(&dispatch(fx.gate_kernel(&gate), 0), None)
            .unwrap();
        // Staged behind the kernel: its host step is queued, then the copy fails.
        fx.hsa.fail_after(FaultOp::AsyncCopy, 0);
        // SAFETY: `source` outlives the stream's synchronisation below, which the queued host
        // step of this failed push also waits for.
        unsafe { stream.push_host_to_device(device, source.as_ptr() as usize, 4096, None) }
            .unwrap_err();
        let value = 2u64;
        // SAFETY: `value` outlives the stream's synchronisation below.
        unsafe { stream.push_host_to_device(device, addr_of(&value), 8, None) }.unwrap();
        gate.open();
        stream.synchronize().unwrap();
        assert_eq!(stream.take_work_times().unwrap().len(), 2);
        drop(stream);
        fx.finish_clean();
    });
}

#[test]
fn a_query_that_found_the_work_done_gives_its_times() {
    watchdog(|| {
        let fx = timed_fixture(1);
        let stream = fx.stream();
        stream.start_timing();
        let device = fx.device_alloc(8);
        let mut value = 0u64;
        let nothing = fx.kernel(|_| Ok(()));
        stream.push_kernel(&dispatch(nothing, 0), None).unwrap();
        // SAFETY: `value` outlives the stream, which the query loop below finds complete.
        unsafe { stream.push_device_to_host(addr_of_mut(&mut value), device, 8, None) }.unwrap();
        while !stream.query().unwrap() {
            std::thread::sleep(Duration::from_micros(100));
        }
        assert_eq!(stream.take_work_times().unwrap().len(), 2);
        drop(stream);
        fx.finish_clean();
    });
}

#[test]
fn work_of_a_failed_chain_is_never_handed_out() {
    watchdog(|| {
        let fx = timed_fixture(1);
        let stream = fx.stream();
        stream.start_timing();
        let device = fx.device_alloc(8);
        let value = 4u64;
        // SAFETY: `value` outlives the stream, dropped below.
        unsafe { stream.push_host_to_device(device, addr_of(&value), 8, None) }.unwrap();
        stream
            .push_kernel(&dispatch(fx.faulting_kernel("boom"), 0), None)
            .unwrap();
        stream.synchronize().unwrap_err();
        assert_eq!(stream.take_work_times().unwrap(), Vec::new());
        // The stream goes on on a new queue, profiled too.
        let nothing = fx.kernel(|_| Ok(()));
        stream.push_kernel(&dispatch(nothing, 0), None).unwrap();
        stream.synchronize().unwrap();
        assert_eq!(stream.take_work_times().unwrap().len(), 1);
        drop(stream);
        fx.finish_after_failure();
    });
}

#[test]
fn a_queue_that_could_not_be_profiled_still_runs_its_work_untimed() {
    watchdog(|| {
        let fx = timed_fixture(1);
        fx.hsa.fail_after(FaultOp::EnableQueueProfiling, 0);
        let stream = fx.stream();
        stream.start_timing();
        let counter = fx.device_alloc(8);
        let step = fx.step_kernel(counter);
        stream.push_kernel(&dispatch(step, 0), None).unwrap();
        stream.synchronize().unwrap();
        assert_eq!(fx.read_u64(counter), 1, "the kernel ran");
        // Its packet carries no stamps: an error, not a span.
        assert!(stream.take_work_times().is_err());
        drop(stream);
        fx.finish_clean();
    });
}
