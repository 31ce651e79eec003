//! The emulated HSA runtime's rules, one by one, called in-process as a plugin calls the
//! runtime: each is a rule of ROCm's runtime that a plugin bug would break (the statuses are
//! HSA's). Code objects come from real clang-19 programs.

use hsa_sys::*;
use omptarget_emu_hsa::*;
use std::ffi::c_void;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// Memory faults the system event handler was told of: (agent handle, address).
static FAULTS: Mutex<Vec<(u64, u64)>> = Mutex::new(Vec::new());

unsafe extern "C" fn on_event(event: *const hsa_amd_event_t, _data: *mut c_void) -> hsa_status_t {
    // SAFETY: the runtime passes a live event.
    let event = unsafe { &*event };
    if event.event_type == HSA_AMD_GPU_MEMORY_FAULT_EVENT {
        FAULTS.lock().unwrap().push((
            event.memory_fault.agent.handle,
            event.memory_fault.virtual_address,
        ));
    }
    HSA_STATUS_SUCCESS
}

#[path = "support/hsa_agents.rs"]
mod hsa_agents;
use hsa_agents::{allocate, signal};

/// Initialises the runtime once (with a system event handler, so faults are reported to the
/// test instead of stopping the process) and returns (CPU, GPUs).
fn system() -> &'static (hsa_agent_t, Vec<hsa_agent_t>) {
    static SYSTEM: OnceLock<(hsa_agent_t, Vec<hsa_agent_t>)> = OnceLock::new();
    SYSTEM.get_or_init(|| {
        assert_eq!(hsa_init(), HSA_STATUS_SUCCESS);
        assert_eq!(
            hsa_amd_register_system_event_handler(Some(on_event), std::ptr::null_mut()),
            HSA_STATUS_SUCCESS
        );
        hsa_agents::agents()
    })
}

fn pools(agent: hsa_agent_t) -> Vec<hsa_amd_memory_pool_t> {
    unsafe extern "C" fn collect(pool: hsa_amd_memory_pool_t, data: *mut c_void) -> hsa_status_t {
        // SAFETY: `data` is the vector below.
        unsafe { (*(data as *mut Vec<hsa_amd_memory_pool_t>)).push(pool) };
        HSA_STATUS_SUCCESS
    }
    let mut found: Vec<hsa_amd_memory_pool_t> = Vec::new();
    assert_eq!(
        hsa_amd_agent_iterate_memory_pools(
            agent,
            Some(collect),
            &mut found as *mut _ as *mut c_void
        ),
        HSA_STATUS_SUCCESS
    );
    found
}

fn wait_zero(s: hsa_signal_t, ms: u64) -> i64 {
    hsa_signal_wait_scacquire(
        s,
        HSA_SIGNAL_CONDITION_EQ,
        0,
        ms * 1_000_000,
        HSA_WAIT_STATE_BLOCKED,
    )
}

/// `hsa_amd_memory_async_copy` of `size` bytes after `deps`, completing `done`.
fn copy(
    dst: *mut c_void,
    dst_agent: hsa_agent_t,
    src: *const c_void,
    src_agent: hsa_agent_t,
    size: usize,
    deps: &[hsa_signal_t],
    done: hsa_signal_t,
) -> hsa_status_t {
    hsa_amd_memory_async_copy(
        dst,
        dst_agent,
        src,
        src_agent,
        size,
        deps.len() as u32,
        deps.as_ptr(),
        done,
    )
}

