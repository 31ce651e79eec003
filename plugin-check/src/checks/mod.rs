//! The checks, one module per family. Each takes the loaded plugin and records its lines.

pub mod allocation_while_running;
pub mod errors;
pub mod fill;
pub mod launch;
pub mod memory;
pub mod ordering;
pub mod threads;

use omptarget_core::plugins::PluginLibrary;
use plugin_api::{AllocKind, ErrorCode, PluginError, QueueHandle};

pub type Outcome<T> = Result<T, String>;

/// A plugin error as a check's failure text.
pub fn failure(what: &str, error: PluginError) -> String {
    format!("{what}: {error}")
}

/// Bytes that differ per seed and position, so a copy from the wrong place shows.
pub fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed) ^ (i >> 8) as u8)
        .collect()
}

pub fn first_difference(got: &[u8], want: &[u8]) -> Option<usize> {
    got.iter().zip(want).position(|(a, b)| a != b)
}

/// Compares a read-back buffer with what was written.
pub fn same_content(what: &str, got: &[u8], want: &[u8]) -> Outcome<()> {
    match first_difference(got, want) {
        None => Ok(()),
        Some(at) => Err(format!(
            "{what}: byte {at} of {} is {:#04x}, expected {:#04x}",
            want.len(),
            got[at],
            want[at]
        )),
    }
}

/// Device memory that is freed when dropped, so a failing check leaks nothing.
pub struct DeviceBuffer<'a> {
    plugin: &'a PluginLibrary,
    device: i32,
    pub address: usize,
    kind: AllocKind,
}

impl<'a> DeviceBuffer<'a> {
    pub fn new(
        plugin: &'a PluginLibrary,
        device: i32,
        size: u64,
        kind: AllocKind,
    ) -> Result<Self, PluginError> {
        let address = plugin.alloc(device, size, 0, kind)?;
        if address == 0 {
            return Err(PluginError::new(
                ErrorCode::FAILED,
                "alloc returned success with a null address",
            ));
        }
        Ok(DeviceBuffer {
            plugin,
            device,
            address,
            kind,
        })
    }

    /// Frees now, reporting the error `Drop` would have to ignore.
    pub fn free(mut self) -> Result<(), PluginError> {
        let address = std::mem::take(&mut self.address);
        self.plugin.free(self.device, address, self.kind)
    }
}

impl Drop for DeviceBuffer<'_> {
    fn drop(&mut self) {
        if self.address != 0 {
            let _ = self.plugin.free(self.device, self.address, self.kind);
        }
    }
}

/// Copies all of `data` to device memory at `address` on `queue`.
///
/// # Safety
/// With a real queue, `data` must stay alive until the queue is synchronised.
pub unsafe fn send<T: Copy>(
    plugin: &PluginLibrary,
    device: i32,
    address: usize,
    data: &[T],
    queue: QueueHandle,
) -> Outcome<()> {
    let size = std::mem::size_of_val(data) as u64;
    // SAFETY: `data` holds `size` bytes, alive until the copy is complete (caller's promise).
    unsafe { plugin.copy_to_device(device, address, data.as_ptr() as usize, size, queue) }
        .map_err(|e| failure("copy to device", e))
}

/// Fills all of `into` from device memory at `address` on `queue`.
///
/// # Safety
/// With a real queue, `into` must stay alive and unused until the queue is synchronised.
pub unsafe fn receive<T: Copy>(
    plugin: &PluginLibrary,
    device: i32,
    into: &mut [T],
    address: usize,
    queue: QueueHandle,
) -> Outcome<()> {
    let size = std::mem::size_of_val(into) as u64;
    // SAFETY: `into` holds `size` bytes, alive and unused until the copy is complete
    // (caller's promise).
    unsafe { plugin.copy_from_device(device, into.as_mut_ptr() as usize, address, size, queue) }
        .map_err(|e| failure("copy from device", e))
}

/// Writes `data` to device memory at `address` and reads it back, synchronously.
pub fn write_and_read_back(
    plugin: &PluginLibrary,
    device: i32,
    address: usize,
    data: &[u8],
) -> Outcome<()> {
    // SAFETY: synchronous copies.
    unsafe { send(plugin, device, address, data, QueueHandle::SYNC) }?;
    let mut back = vec![0u8; data.len()];
    // SAFETY: as above.
    unsafe { receive(plugin, device, &mut back, address, QueueHandle::SYNC) }?;
    same_content("read back", &back, data)
}

/// Copies `data` to a fresh device buffer and back through the synchronous queue.
pub fn round_trip(plugin: &PluginLibrary, device: i32, data: &[u8]) -> Outcome<()> {
    let buffer = DeviceBuffer::new(plugin, device, data.len() as u64, AllocKind::DEVICE)
        .map_err(|e| failure("alloc", e))?;
    write_and_read_back(plugin, device, buffer.address, data)?;
    buffer.free().map_err(|e| failure("free", e))
}
