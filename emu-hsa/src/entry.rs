//! The exported entry points, one per HSA function either AMDGPU plugin (ours, LLVM 19's)
//! resolves, with HSA's C signatures. Each runs inside `trace::call` (or `value_call` when it
//! returns a value rather than a status) and refuses handles that are not live.
//!
//! The functions are safe to name in Rust but are C entry points: their pointer arguments
//! follow HSA's contracts, which C callers keep, and each dereference says which one.
#![allow(clippy::not_unsafe_ptr_arg_deref)]

use crate::agents::{self, AgentIndex, PoolKind, System};
use crate::copies;
use crate::queues::{Queue, QUEUES};
use crate::runtime::{self, Runtime};
use crate::signals::{self, handlers};
use crate::status::{self, Result};
use crate::trace::{call, value_call};
use hsa_sys::*;
use std::ffi::{c_char, c_int, c_void, CStr};
use std::time::Duration;

/// Writes `value` where the program asked for an attribute.
fn put<T: Copy>(out: *mut c_void, value: T) -> Result<()> {
    if out.is_null() {
        return Err(status::INVALID_ARGUMENT);
    }
    // SAFETY: the caller's contract: `out` points to storage of the attribute's type.
    unsafe { std::ptr::write_unaligned(out.cast::<T>(), value) };
    Ok(())
}

/// Writes `text` NUL-padded into a fixed `N`-byte character attribute.
fn put_text<const N: usize>(out: *mut c_void, text: &str) -> Result<()> {
    let mut bytes = [0u8; N];
    let len = text.len().min(N - 1);
    bytes[..len].copy_from_slice(&text.as_bytes()[..len]);
    put(out, bytes)
}

fn out<T>(pointer: *mut T) -> Result<*mut T> {
    if pointer.is_null() {
        Err(status::INVALID_ARGUMENT)
    } else {
        Ok(pointer)
    }
}

fn agent_of(runtime: &Runtime, agent: hsa_agent_t) -> Result<AgentIndex> {
    runtime.system.agent(agent).ok_or(status::INVALID_AGENT)
}

/// The agents of a C array (a null array with a zero count is no agents).
fn agents_in(runtime: &Runtime, count: u32, agents: *const hsa_agent_t) -> Result<Vec<AgentIndex>> {
    if count == 0 {
        return Ok(Vec::new());
    }
    if agents.is_null() {
        return Err(status::INVALID_ARGUMENT);
    }
    // SAFETY: the caller's contract: `count` agents at `agents`.
    let list = unsafe { std::slice::from_raw_parts(agents, count as usize) };
    list.iter().map(|&a| agent_of(runtime, a)).collect()
}

fn status_of(result: std::result::Result<(), status::Error>) -> hsa_status_t {
    match result {
        Ok(()) => HSA_STATUS_SUCCESS,
        Err(status::Error(code)) => code,
    }
}

/// An HSA iteration: after `call`'s checks, `items` lists what to visit (checking the
/// handles it is given), then `visit` calls the program's callback on each; the first callback
/// result other than `HSA_STATUS_SUCCESS` stops it and is the function's result
/// (`HSA_STATUS_INFO_BREAK` included).
fn iterate<T, F: Copy>(
    function: &'static str,
    callback: Option<F>,
    items: impl FnOnce() -> Result<Vec<T>>,
    mut visit: impl FnMut(F, T) -> hsa_status_t,
) -> hsa_status_t {
    let mut result = HSA_STATUS_SUCCESS;
    let status = call(function, |_| {
        let items = items()?;
        let callback = callback.ok_or(status::INVALID_ARGUMENT)?;
        for item in items {
            result = visit(callback, item);
            if result != HSA_STATUS_SUCCESS {
                break;
            }
        }
        Ok(())
    });
    if status == HSA_STATUS_SUCCESS {
        result
    } else {
        status
    }
}

// --- Start-up ---------------------------------------------------------------------------------

#[no_mangle]
pub extern "C" fn hsa_init() -> hsa_status_t {
    call("hsa_init", |_| runtime::init())
}

#[no_mangle]
pub extern "C" fn hsa_shut_down() -> hsa_status_t {
    call("hsa_shut_down", |_| runtime::shut_down())
}