/// Waits up to two seconds for a fault at `address`, which the event names by its page, as a
/// GPU does.
fn fault_at(address: u64) -> bool {
    let address = address & !4095;
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(2) {
        if FAULTS.lock().unwrap().iter().any(|&(_, a)| a == address) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    false
}

#[test]
fn agents_pools_and_isa_are_what_a_plugin_expects_of_an_mi210() {
    let (cpu, gpus) = system();
    assert_eq!(gpus.len(), 2, "two GPUs by default");
    let mut name = [0u8; 64];
    assert_eq!(
        hsa_agent_get_info(gpus[0], HSA_AGENT_INFO_NAME, name.as_mut_ptr().cast()),
        0
    );
    assert!(name.starts_with(b"gfx90a\0"));
    assert_eq!(
        hsa_agent_get_info(
            gpus[0],
            HSA_AMD_AGENT_INFO_PRODUCT_NAME,
            name.as_mut_ptr().cast()
        ),
        0
    );
    assert!(String::from_utf8_lossy(&name).contains("emulated"));
    let (mut cus, mut wave, mut group) = (0u32, 0u32, 0u32);
    hsa_agent_get_info(
        gpus[0],
        HSA_AMD_AGENT_INFO_COMPUTE_UNIT_COUNT,
        &mut cus as *mut _ as *mut c_void,
    );
    hsa_agent_get_info(
        gpus[0],
        HSA_AGENT_INFO_WAVEFRONT_SIZE,
        &mut wave as *mut _ as *mut c_void,
    );
    hsa_agent_get_info(
        gpus[0],
        HSA_AGENT_INFO_WORKGROUP_MAX_SIZE,
        &mut group as *mut _ as *mut c_void,
    );
    assert_eq!((cus, wave, group), (104, 64, 1024));
    unsafe extern "C" fn isa_name(isa: hsa_isa_t, data: *mut c_void) -> hsa_status_t {
        // SAFETY: `data` is the string below.
        unsafe { *(data as *mut String) = isa_name_of(isa) };
        HSA_STATUS_SUCCESS
    }
    let mut isa = String::new();
    assert_eq!(
        hsa_agent_iterate_isas(gpus[0], Some(isa_name), &mut isa as *mut _ as *mut c_void),
        0
    );
    assert_eq!(isa, "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-\0");
    // Pools: the CPU's fine-grained (one for kernel arguments) and coarse-grained, each GPU's
    // coarse-grained; GPUs reach system memory and each other only once granted.
    let access = |agent: hsa_agent_t, pool: hsa_amd_memory_pool_t| {
        let mut value = 0u32;
        assert_eq!(
            hsa_amd_agent_memory_pool_get_info(
                agent,
                pool,
                HSA_AMD_AGENT_MEMORY_POOL_INFO_ACCESS,
                &mut value as *mut _ as *mut c_void
            ),
            0
        );
        value
    };
    let flags = |pool: hsa_amd_memory_pool_t| {
        let mut value = 0u32;
        assert_eq!(
            hsa_amd_memory_pool_get_info(
                pool,
                HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS,
                &mut value as *mut _ as *mut c_void
            ),
            0
        );
        value
    };
    let host = pools(*cpu);
    assert!(host
        .iter()
        .any(|&p| flags(p) & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT != 0));
    let device = pools(gpus[0]);
    assert_eq!(device.len(), 2, "device memory and the group segment");
    let (mut segment, mut size) = (0u32, 0usize);
    hsa_amd_memory_pool_get_info(
        device[1],
        HSA_AMD_MEMORY_POOL_INFO_SEGMENT,
        &mut segment as *mut _ as *mut c_void,
    );
    hsa_amd_memory_pool_get_info(
        device[1],
        HSA_AMD_MEMORY_POOL_INFO_SIZE,
        &mut size as *mut _ as *mut c_void,
    );
    assert_eq!((segment, size), (HSA_AMD_SEGMENT_GROUP, 64 << 10));
    let mut ptr = std::ptr::null_mut();
    assert_eq!(
        hsa_amd_memory_pool_allocate(device[1], 64, 0, &mut ptr),
        HSA_STATUS_ERROR_INVALID_ALLOCATION
    );
    assert_eq!(
        flags(device[0]),
        HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED
    );
    assert_eq!(
        access(gpus[0], device[0]),
        HSA_AMD_MEMORY_POOL_ACCESS_ALLOWED_BY_DEFAULT
    );
    assert_eq!(
        access(gpus[1], device[0]),
        HSA_AMD_MEMORY_POOL_ACCESS_DISALLOWED_BY_DEFAULT
    );
    assert_eq!(
        access(gpus[0], host[0]),
        HSA_AMD_MEMORY_POOL_ACCESS_DISALLOWED_BY_DEFAULT
    );
    assert_eq!(
        access(*cpu, host[0]),
        HSA_AMD_MEMORY_POOL_ACCESS_ALLOWED_BY_DEFAULT
    );
    let mut text: *const std::ffi::c_char = std::ptr::null();
    assert_eq!(
        hsa_status_string(HSA_STATUS_ERROR_INVALID_AGENT, &mut text),
        0
    );
    // SAFETY: the runtime returns a NUL-terminated string that lives for the process.
    let text = unsafe { std::ffi::CStr::from_ptr(text) }.to_str().unwrap();
    assert_eq!(
        text,
        "HSA_STATUS_ERROR_INVALID_AGENT: The agent is invalid."
    );
}

/// A copy between two GPUs' memory faults on the copy engine until the memory is granted to
/// the engine's GPU (the destination's); the copy never completes.
#[test]
fn another_gpus_memory_is_reached_only_once_granted() {
    let (_, gpus) = system();
    let (a, b) = (
        allocate(pools(gpus[0])[0], 4096),
        allocate(pools(gpus[1])[0], 4096),
    );
    // SAFETY: `a` is a fresh 4096-byte allocation, host-addressable in the emulator.
    unsafe { std::ptr::write_bytes(a, 0x5a, 4096) };
    let done = signal(1);
    assert_eq!(
        copy(b.cast(), gpus[1], a.cast(), gpus[0], 4096, &[], done),
        0
    );
    assert!(
        fault_at(a as u64),
        "no fault reading GPU 0's memory from GPU 1's engine"
    );
    assert_eq!(wait_zero(done, 50), 1, "the faulting copy completed");
    assert_eq!(
        hsa_amd_agents_allow_access(1, &gpus[1], std::ptr::null(), a.cast()),
        0
    );
    let done = signal(1);
    assert_eq!(
        copy(b.cast(), gpus[1], a.cast(), gpus[0], 4096, &[], done),
        0
    );
    assert_eq!(wait_zero(done, 2000), 0);
    // SAFETY: `b` holds the 4096 bytes just copied.
    assert!(unsafe { std::slice::from_raw_parts(b, 4096) }
        .iter()
        .all(|&x| x == 0x5a));
    assert_eq!(hsa_amd_memory_pool_free(a.cast()), 0);
    assert_eq!(
        hsa_amd_memory_pool_free(a.cast()),
        HSA_STATUS_ERROR_INVALID_ARGUMENT,
        "double free"
    );
    assert_eq!(
        hsa_amd_memory_pool_free(b.wrapping_add(8).cast()),
        HSA_STATUS_ERROR_INVALID_ARGUMENT,
        "interior pointer"
    );
}

/// `hsa_amd_memory_fill` as ROCr takes it: aligned words inside one allocation, written
/// before the call returns; an unaligned or null start is an invalid argument, words past the
/// allocation's end or outside any allocation an invalid allocation.
#[test]
fn fills_write_aligned_words_inside_one_allocation() {
    let (_, gpus) = system();
    let a = allocate(pools(gpus[0])[0], 4096);
    // SAFETY: `a` is a fresh 4096-byte allocation, host-addressable in the emulator.
    unsafe { std::ptr::write_bytes(a, 0x11, 4096) };
    assert_eq!(
        hsa_amd_memory_fill(a.wrapping_add(8).cast(), 0xa1b2_c3d4, 3),
        0
    );
    // SAFETY: as above.
    let bytes = unsafe { std::slice::from_raw_parts(a, 32) };
    assert_eq!(&bytes[..8], &[0x11; 8]);
    assert_eq!(&bytes[8..12], &0xa1b2_c3d4u32.to_le_bytes());
    assert_eq!(&bytes[16..20], &0xa1b2_c3d4u32.to_le_bytes());
    assert_eq!(&bytes[20..32], &[0x11; 12]);
    assert_eq!(
        hsa_amd_memory_fill(a.wrapping_add(2).cast(), 0, 1),
        HSA_STATUS_ERROR_INVALID_ARGUMENT,
        "an unaligned start"
    );
    assert_eq!(
        hsa_amd_memory_fill(std::ptr::null_mut(), 0, 1),
        HSA_STATUS_ERROR_INVALID_ARGUMENT,
        "a null start"
    );
    assert_eq!(
        hsa_amd_memory_fill(a.wrapping_add(4092).cast(), 0, 2),
        HSA_STATUS_ERROR_INVALID_ALLOCATION,
        "a word past the allocation's end"
    );
    let mut outside = [0u32; 4];
    assert_eq!(
        hsa_amd_memory_fill(outside.as_mut_ptr().cast(), 0, 4),
        HSA_STATUS_ERROR_INVALID_ALLOCATION,
        "memory HSA does not know"
    );
    assert_eq!(outside, [0; 4]);
    assert_eq!(hsa_amd_memory_pool_free(a.cast()), 0);
    assert_eq!(
        hsa_amd_memory_fill(a.cast(), 0, 1),
        HSA_STATUS_ERROR_INVALID_ALLOCATION,
        "freed memory"
    );
}

/// Host memory the GPU copies from must be locked for it (or allocated by HSA and granted);
/// a lock counts, and locking memory HSA allocated, or part of a locked range, is refused.
#[test]
fn host_memory_must_be_locked_for_the_gpu() {
    let (cpu, gpus) = system();
    let device = allocate(pools(gpus[0])[0], 4096);
    let host = vec![9u8; 4096];
    let done = signal(1);
    assert_eq!(
        copy(
            device.cast(),
            gpus[0],
            host.as_ptr().cast(),
            *cpu,
            4096,
            &[],
            done
        ),
        0
    );
    assert!(
        fault_at(host.as_ptr() as u64),
        "pageable memory reached by the GPU"
    );
    let mut locked = std::ptr::null_mut();
    let mut agent = gpus[0];
    assert_eq!(
        hsa_amd_memory_lock(
            host.as_ptr() as *mut c_void,
            4096,
            &mut agent,
            1,
            &mut locked
        ),
        0
    );
    assert_eq!(
        hsa_amd_memory_lock(
            (host.as_ptr() as *mut u8).wrapping_add(64).cast(),
            64,
            &mut agent,
            1,
            &mut locked
        ),
        HSA_STATUS_ERROR_INVALID_ARGUMENT
    );
    let done = signal(1);
    assert_eq!(
        copy(device.cast(), gpus[0], locked, *cpu, 4096, &[], done),
        0
    );
    assert_eq!(wait_zero(done, 2000), 0);
    // SAFETY: `device` holds the bytes just copied.
    assert_eq!(unsafe { *device.add(4095) }, 9);
    assert_eq!(hsa_amd_memory_unlock(host.as_ptr() as *mut c_void), 0);
    assert_eq!(
        hsa_amd_memory_unlock(host.as_ptr() as *mut c_void),
        HSA_STATUS_ERROR_INVALID_ARGUMENT
    );
    let mut out = std::ptr::null_mut();
    assert_eq!(
        hsa_amd_memory_lock(device.cast(), 4096, &mut agent, 1, &mut out),
        HSA_STATUS_ERROR_INVALID_ARGUMENT,
        "locking HSA memory"
    );
    // Pointer info tells locked from HSA memory.
    #[repr(C)]
    struct Info {
        size: u32,
        kind: u32,
        agent_base: usize,
        host_base: usize,
        bytes: usize,
    }
    let mut info = Info {
        size: std::mem::size_of::<Info>() as u32,
        kind: 9,
        agent_base: 0,
        host_base: 0,
        bytes: 0,
    };
    assert_eq!(
        hsa_amd_pointer_info(
            device.wrapping_add(10).cast(),
            (&mut info as *mut Info).cast(),
            None,
            std::ptr::null_mut(),
            std::ptr::null_mut()
        ),
        0
    );
    assert_eq!(
        (info.kind, info.agent_base, info.bytes),
        (1, device as usize, 4096)
    );
    assert_eq!(
        hsa_amd_pointer_info(
            host.as_ptr().cast(),
            (&mut info as *mut Info).cast(),
            None,
            std::ptr::null_mut(),
            std::ptr::null_mut()
        ),
        0
    );
    assert_eq!(info.kind, 0, "unlocked host memory is unknown to HSA");
}

/// An asynchronous copy starts only after its dependency signals reached 0.
#[test]
fn copies_wait_for_their_dependencies() {
    let (_, gpus) = system();
    let pool = pools(gpus[0])[0];
    let (src, dst) = (allocate(pool, 64), allocate(pool, 64));
    // SAFETY: fresh 64-byte allocations.
    unsafe { std::ptr::write_bytes(src, 3, 64) };
    let (dependency, done) = (signal(1), signal(1));
    assert_eq!(
        copy(
            dst.cast(),
            gpus[0],
            src.cast(),
            gpus[0],
            64,
            &[dependency],
            done
        ),
        0
    );
    assert_eq!(
        wait_zero(done, 30),
        1,
        "copied before its dependency completed"
    );
    // SAFETY: as above.
    assert_eq!(unsafe { *dst }, 0);
    hsa_signal_store_screlease(dependency, 0);
    assert_eq!(wait_zero(done, 2000), 0);
    // SAFETY: as above.
    assert_eq!(unsafe { *dst.add(63) }, 3);
}

/// A queue with its ring, indices and doorbell; the error callback's reports.
struct TestQueue {
    queue: *mut hsa_queue_t,
    errors: Box<Mutex<Vec<hsa_status_t>>>,
}

unsafe extern "C" fn on_queue_error(
    status: hsa_status_t,
    _queue: *mut hsa_queue_t,
    data: *mut c_void,
) {
    // SAFETY: `data` is the queue's error list, alive while the queue is.
    unsafe {
        (*(data as *const Mutex<Vec<hsa_status_t>>))
            .lock()
            .unwrap()
            .push(status)
    };
}

impl TestQueue {
    fn new(agent: hsa_agent_t) -> TestQueue {
        let errors = Box::new(Mutex::new(Vec::new()));
        let mut queue = std::ptr::null_mut();
        let data = &*errors as *const _ as *mut c_void;
        assert_eq!(
            hsa_queue_create(
                agent,
                64,
                HSA_QUEUE_TYPE_MULTI,
                Some(on_queue_error),
                data,
                u32::MAX,
                u32::MAX,
                &mut queue
            ),
            0
        );
        TestQueue { queue, errors }
    }

    /// Writes `words` (16 u32) into the next slot; the header word last, only if `publish`.
    fn write(&self, words: [u32; 16], publish: bool) -> u64 {
        let index = hsa_queue_add_write_index_relaxed(self.queue, 1);
        // SAFETY: the queue is live; its ring has `size` 64-byte slots.
        let slot = unsafe {
            let q = &*self.queue;
            (q.base_address as *mut [u32; 16]).add((index % q.size as u64) as usize)
        };
        // SAFETY: the slot is ours until its header is published.
        unsafe {
            for (i, w) in words.iter().enumerate().skip(1) {
                (*slot)[i] = *w;
            }
            if publish {
                (*(slot as *const std::sync::atomic::AtomicU32))
                    .store(words[0], std::sync::atomic::Ordering::Release);
            }
        }
        index
    }

    fn publish(&self, index: u64, header: u32) {
        // SAFETY: as in `write`.
        unsafe {
            let q = &*self.queue;
            let slot = (q.base_address as *mut [u32; 16]).add((index % q.size as u64) as usize);
            (*(slot as *const std::sync::atomic::AtomicU32))
                .store(header, std::sync::atomic::Ordering::Release);
        }
    }

    fn ring(&self, index: u64) {
        // SAFETY: the queue is live.
        hsa_signal_store_screlease(unsafe { (*self.queue).doorbell_signal }, index as i64);
    }

    fn errors(&self) -> Vec<hsa_status_t> {
        self.errors.lock().unwrap().clone()
    }
}

impl Drop for TestQueue {
    fn drop(&mut self) {
        assert_eq!(hsa_queue_destroy(self.queue), 0);
    }
}

fn header(kind: u32, barrier: bool) -> u32 {
    kind << HSA_PACKET_HEADER_TYPE | (barrier as u32) << HSA_PACKET_HEADER_BARRIER
}

fn barrier_words(kind: u32, deps: &[hsa_signal_t], completion: hsa_signal_t) -> [u32; 16] {
    let mut w = [0u32; 16];
    w[0] = header(kind, false);
    for (i, d) in deps.iter().enumerate() {
        w[2 + 2 * i] = d.handle as u32;
        w[3 + 2 * i] = (d.handle >> 32) as u32;
    }
    w[14] = completion.handle as u32;
    w[15] = (completion.handle >> 32) as u32;
    w
}

/// A packet is taken only once its header is published; barrier-AND packets wait for all
/// their dependencies and hold back the packets behind them, barrier-OR packets for any.
#[test]
fn packets_run_once_published_and_barriers_wait_for_their_signals() {
    let (_, gpus) = system();
    let q = TestQueue::new(gpus[0]);
    let (dep, done) = (signal(1), signal(1));
    let words = barrier_words(HSA_PACKET_TYPE_BARRIER_AND, &[dep], done);
    let index = q.write(words, false);
    q.ring(index);
    std::thread::sleep(Duration::from_millis(30));
    assert_eq!(
        hsa_queue_load_read_index_scacquire(q.queue),
        0,
        "an unpublished packet was taken"
    );
    q.publish(index, words[0]);
    let (dep2, done2) = (signal(1), signal(1));
    let behind = q.write(
        barrier_words(HSA_PACKET_TYPE_BARRIER_OR, &[dep2, dep], done2),
        true,
    );
    q.ring(behind);
    hsa_signal_store_screlease(dep2, 0);
    assert_eq!(
        wait_zero(done, 30),
        1,
        "a barrier-AND completed with a dependency pending"
    );
    assert_eq!(
        wait_zero(done2, 30),
        1,
        "a packet ran past a waiting barrier"
    );
    hsa_signal_store_screlease(dep, 0);
    assert_eq!(wait_zero(done, 2000), 0);
    assert_eq!(wait_zero(done2, 2000), 0);
    assert_eq!(hsa_queue_load_read_index_scacquire(q.queue), 2);
    assert!(q.errors().is_empty());
}

fn dispatch_words(
    group: [u16; 3],
    grid: [u32; 3],
    group_memory: u32,
    kernel_object: u64,
    completion: hsa_signal_t,
) -> [u32; 16] {
    let mut w = [0u32; 16];
    let dims = if grid[2] > 1 || group[2] > 1 {
        3
    } else if grid[1] > 1 || group[1] > 1 {
        2
    } else {
        1
    };
    w[0] = header(HSA_PACKET_TYPE_KERNEL_DISPATCH, true) | dims << 16;
    w[1] = group[0] as u32 | (group[1] as u32) << 16;
    w[2] = group[2] as u32;
    w[3] = grid[0];
    w[4] = grid[1];
    w[5] = grid[2];
    w[7] = group_memory;
    w[8] = kernel_object as u32;
    w[9] = (kernel_object >> 32) as u32;
    w[14] = completion.handle as u32;
    w[15] = (completion.handle >> 32) as u32;
    w
}

/// A dispatch outside the agent's limits fails its queue with HSA's error, and the queue then
/// processes nothing more.
#[test]
fn dispatches_outside_the_agents_limits_fail_the_queue() {
    let (_, gpus) = system();
    for (group, grid, group_memory, kernel, expected) in [
        (
            [1024, 2, 1],
            [1024, 2, 1],
            0,
            1,
            HSA_STATUS_ERROR_INVALID_ARGUMENT,
        ),
        (
            [64, 1, 1],
            [64, 1, 1],
            128 << 10,
            1,
            HSA_STATUS_ERROR_INVALID_ALLOCATION,
        ),
        (
            [64, 1, 1],
            [64, 1, 1],
            0,
            0xdead_0000,
            HSA_STATUS_ERROR_INVALID_CODE_OBJECT,
        ),
    ] {
        let q = TestQueue::new(gpus[0]);
        let done = signal(1);
        let index = q.write(
            dispatch_words(group, grid, group_memory, kernel, done),
            true,
        );
        q.ring(index);
        let after = signal(1);
        let next = q.write(barrier_words(HSA_PACKET_TYPE_BARRIER_AND, &[], after), true);
        q.ring(next);
        assert_eq!(wait_zero(after, 100), 1, "a failed queue went on");
        assert_eq!(
            q.errors(),
            vec![expected],
            "{group:?} {grid:?} {group_memory}"
        );
        assert_eq!(wait_zero(done, 1), 1);
    }
}

#[test]
fn signals_wait_with_conditions_and_timeouts_and_handlers_run_on_their_own_thread() {
    system();
    let s = signal(5);
    let start = Instant::now();
    assert_eq!(
        hsa_signal_wait_scacquire(
            s,
            HSA_SIGNAL_CONDITION_LT,
            5,
            20_000_000,
            HSA_WAIT_STATE_ACTIVE
        ),
        5
    );
    assert!(
        start.elapsed() >= Duration::from_millis(19),
        "the timeout was not waited for"
    );
    hsa_signal_subtract_screlease(s, 2);
    assert_eq!(
        hsa_signal_wait_scacquire(
            s,
            HSA_SIGNAL_CONDITION_LT,
            5,
            u64::MAX,
            HSA_WAIT_STATE_BLOCKED
        ),
        3
    );
    static CALLS: Mutex<Vec<(i64, std::thread::ThreadId)>> = Mutex::new(Vec::new());
    unsafe extern "C" fn handler(value: hsa_signal_value_t, _arg: *mut c_void) -> bool {
        let mut calls = CALLS.lock().unwrap();
        calls.push((value, std::thread::current().id()));
        calls.len() < 2 // stays registered once
    }
    assert_eq!(
        hsa_amd_signal_async_handler(
            s,
            HSA_SIGNAL_CONDITION_EQ,
            0,
            Some(handler),
            std::ptr::null_mut()
        ),
        0
    );
    std::thread::sleep(Duration::from_millis(20));
    assert!(
        CALLS.lock().unwrap().is_empty(),
        "a handler ran before its condition held"
    );
    hsa_signal_store_screlease(s, 0);
    let start = Instant::now();
    while CALLS.lock().unwrap().len() < 2 && start.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(2));
    }
    let calls = CALLS.lock().unwrap().clone();
    assert_eq!(calls.len(), 2, "{calls:?}");
    assert!(calls
        .iter()
        .all(|&(v, t)| v == 0 && t != std::thread::current().id()));
    assert_eq!(hsa_signal_destroy(s), 0);
    assert_eq!(hsa_signal_destroy(s), HSA_STATUS_ERROR_INVALID_SIGNAL);
    assert_eq!(
        hsa_amd_signal_async_handler(
            s,
            HSA_SIGNAL_CONDITION_EQ,
            0,
            Some(handler),
            std::ptr::null_mut()
        ),
        HSA_STATUS_ERROR_INVALID_SIGNAL
    );
}

