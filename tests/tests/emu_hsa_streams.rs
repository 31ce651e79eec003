//! The AMDGPU plugin's stream layer on the emulated HSA runtime, in-process: situations no
//! OpenMP program reaches reliably, set up packet by packet on real AQL rings.

use omptarget_rtl_amdgpu::hsa::HsaRuntime;
use omptarget_rtl_amdgpu::hsa_interface::KernelDispatch;
use omptarget_rtl_amdgpu::hsa_real::RealHsa;
use omptarget_rtl_amdgpu::stream::{StreamConfig, StreamManager, StreamPolicy};
use std::sync::Arc;
use std::time::Duration;

/// A kernel object no executable defines: the emulator fails the queue that dispatches it
/// (`HSA_STATUS_ERROR_INVALID_CODE_OBJECT`), as hardware fails a queue whose kernel faults.
fn bogus_kernel() -> KernelDispatch {
    KernelDispatch {
        kernel_object: 0xdead_0000,
        kernarg_address: 0,
        workgroup_size: [64, 1, 1],
        grid_size: [64, 1, 1],
        group_segment_size: 0,
        private_segment_size: 0,
    }
}

/// Defects 9 and 10 of the review. Stream A's kernel fails its queue (after a 1 s packet
/// ahead of it); stream B waits for it on the second queue, a barrier that will never pass;
/// stream D, beside B on that queue, fills its ring of 64 packets behind the barrier. D's next
/// submission used to spin for ever holding the queue's and its own locks; it now ends with
/// the error that the queue is blocked by failed work. Once D's wait has reported the failure,
/// D goes on on a new queue (the stopped queue used to refuse its kernels for good).
#[test]
fn a_full_ring_behind_a_barrier_on_failed_work_fails_and_the_stream_moves_on() {
    // Read by the emulator when it starts: each packet's work waits 1 s (the other streams' submissions, even slowed by a busy machine, come first).
    std::env::set_var("OMPTARGET_EMU_DELAY_US", "1000000");
    std::env::set_var("OMPTARGET_EMU_DEVICES", "1");
    let runtime = HsaRuntime::open_from(tests::dist().join("emu/libhsa-runtime64.so.1"))
        .expect("the emulated HSA runtime starts");
    let agents = runtime.agents().unwrap();
    let gpu = agents.iter().find(|a| a.is_gpu).unwrap();
    let cpu = agents.iter().find(|a| !a.is_gpu).unwrap();
    let fine = cpu
        .pools
        .iter()
        .find(|p| p.is_global() && p.fine_grained && p.alloc_allowed)
        .unwrap();
    let mut config = StreamConfig::with_defaults(gpu.agent, cpu.agent, fine.pool);
    config.num_queues = 2;
    config.queue_size = 64;
    let hsa = Arc::new(RealHsa::new(runtime.clone()));
    let manager = StreamManager::with_policy(hsa, config, StreamPolicy::LLVM_DEFAULTS).unwrap();
    // Round-robin: A on the first queue, B on the second, C (unused) on the first, D beside B.
    let (a, b, _c, d) = (
        manager.create_stream().unwrap(),
        manager.create_stream().unwrap(),
        manager.create_stream().unwrap(),
        manager.create_stream().unwrap(),
    );
    assert_eq!(b.hsa_queue(), d.hsa_queue());
    a.fence_queue().unwrap(); // a barrier packet: 1 s of work
    a.push_kernel(&bogus_kernel(), None).unwrap();
    let event = manager.create_event();
    a.record(&event).unwrap();
    b.wait_for(&event).unwrap();
    let blocked = d.hsa_queue();
    let d = Arc::new(d);
    let filler = Arc::clone(&d);
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut result = Ok(());
        for _ in 0..100 {
            result = filler.push_kernel(&bogus_kernel(), None);
            if result.is_err() {
                break;
            }
        }
        let _ = done.send(result);
    });
    let result = finished
        .recv_timeout(Duration::from_secs(20))
        .expect("a submission to a full ring behind failed work never ended");
    let err = result.expect_err("100 packets went into a ring of 64 behind a blocked barrier");
    assert!(
        err.message.contains("blocked by a barrier on failed work"),
        "{err}"
    );
    // D's pending work failed with the queue; its wait reports it, then D moves on.
    assert!(d.synchronize().is_err());
    d.push_kernel(&bogus_kernel(), None).unwrap();
    assert_ne!(d.hsa_queue(), blocked, "still on the stopped queue");
    assert!(a.synchronize().is_err());
    assert!(b.synchronize().is_err());
}
