//! Events: record, wait across streams, synchronize.

use super::support::{dispatch, watchdog, Fixture, Gate};
use crate::hsa_interface::QueueOrder;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

fn event_orders_across_streams(num_queues: u32) {
    let fx = Fixture::new(num_queues);
    let a = fx.stream();
    let b = fx.stream();
    let buffer = fx.device_alloc(8);
    let mem = fx.mem.clone();
    let produce = fx.kernel(move |_| {
        thread::sleep(Duration::from_millis(30));
        mem.write_u64(buffer, 42)
    });
    let mem = fx.mem.clone();
    let consume = fx.kernel(move |_| match mem.read_u64(buffer)? {
        42 => mem.write_u64(buffer, 43),
        other => Err(format!("consumer ran before the producer: saw {other}")),
    });
    let event = fx.manager.create_event();
    a.push_kernel(&dispatch(produce, 0), None).unwrap();
    a.record(&event).unwrap();
    b.wait_for(&event).unwrap();
    b.push_kernel(&dispatch(consume, 0), None).unwrap();
    let mut seen = 0u64;
    // SAFETY: `seen` outlives the synchronisation of `b` below.
    unsafe { b.push_device_to_host(super::support::addr_of_mut(&mut seen), buffer, 8, None) }
        .unwrap();
    b.synchronize().unwrap();
    assert_eq!(seen, 43);
    // One barrier for the wait; the kernel after it on the same queue needs none.
    let (barriers, _) = fx.hsa.packets(b.hsa_queue());
    assert_eq!(barriers, 1);
    a.synchronize().unwrap();
    drop((a, b, event));
    fx.finish_clean();
}

#[test]
fn an_event_orders_work_of_streams_on_different_queues() {
    watchdog(|| event_orders_across_streams(2));
}

#[test]
fn an_event_orders_work_of_streams_sharing_a_queue() {
    watchdog(|| event_orders_across_streams(1));
}

#[test]
fn waiting_on_completed_work_adds_no_barrier() {
    watchdog(|| {
        let fx = Fixture::new(2);
        let a = fx.stream();
        let b = fx.stream();
        let counter = fx.device_alloc(8);
        let step = fx.step_kernel(counter);
        let event = fx.manager.create_event();

        // Never recorded: nothing to wait for.
        b.wait_for(&event).unwrap();
        // Recorded on an idle stream: nothing to wait for.
        a.record(&event).unwrap();
        b.wait_for(&event).unwrap();
        // Recorded on pending work that completed before the wait.
        a.push_kernel(&dispatch(step, 0), None).unwrap();
        a.record(&event).unwrap();
        event.synchronize().unwrap();
        b.wait_for(&event).unwrap();
        b.push_kernel(&dispatch(step, 1), None).unwrap();
        b.synchronize().unwrap();

        assert_eq!(fx.hsa.packets(b.hsa_queue()), (0, 1));
        assert_eq!(fx.read_u64(counter), 2);
        a.synchronize().unwrap();
        drop((a, b, event));
        fx.finish_clean();
    });
}

#[test]
fn a_stream_waiting_on_its_own_event_needs_no_barrier() {
    watchdog(|| {
        let fx = Fixture::new(1);
        let gate = Gate::default();
        let stream = fx.stream();
        let event = fx.manager.create_event();
        stream
            .push_kernel(&dispatch(fx.gate_kernel(&gate), 0), None)
            .unwrap();
        stream.record(&event).unwrap();
        stream.wait_for(&event).unwrap();
        assert_eq!(fx.hsa.packets(stream.hsa_queue()), (0, 1));
        gate.open();
        stream.synchronize().unwrap();
        drop((stream, event));
        fx.finish_clean();
    });
}

#[test]
fn event_synchronize_blocks_until_the_recorded_work_completed() {
    watchdog(|| {
        let fx = Fixture::new(1);
        let finished = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&finished);
        let slow = fx.kernel(move |_| {
            thread::sleep(Duration::from_millis(40));
            flag.store(true, Ordering::SeqCst);
            Ok(())
        });
        let blocked = Gate::default();
        let stream = fx.stream();
        let event = fx.manager.create_event();
        stream
            .push_kernel(&dispatch(fx.gate_kernel(&blocked), 0), None)
            .unwrap();
        stream.push_kernel(&dispatch(slow, 0), None).unwrap();
        stream.record(&event).unwrap();
        assert!(!event.query().unwrap());
        blocked.open();
        event.synchronize().unwrap();
        assert!(finished.load(Ordering::SeqCst));
        assert!(event.query().unwrap());
        // Work pushed after the record is not part of the event.
        let later = Gate::default();
        stream
            .push_kernel(&dispatch(fx.gate_kernel(&later), 0), None)
            .unwrap();
        event.synchronize().unwrap();
        later.open();
        stream.synchronize().unwrap();
        drop((stream, event));
        fx.finish_clean();
    });
}