/// The gfx code objects of a clang-19 program built for `archs`.
fn code_objects(archs: &str) -> Vec<Vec<u8>> {
    use object::{Object, ObjectSection};
    let exe = tests::compile_amdgpu("amdgpu_offload.c", archs);
    let bytes = std::fs::read(exe).unwrap();
    let file = object::File::parse(&*bytes).unwrap();
    let section = file
        .section_by_name(".llvm.offloading")
        .expect("an offload section");
    offload_image::offload_binary::containers(section.data().unwrap())
        .into_iter()
        .filter_map(|c| offload_image::offload_binary::unwrap(c).ok())
        .filter(|u| u.triple.starts_with("amdgcn"))
        .map(|u| u.bytes.to_vec())
        .collect()
}

fn load(code: &[u8], agent: hsa_agent_t) -> (hsa_status_t, hsa_executable_t) {
    let mut reader = hsa_code_object_reader_t::default();
    assert_eq!(
        hsa_code_object_reader_create_from_memory(code.as_ptr().cast(), code.len(), &mut reader),
        0
    );
    let mut executable = hsa_executable_t::default();
    assert_eq!(
        hsa_executable_create_alt(
            HSA_PROFILE_FULL,
            HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT,
            std::ptr::null(),
            &mut executable
        ),
        0
    );
    let status = hsa_executable_load_agent_code_object(
        executable,
        agent,
        reader,
        std::ptr::null(),
        std::ptr::null_mut(),
    );
    assert_eq!(hsa_code_object_reader_destroy(reader), 0);
    (status, executable)
}

