//! Order within a stream and between streams on shared and separate queues.

use super::support::{copy_kernel_rounds, dispatch, watchdog, Fixture};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

#[test]
fn kernels_of_a_stream_run_in_order_without_barriers() {
    watchdog(|| {
        let fx = Fixture::new(1);
        let counter = fx.device_alloc(8);
        let step = fx.step_kernel(counter);
        let stream = fx.stream();
        for i in 0..300 {
            stream.push_kernel(&dispatch(step, i), None).unwrap();
        }
        stream.synchronize().unwrap();
        assert_eq!(fx.read_u64(counter), 300);
        // Consecutive kernels on one queue are ordered by the barrier bit alone.
        assert_eq!(fx.hsa.packets(stream.hsa_queue()), (0, 300));
        drop(stream);
        fx.finish_clean();
    });
}

#[test]
fn copies_and_kernels_of_a_stream_stay_in_order() {
    watchdog(|| {
        let fx = Fixture::new(1);
        fx.hsa.set_copy_jitter(Duration::from_micros(300));
        let stream = fx.stream();
        copy_kernel_rounds(&fx, &stream, 40, 7);
        // Each kernel after a pending copy needed a barrier packet (unless the copy was done).
        let (barriers, kernels) = fx.hsa.packets(stream.hsa_queue());
        assert_eq!(kernels, 40);
        assert!(barriers <= 40);
        drop(stream);
        fx.finish_clean();
    });
}

/// Two streams, pushed from two threads at once, on `num_queues` queues.
fn two_streams_in_parallel(num_queues: u32) {
    let fx = Arc::new(Fixture::new(num_queues));
    fx.hsa.set_copy_jitter(Duration::from_micros(200));
    let a = fx.stream();
    let b = fx.stream();
    if num_queues == 1 {
        assert_eq!(a.hsa_queue(), b.hsa_queue());
    } else {
        assert_ne!(a.hsa_queue(), b.hsa_queue());
    }
    let other = {
        let fx = Arc::clone(&fx);
        thread::spawn(move || {
            copy_kernel_rounds(&fx, &b, 30, 2);
            drop(b);
        })
    };
    copy_kernel_rounds(&fx, &a, 30, 1);
    drop(a);
    other.join().unwrap();
    let fx = Arc::into_inner(fx).unwrap();
    fx.finish_clean();
}

#[test]
fn streams_sharing_one_queue_keep_their_own_order() {
    watchdog(|| two_streams_in_parallel(1));
}

#[test]
fn streams_on_different_queues_keep_their_own_order() {
    watchdog(|| two_streams_in_parallel(2));
}

#[test]
fn a_pending_copy_on_one_stream_does_not_reorder_another_streams_kernels() {
    watchdog(|| {
        // Stream A's kernel waits (barrier) for A's slow copy; B's kernels share the queue and
        // are held behind that barrier, but each stream's order is still its own.
        let fx = Fixture::new(1);
        fx.hsa.set_copy_jitter(Duration::from_millis(20));
        let a = fx.stream();
        let b = fx.stream();
        let counter_a = fx.device_alloc(8);
        let counter_b = fx.device_alloc(8);
        let step_a = fx.step_kernel(counter_a);
        let step_b = fx.step_kernel(counter_b);
        let source = 0u64;
        for i in 0..10 {
            // Reset A's counter by copy, then step from 0 again.
            // SAFETY: `source` is never written and outlives the synchronisation of `a` below.
            unsafe { a.push_host_to_device(counter_a, super::support::addr_of(&source), 8, None) }
                .unwrap();
            a.push_kernel(&dispatch(step_a, 0), None).unwrap();
            b.push_kernel(&dispatch(step_b, i), None).unwrap();
        }
        a.synchronize().unwrap();
        b.synchronize().unwrap();
        assert_eq!(fx.read_u64(counter_a), 1);
        assert_eq!(fx.read_u64(counter_b), 10);
        drop((a, b));
        fx.finish_clean();
    });
}
