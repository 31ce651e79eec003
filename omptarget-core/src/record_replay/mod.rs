//! Kernel record and replay, as LLVM's plugins do it for `llvm-omp-kernel-replay`.
//!
//! Recording (`LIBOMPTARGET_RECORD=1`): when a device initialises, one block as large as the
//! device's memory allows is reserved and every later allocation on the device is carved from
//! it in order (a bump allocator), so that a kernel's inputs are one contiguous range. Before
//! each kernel launch the runtime writes, in the current directory, `<kernel>.image` (the
//! device image), `<kernel>.globals` (each global: name, NUL, 32-bit size, bytes),
//! `<kernel>.memory` (the block's used bytes) and `<kernel>.json` (the launch: arguments,
//! teams, threads, trip count, the block's address and used size); after it, with
//! `LIBOMPTARGET_RR_SAVE_OUTPUT=1`, `<kernel>.original.output` (the block again).
//!
//! Replaying (`__tgt_activate_record_replay`, `__tgt_target_kernel_replay`): the tool registers
//! the image, reserves a block asking for the recorded address, and has the recorded memory
//! copied to where it was and the kernel launched with the recorded arguments. Where the block
//! cannot start at or before the recorded address, the difference is returned for the tool to
//! move pointer arguments by.
//!
//! Unlike LLVM's (whose host plugin cannot record: it knows no memory size, and whose
//! `.json` holds the addresses of the argument slots rather than their values), this records
//! on any device whose plugin reports its memory size (`memory_info`, ABI 1.1).

pub(crate) mod block;

pub(crate) use block::RecordReplay;

use crate::device::Device;
use crate::error::{OffloadError, Result};
use crate::runtime::Runtime;
use plugin_api::{LaunchConfig, QueueHandle};
use std::fmt::Write as _;

/// The name of kernel `region_id` in the registered libraries' offload entries.
pub(crate) fn kernel_name(region_id: usize) -> Option<String> {
    let registry = Runtime::get().registry.read().unwrap();
    registry.libraries().iter().find_map(|library| {
        library
            .entries
            .iter()
            .find(|e| e.address == region_id && e.is_kernel())
            .map(|e| e.name.clone())
    })
}

/// Before a recorded launch of `region_id` with `args`: waits for `queue` (the inputs must be
/// on the device) and writes the image, globals, memory and description files.
pub(crate) fn record_inputs(
    recording: &RecordReplay,
    device: &Device,
    queue: QueueHandle,
    region_id: usize,
    args: &[usize],
    config: &LaunchConfig,
) -> Result<String> {
    device
        .plugin
        .synchronize(device.local, queue)
        .map_err(|e| device.plugin_error("synchronisation before recording", e))?;
    let name = kernel_name(region_id)
        .ok_or_else(|| OffloadError::new(format!("recording: no kernel {region_id:#x}")))?;
    let (image, globals) = device
        .image_of_kernel(region_id)
        .ok_or_else(|| OffloadError::new(format!("recording {name}: its image is not loaded")))?;
    write_file(&format!("{name}.image"), image)?;
    let mut global_bytes = Vec::new();
    for global in globals {
        let mut bytes = vec![0u8; global.size as usize];
        // SAFETY: `bytes` holds `global.size` bytes; the copy is synchronous.
        unsafe {
            device.plugin.copy_from_device(
                device.local,
                bytes.as_mut_ptr() as usize,
                global.address,
                global.size,
                QueueHandle::SYNC,
            )
        }
        .map_err(|e| device.plugin_error("reading a global to record", e))?;
        global_bytes.push((global.name, bytes));
    }
    write_file(&format!("{name}.globals"), &globals_file(&global_bytes))?;
    let memory = block_contents(recording, device)?;
    write_file(&format!("{name}.memory"), &memory)?;
    let description = launch_description(&Launch {
        kernel_name: &name,
        device_id: device.id,
        args,
        num_teams: config.num_teams[0],
        thread_limit: config.thread_limit[0],
        tripcount: config.tripcount,
        memory_size: memory.len(),
        memory_start: recording.base(),
    });
    write_file(&format!("{name}.json"), description.as_bytes())?;
    Ok(name)
}

/// After a recorded (or replayed) launch, with output saving on: waits for `queue` and
/// writes the memory to `<kernel>.original.output` (`.replay.output` when replaying).
pub(crate) fn record_output(
    state: &RecordReplay,
    device: &Device,
    queue: QueueHandle,
    name: &str,
) -> Result<()> {
    if !state.saves_output() {
        return Ok(());
    }
    device
        .plugin
        .synchronize(device.local, queue)
        .map_err(|e| device.plugin_error("synchronisation after a recorded kernel", e))?;
    let suffix = if state.is_recording() {
        "original.output"
    } else {
        "replay.output"
    };
    write_file(&format!("{name}.{suffix}"), &block_contents(state, device)?)
}

/// The record/replay block's contents from its first handed-out address: what a kernel's
/// inputs and outputs are compared by.
fn block_contents(state: &RecordReplay, device: &Device) -> Result<Vec<u8>> {
    let used = state.handed_out();
    let mut bytes = vec![0u8; used.len()];
    if !bytes.is_empty() {
        // SAFETY: `bytes` holds `used.len()` bytes; the copy is synchronous.
        unsafe {
            device.plugin.copy_from_device(
                device.local,
                bytes.as_mut_ptr() as usize,
                used.start,
                bytes.len() as u64,
                QueueHandle::SYNC,
            )
        }
        .map_err(|e| device.plugin_error("reading record/replay memory", e))?;
    }
    Ok(bytes)
}