/// Code objects: a gfx90a image loads and its kernels and variables are found as HSA reports
/// them; an image for another ISA, or bytes that are no code object, are refused.
#[test]
fn code_objects_load_for_their_isa_only() {
    let (_, gpus) = system();
    let gfx90a = code_objects("gfx90a");
    assert_eq!(gfx90a.len(), 1);
    let (status, executable) = load(&gfx90a[0], gpus[0]);
    assert_eq!(status, HSA_STATUS_SUCCESS);
    assert_eq!(hsa_executable_freeze(executable, std::ptr::null()), 0);
    assert_eq!(
        hsa_executable_freeze(executable, std::ptr::null()),
        HSA_STATUS_ERROR_FROZEN_EXECUTABLE
    );
    unsafe extern "C" fn each(
        _e: hsa_executable_t,
        symbol: hsa_executable_symbol_t,
        data: *mut c_void,
    ) -> hsa_status_t {
        // SAFETY: `data` is the vector below.
        unsafe { (*(data as *mut Vec<hsa_executable_symbol_t>)).push(symbol) };
        HSA_STATUS_SUCCESS
    }
    let mut symbols: Vec<hsa_executable_symbol_t> = Vec::new();
    assert_eq!(
        hsa_executable_iterate_symbols(
            executable,
            Some(each),
            &mut symbols as *mut _ as *mut c_void
        ),
        0
    );
    let info_u32 = |s: hsa_executable_symbol_t, attribute| {
        let mut value = 0u32;
        assert_eq!(
            hsa_executable_symbol_get_info(s, attribute, &mut value as *mut _ as *mut c_void),
            0
        );
        value
    };
    let kernels: Vec<_> = symbols
        .iter()
        .copied()
        .filter(|&s| info_u32(s, HSA_EXECUTABLE_SYMBOL_INFO_TYPE) == HSA_SYMBOL_KIND_KERNEL)
        .collect();
    assert!(!kernels.is_empty());
    for kernel in kernels {
        let mut object = 0u64;
        assert_eq!(
            hsa_executable_symbol_get_info(
                kernel,
                HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT,
                &mut object as *mut _ as *mut c_void
            ),
            0
        );
        assert_ne!(object, 0);
        assert!(
            info_u32(
                kernel,
                HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE
            ) >= 8
        );
        let len = info_u32(kernel, HSA_EXECUTABLE_SYMBOL_INFO_NAME_LENGTH) as usize;
        let mut name = vec![0u8; len];
        assert_eq!(
            hsa_executable_symbol_get_info(
                kernel,
                HSA_EXECUTABLE_SYMBOL_INFO_NAME,
                name.as_mut_ptr().cast()
            ),
            0
        );
        let name = String::from_utf8(name).unwrap();
        assert!(name.ends_with(".kd"), "{name}");
        let mut found = hsa_executable_symbol_t::default();
        let cname = std::ffi::CString::new(name).unwrap();
        assert_eq!(
            hsa_executable_get_symbol_by_name(executable, cname.as_ptr(), &gpus[0], &mut found),
            0
        );
        assert_eq!(found, kernel);
        assert_eq!(
            hsa_executable_get_symbol_by_name(executable, cname.as_ptr(), &gpus[1], &mut found),
            HSA_STATUS_ERROR_INVALID_SYMBOL_NAME,
            "loaded for GPU 0 only"
        );
    }
    let (environment, address) = variable(executable, "__omp_rtl_device_environment", gpus[0]);
    assert_ne!(address, 0);
    assert!(info_u32(environment, HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_SIZE) > 0);
    assert_eq!(hsa_executable_destroy(executable), 0);
    assert_eq!(
        hsa_executable_destroy(executable),
        HSA_STATUS_ERROR_INVALID_EXECUTABLE
    );

    let gfx1030 = code_objects("gfx1030");
    let (status, executable) = load(&gfx1030[0], gpus[0]);
    assert_eq!(
        status, HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS,
        "a gfx1030 image on a gfx90a agent"
    );
    hsa_executable_destroy(executable);
    let (status, executable) = load(b"\x7fELF not really a code object at all", gpus[0]);
    assert_eq!(status, HSA_STATUS_ERROR_INVALID_CODE_OBJECT);
    hsa_executable_destroy(executable);
}

/// The variable `name` of `executable` on `agent`, and the address HSA reports for it.
fn variable(
    executable: hsa_executable_t,
    name: &str,
    agent: hsa_agent_t,
) -> (hsa_executable_symbol_t, u64) {
    let mut symbol = hsa_executable_symbol_t::default();
    let cname = std::ffi::CString::new(name).unwrap();
    assert_eq!(
        hsa_executable_get_symbol_by_name(executable, cname.as_ptr(), &agent, &mut symbol),
        0,
        "{name}"
    );
    let mut address = 0u64;
    assert_eq!(
        hsa_executable_symbol_get_info(
            symbol,
            HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_ADDRESS,
            &mut address as *mut _ as *mut c_void
        ),
        0
    );
    (symbol, address)
}

/// A code object is placed as ROCr's loader places it: its dynamic relocations are applied
/// where it lands, so each kernel's environment points at the kernel's dynamic environment
/// there. A relocation the loader does not apply refuses the code object.
#[test]
fn code_objects_are_relocated_where_they_are_placed() {
    use object::{Object, ObjectSection};
    use offload_image::amdgpu_code_object::CodeObject;
    let (_, gpus) = system();
    let image = code_objects("gfx90a").remove(0);
    let code = CodeObject::parse(&image).unwrap();
    let (status, executable) = load(&image, gpus[0]);
    assert_eq!(status, HSA_STATUS_SUCCESS);
    assert!(!code.kernels().is_empty());
    for kernel in code.kernels() {
        let name = format!("{}_kernel_environment", kernel.name);
        let size = code.symbol(&name).unwrap().size;
        let (_, environment) = variable(executable, &name, gpus[0]);
        let dynamic = format!("{}_dynamic_environment", kernel.name);
        let (_, dynamic) = variable(executable, &dynamic, gpus[0]);
        // SAFETY: the emulated agent's memory is this process's; the environment's last field
        // is its pointer to the dynamic environment.
        let pointer = unsafe { ((environment + size - 8) as *const u64).read_unaligned() };
        assert_eq!(pointer, dynamic, "{}", kernel.name);
    }
    assert_eq!(hsa_executable_destroy(executable), 0);

    // The first dynamic relocation made R_AMDGPU_REL64, which no loader applies.
    let file = object::File::parse(&*image).unwrap();
    let relocations = file
        .section_by_name(".rela.dyn")
        .expect("dynamic relocations");
    let (offset, _) = relocations.file_range().unwrap();
    let mut damaged = image.clone();
    damaged[offset as usize + 8] = 5;
    let (status, executable) = load(&damaged, gpus[0]);
    assert_eq!(status, HSA_STATUS_ERROR_INVALID_CODE_OBJECT);
    hsa_executable_destroy(executable);
}

/// The functions LLVM 19's AMDGPU plugin resolves from the runtime
/// (`offload/plugins-nextgen/amdgpu/dynamic_hsa/hsa.cpp`, its `DLWRAP` list).
const LLVM_19_FUNCTIONS: &[&str] = &[
    "hsa_init",
    "hsa_status_string",
    "hsa_shut_down",
    "hsa_system_get_info",
    "hsa_agent_get_info",
    "hsa_isa_get_info_alt",
    "hsa_iterate_agents",
    "hsa_agent_iterate_isas",
    "hsa_signal_create",
    "hsa_signal_destroy",
    "hsa_signal_store_relaxed",
    "hsa_signal_store_screlease",
    "hsa_signal_wait_scacquire",
    "hsa_signal_load_scacquire",
    "hsa_signal_subtract_screlease",
    "hsa_queue_create",
    "hsa_queue_destroy",
    "hsa_queue_load_read_index_scacquire",
    "hsa_queue_add_write_index_relaxed",
    "hsa_memory_copy",
    "hsa_executable_create",
    "hsa_executable_create_alt",
    "hsa_executable_destroy",
    "hsa_executable_freeze",
    "hsa_executable_validate",
    "hsa_executable_symbol_get_info",
    "hsa_executable_get_symbol_by_name",
    "hsa_executable_iterate_symbols",
    "hsa_code_object_deserialize",
    "hsa_executable_load_code_object",
    "hsa_code_object_destroy",
    "hsa_amd_agent_memory_pool_get_info",
    "hsa_amd_agent_iterate_memory_pools",
    "hsa_amd_memory_pool_allocate",
    "hsa_amd_memory_pool_free",
    "hsa_amd_memory_async_copy",
    "hsa_amd_memory_pool_get_info",
    "hsa_amd_agents_allow_access",
    "hsa_amd_memory_lock",
    "hsa_amd_memory_unlock",
    "hsa_amd_memory_fill",
    "hsa_amd_register_system_event_handler",
    "hsa_amd_signal_create",
    "hsa_amd_signal_async_handler",
    "hsa_amd_pointer_info",
];

/// The library exports exactly the HSA functions our plugin (hsa-sys's lists) or LLVM 19's
/// resolves: nothing else (no symbol of the crates it is built from).
#[test]
fn the_runtime_exports_exactly_what_the_plugins_resolve() {
    let output = std::process::Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(tests::dist().join("emu/libhsa-runtime64.so.1"))
        .output()
        .expect("nm");
    let exported: std::collections::BTreeSet<String> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2).map(str::to_owned))
        .collect();
    let wanted: std::collections::BTreeSet<String> = hsa_sys::REQUIRED_SYMBOLS
        .iter()
        .chain(hsa_sys::OPTIONAL_SYMBOLS)
        .chain(LLVM_19_FUNCTIONS)
        .map(|s| s.to_string())
        .collect();
    assert_eq!(exported, wanted);
}

