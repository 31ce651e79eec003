//! The emulated HSA runtime's SDMA engines, called in-process as a plugin calls the runtime:
//! ROCr's rules for `hsa_amd_memory_copy_engine_status` and
//! `hsa_amd_memory_async_copy_on_engine` on an MI210 (gfx90a, two engines), which the AMDGPU
//! plugin's `LIBOMPTARGET_AMDGPU_USE_MULTIPLE_SDMA_ENGINES` relies on. One test: which engines
//! are free depends on every copy in flight in the process.

use hsa_sys::*;
use omptarget_emu_hsa::*;
use std::ffi::c_void;

#[path = "support/hsa_agents.rs"]
mod hsa_agents;
use hsa_agents::signal;

fn agents() -> (hsa_agent_t, Vec<hsa_agent_t>) {
    assert_eq!(hsa_init(), HSA_STATUS_SUCCESS);
    hsa_agents::agents()
}

fn device_memory(gpu: hsa_agent_t, size: usize) -> *mut u8 {
    unsafe extern "C" fn first(pool: hsa_amd_memory_pool_t, data: *mut c_void) -> hsa_status_t {
        // SAFETY: `data` is the pool below.
        unsafe { *(data as *mut hsa_amd_memory_pool_t) = pool };
        HSA_STATUS_INFO_BREAK
    }
    let mut pool = hsa_amd_memory_pool_t::default();
    hsa_amd_agent_iterate_memory_pools(gpu, Some(first), &mut pool as *mut _ as *mut c_void);
    hsa_agents::allocate(pool, size)
}

fn wait_zero(s: hsa_signal_t) -> i64 {
    hsa_signal_wait_scacquire(
        s,
        HSA_SIGNAL_CONDITION_EQ,
        0,
        5_000_000_000,
        HSA_WAIT_STATE_BLOCKED,
    )
}

fn status(dst: hsa_agent_t, src: hsa_agent_t) -> (hsa_status_t, u32) {
    let mut mask = 0xdead;
    let status = hsa_amd_memory_copy_engine_status(dst, src, &mut mask);
    (status, mask)
}

#[allow(clippy::too_many_arguments)]
fn copy_on(
    dst: *mut u8,
    dst_agent: hsa_agent_t,
    src: *const u8,
    src_agent: hsa_agent_t,
    size: usize,
    deps: &[hsa_signal_t],
    done: hsa_signal_t,
    engine: u32,
) -> hsa_status_t {
    hsa_amd_memory_async_copy_on_engine(
        dst.cast(),
        dst_agent,
        src.cast(),
        src_agent,
        size,
        deps.len() as u32,
        deps.as_ptr(),
        done,
        engine,
        true,
    )
}