fn ping_pong(num_queues: u32) {
    let fx = Fixture::new(num_queues);
    fx.hsa.set_copy_jitter(Duration::from_micros(100));
    let a = fx.stream();
    let b = fx.stream();
    let counter = fx.device_alloc(8);
    let step = fx.step_kernel(counter);
    let (ea, eb) = (fx.manager.create_event(), fx.manager.create_event());
    let scratch = fx.device_alloc(64);
    let other = fx.device_alloc(64);
    for round in 0..100 {
        let (me, peer_event, my_event) = if round % 2 == 0 {
            (&a, &eb, &ea)
        } else {
            (&b, &ea, &eb)
        };
        me.wait_for(peer_event).unwrap();
        // A copy between the wait and the kernel, to mix non-queue work into the chain.
        me.push_device_to_device(scratch, fx.hsa.gpu_agent(), other, fx.hsa.gpu_agent(), 64)
            .unwrap();
        me.push_kernel(&dispatch(step, round), None).unwrap();
        me.record(my_event).unwrap();
    }
    a.synchronize().unwrap();
    b.synchronize().unwrap();
    assert_eq!(fx.read_u64(counter), 100);
    drop((a, b, ea, eb));
    fx.finish_clean();
}

#[test]
fn ping_pong_between_streams_on_different_queues() {
    watchdog(|| ping_pong(2));
}

#[test]
fn ping_pong_between_streams_on_one_queue() {
    watchdog(|| ping_pong(1));
}

#[test]
fn a_wait_keeps_the_streams_own_pending_copy_ordered() {
    watchdog(|| {
        // B: slow copy, then a wait on A, then a kernel reading the copy. The kernel needs no
        // barrier of its own (the wait's barrier is on its queue), so that barrier must also
        // cover B's copy.
        let fx = Fixture::new(2);
        fx.hsa.set_copy_jitter(Duration::from_millis(30));
        let a = fx.stream();
        let b = fx.stream();
        let gate = Gate::default();
        let buffer = fx.device_alloc(8);
        let mem = fx.mem.clone();
        let check = fx.kernel(move |_| match mem.read_u64(buffer)? {
            11 => Ok(()),
            other => Err(format!("kernel ran before the copy: saw {other}")),
        });
        let event = fx.manager.create_event();
        let value = 11u64;
        a.push_kernel(&dispatch(fx.gate_kernel(&gate), 0), None)
            .unwrap();
        a.record(&event).unwrap();
        // SAFETY: `value` outlives the synchronisation of `b` below.
        unsafe { b.push_host_to_device(buffer, super::support::addr_of(&value), 8, None) }.unwrap();
        b.wait_for(&event).unwrap();
        b.push_kernel(&dispatch(check, 0), None).unwrap();
        gate.open();
        b.synchronize().unwrap();
        a.synchronize().unwrap();
        drop((a, b, event));
        fx.finish_clean();
    });
}

#[test]
fn a_queue_fence_waits_for_packets_submitted_beside_the_stream() {
    use crate::hsa_interface::HsaInterface;
    watchdog(|| {
        let fx = Fixture::new(1);
        let stream = fx.stream();
        let buffer = fx.device_alloc(8);
        let mem = fx.mem.clone();
        // A program's own kernel on the stream's HSA queue (an interop object's targetsync).
        let native = fx.kernel(move |_| {
            thread::sleep(Duration::from_millis(50));
            mem.write_u64(buffer, 42)
        });
        let completion = fx.hsa.create_signal(1).unwrap();
        fx.hsa
            .submit_kernel(
                stream.hsa_queue(),
                &dispatch(native, 0),
                completion,
                QueueOrder::Unordered,
                &|| None,
            )
            .unwrap();
        stream.fence_queue().unwrap();
        stream.synchronize().unwrap();
        assert_eq!(
            fx.read_u64(buffer),
            42,
            "synchronize returned before the program's kernel"
        );
        assert_eq!(fx.hsa.signal_load(completion), 0);
        fx.hsa.destroy_signal(completion).unwrap();
        drop(stream);
        fx.finish_clean();
    });
}
