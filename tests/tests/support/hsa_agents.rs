//! What tests that call the emulated HSA runtime in-process share (through `#[path]`): its
//! agents, as a plugin finds them, a pool allocation and a signal.

use hsa_sys::*;
use omptarget_emu_hsa::*;
use std::ffi::c_void;

/// The CPU agent and the GPU agents, in the runtime's order (after `hsa_init`).
pub fn agents() -> (hsa_agent_t, Vec<hsa_agent_t>) {
    unsafe extern "C" fn collect(agent: hsa_agent_t, data: *mut c_void) -> hsa_status_t {
        // SAFETY: `data` is the vector below.
        unsafe { (*(data as *mut Vec<hsa_agent_t>)).push(agent) };
        HSA_STATUS_SUCCESS
    }
    let mut agents: Vec<hsa_agent_t> = Vec::new();
    assert_eq!(
        hsa_iterate_agents(Some(collect), &mut agents as *mut _ as *mut c_void),
        HSA_STATUS_SUCCESS
    );
    let kind = |a: hsa_agent_t| {
        let mut device = u32::MAX;
        assert_eq!(
            hsa_agent_get_info(
                a,
                HSA_AGENT_INFO_DEVICE,
                &mut device as *mut _ as *mut c_void
            ),
            HSA_STATUS_SUCCESS
        );
        device
    };
    let cpu = *agents
        .iter()
        .find(|&&a| kind(a) == HSA_DEVICE_TYPE_CPU)
        .unwrap();
    let gpus = agents
        .into_iter()
        .filter(|&a| kind(a) == HSA_DEVICE_TYPE_GPU)
        .collect();
    (cpu, gpus)
}

/// `size` bytes from `pool`.
pub fn allocate(pool: hsa_amd_memory_pool_t, size: usize) -> *mut u8 {
    let mut ptr = std::ptr::null_mut();
    assert_eq!(
        hsa_amd_memory_pool_allocate(pool, size, 0, &mut ptr),
        HSA_STATUS_SUCCESS
    );
    ptr.cast()
}

/// A signal starting at `value`.
pub fn signal(value: i64) -> hsa_signal_t {
    let mut s = hsa_signal_t::default();
    assert_eq!(
        hsa_signal_create(value, 0, std::ptr::null(), &mut s),
        HSA_STATUS_SUCCESS
    );
    s
}
