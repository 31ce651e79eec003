//! The three ways of host copies (staged, locked, pinned) and device-to-device copies.

use super::support::{addr_of_mut, dispatch, watchdog, Fixture, Gate};
use crate::hsa_interface::HsaInterface;
use std::time::Duration;

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

#[test]
fn staged_copies_move_plain_host_memory_both_ways() {
    watchdog(|| {
        let fx = Fixture::new(1);
        fx.hsa.set_copy_jitter(Duration::from_micros(200));
        let stream = fx.stream();
        let sizes = [1usize, 7, 4096, 4097, 100_000];
        let sources: Vec<Vec<u8>> = sizes.iter().map(|&n| pattern(n, n as u8)).collect();
        let mut results: Vec<Vec<u8>> = sizes.iter().map(|&n| vec![0u8; n]).collect();
        for (i, &size) in sizes.iter().enumerate() {
            let device = fx.device_alloc(size);
            // SAFETY: `sources` outlives the stream's synchronisation below.
            unsafe { stream.push_host_to_device(device, sources[i].as_ptr() as usize, size, None) }
                .unwrap();
            // SAFETY: `results` outlives the stream's synchronisation below, a buffer per copy.
            unsafe {
                stream.push_device_to_host(results[i].as_mut_ptr() as usize, device, size, None)
            }
            .unwrap();
        }
        stream.synchronize().unwrap();
        assert_eq!(results, sources);
        let stats = fx.hsa.stats();
        assert_eq!(stats.locks, 0, "small copies must not lock host memory");
        assert!(stats.host_allocations > 0, "small copies are staged");
        assert_eq!(fx.manager.stats().staging_outstanding, 0);
        drop(stream);
        fx.finish_clean();
    });
}

#[test]
fn staged_copies_behind_pending_work_run_their_host_step_in_a_handler() {
    watchdog(|| {
        let fx = Fixture::new(1);
        let gate = Gate::default();
        let stream = fx.stream();
        let device = fx.device_alloc(4096);
        let mem = fx.mem.clone();
        let invert = fx.kernel(move |_| {
            let bytes: Vec<u8> = mem.read(device, 4096)?.iter().map(|b| !b).collect();
            mem.write(device, &bytes)
        });
        let source = pattern(4096, 3);
        let mut result = vec![0u8; 4096];
        stream
            .push_kernel(&dispatch(fx.gate_kernel(&gate), 0), None)
            .unwrap();
        // SAFETY: `source` outlives the stream's synchronisation below.
        unsafe { stream.push_host_to_device(device, source.as_ptr() as usize, 4096, None) }
            .unwrap();
        stream.push_kernel(&dispatch(invert, 0), None).unwrap();
        // SAFETY: `result` outlives the stream's synchronisation below.
        unsafe { stream.push_device_to_host(result.as_mut_ptr() as usize, device, 4096, None) }
            .unwrap();
        // Nothing can have run yet: the handler of the host step waits for the gate kernel.
        assert!(!stream.query().unwrap());
        gate.open();
        stream.synchronize().unwrap();
        let expected: Vec<u8> = source.iter().map(|b| !b).collect();
        assert_eq!(result, expected);
        assert_eq!(fx.hsa.stats().handlers_registered, 2);
        drop(stream);
        fx.finish_clean();
    });
}

#[test]
fn staged_copies_in_flight_together_each_keep_their_own_buffer() {
    watchdog(|| {
        // Two streams' staged copies wait behind gates at once: each copy needs its own
        // staging buffer until its last step completed, or the streams overwrite each other's.
        let fx = Fixture::new(2);
        fx.hsa.set_copy_jitter(Duration::from_micros(500));
        let gate = Gate::default();
        let streams = [fx.stream(), fx.stream()];
        let count = 16;
        let size = 1000;
        let sources: Vec<Vec<u8>> = (0..count).map(|i| pattern(size, i as u8 * 17)).collect();
        let mut results: Vec<Vec<u8>> = (0..count).map(|_| vec![0u8; size]).collect();
        let devices: Vec<usize> = (0..count).map(|_| fx.device_alloc(size)).collect();
        let gated = fx.gate_kernel(&gate);
        for stream in &streams {
            stream.push_kernel(&dispatch(gated, 0), None).unwrap();
        }
        // All uploads first, alternating streams, so buffers are asked for while others are
        // still in flight on the other stream.
        for i in 0..count {
            // SAFETY: `sources` outlive both streams' synchronisation below.
            unsafe {
                streams[i % 2].push_host_to_device(
                    devices[i],
                    sources[i].as_ptr() as usize,
                    size,
                    None,
                )
            }
            .unwrap();
        }
        for i in 0..count {
            // SAFETY: `results` outlive both streams' synchronisation below, one per copy.
            unsafe {
                streams[i % 2].push_device_to_host(
                    results[i].as_mut_ptr() as usize,
                    devices[i],
                    size,
                    None,
                )
            }
            .unwrap();
        }
        gate.open();
        for stream in &streams {
            stream.synchronize().unwrap();
        }
        assert_eq!(results, sources);
        drop(streams);
        fx.finish_clean();
    });
}