#[test]
fn engines_are_named_checked_and_reported_as_rocr_does_on_an_mi210() {
    let (cpu, gpus) = agents();
    let (gpu, other) = (gpus[0], gpus[1]);
    const BOTH: u32 = HSA_AMD_SDMA_ENGINE_0 | HSA_AMD_SDMA_ENGINE_1;

    // Which engines may copy each way (all free now): engine 0 only from the host.
    assert_eq!(status(gpu, cpu), (HSA_STATUS_SUCCESS, BOTH));
    assert_eq!(
        status(cpu, gpu),
        (HSA_STATUS_SUCCESS, HSA_AMD_SDMA_ENGINE_1)
    );
    assert_eq!(
        status(other, gpu),
        (HSA_STATUS_SUCCESS, HSA_AMD_SDMA_ENGINE_1)
    );
    // Within one agent a blit kernel copies: no engine to report.
    assert_eq!(status(gpu, gpu).0, HSA_STATUS_ERROR_INVALID_AGENT);
    assert_eq!(status(cpu, cpu).0, HSA_STATUS_ERROR_INVALID_AGENT);
    assert_eq!(
        status(hsa_agent_t { handle: 7 }, cpu).0,
        HSA_STATUS_ERROR_INVALID_AGENT
    );
    assert_eq!(
        hsa_amd_memory_copy_engine_status(gpu, cpu, std::ptr::null_mut()),
        HSA_STATUS_ERROR_INVALID_ARGUMENT
    );

    let size = 4096;
    let host = vec![5u8; size];
    let mut locked = std::ptr::null_mut();
    let mut agent = gpu;
    assert_eq!(
        hsa_amd_memory_lock(
            host.as_ptr() as *mut c_void,
            size,
            &mut agent,
            1,
            &mut locked
        ),
        HSA_STATUS_SUCCESS
    );
    let locked = locked as *mut u8;
    let (device, device2) = (device_memory(gpu, size), device_memory(gpu, size));

    // Ids that are not one engine's bit, or name no engine of the GPU, are refused.
    for id in [0, BOTH, 4, 1 << 31] {
        let done = signal(1);
        assert_eq!(
            copy_on(device, gpu, locked, cpu, size, &[], done, id),
            HSA_STATUS_ERROR_INVALID_ARGUMENT,
            "engine id {id:#x}"
        );
    }
    // Engine 0 copies from the host only (gfx90a): not towards it, nor between GPUs.
    let done = signal(1);
    assert_eq!(
        copy_on(
            locked,
            cpu,
            device,
            gpu,
            size,
            &[],
            done,
            HSA_AMD_SDMA_ENGINE_0
        ),
        HSA_STATUS_ERROR_INVALID_ARGUMENT
    );

    // Copies on either engine from the host, on engine 1 back, and within the GPU forced onto
    // SDMA on either id: all move the data.
    for engine in [HSA_AMD_SDMA_ENGINE_0, HSA_AMD_SDMA_ENGINE_1] {
        let done = signal(1);
        assert_eq!(
            copy_on(device, gpu, locked, cpu, size, &[], done, engine),
            HSA_STATUS_SUCCESS
        );
        assert_eq!(wait_zero(done), 0);
        let done = signal(1);
        assert_eq!(
            copy_on(device2, gpu, device, gpu, size, &[], done, engine),
            HSA_STATUS_SUCCESS
        );
        assert_eq!(wait_zero(done), 0);
    }
    let back = vec![0u8; size];
    let mut back_locked = std::ptr::null_mut();
    assert_eq!(
        hsa_amd_memory_lock(
            back.as_ptr() as *mut c_void,
            size,
            &mut agent,
            1,
            &mut back_locked
        ),
        HSA_STATUS_SUCCESS
    );
    let done = signal(1);
    assert_eq!(
        copy_on(
            back_locked.cast(),
            cpu,
            device2,
            gpu,
            size,
            &[],
            done,
            HSA_AMD_SDMA_ENGINE_1
        ),
        HSA_STATUS_SUCCESS
    );
    assert_eq!(wait_zero(done), 0);
    assert_eq!(back, host);

    // An engine with a copy pending is not free: a copy on engine 0 waiting for a signal takes
    // it out of the status until it completed.
    let (gate, done) = (signal(1), signal(1));
    assert_eq!(
        copy_on(
            device,
            gpu,
            locked,
            cpu,
            size,
            &[gate],
            done,
            HSA_AMD_SDMA_ENGINE_0
        ),
        HSA_STATUS_SUCCESS
    );
    assert_eq!(
        status(gpu, cpu),
        (HSA_STATUS_SUCCESS, HSA_AMD_SDMA_ENGINE_1)
    );
    // With engine 1 busy too, no engine is free.
    let (gate2, done2) = (signal(1), signal(1));
    assert_eq!(
        copy_on(
            device2,
            gpu,
            locked,
            cpu,
            size,
            &[gate2],
            done2,
            HSA_AMD_SDMA_ENGINE_1
        ),
        HSA_STATUS_SUCCESS
    );
    assert_eq!(status(gpu, cpu), (HSA_STATUS_ERROR_OUT_OF_RESOURCES, 0));
    hsa_signal_store_screlease(gate, 0);
    hsa_signal_store_screlease(gate2, 0);
    assert_eq!(wait_zero(done), 0);
    assert_eq!(wait_zero(done2), 0);
    assert_eq!(status(gpu, cpu), (HSA_STATUS_SUCCESS, BOTH));
}