/// A kernel given a pointer into another GPU's memory that was not granted to its own GPU
/// faults: the system event handler is told the address, the queue's error callback
/// `HSA_STATUS_ERROR_MEMORY_FAULT`.
#[test]
fn a_kernel_given_memory_its_gpu_may_not_reach_faults() {
    let (cpu, gpus) = system();
    let code = &code_objects("gfx90a")[0];
    let (status, executable) = load(code, gpus[0]);
    assert_eq!(status, 0);
    let metadata = offload_image::amdgpu_code_object::check(code).unwrap();
    let kernel = metadata
        .kernels()
        .iter()
        .find(|k| k.args.iter().any(|a| a.value_kind == "global_buffer"))
        .expect("a kernel with a pointer argument");
    let info = kernel_symbol_info(executable, gpus[0], &kernel.symbol);
    let object = info(HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT);
    let group = info(HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE) as u32;
    let kernarg_pool = kernarg_pool(*cpu);
    let kernarg = allocate(kernarg_pool, kernel.kernarg_segment_size as usize);
    assert_eq!(
        hsa_amd_agents_allow_access(1, &gpus[0], std::ptr::null(), kernarg.cast()),
        0
    );
    let other = allocate(pools(gpus[1])[0], 4096);
    for arg in kernel
        .args
        .iter()
        .filter(|a| a.value_kind == "global_buffer")
    {
        // SAFETY: the argument lies inside the kernarg buffer just allocated.
        unsafe {
            std::ptr::write_unaligned(kernarg.add(arg.offset as usize) as *mut u64, other as u64)
        };
    }
    let q = TestQueue::new(gpus[0]);
    let done = signal(1);
    let mut words = dispatch_words([64, 1, 1], [64, 1, 1], group, object, done);
    words[10] = kernarg as u64 as u32;
    words[11] = (kernarg as u64 >> 32) as u32;
    let index = q.write(words, true);
    q.ring(index);
    assert!(
        fault_at(other as u64),
        "no fault for GPU 1's memory given to a kernel on GPU 0"
    );
    let start = Instant::now();
    while q.errors().is_empty() && start.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(2));
    }
    assert_eq!(q.errors(), vec![HSA_STATUS_ERROR_MEMORY_FAULT]);
    assert_eq!(wait_zero(done, 1), 1);
    // Granted, the dispatch gets past that check, to the next: this test process has no
    // x86-64 twin of the kernel to run it with.
    assert_eq!(
        hsa_amd_agents_allow_access(1, &gpus[0], std::ptr::null(), other.cast()),
        0
    );
    let q = TestQueue::new(gpus[0]);
    let index = q.write(words, true);
    q.ring(index);
    let start = Instant::now();
    while q.errors().is_empty() && start.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(2));
    }
    assert_eq!(q.errors(), vec![HSA_STATUS_ERROR_INVALID_CODE_OBJECT]);
}

// --- Profiling ------------------------------------------------------------------------------

/// The HSA system clock now (`HSA_SYSTEM_INFO_TIMESTAMP`).
fn system_clock() -> u64 {
    let mut ticks = 0u64;
    assert_eq!(
        hsa_system_get_info(
            HSA_SYSTEM_INFO_TIMESTAMP,
            &mut ticks as *mut _ as *mut c_void
        ),
        0
    );
    ticks
}

fn dispatch_time(agent: hsa_agent_t, signal: hsa_signal_t) -> (hsa_status_t, (u64, u64)) {
    let mut time = hsa_amd_profiling_dispatch_time_t::default();
    let status = hsa_amd_profiling_get_dispatch_time(agent, signal, &mut time);
    (status, (time.start, time.end))
}

fn copy_time(signal: hsa_signal_t) -> (hsa_status_t, (u64, u64)) {
    let mut time = hsa_amd_profiling_async_copy_time_t::default();
    let status = hsa_amd_profiling_get_async_copy_time(signal, &mut time);
    (status, (time.start, time.end))
}

/// The system clock is `CLOCK_MONOTONIC` in nanoseconds, as its frequency says.
#[test]
fn the_system_clock_is_the_monotonic_clock_in_nanoseconds() {
    system();
    let mut frequency = 0u64;
    assert_eq!(
        hsa_system_get_info(
            HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY,
            &mut frequency as *mut _ as *mut c_void
        ),
        0
    );
    assert_eq!(frequency, 1_000_000_000);
    extern "C" {
        fn clock_gettime(clock: i32, time: *mut [i64; 2]) -> i32;
    }
    let monotonic = || {
        let mut now = [0i64; 2];
        // SAFETY: fills the timespec (seconds, nanoseconds) given; 1 is CLOCK_MONOTONIC.
        unsafe { clock_gettime(1, &mut now) };
        now[0] as u64 * 1_000_000_000 + now[1] as u64
    };
    let before = monotonic();
    let ticks = system_clock();
    let after = monotonic();
    assert!(
        (before..=after).contains(&ticks),
        "{before} {ticks} {after}"
    );
}

/// What ROCr answers where there is nothing profiled to answer for (`hsa_ext_amd.cpp`):
/// a dispatch time is read from whatever the signal holds, so a signal no profiled packet
/// completed (never used, or completed by a packet of a queue without profiling) answers
/// `HSA_STATUS_SUCCESS` with stamps that mean nothing (0 here, never written); a copy time of a
/// signal that no copy submitted with copy profiling on completed is `HSA_STATUS_ERROR`. And
/// the arguments' errors, in ROCr's order of checks.
#[test]
fn profiling_answers_as_rocr_where_nothing_was_profiled() {
    let (cpu, gpus) = system();
    // Never used.
    let unused = signal(1);
    assert_eq!(dispatch_time(gpus[0], unused), (HSA_STATUS_SUCCESS, (0, 0)));
    assert_eq!(copy_time(unused).0, HSA_STATUS_ERROR);
    // A packet of a queue without profiling: no stamps.
    let q = TestQueue::new(gpus[0]);
    let done = signal(1);
    let index = q.write(barrier_words(HSA_PACKET_TYPE_BARRIER_AND, &[], done), true);
    q.ring(index);
    assert_eq!(wait_zero(done, 2000), 0);
    assert_eq!(dispatch_time(gpus[0], done), (HSA_STATUS_SUCCESS, (0, 0)));
    // A copy submitted with copy profiling off (no other test turns it on in this process).
    let (a, b) = (
        allocate(pools(gpus[0])[0], 4096),
        allocate(pools(gpus[0])[0], 4096),
    );
    let copied = signal(1);
    assert_eq!(
        copy(b.cast(), gpus[0], a.cast(), gpus[0], 4096, &[], copied),
        0
    );
    assert_eq!(wait_zero(copied, 2000), 0);
    assert_eq!(copy_time(copied).0, HSA_STATUS_ERROR);
    // Arguments.
    let mut time = hsa_amd_profiling_dispatch_time_t::default();
    assert_eq!(
        hsa_amd_profiling_get_dispatch_time(gpus[0], done, std::ptr::null_mut()),
        HSA_STATUS_ERROR_INVALID_ARGUMENT
    );
    assert_eq!(
        hsa_amd_profiling_get_dispatch_time(*cpu, done, &mut time),
        HSA_STATUS_ERROR_INVALID_AGENT
    );
    assert_eq!(
        hsa_amd_profiling_get_dispatch_time(hsa_agent_t { handle: 42 }, done, &mut time),
        HSA_STATUS_ERROR_INVALID_AGENT
    );
    assert_eq!(
        hsa_amd_profiling_get_async_copy_time(copied, std::ptr::null_mut()),
        HSA_STATUS_ERROR_INVALID_ARGUMENT
    );
    assert_eq!(hsa_signal_destroy(unused), 0);
    assert_eq!(
        dispatch_time(gpus[0], unused).0,
        HSA_STATUS_ERROR_INVALID_SIGNAL
    );
    assert_eq!(copy_time(unused).0, HSA_STATUS_ERROR_INVALID_SIGNAL);
    assert_eq!(
        hsa_amd_profiling_set_profiler_enabled(std::ptr::null_mut(), 1),
        HSA_STATUS_ERROR_INVALID_QUEUE
    );
    assert_eq!(
        hsa_amd_profiling_set_profiler_enabled(0x1234 as *mut hsa_queue_t, 1),
        HSA_STATUS_ERROR_INVALID_QUEUE
    );
    assert_eq!(hsa_amd_memory_pool_free(a.cast()), 0);
    assert_eq!(hsa_amd_memory_pool_free(b.cast()), 0);
}

const PROFILING_CHILD: &str = "OMPTARGET_TEST_EMU_HSA_PROFILING_CHILD";
/// The delay of each packet's work and each copy in the child.
const DELAY_US: u64 = 20_000;

