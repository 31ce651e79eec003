//! Recycling of signals and staging buffers, release actions, query, queues, teardown.

use super::support::{addr_of, addr_of_mut, dispatch, watchdog, Fixture, Gate};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

#[test]
fn thousands_of_operations_reuse_a_few_signals_and_staging_buffers() {
    watchdog(|| {
        let fx = Fixture::new(2);
        let stream = fx.stream();
        let other = fx.stream();
        let counter = fx.device_alloc(8);
        let step = fx.step_kernel(counter);
        let buffer = fx.device_alloc(8);
        let event = fx.manager.create_event();
        let mut value = 0u64;
        let mut back = 0u64;
        for i in 0..1000 {
            // SAFETY: `value` outlives the stream, and changes only after a synchronisation.
            unsafe { stream.push_host_to_device(buffer, addr_of(&value), 8, None) }.unwrap();
            stream.push_kernel(&dispatch(step, i), None).unwrap();
            // SAFETY: `back` outlives the stream, and is read only after its last synchronisation.
            unsafe { stream.push_device_to_host(addr_of_mut(&mut back), buffer, 8, None) }.unwrap();
            if i % 10 == 9 {
                stream.record(&event).unwrap();
                other.wait_for(&event).unwrap();
                stream.synchronize().unwrap();
                other.synchronize().unwrap();
                value += 1;
            }
        }
        stream.synchronize().unwrap();
        assert_eq!(fx.read_u64(counter), 1000);
        assert_eq!(back, 99);
        let stats = fx.manager.stats();
        // Ten iterations hold at most 5 signals each between synchronizations.
        assert!(
            stats.signals_created <= 64,
            "signals not recycled: {stats:?}"
        );
        assert_eq!(stats.staging_outstanding, 0);
        // Twenty staged copies are in flight between synchronizations; a hundred cycles of
        // them must not allocate more than that.
        let hsa = fx.hsa.stats();
        assert!(hsa.host_allocations <= 20, "staging not reused: {hsa:?}");
        drop(event);
        let stats = fx.manager.stats();
        assert_eq!(
            stats.signals_idle, stats.signals_created,
            "every signal back: {stats:?}"
        );
        assert_eq!(fx.hsa.stats().signals_live, stats.signals_created);
        drop((stream, other));
        fx.finish_clean();
    });
}

#[test]
fn release_actions_run_once_the_work_completed() {
    watchdog(|| {
        let fx = Fixture::new(1);
        let gate = Gate::default();
        let stream = fx.stream();
        let released = Arc::new(AtomicUsize::new(0));
        let counted = || -> Option<Box<dyn FnOnce() + Send>> {
            let released = Arc::clone(&released);
            Some(Box::new(move || {
                released.fetch_add(1, Ordering::SeqCst);
            }))
        };
        let gated = fx.gate_kernel(&gate);
        let nop = fx.kernel(|_| Ok(()));
        stream.push_kernel(&dispatch(gated, 0), counted()).unwrap();
        for _ in 0..5 {
            stream.push_kernel(&dispatch(nop, 0), counted()).unwrap();
        }
        assert!(!stream.query().unwrap());
        assert_eq!(released.load(Ordering::SeqCst), 0);
        gate.open();
        let start = Instant::now();
        while !stream.query().unwrap() {
            assert!(
                start.elapsed() < Duration::from_secs(5),
                "query never saw completion"
            );
            thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(released.load(Ordering::SeqCst), 6);
        // Nothing pending now.
        assert!(stream.query().unwrap());
        stream.synchronize().unwrap();
        assert_eq!(released.load(Ordering::SeqCst), 6);
        drop(stream);
        fx.finish_clean();
    });
}

#[test]
fn streams_take_queues_round_robin() {
    watchdog(|| {
        let fx = Fixture::new(2);
        let streams: Vec<_> = (0..4).map(|_| fx.stream()).collect();
        assert_eq!(fx.manager.stats().queues_created, 2);
        assert_eq!(fx.hsa.stats().queues_created, 2);
        assert_eq!(streams[0].hsa_queue(), streams[2].hsa_queue());
        assert_eq!(streams[1].hsa_queue(), streams[3].hsa_queue());
        assert_ne!(streams[0].hsa_queue(), streams[1].hsa_queue());
        let nop = fx.kernel(|_| Ok(()));
        for stream in &streams {
            stream.push_kernel(&dispatch(nop, 0), None).unwrap();
        }
        for stream in &streams {
            stream.synchronize().unwrap();
        }
        assert_eq!(fx.hsa.packets(streams[0].hsa_queue()), (0, 2));
        assert_eq!(fx.hsa.packets(streams[1].hsa_queue()), (0, 2));
        drop(streams);
        fx.finish_clean();
    });
}

#[test]
fn queues_are_created_lazily() {
    watchdog(|| {
        let fx = Fixture::new(4);
        assert_eq!(fx.hsa.stats().queues_created, 0);
        let stream = fx.stream();
        assert_eq!(fx.hsa.stats().queues_created, 1);
        drop(stream);
        fx.finish_clean();
    });
}

#[test]
fn dropping_a_stream_waits_for_its_work_and_releases_it() {
    watchdog(|| {
        let fx = Fixture::new(1);
        let gate = Gate::default();
        let stream = fx.stream();
        let released = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&released);
        let device = fx.device_alloc(8);
        fx.write_u64(device, 77);
        let mut back = 0u64;
        stream
            .push_kernel(
                &dispatch(fx.gate_kernel(&gate), 0),
                Some(Box::new(move || {
                    counter.fetch_add(1, Ordering::SeqCst);
                })),
            )
            .unwrap();
        // SAFETY: `back` outlives the stream, whose drop below waits for the copy.
        unsafe { stream.push_device_to_host(addr_of_mut(&mut back), device, 8, None) }.unwrap();
        let opener = {
            let gate = gate.clone();
            thread::spawn(move || {
                thread::sleep(Duration::from_millis(30));
                gate.open();
            })
        };
        drop(stream);
        opener.join().unwrap();
        assert_eq!(back, 77);
        assert_eq!(released.load(Ordering::SeqCst), 1);
        assert_eq!(fx.manager.stats().live_streams, 0);
        fx.finish_clean();
    });
}

#[test]
fn shutdown_waits_for_streams_to_be_dropped() {
    watchdog(|| {
        let fx = Fixture::new(1);
        let stream = fx.stream();
        assert!(
            fx.manager.shutdown().is_err(),
            "a live stream must block shutdown"
        );
        assert!(
            fx.hsa.stats().queues_live > 0,
            "nothing destroyed while refused"
        );
        drop(stream);
        let event = fx.manager.create_event();
        fx.manager.shutdown().unwrap();
        assert!(fx.manager.create_stream().is_err());
        // Shutdown is idempotent; events outlive it harmlessly.
        fx.manager.shutdown().unwrap();
        event.synchronize().unwrap();
        drop(event);
        fx.finish_clean();
    });
}

#[test]
fn public_types_are_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<super::support::TestStream>();
    check::<crate::stream::StreamManager<crate::test_double::SoftwareHsa>>();
    check::<crate::stream::Event<crate::test_double::SoftwareHsa>>();
}