#[no_mangle]
pub extern "C" fn hsa_status_string(
    status: hsa_status_t,
    text: *mut *const c_char,
) -> hsa_status_t {
    call("hsa_status_string", |c| {
        c.note(|| format!("status={status:#x}"));
        let text = out(text)?;
        let found = status::text(status).ok_or(status::INVALID_ARGUMENT)?;
        // Texts live for the process: leaked once each, C strings as HSA hands out.
        static TEXTS: std::sync::Mutex<Vec<(hsa_status_t, &'static CStr)>> =
            std::sync::Mutex::new(Vec::new());
        let mut texts = sync_util::lock(&TEXTS);
        let c_text = match texts.iter().find(|(s, _)| *s == status) {
            Some((_, t)) => *t,
            None => {
                let leaked: &'static CStr =
                    Box::leak(std::ffi::CString::new(found).unwrap().into_boxed_c_str());
                texts.push((status, leaked));
                leaked
            }
        };
        // SAFETY: `text` is a valid out-pointer (checked not null; the caller's contract).
        unsafe { *text = c_text.as_ptr() };
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn hsa_system_get_info(
    attribute: hsa_system_info_t,
    value: *mut c_void,
) -> hsa_status_t {
    call("hsa_system_get_info", |c| {
        c.note(|| format!("attribute={attribute:#x}"));
        let profile = runtime::get()?.system.profile;
        match attribute {
            HSA_SYSTEM_INFO_VERSION_MAJOR | HSA_SYSTEM_INFO_VERSION_MINOR => put(value, 1u16),
            HSA_SYSTEM_INFO_TIMESTAMP => put(value, runtime::timestamp()),
            HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY => put(value, agents::TIMESTAMP_FREQUENCY),
            HSA_SYSTEM_INFO_SIGNAL_MAX_WAIT => put(value, u64::MAX),
            HSA_SYSTEM_INFO_ENDIANNESS => put(value, 0u32),
            HSA_SYSTEM_INFO_MACHINE_MODEL => put(value, 1u32),
            HSA_SYSTEM_INFO_EXTENSIONS => put(value, [0u8; 128]),
            HSA_AMD_SYSTEM_INFO_BUILD_VERSION => put(value, c"omptarget-emu (HSA) 1.0".as_ptr()),
            // ROCr: SVM where every GPU's KFD node has the SVM API (the APU's does; the
            // default profile's answers stay as they were), accessible by default where every
            // GPU runs with XNACK on, and XNACK as the process asked for it.
            HSA_AMD_SYSTEM_INFO_SVM_SUPPORTED => put(value, profile.apu),
            HSA_AMD_SYSTEM_INFO_SVM_ACCESSIBLE_BY_DEFAULT | HSA_AMD_SYSTEM_INFO_XNACK_ENABLED => {
                put(value, profile.xnack)
            }
            _ => Err(status::INVALID_ARGUMENT),
        }
    })
}

// --- Agents, ISAs, pools ----------------------------------------------------------------------

#[no_mangle]
pub extern "C" fn hsa_iterate_agents(
    callback: hsa_agent_callback_t,
    data: *mut c_void,
) -> hsa_status_t {
    iterate(
        "hsa_iterate_agents",
        callback,
        || Ok(runtime::get()?.system.agents().collect()),
        // SAFETY: the program's callback with its own data, as HSA calls it.
        |callback, agent| unsafe { callback(System::agent_handle(agent), data) },
    )
}

#[no_mangle]
pub extern "C" fn hsa_agent_get_info(
    agent: hsa_agent_t,
    attribute: hsa_agent_info_t,
    value: *mut c_void,
) -> hsa_status_t {
    call("hsa_agent_get_info", |c| {
        c.note(|| format!("agent={:#x} attribute={attribute:#x}", agent.handle));
        let runtime = runtime::get()?;
        let index = agent_of(runtime, agent)?;
        let system = &runtime.system;
        let gpu = system.is_gpu(index);
        let apu = system.profile.apu;
        let when_gpu = |v: u32| if gpu { v } else { 0 };
        match attribute {
            HSA_AGENT_INFO_NAME => put_text::<64>(value, system.name(index)),
            HSA_AGENT_INFO_VENDOR_NAME => put_text::<64>(value, if gpu { "AMD" } else { "CPU" }),
            HSA_AGENT_INFO_FEATURE => put(
                value,
                if gpu {
                    HSA_AGENT_FEATURE_KERNEL_DISPATCH
                } else {
                    0
                },
            ),
            HSA_AGENT_INFO_MACHINE_MODEL => put(value, 1u32),
            HSA_AGENT_INFO_PROFILE => put(value, HSA_PROFILE_BASE),
            HSA_AGENT_INFO_DEFAULT_FLOAT_ROUNDING_MODE => {
                put(value, HSA_DEFAULT_FLOAT_ROUNDING_MODE_NEAR)
            }
            HSA_AGENT_INFO_WAVEFRONT_SIZE => put(value, when_gpu(agents::WAVEFRONT_SIZE)),
            HSA_AGENT_INFO_WORKGROUP_MAX_DIM => put(
                value,
                if gpu {
                    agents::WORKGROUP_MAX_DIM
                } else {
                    [0; 3]
                },
            ),
            HSA_AGENT_INFO_WORKGROUP_MAX_SIZE => put(value, when_gpu(agents::WORKGROUP_MAX_SIZE)),
            HSA_AGENT_INFO_GRID_MAX_DIM => put(value, [when_gpu(agents::GRID_MAX_SIZE); 3]),
            HSA_AGENT_INFO_GRID_MAX_SIZE => put(value, when_gpu(agents::GRID_MAX_SIZE)),
            HSA_AGENT_INFO_FBARRIER_MAX_SIZE => put(value, when_gpu(32)),
            HSA_AGENT_INFO_QUEUES_MAX => put(value, when_gpu(agents::QUEUES_MAX)),
            HSA_AGENT_INFO_QUEUE_MIN_SIZE => put(value, when_gpu(agents::QUEUE_MIN_SIZE)),
            HSA_AGENT_INFO_QUEUE_MAX_SIZE => put(value, when_gpu(agents::QUEUE_MAX_SIZE)),
            HSA_AGENT_INFO_QUEUE_TYPE => put(value, HSA_QUEUE_TYPE_MULTI),
            HSA_AGENT_INFO_NODE | HSA_AMD_AGENT_INFO_DRIVER_NODE_ID => put(value, index as u32),
            HSA_AGENT_INFO_DEVICE => put(
                value,
                if gpu {
                    HSA_DEVICE_TYPE_GPU
                } else {
                    HSA_DEVICE_TYPE_CPU
                },
            ),
            HSA_AGENT_INFO_CACHE_SIZE => put(
                value,
                if gpu && apu {
                    // MI300A: 32 KiB L1 per CU, 4 MiB L2 per XCD, 256 MiB Infinity Cache.
                    [32u32 << 10, 4 << 20, 256 << 20, 0]
                } else if gpu {
                    [16u32 << 10, 8 << 20, 0, 0]
                } else {
                    [32 << 10, 1 << 20, 0, 0]
                },
            ),
            HSA_AGENT_INFO_ISA => put(
                value,
                if gpu {
                    System::isa_handle()
                } else {
                    hsa_isa_t::default()
                },
            ),
            HSA_AGENT_INFO_EXTENSIONS => put(value, [0u8; 128]),
            HSA_AGENT_INFO_VERSION_MAJOR | HSA_AGENT_INFO_VERSION_MINOR => put(value, 1u16),
            HSA_AGENT_INFO_FAST_F16_OPERATION => put(value, gpu),
            HSA_AMD_AGENT_INFO_CHIP_ID => put(
                value,
                when_gpu(if apu { agents::APU_CHIP_ID } else { 0x740f }),
            ),
            HSA_AMD_AGENT_INFO_CACHELINE_SIZE => put(value, if gpu { 128u32 } else { 64 }),
            HSA_AMD_AGENT_INFO_COMPUTE_UNIT_COUNT => {
                put(value, if gpu { system.compute_units() } else { 2 })
            }
            HSA_AMD_AGENT_INFO_MAX_CLOCK_FREQUENCY => {
                put(value, if apu && gpu { 2100u32 } else { 1700 })
            }
            HSA_AMD_AGENT_INFO_BDFID => put(value, index as u32),
            HSA_AMD_AGENT_INFO_PRODUCT_NAME => put_text::<64>(value, system.product_name(index)),
            HSA_AMD_AGENT_INFO_MAX_WAVES_PER_CU => put(value, when_gpu(32)),
            HSA_AMD_AGENT_INFO_NUM_SIMDS_PER_CU => put(value, when_gpu(4)),
            HSA_AMD_AGENT_INFO_COOPERATIVE_QUEUES => put(value, false),
            HSA_AMD_AGENT_INFO_UUID => put_text::<21>(
                value,
                &if gpu {
                    format!("GPU-emu{index:013x}")
                } else {
                    "CPU-XX".into()
                },
            ),
            HSA_AMD_AGENT_INFO_MEMORY_AVAIL => {
                put(value, if gpu { runtime.system.device_memory } else { 0 })
            }
            HSA_AMD_AGENT_INFO_TIMESTAMP_FREQUENCY => put(value, agents::TIMESTAMP_FREQUENCY),
            // Every agent answers (ROCr's CPU agents too), the bits saying whether a GPU is
            // an APU.
            HSA_AMD_AGENT_INFO_MEMORY_PROPERTIES => put(
                value,
                if gpu {
                    system.memory_properties()
                } else {
                    [0u8; 8]
                },
            ),
            _ => Err(status::INVALID_ARGUMENT),
        }
    })
}

#[no_mangle]
pub extern "C" fn hsa_agent_iterate_isas(
    agent: hsa_agent_t,
    callback: hsa_isa_callback_t,
    data: *mut c_void,
) -> hsa_status_t {
    iterate(
        "hsa_agent_iterate_isas",
        callback,
        || {
            let runtime = runtime::get()?;
            let index = agent_of(runtime, agent)?;
            Ok(if runtime.system.is_gpu(index) {
                vec![System::isa_handle()]
            } else {
                Vec::new()
            })
        },
        // SAFETY: the program's callback with its own data.
        |callback, isa| unsafe { callback(isa, data) },
    )
}

#[no_mangle]
pub extern "C" fn hsa_isa_get_info_alt(
    isa: hsa_isa_t,
    attribute: hsa_isa_info_t,
    value: *mut c_void,
) -> hsa_status_t {
    call("hsa_isa_get_info_alt", |_| {
        let runtime = runtime::get()?;
        if !System::is_isa(isa) {
            return Err(status::INVALID_ISA);
        }
        match attribute {
            // The length counts the terminating NUL, which the name is written with.
            HSA_ISA_INFO_NAME_LENGTH => put(value, runtime.system.isa_name().len() as u32 + 1),
            HSA_ISA_INFO_NAME => {
                let out = out(value.cast::<u8>())?;
                let name = runtime.system.isa_name().as_bytes();
                // SAFETY: the caller's contract: NAME_LENGTH bytes at `value`.
                unsafe {
                    std::ptr::copy_nonoverlapping(name.as_ptr(), out, name.len());
                    *out.add(name.len()) = 0;
                }
                Ok(())
            }
            _ => Err(status::INVALID_ARGUMENT),
        }
    })
}

#[no_mangle]
pub extern "C" fn hsa_amd_agent_iterate_memory_pools(
    agent: hsa_agent_t,
    callback: hsa_amd_memory_pool_callback_t,
    data: *mut c_void,
) -> hsa_status_t {
    iterate(
        "hsa_amd_agent_iterate_memory_pools",
        callback,
        || {
            let runtime = runtime::get()?;
            Ok(runtime.system.pools_of(agent_of(runtime, agent)?))
        },
        // SAFETY: the program's callback with its own data.
        |callback, pool| unsafe { callback(System::pool_handle(pool), data) },
    )
}

#[no_mangle]
pub extern "C" fn hsa_amd_memory_pool_get_info(
    pool: hsa_amd_memory_pool_t,
    attribute: hsa_amd_memory_pool_info_t,
    value: *mut c_void,
) -> hsa_status_t {
    call("hsa_amd_memory_pool_get_info", |c| {
        c.note(|| format!("pool={:#x} attribute={attribute}", pool.handle));
        let runtime = runtime::get()?;
        let pool = runtime
            .system
            .pool(pool)
            .ok_or(status::INVALID_MEMORY_POOL)?;
        match attribute {
            HSA_AMD_MEMORY_POOL_INFO_SEGMENT => put(
                value,
                match pool.kind {
                    PoolKind::Group => HSA_AMD_SEGMENT_GROUP,
                    _ => HSA_AMD_SEGMENT_GLOBAL,
                },
            ),
            HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS => put(
                value,
                match pool.kind {
                    PoolKind::Kernarg => {
                        HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT
                            | HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED
                    }
                    PoolKind::Fine => HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED,
                    PoolKind::HostCoarse | PoolKind::Device => {
                        HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED
                    }
                    PoolKind::Group => 0,
                },
            ),
            HSA_AMD_MEMORY_POOL_INFO_SIZE | HSA_AMD_MEMORY_POOL_INFO_ALLOC_MAX_SIZE => {
                put(value, runtime.system.pool_size(pool) as usize)
            }
            HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED => {
                put(value, pool.kind != PoolKind::Group)
            }
            HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_GRANULE
            | HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALIGNMENT => put(value, agents::GRANULE),
            HSA_AMD_MEMORY_POOL_INFO_ACCESSIBLE_BY_ALL => put(value, false),
            _ => Err(status::INVALID_ARGUMENT),
        }
    })
}

#[no_mangle]
pub extern "C" fn hsa_amd_agent_memory_pool_get_info(
    agent: hsa_agent_t,
    pool: hsa_amd_memory_pool_t,
    attribute: hsa_amd_agent_memory_pool_info_t,
    value: *mut c_void,
) -> hsa_status_t {
    call("hsa_amd_agent_memory_pool_get_info", |_| {
        let runtime = runtime::get()?;
        let index = agent_of(runtime, agent)?;
        let pool = runtime
            .system
            .pool(pool)
            .ok_or(status::INVALID_MEMORY_POOL)?;
        match attribute {
            HSA_AMD_AGENT_MEMORY_POOL_INFO_ACCESS => put(value, runtime.system.access(index, pool)),
            _ => Err(status::INVALID_ARGUMENT),
        }
    })
}

// --- Memory -----------------------------------------------------------------------------------

#[no_mangle]
pub extern "C" fn hsa_amd_memory_pool_allocate(
    pool: hsa_amd_memory_pool_t,
    size: usize,
    flags: u32,
    ptr: *mut *mut c_void,
) -> hsa_status_t {
    call("hsa_amd_memory_pool_allocate", |c| {
        c.note(|| format!("pool={:#x} size={size}", pool.handle));
        let runtime = runtime::get()?;
        let ptr = out(ptr)?;
        let pool = runtime
            .system
            .pool(pool)
            .ok_or(status::INVALID_MEMORY_POOL)?;
        if flags != 0 {
            return Err(status::INVALID_ARGUMENT);
        }
        let address = runtime.memory.allocate(&runtime.system, pool, size)?;
        c.note(|| format!("ptr={address:#x}"));
        // SAFETY: a valid out-pointer (checked not null; the caller's contract).
        unsafe { *ptr = address as *mut c_void };
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn hsa_amd_memory_pool_free(ptr: *mut c_void) -> hsa_status_t {
    call("hsa_amd_memory_pool_free", |c| {
        c.note(|| format!("ptr={ptr:p}"));
        runtime::get()?.memory.free(ptr as usize)
    })
}

#[no_mangle]
pub extern "C" fn hsa_amd_agents_allow_access(
    count: u32,
    agents: *const hsa_agent_t,
    flags: *const u32,
    ptr: *const c_void,
) -> hsa_status_t {
    call("hsa_amd_agents_allow_access", |c| {
        let runtime = runtime::get()?;
        let list = agents_in(runtime, count, agents)?;
        c.note(|| format!("ptr={ptr:p} agents={list:?}"));
        if list.is_empty() || !flags.is_null() {
            return Err(status::INVALID_ARGUMENT);
        }
        runtime.memory.allow_access(&list, ptr as usize)
    })
}

#[no_mangle]
pub extern "C" fn hsa_amd_memory_lock(
    host: *mut c_void,
    size: usize,
    agents: *mut hsa_agent_t,
    count: c_int,
    agent_ptr: *mut *mut c_void,
) -> hsa_status_t {
    call("hsa_amd_memory_lock", |c| {
        c.note(|| format!("ptr={host:p} size={size}"));
        let runtime = runtime::get()?;
        let agent_ptr = out(agent_ptr)?;
        let mut list = agents_in(runtime, count.max(0) as u32, agents)?;
        if list.is_empty() {
            list = runtime
                .system
                .agents()
                .filter(|&a| runtime.system.is_gpu(a))
                .collect();
        }
        if list.iter().any(|&a| !runtime.system.is_gpu(a)) {
            return Err(status::INVALID_AGENT);
        }
        let address = runtime.memory.lock(host as usize, size, &list)?;
        // SAFETY: a valid out-pointer (checked not null).
        unsafe { *agent_ptr = address as *mut c_void };
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn hsa_amd_memory_unlock(host: *mut c_void) -> hsa_status_t {
    call("hsa_amd_memory_unlock", |c| {
        c.note(|| format!("ptr={host:p}"));
        runtime::get()?.memory.unlock(host as usize)
    })
}

/// ROCr's rules: a null or unaligned start is an invalid argument; the `count` words must lie
/// in one allocation or locked range (else `HSA_STATUS_ERROR_INVALID_ALLOCATION`). The fill
/// blocks the caller until it is done and is not ordered with any queue's work: a caller that
/// fills memory queued work still uses must wait for that work first.
#[no_mangle]
pub extern "C" fn hsa_amd_memory_fill(ptr: *mut c_void, value: u32, count: usize) -> hsa_status_t {
    call("hsa_amd_memory_fill", |c| {
        c.note(|| format!("ptr={ptr:p} value={value:#x} count={count}"));
        let runtime = runtime::get()?;
        let start = ptr as usize;
        if start == 0 || !start.is_multiple_of(4) {
            return Err(status::INVALID_ARGUMENT);
        }
        let len = count.checked_mul(4).ok_or(status::INVALID_ARGUMENT)?;
        let block = runtime
            .memory
            .find(start)
            .ok_or(status::INVALID_ALLOCATION)?;
        if start
            .checked_add(len)
            .is_none_or(|end| end > block.start + block.len)
        {
            return Err(status::INVALID_ALLOCATION);
        }
        // The blit kernel's work.
        let delay = crate::config::get().delay_us;
        if delay > 0 {
            std::thread::sleep(std::time::Duration::from_micros(delay));
        }
        // SAFETY: `count` aligned u32 slots inside one live block (checked above).
        unsafe { std::slice::from_raw_parts_mut(ptr.cast::<u32>(), count) }.fill(value);
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn hsa_memory_copy(
    dst: *mut c_void,
    src: *const c_void,
    size: usize,
) -> hsa_status_t {
    call("hsa_memory_copy", |c| {
        c.note(|| format!("dst={dst:p} src={src:p} size={size}"));
        runtime::get()?;
        if dst.is_null() || src.is_null() {
            return Err(status::INVALID_ARGUMENT);
        }
        // SAFETY: the caller's contract: `size` bytes at each; `copy` handles overlap.
        unsafe { std::ptr::copy(src.cast::<u8>(), dst.cast::<u8>(), size) };
        c.note(|| {
            if size > omptarget_emu_support::calls::SHOWN_BYTES {
                return String::new();
            }
            // SAFETY: `dst` holds the `size` bytes just copied.
            let bytes = unsafe { std::slice::from_raw_parts(dst.cast::<u8>(), size) };
            omptarget_emu_support::calls::shown_bytes(bytes)
                .trim_start()
                .to_owned()
        });
        Ok(())
    })
}

/// The SDMA engine of a copy: the runtime's own choice, or one the caller named.
#[derive(Copy, Clone)]
enum EngineChoice {
    Default,
    Named { engine_id: u32, force_sdma: bool },
}

#[allow(clippy::too_many_arguments)]
fn async_copy(
    c: &mut crate::trace::Call,
    dst: *mut c_void,
    dst_agent: hsa_agent_t,
    src: *const c_void,
    src_agent: hsa_agent_t,
    size: usize,
    num_deps: u32,
    deps: *const hsa_signal_t,
    completion: hsa_signal_t,
    choice: EngineChoice,
) -> Result<()> {
    c.note(|| {
        format!(
            "dst={dst:p} src={src:p} size={size} deps={num_deps} completion={:#x}",
            completion.handle
        )
    });
    let runtime = runtime::get()?;
    let dst_agent = agent_of(runtime, dst_agent)?;
    let src_agent = agent_of(runtime, src_agent)?;
    if dst.is_null() || src.is_null() || (num_deps > 0 && deps.is_null()) {
        return Err(status::INVALID_ARGUMENT);
    }
    let dependencies = if num_deps == 0 {
        Vec::new()
    } else {
        // SAFETY: the caller's contract: `num_deps` signals at `deps`.
        unsafe { std::slice::from_raw_parts(deps, num_deps as usize) }
            .iter()
            .map(|&s| runtime.signals.get(s))
            .collect::<Result<_>>()?
    };
    let completion = runtime.signals.get(completion)?;
    let sdma = match choice {
        EngineChoice::Default => copies::default_engine(runtime, dst_agent, src_agent),
        EngineChoice::Named {
            engine_id,
            force_sdma,
        } => copies::chosen_engine(runtime, dst_agent, src_agent, engine_id, force_sdma)?,
    };
    copies::start(
        runtime,
        copies::Copy {
            dst: dst as usize,
            src: src as usize,
            size,
            engine: copies::engine(runtime, dst_agent, src_agent),
            sdma,
            dependencies,
            completion,
            profiled: runtime
                .copy_profiling
                .load(std::sync::atomic::Ordering::Acquire),
        },
    )
}

#[no_mangle]
pub extern "C" fn hsa_amd_memory_async_copy(
    dst: *mut c_void,
    dst_agent: hsa_agent_t,
    src: *const c_void,
    src_agent: hsa_agent_t,
    size: usize,
    num_deps: u32,
    deps: *const hsa_signal_t,
    completion: hsa_signal_t,
) -> hsa_status_t {
    call("hsa_amd_memory_async_copy", |c| {
        async_copy(
            c,
            dst,
            dst_agent,
            src,
            src_agent,
            size,
            num_deps,
            deps,
            completion,
            EngineChoice::Default,
        )
    })
}

#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn hsa_amd_memory_async_copy_on_engine(
    dst: *mut c_void,
    dst_agent: hsa_agent_t,
    src: *const c_void,
    src_agent: hsa_agent_t,
    size: usize,
    num_deps: u32,
    deps: *const hsa_signal_t,
    completion: hsa_signal_t,
    engine: u32,
    force_sdma: bool,
) -> hsa_status_t {
    call("hsa_amd_memory_async_copy_on_engine", |c| {
        c.note(|| format!("engine={engine:#x} force_sdma={force_sdma}"));
        async_copy(
            c,
            dst,
            dst_agent,
            src,
            src_agent,
            size,
            num_deps,
            deps,
            completion,
            EngineChoice::Named {
                engine_id: engine,
                force_sdma,
            },
        )
    })
}

#[no_mangle]
pub extern "C" fn hsa_amd_memory_copy_engine_status(
    dst_agent: hsa_agent_t,
    src_agent: hsa_agent_t,
    engine_ids_mask: *mut u32,
) -> hsa_status_t {
    call("hsa_amd_memory_copy_engine_status", |c| {
        let runtime = runtime::get()?;
        let dst = agent_of(runtime, dst_agent)?;
        let src = agent_of(runtime, src_agent)?;
        let mask = out(engine_ids_mask)?;
        let found = copies::engine_status(runtime, dst, src);
        let value = *found.as_ref().unwrap_or(&0);
        c.note(|| format!("dst={dst} src={src} mask={value:#x}"));
        // SAFETY: checked non-null; the caller's contract: a u32 to write. ROCr writes the
        // (empty) mask when it reports no engine too.
        unsafe { *mask = value };
        found.map(drop)
    })
}

/// `hsa_amd_pointer_info_t` as ROCm lays it out; the caller's `size` says how much of it they
/// know (LLVM 19's copy of the header stops after `sizeInBytes`).
#[repr(C)]
#[derive(Copy, Clone)]
struct PointerInfo {
    size: u32,
    kind: u32,
    agent_base: usize,
    host_base: usize,
    size_in_bytes: usize,
    user_data: usize,
    owner: hsa_agent_t,
    global_flags: u32,
}

#[no_mangle]
pub extern "C" fn hsa_amd_pointer_info(
    ptr: *const c_void,
    info: *mut c_void,
    alloc: Option<unsafe extern "C" fn(usize) -> *mut c_void>,
    num_accessible: *mut u32,
    accessible: *mut *mut hsa_agent_t,
) -> hsa_status_t {
    call("hsa_amd_pointer_info", |c| {
        c.note(|| format!("ptr={ptr:p}"));
        let runtime = runtime::get()?;
        let info = out(info)?;
        // SAFETY: the caller's contract: `info` starts with the u32 size of its structure.
        let caller_size = unsafe { *(info as *const u32) } as usize;
        if caller_size < 8 {
            return Err(status::INVALID_ARGUMENT);
        }
        let block = runtime.memory.find(ptr as usize);
        let mut record = PointerInfo {
            size: std::mem::size_of::<PointerInfo>().min(caller_size) as u32,
            kind: 0,
            agent_base: 0,
            host_base: 0,
            size_in_bytes: 0,
            user_data: 0,
            owner: hsa_agent_t::default(),
            global_flags: 0,
        };
        let mut reach = Vec::new();
        if let Some(block) = block {
            use crate::memory::BlockKind;
            let (kind, owner, host) = match block.kind {
                BlockKind::Allocated(pool) => (1, pool.owner, pool.owner == 0),
                BlockKind::Locked { .. } => (2, 0, true),
                BlockKind::Variable { agent } => (1, agent, false),
            };
            record.kind = kind;
            record.agent_base = block.start;
            record.host_base = if host { block.start } else { 0 };
            record.size_in_bytes = block.len;
            record.owner = System::agent_handle(owner);
            reach = runtime
                .system
                .agents()
                .filter(|&a| block.reachable_by(a))
                .collect();
        }
        let bytes = std::mem::size_of::<PointerInfo>().min(caller_size);
        // SAFETY: the caller's structure holds `caller_size` bytes; at most that is written.
        unsafe {
            std::ptr::copy_nonoverlapping(
                (&record as *const PointerInfo).cast::<u8>(),
                info.cast::<u8>(),
                bytes,
            )
        };
        if !num_accessible.is_null() && !accessible.is_null() {
            let alloc = alloc.ok_or(status::INVALID_ARGUMENT)?;
            // SAFETY: the caller's allocator, asked for the array it will own.
            let array = unsafe { alloc(reach.len().max(1) * std::mem::size_of::<hsa_agent_t>()) }
                .cast::<hsa_agent_t>();
            if array.is_null() {
                return Err(status::OUT_OF_RESOURCES);
            }
            for (i, &agent) in reach.iter().enumerate() {
                // SAFETY: `array` holds reach.len() agents.
                unsafe { *array.add(i) = System::agent_handle(agent) };
            }
            // SAFETY: valid out-pointers (checked not null).
            unsafe {
                *num_accessible = reach.len() as u32;
                *accessible = array;
            }
        }
        Ok(())
    })
}

/// The pairs of an SVM call (none for a zero count; a null list with a count is refused, where
/// ROCr would read through it).
fn svm_pairs<'a>(
    list: *mut hsa_amd_svm_attribute_pair_t,
    count: usize,
) -> Result<&'a mut [hsa_amd_svm_attribute_pair_t]> {
    if count == 0 {
        return Ok(&mut []);
    }
    if list.is_null() {
        return Err(status::INVALID_ARGUMENT);
    }
    // SAFETY: the caller's contract: `count` pairs at `list`, for the call's duration.
    Ok(unsafe { std::slice::from_raw_parts_mut(list, count) })
}

fn show_pairs(pairs: &[hsa_amd_svm_attribute_pair_t]) -> String {
    pairs
        .iter()
        .map(|p| format!("{:#x}={:#x}", p.attribute, p.value))
        .collect::<Vec<_>>()
        .join(",")
}

/// `hsa_amd_svm_attributes_set`: see `svm` for ROCr's rules.
#[no_mangle]
pub extern "C" fn hsa_amd_svm_attributes_set(
    ptr: *mut c_void,
    size: usize,
    list: *mut hsa_amd_svm_attribute_pair_t,
    count: usize,
) -> hsa_status_t {
    call("hsa_amd_svm_attributes_set", |c| {
        c.note(|| format!("ptr={ptr:p} size={size}"));
        let runtime = runtime::get()?;
        let pairs = svm_pairs(list, count)?;
        c.note(|| format!("attributes=[{}]", show_pairs(pairs)));
        crate::svm::set(&runtime.memory, &runtime.system, ptr as usize, size, pairs)
    })
}

/// `hsa_amd_svm_attributes_get`: the answers replace the pairs' values (an access query's,
/// its attribute).
#[no_mangle]
pub extern "C" fn hsa_amd_svm_attributes_get(
    ptr: *mut c_void,
    size: usize,
    list: *mut hsa_amd_svm_attribute_pair_t,
    count: usize,
) -> hsa_status_t {
    call("hsa_amd_svm_attributes_get", |c| {
        c.note(|| format!("ptr={ptr:p} size={size}"));
        let runtime = runtime::get()?;
        let pairs = svm_pairs(list, count)?;
        crate::svm::get(&runtime.memory, &runtime.system, ptr as usize, size, pairs)?;
        c.note(|| format!("answers=[{}]", show_pairs(pairs)));
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn hsa_amd_register_system_event_handler(
    callback: hsa_amd_system_event_callback_t,
    data: *mut c_void,
) -> hsa_status_t {
    call("hsa_amd_register_system_event_handler", |_| {
        let runtime = runtime::get()?;
        let callback = callback.ok_or(status::INVALID_ARGUMENT)?;
        sync_util::lock(&runtime.event_handlers).push((callback, data as usize));
        Ok(())
    })
}

// --- Signals ----------------------------------------------------------------------------------

#[no_mangle]
pub extern "C" fn hsa_signal_create(
    initial: hsa_signal_value_t,
    num_consumers: u32,
    consumers: *const hsa_agent_t,
    signal: *mut hsa_signal_t,
) -> hsa_status_t {
    hsa_amd_signal_create(initial, num_consumers, consumers, 0, signal)
}

#[no_mangle]
pub extern "C" fn hsa_amd_signal_create(
    initial: hsa_signal_value_t,
    num_consumers: u32,
    consumers: *const hsa_agent_t,
    _attributes: u64,
    signal: *mut hsa_signal_t,
) -> hsa_status_t {
    call("hsa_amd_signal_create", |c| {
        let runtime = runtime::get()?;
        let signal = out(signal)?;
        agents_in(runtime, num_consumers, consumers)?;
        let created = runtime.signals.create(initial);
        c.note(|| format!("signal={:#x} initial={initial}", created.handle));
        // SAFETY: a valid out-pointer (checked not null).
        unsafe { *signal = created };
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn hsa_signal_destroy(signal: hsa_signal_t) -> hsa_status_t {
    call("hsa_signal_destroy", |c| {
        c.note(|| format!("signal={:#x}", signal.handle));
        runtime::get()?.signals.destroy(signal)
    })
}

#[no_mangle]
pub extern "C" fn hsa_signal_load_scacquire(signal: hsa_signal_t) -> hsa_signal_value_t {
    value_call("hsa_signal_load_scacquire", 0, |c| {
        c.note(|| format!("signal={:#x}", signal.handle));
        runtime::expect("hsa_signal_load_scacquire")
            .signals
            .expect(signal, "hsa_signal_load_scacquire")
            .load()
    })
}

fn store(function: &'static str, signal: hsa_signal_t, value: hsa_signal_value_t) {
    value_call(function, (), |c| {
        c.note(|| format!("signal={:#x} value={value}", signal.handle));
        runtime::expect(function)
            .signals
            .expect(signal, function)
            .store(value)
    })
}

#[no_mangle]
pub extern "C" fn hsa_signal_store_relaxed(signal: hsa_signal_t, value: hsa_signal_value_t) {
    store("hsa_signal_store_relaxed", signal, value)
}

#[no_mangle]
pub extern "C" fn hsa_signal_store_screlease(signal: hsa_signal_t, value: hsa_signal_value_t) {
    store("hsa_signal_store_screlease", signal, value)
}

#[no_mangle]
pub extern "C" fn hsa_signal_subtract_screlease(signal: hsa_signal_t, value: hsa_signal_value_t) {
    value_call("hsa_signal_subtract_screlease", (), |c| {
        c.note(|| format!("signal={:#x} value={value}", signal.handle));
        runtime::expect("hsa_signal_subtract_screlease")
            .signals
            .expect(signal, "hsa_signal_subtract_screlease")
            .subtract(value)
    })
}

#[no_mangle]
pub extern "C" fn hsa_signal_wait_scacquire(
    signal: hsa_signal_t,
    condition: hsa_signal_condition_t,
    compare: hsa_signal_value_t,
    timeout_hint: u64,
    wait_state: hsa_wait_state_t,
) -> hsa_signal_value_t {
    value_call("hsa_signal_wait_scacquire", 0, |c| {
        c.note(|| {
            format!(
                "signal={:#x} condition={condition} compare={compare} timeout={timeout_hint} state={}",
                signal.handle,
                if wait_state == HSA_WAIT_STATE_ACTIVE { "active" } else { "blocked" }
            )
        });
        let found = runtime::expect("hsa_signal_wait_scacquire")
            .signals
            .expect(signal, "hsa_signal_wait_scacquire");
        if !signals::valid_condition(condition) {
            eprintln!("omptarget-emu (HSA): hsa_signal_wait_scacquire with condition {condition}, which HSA does not define");
            std::process::abort();
        }
        let timeout = (timeout_hint != u64::MAX).then(|| Duration::from_nanos(timeout_hint));
        found.wait(condition, compare, timeout)
    })
}

#[no_mangle]
pub extern "C" fn hsa_amd_signal_async_handler(
    signal: hsa_signal_t,
    condition: hsa_signal_condition_t,
    compare: hsa_signal_value_t,
    handler: hsa_amd_signal_handler,
    arg: *mut c_void,
) -> hsa_status_t {
    call("hsa_amd_signal_async_handler", |c| {
        c.note(|| {
            format!(
                "signal={:#x} condition={condition} compare={compare}",
                signal.handle
            )
        });
        let runtime = runtime::get()?;
        let found = runtime.signals.get(signal)?;
        let handler = handler.ok_or(status::INVALID_ARGUMENT)?;
        if !signals::valid_condition(condition) {
            return Err(status::INVALID_ARGUMENT);
        }
        handlers().register(found, condition, compare, handler, arg as usize);
        Ok(())
    })
}

// --- Queues -----------------------------------------------------------------------------------

#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn hsa_queue_create(
    agent: hsa_agent_t,
    size: u32,
    kind: hsa_queue_type32_t,
    callback: hsa_queue_error_callback_t,
    data: *mut c_void,
    private_size: u32,
    group_size: u32,
    queue: *mut *mut hsa_queue_t,
) -> hsa_status_t {
    call("hsa_queue_create", |c| {
        c.note(|| format!("agent={:#x} size={size}", agent.handle));
        let runtime = runtime::get()?;
        let queue = out(queue)?;
        let index = agent_of(runtime, agent)?;
        if !runtime.system.is_gpu(index) {
            return Err(status::INVALID_AGENT);
        }
        if kind > HSA_QUEUE_TYPE_SINGLE || private_size != u32::MAX || group_size != u32::MAX {
            return Err(status::INVALID_ARGUMENT);
        }
        let created = QUEUES.create(runtime, index, size, callback.map(|f| (f, data as usize)))?;
        c.note(|| format!("queue={created:p}"));
        // SAFETY: a valid out-pointer (checked not null).
        unsafe { *queue = created };
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn hsa_queue_destroy(queue: *mut hsa_queue_t) -> hsa_status_t {
    call("hsa_queue_destroy", |c| {
        c.note(|| format!("queue={queue:p}"));
        let runtime = runtime::get()?;
        QUEUES.destroy(runtime, queue)
    })
}

#[no_mangle]
pub extern "C" fn hsa_queue_load_read_index_scacquire(queue: *const hsa_queue_t) -> u64 {
    value_call("hsa_queue_load_read_index_scacquire", 0, |c| {
        c.note(|| format!("queue={queue:p}"));
        expect_queue(queue, "hsa_queue_load_read_index_scacquire").read_index()
    })
}

#[no_mangle]
pub extern "C" fn hsa_queue_add_write_index_relaxed(queue: *const hsa_queue_t, count: u64) -> u64 {
    value_call("hsa_queue_add_write_index_relaxed", 0, |c| {
        c.note(|| format!("queue={queue:p} count={count}"));
        expect_queue(queue, "hsa_queue_add_write_index_relaxed").add_write_index(count)
    })
}

fn expect_queue(queue: *const hsa_queue_t, function: &str) -> std::sync::Arc<Queue> {
    runtime::expect(function);
    QUEUES.get(queue).unwrap_or_else(|_| {
        eprintln!("omptarget-emu (HSA): {function} was given {queue:p}, which is not a live queue");
        std::process::abort()
    })
}

// --- Profiling --------------------------------------------------------------------------------
// As ROCr's `hsa_ext_amd.cpp`: profiling is a property of each queue, copy profiling one of
// every agent at once; the stamps are read from the signal a packet or copy completed, already
// in the system clock's domain (the agents' clocks are the system clock here).

#[no_mangle]
pub extern "C" fn hsa_amd_profiling_set_profiler_enabled(
    queue: *mut hsa_queue_t,
    enable: c_int,
) -> hsa_status_t {
    call("hsa_amd_profiling_set_profiler_enabled", |c| {
        c.note(|| format!("queue={queue:p} enable={enable}"));
        runtime::get()?;
        // ROCr: `IS_VALID(queue)`, a null queue included, is HSA_STATUS_ERROR_INVALID_QUEUE.
        QUEUES.get(queue)?.set_profiling(enable != 0);
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn hsa_amd_profiling_async_copy_enable(enable: bool) -> hsa_status_t {
    call("hsa_amd_profiling_async_copy_enable", |c| {
        c.note(|| format!("enable={enable}"));
        let runtime = runtime::get()?;
        runtime
            .copy_profiling
            .store(enable, std::sync::atomic::Ordering::Release);
        Ok(())
    })
}

/// Writes a `{start, end}` pair of ticks (both profiling time structs have that layout).
fn put_times<T>(out: *mut T, (start, end): (u64, u64)) -> Result<()> {
    put(out.cast::<c_void>(), [start, end])
}

#[no_mangle]
pub extern "C" fn hsa_amd_profiling_get_dispatch_time(
    agent: hsa_agent_t,
    signal: hsa_signal_t,
    time: *mut hsa_amd_profiling_dispatch_time_t,
) -> hsa_status_t {
    call("hsa_amd_profiling_get_dispatch_time", |c| {
        c.note(|| format!("agent={:#x} signal={:#x}", agent.handle, signal.handle));
        let runtime = runtime::get()?;
        // ROCr's order: the pointer, the agent, the signal, then a GPU agent.
        let time = out(time)?;
        let index = agent_of(runtime, agent)?;
        let stamps = runtime.signals.get(signal)?.stamps();
        if !runtime.system.is_gpu(index) {
            return Err(status::INVALID_AGENT);
        }
        // Whatever the signal holds: ROCr answers for a signal no profiled packet completed
        // too, with stamps that mean nothing (zero here, never written).
        c.note(|| format!("start={} end={}", stamps.packet.0, stamps.packet.1));
        put_times(time, stamps.packet)
    })
}

#[no_mangle]
pub extern "C" fn hsa_amd_profiling_get_async_copy_time(
    signal: hsa_signal_t,
    time: *mut hsa_amd_profiling_async_copy_time_t,
) -> hsa_status_t {
    call("hsa_amd_profiling_get_async_copy_time", |c| {
        c.note(|| format!("signal={:#x}", signal.handle));
        let runtime = runtime::get()?;
        let time = out(time)?;
        let stamps = runtime.signals.get(signal)?.stamps();
        // ROCr: no copy submitted with profiling on ever completed the signal (its
        // `async_copy_agent` is null): HSA_STATUS_ERROR.
        let engine = stamps.copy_agent.ok_or(status::GENERIC)?;
        let times = if runtime.system.is_gpu(engine) && stamps.sdma.1 != 0 {
            stamps.sdma
        } else {
            stamps.packet
        };
        c.note(|| format!("start={} end={}", times.0, times.1));
        put_times(time, times)
    })
}

// --- Code objects and executables -------------------------------------------------------------

/// A reader over the `size` bytes at `code`, its handle written to `reader`.
fn add_reader(
    c: &mut crate::trace::Call,
    code: *const c_void,
    size: usize,
    reader: *mut hsa_code_object_reader_t,
) -> Result<()> {
    c.note(|| format!("code={code:p} size={size}"));
    let runtime = runtime::get()?;
    let reader = out(reader)?;
    let handle = runtime.code.add_reader(code as usize, size)?;
    // SAFETY: a valid out-pointer (checked not null).
    unsafe { *reader = hsa_code_object_reader_t { handle } };
    Ok(())
}

#[no_mangle]
pub extern "C" fn hsa_code_object_reader_create_from_memory(
    code: *const c_void,
    size: usize,
    reader: *mut hsa_code_object_reader_t,
) -> hsa_status_t {
    call("hsa_code_object_reader_create_from_memory", |c| {
        add_reader(c, code, size, reader)
    })
}

#[no_mangle]
pub extern "C" fn hsa_code_object_reader_destroy(reader: hsa_code_object_reader_t) -> hsa_status_t {
    call("hsa_code_object_reader_destroy", |_| {
        runtime::get()?.code.remove_reader(reader.handle)
    })
}

/// `hsa_code_object_deserialize` (the older interface LLVM's plugin uses): a code object is a
/// reader here.
#[no_mangle]
pub extern "C" fn hsa_code_object_deserialize(
    code: *mut c_void,
    size: usize,
    _options: *const c_char,
    object: *mut hsa_code_object_reader_t,
) -> hsa_status_t {
    call("hsa_code_object_deserialize", |c| {
        add_reader(c, code, size, object)
    })
}

#[no_mangle]
pub extern "C" fn hsa_code_object_destroy(object: hsa_code_object_reader_t) -> hsa_status_t {
    call("hsa_code_object_destroy", |_| {
        runtime::get()?
            .code
            .remove_reader(object.handle)
            .map_err(|_| status::Error(HSA_STATUS_ERROR_INVALID_CODE_OBJECT))
    })
}

fn create_executable(profile: hsa_profile_t, executable: *mut hsa_executable_t) -> Result<()> {
    let runtime = runtime::get()?;
    let executable = out(executable)?;
    if profile > HSA_PROFILE_FULL {
        return Err(status::INVALID_ARGUMENT);
    }
    let handle = runtime.code.create_executable();
    // SAFETY: a valid out-pointer (checked not null).
    unsafe { *executable = hsa_executable_t { handle } };
    Ok(())
}

#[no_mangle]
pub extern "C" fn hsa_executable_create_alt(
    profile: hsa_profile_t,
    _rounding: hsa_default_float_rounding_mode_t,
    _options: *const c_char,
    executable: *mut hsa_executable_t,
) -> hsa_status_t {
    call("hsa_executable_create_alt", |_| {
        create_executable(profile, executable)
    })
}

#[no_mangle]
pub extern "C" fn hsa_executable_create(
    profile: hsa_profile_t,
    _state: hsa_executable_state_t,
    _options: *const c_char,
    executable: *mut hsa_executable_t,
) -> hsa_status_t {
    call("hsa_executable_create", |_| {
        create_executable(profile, executable)
    })
}

fn load(executable: hsa_executable_t, agent: hsa_agent_t, reader: u64) -> Result<()> {
    let runtime = runtime::get()?;
    let index = agent_of(runtime, agent)?;
    runtime.code.load(
        &runtime.system,
        &runtime.memory,
        executable.handle,
        index,
        reader,
    )
}

#[no_mangle]
pub extern "C" fn hsa_executable_load_agent_code_object(
    executable: hsa_executable_t,
    agent: hsa_agent_t,
    reader: hsa_code_object_reader_t,
    _options: *const c_char,
    loaded: *mut hsa_loaded_code_object_t,
) -> hsa_status_t {
    call("hsa_executable_load_agent_code_object", |c| {
        c.note(|| {
            format!(
                "executable={:#x} agent={:#x}",
                executable.handle, agent.handle
            )
        });
        load(executable, agent, reader.handle)?;
        if !loaded.is_null() {
            // SAFETY: an optional out-pointer, not null.
            unsafe {
                *loaded = hsa_loaded_code_object_t {
                    handle: reader.handle,
                }
            };
        }
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn hsa_executable_load_code_object(
    executable: hsa_executable_t,
    agent: hsa_agent_t,
    object: hsa_code_object_reader_t,
    _options: *const c_char,
) -> hsa_status_t {
    call("hsa_executable_load_code_object", |c| {
        c.note(|| {
            format!(
                "executable={:#x} agent={:#x}",
                executable.handle, agent.handle
            )
        });
        load(executable, agent, object.handle)
    })
}

#[no_mangle]
pub extern "C" fn hsa_executable_freeze(
    executable: hsa_executable_t,
    _options: *const c_char,
) -> hsa_status_t {
    call("hsa_executable_freeze", |_| {
        runtime::get()?.code.freeze(executable.handle)
    })
}

#[no_mangle]
pub extern "C" fn hsa_executable_validate(
    executable: hsa_executable_t,
    result: *mut u32,
) -> hsa_status_t {
    call("hsa_executable_validate", |_| {
        let result = out(result)?;
        let found = runtime::get()?.code.validate(executable.handle)?;
        // SAFETY: a valid out-pointer (checked not null).
        unsafe { *result = found };
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn hsa_executable_destroy(executable: hsa_executable_t) -> hsa_status_t {
    call("hsa_executable_destroy", |_| {
        runtime::get()?.code.destroy_executable(executable.handle)
    })
}

#[no_mangle]
pub extern "C" fn hsa_executable_get_symbol_by_name(
    executable: hsa_executable_t,
    name: *const c_char,
    agent: *const hsa_agent_t,
    symbol: *mut hsa_executable_symbol_t,
) -> hsa_status_t {
    call("hsa_executable_get_symbol_by_name", |c| {
        let runtime = runtime::get()?;
        let symbol = out(symbol)?;
        if name.is_null() {
            return Err(status::INVALID_ARGUMENT);
        }
        // SAFETY: the caller's contract: a NUL-terminated name.
        let name = unsafe { CStr::from_ptr(name) }
            .to_str()
            .map_err(|_| status::INVALID_SYMBOL_NAME)?;
        c.note(|| format!("name={name}"));
        let agent = if agent.is_null() {
            None
        } else {
            // SAFETY: a non-null agent pointer from the caller.
            Some(agent_of(runtime, unsafe { *agent })?)
        };
        let handle = runtime
            .code
            .symbol_by_name(executable.handle, name, agent)?;
        // SAFETY: a valid out-pointer (checked not null).
        unsafe { *symbol = hsa_executable_symbol_t { handle } };
        Ok(())
    })
}

#[no_mangle]
pub extern "C" fn hsa_executable_iterate_symbols(
    executable: hsa_executable_t,
    callback: Option<
        unsafe extern "C" fn(
            hsa_executable_t,
            hsa_executable_symbol_t,
            *mut c_void,
        ) -> hsa_status_t,
    >,
    data: *mut c_void,
) -> hsa_status_t {
    iterate(
        "hsa_executable_iterate_symbols",
        callback,
        || runtime::get()?.code.symbols_of(executable.handle),
        // SAFETY: the program's callback with its own data.
        |callback, handle| unsafe {
            callback(executable, hsa_executable_symbol_t { handle }, data)
        },
    )
}

#[no_mangle]
pub extern "C" fn hsa_executable_symbol_get_info(
    symbol: hsa_executable_symbol_t,
    attribute: hsa_executable_symbol_info_t,
    value: *mut c_void,
) -> hsa_status_t {
    call("hsa_executable_symbol_get_info", |c| {
        c.note(|| format!("symbol={:#x} attribute={attribute}", symbol.handle));
        use crate::code::Symbol;
        let found = runtime::get()?.code.symbol(symbol.handle)?;
        match (&*found, attribute) {
            (Symbol::Kernel(_), HSA_EXECUTABLE_SYMBOL_INFO_TYPE) => {
                put(value, HSA_SYMBOL_KIND_KERNEL)
            }
            (Symbol::Variable { .. }, HSA_EXECUTABLE_SYMBOL_INFO_TYPE) => {
                put(value, HSA_SYMBOL_KIND_VARIABLE)
            }
            (_, HSA_EXECUTABLE_SYMBOL_INFO_NAME_LENGTH) => put(value, found.name().len() as u32),
            (_, HSA_EXECUTABLE_SYMBOL_INFO_NAME) => {
                let out = out(value.cast::<u8>())?;
                // SAFETY: the caller's contract: NAME_LENGTH bytes at `value`.
                unsafe {
                    std::ptr::copy_nonoverlapping(found.name().as_ptr(), out, found.name().len())
                };
                Ok(())
            }
            (Symbol::Variable { address, .. }, HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_ADDRESS) => {
                c.note(|| format!("name={} address={address:#x}", found.name()));
                put(value, *address as u64)
            }
            (Symbol::Variable { size, .. }, HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_SIZE) => {
                put(value, *size as u32)
            }
            (Symbol::Kernel(k), HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT) => {
                put(value, std::sync::Arc::as_ptr(k) as u64)
            }
            (Symbol::Kernel(k), HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE) => {
                put(value, k.kernarg_size)
            }
            (Symbol::Kernel(k), HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_ALIGNMENT) => {
                put(value, k.kernarg_align)
            }
            (Symbol::Kernel(k), HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE) => {
                put(value, k.group_size)
            }
            (Symbol::Kernel(k), HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE) => {
                put(value, k.private_size)
            }
            (Symbol::Kernel(k), HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_DYNAMIC_CALLSTACK) => {
                put(value, k.dynamic_stack)
            }
            _ => Err(status::INVALID_ARGUMENT),
        }
    })
}

/// Keeps `status_of` for entry points added later that compute a status themselves.
#[allow(dead_code)]
fn _status(result: Result<()>) -> hsa_status_t {
    status_of(result)
}