/// A profiled queue's packets, a kernel dispatch (run through its twin) and a barrier, and
/// copies submitted with copy profiling on carry their stamps: present, ordered, inside the
/// host-clock window of their submission and completion, and wide enough to hold the
/// `OMPTARGET_EMU_DELAY_US` that stands for their work. A signal keeps its last stamps: a
/// packet of an unprofiled queue leaves them, a copy submitted with profiling off too. The test
/// runs itself again with the settings the runtime reads when it starts: the delay, and the
/// program whose twins run the kernel.
#[test]
fn profiled_packets_and_copies_carry_their_times() {
    let exe = tests::compile_amdgpu_twin("emu_params.c");
    if !tests::emulated::in_child_with_twins(
        "profiled_packets_and_copies_carry_their_times",
        PROFILING_CHILD,
        &exe,
        &[("OMPTARGET_EMU_DELAY_US", DELAY_US.to_string())],
    ) {
        return;
    }
    let (cpu, gpus) = system();
    let delay = DELAY_US * 1000;
    // The kernel: emu_params.c's target region, whose explicit arguments are the launch
    // environment (unused by a twin: null) and the mapped array.
    let code = {
        use object::{Object, ObjectSection};
        let bytes = std::fs::read(&exe).unwrap();
        let file = object::File::parse(&*bytes).unwrap();
        let section = file.section_by_name(".llvm.offloading").unwrap();
        offload_image::offload_binary::containers(section.data().unwrap())
            .into_iter()
            .filter_map(|c| offload_image::offload_binary::unwrap(c).ok())
            .find(|u| u.triple.starts_with("amdgcn"))
            .map(|u| u.bytes.to_vec())
            .unwrap()
    };
    let (status, executable) = load(&code, gpus[0]);
    assert_eq!(status, 0);
    let metadata = offload_image::amdgpu_code_object::check(&code).unwrap();
    let kernel = &metadata.kernels()[0];
    let info = kernel_symbol_info(executable, gpus[0], &kernel.symbol);
    let object = info(HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT);
    let group = info(HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE) as u32;
    let private = info(HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE) as u32;
    let kernarg_pool = kernarg_pool(*cpu);
    let kernarg = allocate(kernarg_pool, kernel.kernarg_segment_size.max(16) as usize);
    assert_eq!(
        hsa_amd_agents_allow_access(1, &gpus[0], std::ptr::null(), kernarg.cast()),
        0
    );
    let array = allocate(pools(gpus[0])[0], 4096);
    let pointers: Vec<u64> = kernel
        .args
        .iter()
        .filter(|a| a.value_kind == "global_buffer")
        .map(|a| a.offset as u64)
        .collect();
    assert_eq!(pointers.len(), 2, "{:?}", kernel.args);
    // SAFETY: both arguments lie inside the kernarg buffer just allocated.
    unsafe {
        std::ptr::write_unaligned(kernarg.add(pointers[0] as usize) as *mut u64, 0);
        std::ptr::write_unaligned(kernarg.add(pointers[1] as usize) as *mut u64, array as u64);
    }
    let mut words = dispatch_words([1, 1, 1], [1, 1, 1], group, object, signal(0));
    words[6] = private;
    words[10] = kernarg as u64 as u32;
    words[11] = (kernarg as u64 >> 32) as u32;
    let with_completion = |done: hsa_signal_t| {
        let mut w = words;
        w[14] = done.handle as u32;
        w[15] = (done.handle >> 32) as u32;
        w
    };

    // A profiled queue: the dispatch's stamps lie between its submission and its completion
    // and hold the delay standing for its work.
    let q = TestQueue::new(gpus[0]);
    assert_eq!(hsa_amd_profiling_set_profiler_enabled(q.queue, 1), 0);
    let done = signal(1);
    let before = system_clock();
    let index = q.write(with_completion(done), true);
    q.ring(index);
    assert_eq!(wait_zero(done, 5000), 0, "errors: {:?}", q.errors());
    let after = system_clock();
    // SAFETY: the kernel wrote the array's first four ints.
    let values = unsafe { std::slice::from_raw_parts(array as *const i32, 4) }.to_vec();
    assert_eq!(values, [7, 14, 21, 28], "the twin ran");
    let (status, (start, end)) = dispatch_time(gpus[0], done);
    assert_eq!(status, HSA_STATUS_SUCCESS);
    assert!(
        before <= start && start + delay <= end && end <= after,
        "dispatch {start}..{end} in {before}..{after}"
    );
    // A barrier packet is stamped as well.
    let barrier_done = signal(1);
    let before = system_clock();
    let index = q.write(
        barrier_words(HSA_PACKET_TYPE_BARRIER_AND, &[], barrier_done),
        true,
    );
    q.ring(index);
    assert_eq!(wait_zero(barrier_done, 5000), 0);
    let after = system_clock();
    let (status, (b_start, b_end)) = dispatch_time(gpus[0], barrier_done);
    assert_eq!(status, HSA_STATUS_SUCCESS);
    assert!(before <= b_start && b_start + delay <= b_end && b_end <= after);
    // The same signal completed by a packet of a queue without profiling keeps its stamps.
    let unprofiled = TestQueue::new(gpus[0]);
    hsa_signal_store_screlease(done, 1);
    let index = unprofiled.write(with_completion(done), true);
    unprofiled.ring(index);
    assert_eq!(wait_zero(done, 5000), 0);
    assert_eq!(dispatch_time(gpus[0], done), (0, (start, end)));
    // Profiling off again: no new stamps either.
    assert_eq!(hsa_amd_profiling_set_profiler_enabled(q.queue, 0), 0);
    hsa_signal_store_screlease(barrier_done, 1);
    let index = q.write(
        barrier_words(HSA_PACKET_TYPE_BARRIER_AND, &[], barrier_done),
        true,
    );
    q.ring(index);
    assert_eq!(wait_zero(barrier_done, 5000), 0);
    assert_eq!(dispatch_time(gpus[0], barrier_done), (0, (b_start, b_end)));

    // Copies: profiling applies to copies submitted while it is on; the start is when the
    // engine starts (its dependency met), the end when it completes.
    let other = allocate(pools(gpus[0])[0], 4096);
    assert_eq!(hsa_amd_profiling_async_copy_enable(true), 0);
    let (dep, copied) = (signal(1), signal(1));
    assert_eq!(
        copy(
            other.cast(),
            gpus[0],
            array.cast(),
            gpus[0],
            4096,
            &[dep],
            copied
        ),
        0
    );
    std::thread::sleep(Duration::from_millis(30));
    let before = system_clock();
    hsa_signal_store_screlease(dep, 0);
    assert_eq!(wait_zero(copied, 5000), 0);
    let after = system_clock();
    let (status, (c_start, c_end)) = copy_time(copied);
    assert_eq!(status, HSA_STATUS_SUCCESS);
    assert!(
        before <= c_start && c_start + delay <= c_end && c_end <= after,
        "copy {c_start}..{c_end} in {before}..{after}: the wait for the dependency is not \
         the copy's"
    );
    // Host memory locked for the GPU, copied by the GPU's engine: timed the same way.
    let mut host = vec![0u8; 4096];
    let mut agent_address = std::ptr::null_mut();
    assert_eq!(
        hsa_amd_memory_lock(
            host.as_mut_ptr().cast(),
            4096,
            gpus.as_ptr() as *mut hsa_agent_t,
            1,
            &mut agent_address
        ),
        0
    );
    let to_host = signal(1);
    let before = system_clock();
    assert_eq!(
        copy(
            agent_address,
            *cpu,
            other.cast(),
            gpus[0],
            4096,
            &[],
            to_host
        ),
        0
    );
    assert_eq!(wait_zero(to_host, 5000), 0);
    let after = system_clock();
    let (status, (h_start, h_end)) = copy_time(to_host);
    assert_eq!(status, HSA_STATUS_SUCCESS);
    assert!(before <= h_start && h_start + delay <= h_end && h_end <= after);
    assert_eq!(&host[..4], &7i32.to_ne_bytes());
    // Submitted with copy profiling off: the signal keeps the stamps of its last profiled copy.
    assert_eq!(hsa_amd_profiling_async_copy_enable(false), 0);
    hsa_signal_store_screlease(copied, 1);
    assert_eq!(
        copy(
            other.cast(),
            gpus[0],
            array.cast(),
            gpus[0],
            4096,
            &[],
            copied
        ),
        0
    );
    assert_eq!(wait_zero(copied, 5000), 0);
    assert_eq!(copy_time(copied), (0, (c_start, c_end)));
    assert!(q.errors().is_empty() && unprofiled.errors().is_empty());
    assert_eq!(hsa_amd_memory_unlock(host.as_mut_ptr().cast()), 0);
}

/// The `hsa_executable_symbol_get_info` answers of a kernel's symbol, by attribute.
fn kernel_symbol_info(
    executable: hsa_executable_t,
    agent: hsa_agent_t,
    symbol_name: &str,
) -> impl Fn(hsa_executable_symbol_info_t) -> u64 {
    let mut symbol = hsa_executable_symbol_t::default();
    let name = std::ffi::CString::new(symbol_name).unwrap();
    assert_eq!(
        hsa_executable_get_symbol_by_name(executable, name.as_ptr(), &agent, &mut symbol),
        0
    );
    move |attribute| {
        let mut value = 0u64;
        assert_eq!(
            hsa_executable_symbol_get_info(symbol, attribute, &mut value as *mut _ as *mut c_void),
            0
        );
        value
    }
}

/// The CPU agent's pool for kernel arguments.
fn kernarg_pool(cpu: hsa_agent_t) -> hsa_amd_memory_pool_t {
    pools(cpu)
        .into_iter()
        .find(|&p| {
            let mut flags = 0u32;
            hsa_amd_memory_pool_get_info(
                p,
                HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS,
                &mut flags as *mut _ as *mut c_void,
            );
            flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT != 0
        })
        .unwrap()
}

// --- The APU profile (OMPTARGET_EMU_PROFILE=mi300a) -----------------------------------------

/// A 16-byte `hsa_amd_svm_attribute_pair_t`.
fn pair(attribute: u32, value: u64) -> hsa_amd_svm_attribute_pair_t {
    hsa_amd_svm_attribute_pair_t {
        attribute: attribute.into(),
        value,
    }
}

fn svm_set(ptr: *const u8, size: usize, pairs: &[hsa_amd_svm_attribute_pair_t]) -> hsa_status_t {
    let mut pairs = pairs.to_vec();
    hsa_amd_svm_attributes_set(ptr as *mut c_void, size, pairs.as_mut_ptr(), pairs.len())
}

fn svm_get(
    ptr: *const u8,
    size: usize,
    pairs: &[hsa_amd_svm_attribute_pair_t],
) -> (hsa_status_t, Vec<hsa_amd_svm_attribute_pair_t>) {
    let mut pairs = pairs.to_vec();
    let status =
        hsa_amd_svm_attributes_get(ptr as *mut c_void, size, pairs.as_mut_ptr(), pairs.len());
    (status, pairs)
}

fn system_flag(attribute: hsa_system_info_t) -> bool {
    let mut value = true;
    assert_eq!(
        hsa_system_get_info(attribute, &mut value as *mut _ as *mut c_void),
        0
    );
    value
}

fn memory_properties(agent: hsa_agent_t) -> [u8; 8] {
    let mut bits = [0xffu8; 8];
    assert_eq!(
        hsa_agent_get_info(
            agent,
            HSA_AMD_AGENT_INFO_MEMORY_PROPERTIES,
            bits.as_mut_ptr().cast()
        ),
        0
    );
    bits
}

