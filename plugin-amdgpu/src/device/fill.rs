//! Fills on the device (plugin ABI 1.6): the aligned words with `hsa_amd_memory_fill`, the
//! up to three bytes on either side copied from the host.

use super::{AmdgpuDevice, Result};
use crate::hsa_interface::HsaInterface;
use gpu_plugin::fill::FillPlan;
use plugin_api::QueueHandle;

impl AmdgpuDevice {
    pub(super) fn fill(
        &self,
        dst: usize,
        pattern: &[u8],
        size: u64,
        queue: QueueHandle,
    ) -> Result<()> {
        let plan = FillPlan::new(dst, pattern, size as usize);
        self.on_queue(
            queue,
            |stream| {
                // ROCr's fill is ordered with no queue: the stream's earlier work goes first,
                // as LLVM's plugin synchronises before it fills.
                stream.synchronize()?;
                if plan.words.count > 0 {
                    let words = plan.words;
                    self.hsa.fill(words.address, words.value, words.count)?;
                }
                for edge in [&plan.head, &plan.tail] {
                    if edge.bytes.is_empty() {
                        continue;
                    }
                    // SAFETY: `edge.bytes` lives until the stream is synchronised below, and
                    // nothing else writes it; internal work, so not one the core times.
                    unsafe {
                        stream.push_internal_host_to_device(
                            edge.address,
                            edge.bytes.as_ptr() as usize,
                            edge.bytes.len(),
                        )
                    }?;
                }
                stream.synchronize()
            },
            &|| format!("filling {size} bytes at device {dst:#x}"),
        )
    }
}
