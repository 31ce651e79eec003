//! A device's record/replay state: the block of device memory reserved when recording or
//! replaying starts, which every later allocation on the device is carved from in order.

use crate::error::{OffloadError, Result};
use crate::lock::lock;
use crate::plugins::PluginLibrary;
use plugin_api::AllocKind;
use std::ops::Range;
use std::sync::Mutex;

/// LLVM's allocation granularity in the block.
const ALIGNMENT: u64 = 16;
/// How much smaller each further attempt at reserving the block is, as in LLVM.
const RESERVE_STEP: u64 = 1 << 30;

pub(crate) struct RecordReplay {
    replaying: bool,
    save_output: bool,
    /// The reserved block.
    start: usize,
    size: u64,
    /// The first address handed out: `start`, or the recorded address a replay asked for.
    base: usize,
    /// Bytes of the block handed out, from `start`.
    used: Mutex<u64>,
}

impl RecordReplay {
    /// Reserves the block on device `device_id`, `plugin`'s device `local`. `wanted` (replay)
    /// is the recorded start address, 0 for none; `required` the bytes the replay needs from
    /// there. Returns the state and the distance pointer arguments must move by (0 when the
    /// block could start at `wanted`).
    pub(crate) fn reserve(
        plugin: &PluginLibrary,
        local: i32,
        device_id: i32,
        replaying: bool,
        save_output: bool,
        wanted: usize,
        required: u64,
    ) -> Result<(RecordReplay, u64)> {
        let total = match plugin.memory_info(local) {
            Some(Ok(memory)) => memory.total,
            _ => {
                return Err(OffloadError::new(format!(
                    "record/replay on device {}: the plugin does not report the device's memory \
                     size",
                    device_id
                )))
            }
        };
        let mut size = total;
        let start = loop {
            if size == 0 || size < required {
                return Err(OffloadError::new(format!(
                    "record/replay on device {}: no block of device memory could be reserved",
                    device_id
                )));
            }
            match plugin.alloc(local, size, 0, AllocKind::DEFAULT) {
                Ok(start) => break start,
                Err(_) => size = size.saturating_sub(RESERVE_STEP),
            }
        };
        let mut offset = (wanted as u64).wrapping_sub(start as u64);
        let mut skipped = 0;
        if wanted != 0 && wanted >= start && size >= required.saturating_add(offset) {
            // The recorded address lies inside the block: start handing out memory there.
            skipped = offset;
            offset = 0;
        } else if wanted == 0 {
            offset = 0;
        } else {
            log::warn!(
                "replay memory is at {start:#x}, not at the recorded {wanted:#x}: pointer \
                 arguments move by {offset:#x}"
            );
        }
        log::debug!(
            "record/replay on device {}: {size} bytes reserved at {start:#x} for {}",
            device_id,
            if replaying { "replaying" } else { "recording" }
        );
        let state = RecordReplay {
            replaying,
            save_output,
            start,
            size,
            base: start + skipped as usize,
            used: Mutex::new(skipped),
        };
        Ok((state, offset))
    }

    pub(crate) fn is_recording(&self) -> bool {
        !self.replaying
    }

    pub(crate) fn saves_output(&self) -> bool {
        self.save_output
    }

    /// The next `size` bytes of the block, 16-byte aligned.
    pub(crate) fn alloc(&self, size: u64) -> Result<usize> {
        let aligned = size.div_ceil(ALIGNMENT) * ALIGNMENT;
        let mut used = lock(&self.used);
        if self.size - *used < aligned {
            return Err(OffloadError::new(format!(
                "record/replay: the reserved {} bytes of device memory are used up",
                self.size
            )));
        }
        let address = self.start + *used as usize;
        *used += aligned;
        Ok(address)
    }

    /// Whether `address` was handed out from the block (such memory is never freed).
    pub(crate) fn contains(&self, address: usize) -> bool {
        (self.start..self.start + self.size as usize).contains(&address)
    }

    /// The addresses handed out so far, from the first.
    pub(crate) fn handed_out(&self) -> Range<usize> {
        self.base..self.start + *lock(&self.used) as usize
    }

    /// The reserved block's address.
    pub(crate) fn block_start(&self) -> usize {
        self.start
    }

    /// The block's first handed-out address (`BumpAllocVAStart`).
    pub(crate) fn base(&self) -> usize {
        self.base
    }
}