/// The default profile is the discrete MI210 it always was: no APU bit (the attribute is
/// answered, as a real MI210 answers it), no SVM, no XNACK; SVM calls get their arguments
/// checked as ROCr checks them, then KFD's refusal, `HSA_STATUS_ERROR`.
#[test]
fn the_default_profile_is_a_discrete_gpu_without_svm() {
    let (cpu, gpus) = system();
    assert_eq!(memory_properties(gpus[0]), [0; 8]);
    assert_eq!(memory_properties(*cpu), [0; 8]);
    assert!(!system_flag(HSA_AMD_SYSTEM_INFO_SVM_SUPPORTED));
    assert!(!system_flag(HSA_AMD_SYSTEM_INFO_SVM_ACCESSIBLE_BY_DEFAULT));
    assert!(!system_flag(HSA_AMD_SYSTEM_INFO_XNACK_ENABLED));
    let host = vec![0u8; 8192];
    let coarse = pair(
        HSA_AMD_SVM_ATTRIB_GLOBAL_FLAG,
        HSA_AMD_SVM_GLOBAL_FLAG_COARSE_GRAINED.into(),
    );
    assert_eq!(svm_set(host.as_ptr(), 4096, &[coarse]), HSA_STATUS_ERROR);
    assert_eq!(
        svm_set(
            host.as_ptr(),
            4096,
            &[pair(HSA_AMD_SVM_ATTRIB_ACCESS_QUERY, 0)]
        ),
        HSA_STATUS_ERROR_INVALID_ARGUMENT
    );
    assert_eq!(svm_get(host.as_ptr(), 4096, &[coarse]).0, HSA_STATUS_ERROR);
}

/// Runs the child half of the APU test in a process of its own with `HSA_XNACK=xnack` (the
/// profile is read once per process); returns its trace.
fn run_apu_child(xnack: &str) -> String {
    let trace = tests::build_dir().join(format!("emu-hsa-apu-trace-{xnack}.txt"));
    let _ = std::fs::remove_file(&trace);
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "an_apu_profile_is_a_gfx942_apu", "--nocapture"])
        .env(APU_CHILD, "1")
        .env("OMPTARGET_EMU_PROFILE", "mi300a")
        .env("HSA_XNACK", xnack)
        .env("OMPTARGET_EMU_TRACE", &trace)
        .output()
        .unwrap();
    assert!(
        out.status.success() && tests::text(&out.stdout).contains("1 passed"),
        "HSA_XNACK={xnack}: {}{}",
        tests::text(&out.stdout),
        tests::text(&out.stderr)
    );
    std::fs::read_to_string(&trace).unwrap()
}

const APU_CHILD: &str = "OMPTARGET_TEST_EMU_HSA_APU_CHILD";

/// `OMPTARGET_EMU_PROFILE=mi300a`: gfx942 agents that say they are APUs, XNACK as `HSA_XNACK`
/// says (in the ISA name and the system's answers), the loader's target-ID rules for gfx942,
/// ROCr's SVM calls with KFD's per-range attributes and their errors, and the GPU's reach into
/// host memory HSA never saw: with XNACK on, yes; with it off, a fault, unless SVM gave the
/// agent access there. Every SVM call and copy is a trace line (copies with their bytes).
#[test]
fn an_apu_profile_is_a_gfx942_apu() {
    if std::env::var_os(APU_CHILD).is_some() {
        return apu_child();
    }
    for xnack in ["1", "0"] {
        let trace = run_apu_child(xnack);
        let count = |call: &str| trace.lines().filter(|l| l.starts_with(call)).count();
        assert!(count("hsa_amd_svm_attributes_set ") >= 10, "{trace}");
        assert!(count("hsa_amd_svm_attributes_get ") >= 5, "{trace}");
        assert!(
            trace
                .lines()
                .any(|l| l.starts_with("copy-done ") && l.contains(" size=8192")),
            "{trace}"
        );
    }
}

/// Sets the ELF flags' XNACK and SRAM ECC settings (code object v4 and later) of a copy of
/// `code`: 0 any, 1 off, 2 on.
fn with_features(code: &[u8], xnack: u32, sramecc: u32) -> Vec<u8> {
    let mut code = code.to_vec();
    let mut flags = u32::from_le_bytes(code[48..52].try_into().unwrap());
    flags = (flags & !0xf00) | (xnack + 1) << 8 | (sramecc + 1) << 10;
    code[48..52].copy_from_slice(&flags.to_le_bytes());
    code
}