/// What a recorded launch was.
pub(crate) struct Launch<'a> {
    pub kernel_name: &'a str,
    pub device_id: i32,
    pub args: &'a [usize],
    pub num_teams: u32,
    pub thread_limit: u32,
    pub tripcount: u64,
    pub memory_size: usize,
    pub memory_start: usize,
}

/// The `<kernel>.json` LLVM's `llvm-omp-kernel-replay` reads.
pub(crate) fn launch_description(launch: &Launch<'_>) -> String {
    let list = |values: &mut dyn Iterator<Item = i64>| {
        values.map(|v| v.to_string()).collect::<Vec<_>>().join(",")
    };
    let mut json = String::from("{");
    let _ = write!(
        json,
        "\"ArgOffsets\":[{}],\"ArgPtrs\":[{}],\"BumpAllocVAStart\":{},\"DeviceId\":{},\
         \"DeviceMemorySize\":{},\"LoopTripCount\":{},\"Name\":\"{}\",\"NumArgs\":{},\
         \"NumTeamsClause\":{},\"ThreadLimitClause\":{}",
        list(&mut launch.args.iter().map(|_| 0)),
        // Values as C's intptr_t, which the tool reads back.
        list(&mut launch.args.iter().map(|&a| a as i64)),
        launch.memory_start as i64,
        launch.device_id,
        launch.memory_size,
        launch.tripcount,
        launch
            .kernel_name
            .replace('\\', "\\\\")
            .replace('"', "\\\""),
        launch.args.len(),
        launch.num_teams,
        launch.thread_limit
    );
    json.push('}');
    json
}

/// The `<kernel>.globals` layout: for each global its name, a NUL, its size as a 32-bit
/// number and its bytes.
pub(crate) fn globals_file(globals: &[(String, Vec<u8>)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (name, bytes) in globals {
        out.extend_from_slice(name.as_bytes());
        out.push(0);
        out.extend_from_slice(&(bytes.len() as u32).to_ne_bytes());
        out.extend_from_slice(bytes);
    }
    out
}

/// Writes one record file in the current directory (where LLVM writes them).
pub(crate) fn write_file(name: &str, bytes: &[u8]) -> Result<()> {
    std::fs::write(name, bytes)
        .map_err(|e| OffloadError::new(format!("record/replay: cannot write {name}: {e}")))
}

/// A recorded launch to replay (`__tgt_target_kernel_replay`).
pub(crate) struct Replay<'a> {
    pub region_id: usize,
    /// The recorded device memory, copied to where it was recorded.
    pub memory: &'a [u8],
    /// The kernel's arguments (pointer arguments already moved by the tool).
    pub args: &'a [usize],
    pub num_teams: u32,
    pub thread_limit: u32,
    pub tripcount: u64,
}

/// Replays a recorded kernel on `device`, whose record/replay state must be replaying.
pub(crate) fn replay(device: &Device, replay: &Replay<'_>) -> Result<()> {
    let runtime = Runtime::get();
    runtime.prepare(device)?;
    let state = device
        .record_replay()
        .filter(|s| !s.is_recording())
        .ok_or_else(|| {
            OffloadError::new(format!(
                "replay on device {}: __tgt_activate_record_replay was not called for it",
                device.id
            ))
        })?;
    let kernel = device.kernel(replay.region_id).ok_or_else(|| {
        let registry = runtime.registry.read().unwrap();
        OffloadError::new(device.missing_kernel_reason(&registry, replay.region_id))
    })?;
    let name = kernel_name(replay.region_id).unwrap_or_default();
    let memory = state.alloc(replay.memory.len() as u64)?;
    let mut queue = crate::queue::ConstructQueue::new(device);
    let handle = queue.handle()?;
    if !replay.memory.is_empty() {
        // SAFETY: `replay` outlives the queue, whose work completes before this returns
        // (`finish`, or its drop on an error).
        unsafe {
            device.plugin.copy_to_device(
                device.local,
                memory,
                replay.memory.as_ptr() as usize,
                replay.memory.len() as u64,
                handle,
            )
        }
        .map_err(|e| device.plugin_error("copying the recorded memory", e))?;
    }
    let config = LaunchConfig {
        num_teams: [replay.num_teams, 0, 0],
        thread_limit: [replay.thread_limit, 0, 0],
        tripcount: replay.tripcount,
        // The recorded arguments are the region's own; the plugin adds the launch environment.
        kernel_args_version: 3,
        flags: kernel.launch_flags(0),
        ..Default::default()
    };
    device
        .plugin
        .launch_kernel(device.local, kernel.handle, replay.args, &config, handle)
        .map_err(|e| device.plugin_error("replaying the kernel", e))?;
    record_output(state, device, handle, &name)?;
    queue.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_description_has_llvms_keys_and_values() {
        let json = launch_description(&Launch {
            kernel_name: "__omp_offloading_fd00_1_main_l5",
            device_id: 0,
            args: &[0x7f00_0000_1000, 64],
            num_teams: 1,
            thread_limit: 0,
            tripcount: 64,
            memory_size: 256,
            memory_start: 0x7f00_0000_1000,
        });
        assert_eq!(
            json,
            "{\"ArgOffsets\":[0,0],\"ArgPtrs\":[139637976731648,64],\
             \"BumpAllocVAStart\":139637976731648,\"DeviceId\":0,\"DeviceMemorySize\":256,\
             \"LoopTripCount\":64,\"Name\":\"__omp_offloading_fd00_1_main_l5\",\"NumArgs\":2,\
             \"NumTeamsClause\":1,\"ThreadLimitClause\":0}"
        );
    }

    #[test]
    fn globals_are_name_nul_size_bytes() {
        let file = globals_file(&[("g".into(), vec![1, 2])]);
        assert_eq!(file, [b'g', 0, 2, 0, 0, 0, 1, 2]);
    }
}