#[test]
fn large_copies_lock_the_host_buffer_until_completion() {
    watchdog(|| {
        let fx = Fixture::with_config(|config| config.max_async_copy_bytes = 64 * 1024);
        let gate = Gate::default();
        let stream = fx.stream();
        let size = 256 * 1024;
        let device = fx.device_alloc(size);
        let source = pattern(size, 9);
        let mut result = vec![0u8; size];
        stream
            .push_kernel(&dispatch(fx.gate_kernel(&gate), 0), None)
            .unwrap();
        // SAFETY: `source` outlives the stream's synchronisation below.
        unsafe { stream.push_host_to_device(device, source.as_ptr() as usize, size, None) }
            .unwrap();
        // SAFETY: `result` outlives the stream's synchronisation below.
        unsafe { stream.push_device_to_host(result.as_mut_ptr() as usize, device, size, None) }
            .unwrap();
        assert_eq!(
            fx.hsa.stats().locks_live,
            2,
            "both buffers locked while in flight"
        );
        gate.open();
        stream.synchronize().unwrap();
        assert_eq!(result, source);
        let stats = fx.hsa.stats();
        assert_eq!((stats.locks, stats.unlocks, stats.locks_live), (2, 2, 0));
        assert_eq!(
            stats.host_allocations, 0,
            "large copies use no staging buffer"
        );
        drop(stream);
        fx.finish_clean();
    });
}

#[test]
fn pinned_copies_go_direct() {
    watchdog(|| {
        let fx = Fixture::new(1);
        let stream = fx.stream();
        let size = 10_000;
        let device = fx.device_alloc(size);
        let source = pattern(size, 1);
        let mut result = vec![0u8; size];
        let gpu = [fx.hsa.gpu_agent()];
        let pinned_src = fx
            .hsa
            .lock_host_memory(source.as_ptr() as usize, size, &gpu)
            .unwrap();
        let pinned_dst = fx
            .hsa
            .lock_host_memory(result.as_mut_ptr() as usize, size, &gpu)
            .unwrap();
        // SAFETY: `source` outlives the stream's synchronisation below, and stays locked at
        // `pinned_src` until after it.
        unsafe {
            stream.push_host_to_device(device, source.as_ptr() as usize, size, Some(pinned_src))
        }
        .unwrap();
        // SAFETY: `result` outlives the stream's synchronisation below, and stays locked at
        // `pinned_dst` until after it.
        unsafe {
            stream.push_device_to_host(result.as_mut_ptr() as usize, device, size, Some(pinned_dst))
        }
        .unwrap();
        stream.synchronize().unwrap();
        assert_eq!(result, source);
        let stats = fx.hsa.stats();
        assert_eq!(stats.host_allocations, 0, "no staging");
        assert_eq!(stats.locks, 2, "only the test's own locks");
        assert_eq!(stats.handlers_registered, 0);
        assert_eq!(stats.async_copies, 2);
        fx.hsa.unlock_host_memory(source.as_ptr() as usize).unwrap();
        fx.hsa.unlock_host_memory(result.as_ptr() as usize).unwrap();
        drop(stream);
        fx.finish_clean();
    });
}

#[test]
fn device_to_device_copies_follow_the_chain() {
    watchdog(|| {
        let fx = Fixture::new(1);
        fx.hsa.set_copy_jitter(Duration::from_millis(2));
        let stream = fx.stream();
        let (a, b, c) = (
            fx.device_alloc(64),
            fx.device_alloc(64),
            fx.device_alloc(64),
        );
        fx.mem.write(a, &pattern(64, 5)).unwrap();
        let gpu = fx.hsa.gpu_agent();
        // a -> b -> c: the second copy must wait for the first.
        stream.push_device_to_device(b, gpu, a, gpu, 64).unwrap();
        stream.push_device_to_device(c, gpu, b, gpu, 64).unwrap();
        stream.synchronize().unwrap();
        assert_eq!(fx.mem.read(c, 64).unwrap(), pattern(64, 5));
        drop(stream);
        fx.finish_clean();
    });
}

#[test]
fn empty_copies_do_nothing_and_null_addresses_are_refused() {
    watchdog(|| {
        let fx = Fixture::new(1);
        let stream = fx.stream();
        let device = fx.device_alloc(8);
        let mut host = 0u64;
        // SAFETY: a copy of 0 bytes touches no host memory.
        unsafe { stream.push_host_to_device(device, 0, 0, None) }.unwrap();
        // SAFETY: a copy of 0 bytes touches no host memory (and `host` outlives the stream).
        unsafe { stream.push_device_to_host(addr_of_mut(&mut host), device, 0, None) }.unwrap();
        // SAFETY: a copy to a null address is refused before anything is read; `host`
        // outlives the stream anyway.
        let refused = unsafe { stream.push_host_to_device(0, addr_of_mut(&mut host), 8, None) };
        assert!(refused.is_err());
        // SAFETY: a copy to a null address is refused before anything is written.
        let refused = unsafe { stream.push_device_to_host(0, device, 8, None) };
        assert!(refused.is_err());
        assert_eq!(fx.hsa.stats().async_copies, 0);
        assert!(stream.query().unwrap());
        drop(stream);
        fx.finish_clean();
    });
}
