//! Which HSA queue a stream takes (`LIBOMPTARGET_AMDGPU_HSA_QUEUE_BUSY_TRACKING`) and which
//! SDMA engine a copy asks for (`LIBOMPTARGET_AMDGPU_USE_MULTIPLE_SDMA_ENGINES`).

use super::support::{dispatch, watchdog, Fixture};
use crate::stream::StreamPolicy;

const ROUND_ROBIN: StreamPolicy = StreamPolicy {
    queue_busy_tracking: false,
    multiple_sdma_engines: false,
};

const TWO_ENGINES: StreamPolicy = StreamPolicy {
    queue_busy_tracking: true,
    multiple_sdma_engines: true,
};

#[test]
fn with_busy_tracking_one_stream_at_a_time_keeps_to_the_first_queue() {
    watchdog(|| {
        let fx = Fixture::new(4);
        let stream = fx.stream();
        let nop = fx.kernel(|_| Ok(()));
        for _ in 0..5 {
            stream.push_kernel(&dispatch(nop, 0), None).unwrap();
            stream.synchronize().unwrap();
            assert_eq!(
                fx.manager.queue_users(),
                [0, 0, 0, 0],
                "idle after its work"
            );
        }
        assert_eq!(fx.hsa.stats().queues_created, 1);
        drop(stream);
        fx.finish_clean();
    });
}

#[test]
fn with_busy_tracking_streams_with_work_take_the_least_used_queue() {
    watchdog(|| {
        let fx = Fixture::new(2);
        let nop = fx.kernel(|_| Ok(()));
        // Created for work: each counts as a user at once.
        let streams: Vec<_> = (0..3).map(|_| fx.stream()).collect();
        assert_eq!(fx.manager.queue_users(), [2, 1]);
        assert_eq!(fx.hsa.stats().queues_created, 2);
        // The first and second queue's streams finish; the third (on the first) keeps going.
        streams[0].synchronize().unwrap();
        streams[1].synchronize().unwrap();
        assert_eq!(fx.manager.queue_users(), [1, 0]);
        // Work for the second stream again: the second queue is the idle one.
        streams[1].push_kernel(&dispatch(nop, 0), None).unwrap();
        assert_eq!(fx.manager.queue_users(), [1, 1]);
        // Then for the first: both queues have a user; the first of them is taken.
        streams[0].push_kernel(&dispatch(nop, 0), None).unwrap();
        assert_eq!(fx.manager.queue_users(), [2, 1]);
        for stream in &streams {
            stream.synchronize().unwrap();
        }
        assert_eq!(fx.manager.queue_users(), [0, 0]);
        drop(streams);
        fx.finish_clean();
    });
}

#[test]
fn without_busy_tracking_each_spell_of_work_takes_the_next_queue() {
    watchdog(|| {
        let fx = Fixture::with_policy(|config| config.num_queues = 3, ROUND_ROBIN);
        let stream = fx.stream();
        let nop = fx.kernel(|_| Ok(()));
        for _ in 0..4 {
            stream.push_kernel(&dispatch(nop, 0), None).unwrap();
            stream.synchronize().unwrap();
        }
        // Creation took the first queue for the first spell; the three spells after it the
        // next ones, round: the second, the third, the first again.
        assert_eq!(fx.hsa.stats().queues_created, 3);
        drop(stream);
        fx.finish_clean();
    });
}

#[test]
fn work_in_flight_stays_on_its_queue_and_a_handed_out_queue_is_kept() {
    watchdog(|| {
        let fx = Fixture::with_policy(|config| config.num_queues = 2, ROUND_ROBIN);
        let stream = fx.stream();
        let nop = fx.kernel(|_| Ok(()));
        // Pushes before a synchronisation are one spell: one queue, no barrier between them.
        for _ in 0..3 {
            stream.push_kernel(&dispatch(nop, 0), None).unwrap();
        }
        stream.synchronize().unwrap();
        assert_eq!(fx.hsa.stats().queues_created, 1);
        // Handed out (an interop object's queue) while idle: it takes the next queue, and
        // later spells stay on it.
        let given = stream.hsa_queue();
        assert_eq!(fx.hsa.stats().queues_created, 2);
        for _ in 0..3 {
            stream.push_kernel(&dispatch(nop, 0), None).unwrap();
            stream.synchronize().unwrap();
        }
        assert_eq!(fx.hsa.packets(given), (0, 3));
        // Counted only while it has work, or is handed out again.
        assert_eq!(fx.manager.queue_users(), [0, 0]);
        assert_eq!(stream.hsa_queue(), given);
        assert_eq!(fx.manager.queue_users(), [0, 1]);
        drop(stream);
        assert_eq!(fx.manager.queue_users(), [0, 0]);
        fx.finish_clean();
    });
}

/// Copies of each kind on one stream; returns the engine ids the double saw, in order.
fn engines_of_copies(fx: &Fixture) -> Vec<Option<u32>> {
    let stream = fx.stream();
    let size = 256;
    let (a, b) = (fx.device_alloc(size), fx.device_alloc(size));
    let source = vec![7u8; size];
    let mut back = vec![0u8; size];
    for _ in 0..2 {
        // SAFETY: `source` and `back` outlive the synchronisation below.
        unsafe {
            stream
                .push_host_to_device(a, source.as_ptr() as usize, size, None)
                .unwrap();
        }
    }
    stream
        .push_device_to_device(b, fx.hsa.gpu_agent(), a, fx.hsa.gpu_agent(), size)
        .unwrap();
    // SAFETY: as above.
    unsafe {
        stream
            .push_device_to_host(back.as_mut_ptr() as usize, b, size, None)
            .unwrap();
    }
    stream.synchronize().unwrap();
    assert_eq!(back, source);
    drop(stream);
    fx.hsa.copy_engines()
}

#[test]
fn copies_leave_the_engine_to_the_runtime_by_default() {
    watchdog(|| {
        let fx = Fixture::new(1);
        assert_eq!(engines_of_copies(&fx), [None; 4]);
        fx.finish_clean();
    });
}

#[test]
fn with_multiple_sdma_engines_copies_alternate_where_the_runtime_allows() {
    watchdog(|| {
        let fx = Fixture::with_policy(|config| config.num_queues = 1, TWO_ENGINES);
        // Host to device: engines 0 and 1 in turn. Within the GPU: forced onto SDMA, its turn.
        // Device to host: engine 0 cannot (as on an MI200), so engine 1 takes its turn.
        assert_eq!(engines_of_copies(&fx), [Some(1), Some(2), Some(1), Some(2)]);
        fx.finish_clean();
    });
}

#[test]
fn with_no_sdma_engine_free_the_runtime_chooses() {
    watchdog(|| {
        let fx = Fixture::with_policy(|config| config.num_queues = 1, TWO_ENGINES);
        fx.hsa.set_engine_status(Some(0));
        assert_eq!(engines_of_copies(&fx), [None; 4]);
        fx.finish_clean();
    });
}