fn apu_child() {
    let xnack = std::env::var("HSA_XNACK").as_deref() == Ok("1");
    let (cpu, gpus) = system();
    let info_u32 = |attribute| {
        let mut value = 0u32;
        assert_eq!(
            hsa_agent_get_info(gpus[0], attribute, &mut value as *mut _ as *mut c_void),
            0
        );
        value
    };
    let text = |attribute| {
        let mut name = [0u8; 64];
        assert_eq!(
            hsa_agent_get_info(gpus[0], attribute, name.as_mut_ptr().cast()),
            0
        );
        String::from_utf8_lossy(&name)
            .trim_end_matches('\0')
            .to_string()
    };
    assert_eq!(text(HSA_AGENT_INFO_NAME), "gfx942");
    assert!(text(HSA_AMD_AGENT_INFO_PRODUCT_NAME).contains("MI300A"));
    assert_eq!(info_u32(HSA_AMD_AGENT_INFO_COMPUTE_UNIT_COUNT), 228);
    assert_eq!(info_u32(HSA_AGENT_INFO_WAVEFRONT_SIZE), 64);
    assert_eq!(info_u32(HSA_AMD_AGENT_INFO_CHIP_ID), 0x74a0);
    assert!(hsa_flag_isset64(
        &memory_properties(gpus[0]),
        HSA_AMD_MEMORY_PROPERTY_AGENT_IS_APU
    ));
    assert_eq!(memory_properties(*cpu), [0; 8]);
    let mut isa = hsa_isa_t::default();
    assert_eq!(
        hsa_agent_get_info(
            gpus[0],
            HSA_AGENT_INFO_ISA,
            &mut isa as *mut _ as *mut c_void
        ),
        0
    );
    let name = isa_name_of(isa);
    let expected = if xnack {
        "amdgcn-amd-amdhsa--gfx942:sramecc+:xnack+\0"
    } else {
        "amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-\0"
    };
    assert_eq!(name, expected);
    assert!(system_flag(HSA_AMD_SYSTEM_INFO_SVM_SUPPORTED));
    assert_eq!(system_flag(HSA_AMD_SYSTEM_INFO_XNACK_ENABLED), xnack);
    assert_eq!(
        system_flag(HSA_AMD_SYSTEM_INFO_SVM_ACCESSIBLE_BY_DEFAULT),
        xnack
    );

    // The loader: gfx942 images only, with the XNACK and SRAM ECC settings the device has.
    let gfx90a = &code_objects("gfx90a")[0];
    assert_eq!(
        load(gfx90a, gpus[0]).0,
        HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS
    );
    // clang-19 here has no gfx942 device libraries: a gfx90a image whose ELF flags name
    // gfx942 (EF_AMDGPU_MACH 0x4c) is one for the loader, which reads the flags.
    let gfx942 = &{
        let mut code = gfx90a.clone();
        let flags = u32::from_le_bytes(code[48..52].try_into().unwrap());
        code[48..52].copy_from_slice(&((flags & !0xff) | 0x4c).to_le_bytes());
        code
    };
    let target = offload_image::amdgpu_code_object::check(gfx942).unwrap();
    assert_eq!(target.target().processor, "gfx942");
    let (status, executable) = load(gfx942, gpus[0]);
    assert_eq!(status, 0);
    for (features, loads) in [
        ((2, 0), xnack),
        ((1, 0), !xnack),
        ((0, 2), true),
        ((0, 1), false),
    ] {
        let (status, e) = load(&with_features(gfx942, features.0, features.1), gpus[0]);
        let wanted = if loads {
            0
        } else {
            HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS
        };
        assert_eq!(status, wanted, "xnack/sramecc setting {features:?}");
        hsa_executable_destroy(e);
    }

    // SVM: KFD's defaults, then attributes kept per range.
    let host = vec![7u8; 6 * 4096];
    let page = (host.as_ptr() as usize).next_multiple_of(4096) as *const u8;
    let gpu = gpus[0].handle;
    let query = [
        pair(HSA_AMD_SVM_ATTRIB_GLOBAL_FLAG, 99),
        pair(HSA_AMD_SVM_ATTRIB_ACCESS_QUERY, gpu),
        pair(HSA_AMD_SVM_ATTRIB_ACCESS_QUERY, cpu.handle),
        pair(HSA_AMD_SVM_ATTRIB_MIGRATION_GRANULARITY, 0),
        pair(HSA_AMD_SVM_ATTRIB_PREFERRED_LOCATION, 5),
    ];
    let (status, answers) = svm_get(page, 4 * 4096, &query);
    assert_eq!(status, 0);
    assert_eq!(
        answers[0].value,
        u64::from(HSA_AMD_SVM_GLOBAL_FLAG_FINE_GRAINED)
    );
    let default_access = if xnack {
        HSA_AMD_SVM_ATTRIB_AGENT_ACCESSIBLE
    } else {
        HSA_AMD_SVM_ATTRIB_AGENT_NO_ACCESS
    };
    assert_eq!(answers[1].attribute, u64::from(default_access));
    assert_eq!(
        answers[2].attribute,
        u64::from(HSA_AMD_SVM_ATTRIB_AGENT_ACCESSIBLE)
    );
    assert_eq!(answers[3].value, 9);
    assert_eq!(answers[4].value, 0);
    let coarse = pair(
        HSA_AMD_SVM_ATTRIB_GLOBAL_FLAG,
        HSA_AMD_SVM_GLOBAL_FLAG_COARSE_GRAINED.into(),
    );
    assert_eq!(
        svm_set(
            page,
            4 * 4096,
            &[
                coarse,
                pair(HSA_AMD_SVM_ATTRIB_AGENT_ACCESSIBLE_IN_PLACE, gpu),
                pair(HSA_AMD_SVM_ATTRIB_PREFERRED_LOCATION, gpu),
            ]
        ),
        0
    );
    let (status, answers) = svm_get(page, 4 * 4096, &query);
    assert_eq!(status, 0);
    assert_eq!(
        answers[0].value,
        u64::from(HSA_AMD_SVM_GLOBAL_FLAG_COARSE_GRAINED)
    );
    assert_eq!(
        answers[1].attribute,
        u64::from(HSA_AMD_SVM_ATTRIB_AGENT_ACCESSIBLE_IN_PLACE)
    );
    assert_eq!(answers[4].value, gpu);
    // Half of it fine grained again: the whole is both.
    let fine = pair(
        HSA_AMD_SVM_ATTRIB_GLOBAL_FLAG,
        HSA_AMD_SVM_GLOBAL_FLAG_FINE_GRAINED.into(),
    );
    assert_eq!(svm_set(page, 2 * 4096, &[fine]), 0);
    let (_, answers) = svm_get(page, 4 * 4096, &query[..1]);
    assert_eq!(
        answers[0].value,
        u64::from(HSA_AMD_SVM_GLOBAL_FLAG_INDETERMINATE)
    );
    // An unaligned start and size cover their pages.
    let (_, answers) = svm_get(page.wrapping_add(2 * 4096 + 100), 10, &query[..1]);
    assert_eq!(
        answers[0].value,
        u64::from(HSA_AMD_SVM_GLOBAL_FLAG_COARSE_GRAINED)
    );

    // ROCr's checks of the list, then KFD's of the range.
    for (pairs, wanted) in [
        (vec![coarse, fine], HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS),
        (
            vec![
                pair(HSA_AMD_SVM_ATTRIB_AGENT_ACCESSIBLE, gpu),
                pair(HSA_AMD_SVM_ATTRIB_AGENT_NO_ACCESS, gpu),
            ],
            HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS,
        ),
        (
            vec![pair(HSA_AMD_SVM_ATTRIB_AGENT_ACCESSIBLE, 12345)],
            HSA_STATUS_ERROR_INVALID_AGENT,
        ),
        (
            vec![pair(HSA_AMD_SVM_ATTRIB_ACCESS_QUERY, gpu)],
            HSA_STATUS_ERROR_INVALID_ARGUMENT,
        ),
        (
            vec![pair(HSA_AMD_SVM_ATTRIB_PREFETCH_LOCATION, gpu)],
            HSA_STATUS_ERROR_INVALID_ARGUMENT,
        ),
        (
            vec![pair(
                HSA_AMD_SVM_ATTRIB_GLOBAL_FLAG,
                HSA_AMD_SVM_GLOBAL_FLAG_INDETERMINATE.into(),
            )],
            HSA_STATUS_ERROR_INVALID_ARGUMENT,
        ),
        (vec![pair(0x999, 0)], HSA_STATUS_ERROR_INVALID_ARGUMENT),
    ] {
        assert_eq!(svm_set(page, 4096, &pairs), wanted, "{pairs:?}");
    }
    assert_eq!(
        svm_get(page, 4096, &[pair(HSA_AMD_SVM_ATTRIB_GPU_EXEC, 0)]).0,
        HSA_STATUS_ERROR_INVALID_ARGUMENT
    );
    assert_eq!(
        svm_get(
            page,
            4096,
            &[pair(HSA_AMD_SVM_ATTRIB_AGENT_ACCESSIBLE, gpu)]
        )
        .0,
        HSA_STATUS_ERROR_INVALID_ARGUMENT
    );
    assert_eq!(
        svm_get(page, 4096, &[pair(HSA_AMD_SVM_ATTRIB_ACCESS_QUERY, 3)]).0,
        HSA_STATUS_ERROR_INVALID_AGENT
    );
    assert_eq!(
        hsa_amd_svm_attributes_set(page as *mut c_void, 4096, std::ptr::null_mut(), 1),
        HSA_STATUS_ERROR_INVALID_ARGUMENT
    );
    // KFD refuses: an empty range, one at address 0, pages mapped nowhere, pool memory.
    assert_eq!(svm_set(page, 0, &[coarse]), HSA_STATUS_ERROR);
    assert_eq!(svm_set(std::ptr::null(), 4096, &[coarse]), HSA_STATUS_ERROR);
    assert_eq!(
        svm_set(4096 as *const u8, 4096, &[coarse]),
        HSA_STATUS_ERROR
    );
    let device = allocate(pools(gpus[0])[0], 8192);
    assert_eq!(svm_set(device, 4096, &[coarse]), HSA_STATUS_ERROR);
    assert_eq!(svm_get(device, 4096, &query[..1]).0, HSA_STATUS_ERROR);

    // A copy engine reads pageable host memory only with XNACK on; counted bytes in the trace.
    let done = signal(1);
    let other = vec![1u8; 8192];
    assert_eq!(
        copy(
            device.cast(),
            gpus[0],
            other.as_ptr().cast(),
            *cpu,
            8192,
            &[],
            done
        ),
        0
    );
    if xnack {
        assert_eq!(wait_zero(done, 5000), 0);
    } else {
        assert!(fault_at(other.as_ptr() as u64));
        assert_eq!(wait_zero(done, 50), 1);
    }
    let locked = {
        let mut agent_ptr = std::ptr::null_mut();
        assert_eq!(
            hsa_amd_memory_lock(
                other.as_ptr() as *mut c_void,
                8192,
                std::ptr::null_mut(),
                0,
                &mut agent_ptr
            ),
            0
        );
        agent_ptr
    };
    let done = signal(1);
    assert_eq!(
        copy(device.cast(), gpus[0], locked, *cpu, 8192, &[], done),
        0
    );
    assert_eq!(wait_zero(done, 5000), 0);
    assert_eq!(hsa_amd_memory_unlock(other.as_ptr() as *mut c_void), 0);

    // Kernels given host pointers: a malloc'd array faults with XNACK off unless SVM gave the
    // agent access there; a section's base (a device address less an offset) never does.
    let metadata = offload_image::amdgpu_code_object::check(gfx942).unwrap();
    let kernel = metadata
        .kernels()
        .iter()
        .find(|k| k.args.iter().any(|a| a.value_kind == "global_buffer"))
        .expect("a kernel with a pointer argument");
    let info = kernel_symbol_info(executable, gpus[0], &kernel.symbol);
    let object = info(HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT);
    let group = info(HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE) as u32;
    let kernarg = allocate(kernarg_pool(*cpu), kernel.kernarg_segment_size as usize);
    assert_eq!(
        hsa_amd_agents_allow_access(1, &gpus[0], std::ptr::null(), kernarg.cast()),
        0
    );
    let dispatch = |pointer: u64| {
        for arg in kernel
            .args
            .iter()
            .filter(|a| a.value_kind == "global_buffer")
        {
            // SAFETY: the argument lies inside the kernarg buffer allocated above.
            unsafe {
                std::ptr::write_unaligned(kernarg.add(arg.offset as usize) as *mut u64, pointer)
            };
        }
        let q = TestQueue::new(gpus[0]);
        let mut words = dispatch_words([64, 1, 1], [64, 1, 1], group, object, signal(1));
        words[10] = kernarg as u64 as u32;
        words[11] = (kernarg as u64 >> 32) as u32;
        let index = q.write(words, true);
        q.ring(index);
        let start = Instant::now();
        while q.errors().is_empty() && start.elapsed() < Duration::from_secs(2) {
            std::thread::sleep(Duration::from_millis(2));
        }
        q.errors()
    };
    // Past the pointer checks, the dispatch stops at the next: this process has no twin.
    let passes = vec![HSA_STATUS_ERROR_INVALID_CODE_OBJECT];
    let array = vec![0u32; 1 << 16];
    let at = array.as_ptr() as u64;
    if xnack {
        assert_eq!(dispatch(at), passes);
    } else {
        assert_eq!(dispatch(at), vec![HSA_STATUS_ERROR_MEMORY_FAULT]);
        assert!(fault_at(at));
    }
    assert_eq!(
        dispatch(device as u64 - (1 << 20)),
        passes,
        "a section's base"
    );
    assert_eq!(dispatch(device as u64 - 64), passes, "a section's base");
    assert_eq!(
        svm_set(
            array.as_ptr().cast(),
            array.len() * 4,
            &[pair(HSA_AMD_SVM_ATTRIB_AGENT_ACCESSIBLE, gpu)]
        ),
        0
    );
    assert_eq!(dispatch(at), passes, "SVM gave the GPU access");
    assert_eq!(
        svm_set(
            array.as_ptr().cast(),
            array.len() * 4,
            &[pair(HSA_AMD_SVM_ATTRIB_AGENT_NO_ACCESS, gpu)]
        ),
        0
    );
    assert_eq!(dispatch(at), vec![HSA_STATUS_ERROR_MEMORY_FAULT]);
}

/// An ISA's name (`HSA_ISA_INFO_NAME`, its NUL included).
fn isa_name_of(isa: hsa_isa_t) -> String {
    let mut len = 0u32;
    assert_eq!(
        hsa_isa_get_info_alt(
            isa,
            HSA_ISA_INFO_NAME_LENGTH,
            &mut len as *mut _ as *mut c_void
        ),
        0
    );
    let mut name = vec![0u8; len as usize];
    assert_eq!(
        hsa_isa_get_info_alt(isa, HSA_ISA_INFO_NAME, name.as_mut_ptr().cast()),
        0
    );
    String::from_utf8(name).unwrap()
}
