//! Device memory of each kind from the driver, from the stream-ordered allocator, page-locked host ranges, fills and peer
//! access.

use super::*;
use crate::driver::MemsetValue;
use gpu_plugin::fill::{Edge, FillPlan};

impl CudaDevice {
    // ---- memory ----

    /// `size` bytes of `kind` from the driver.
    pub(super) fn allocate(&self, size: u64, kind: AllocKind) -> Result<usize> {
        self.activate()?;
        let size = size.max(1);
        let what = || format!("allocating {size} bytes of {} memory", kind.name());
        let address = match kind {
            AllocKind::DEFAULT | AllocKind::DEVICE => self.driver.alloc_device(size),
            AllocKind::HOST => self.driver.alloc_host(size).map(|p| p as u64),
            AllocKind::SHARED => self.driver.alloc_managed(size),
            AllocKind::DEVICE_NON_BLOCKING => self.alloc_non_blocking(size),
            _ => {
                return Err(PluginError::invalid_argument(format!(
                    "unknown allocation kind {}",
                    kind.0
                )))
            }
        };
        address.map(|a| a as usize).map_err(|e| failed(what(), e))
    }

    /// Gives `ptr`, allocated as `kind`, back to the driver.
    pub(super) fn release(&self, ptr: usize, kind: AllocKind) -> Result<()> {
        self.activate()?;
        let result = match kind {
            AllocKind::HOST => self.driver.free_host(ptr),
            AllocKind::DEVICE_NON_BLOCKING if self.driver.has_async_allocator() => {
                self.allocation_stream().and_then(|s| {
                    self.driver.free_async(ptr as u64, s)?;
                    self.driver.synchronize(s)
                })
            }
            _ => self.driver.free_device(ptr as u64),
        };
        result.map_err(|e| failed(format!("freeing {ptr:#x}"), e))
    }

    /// Device memory from the stream-ordered allocator, on a stream of its own: it does not
    /// wait for running kernels, so device-side malloc pools can grow while a kernel runs.
    pub(super) fn alloc_non_blocking(&self, size: u64) -> driver::Result<u64> {
        if !self.driver.has_async_allocator() {
            return self.driver.alloc_device(size);
        }
        let stream = self.allocation_stream()?;
        let ptr = self.driver.alloc_async(size, stream)?;
        if let Err(e) = self.driver.synchronize(stream) {
            // The caller never sees the address: free it (stream-ordered, else synchronously).
            if self.driver.free_async(ptr, stream).is_err() {
                let _ = self.driver.free_device(ptr);
            }
            return Err(e);
        }
        Ok(ptr)
    }

    /// The allocator's stream, created on first use; the device owns it.
    pub(super) fn allocation_stream(&self) -> driver::Result<Stream> {
        let mut slot = lock(&self.allocation_stream);
        if let Some(s) = &*slot {
            return Ok(s.handle());
        }
        let s = OwnedStream::create(&self.driver)?;
        let handle = s.handle();
        *slot = Some(s);
        Ok(handle)
    }

    /// Page-locks `[host, host + size)` for every context (the plugin counts pins, see
    /// `CudaPlugin::pin_memory`): the address the device uses for `host`, and whether this call
    /// locked it (`false`: the program or another library had registered it already; it stays
    /// registered after the last unpin).
    pub fn page_lock(&self, host: usize, size: u64) -> Result<(u64, bool)> {
        self.activate()?;
        let what = || format!("page-locking {size} bytes at {host:#x}");
        let ours = self
            .driver
            .register_host(host, size)
            .map_err(|e| failed(what(), e))?;
        match self.driver.host_device_pointer(host) {
            Ok(device) => Ok((device, ours)),
            Err(e) => {
                if ours {
                    let _ = self.driver.unregister_host(host);
                }
                Err(failed(what(), e))
            }
        }
    }

    /// Undoes `page_lock` of the range starting at `start`.
    pub fn page_unlock(&self, start: usize) -> Result<()> {
        self.activate()?;
        self.driver
            .unregister_host(start)
            .map_err(|e| failed(format!("unlocking {start:#x}"), e))
    }

    // ---- fills ----

    /// Fills `size` bytes at `dst` with `pattern` through the driver's memsets (see
    /// [`memsets`]), on the queue's stream as copies are.
    pub(super) fn fill(
        &self,
        dst: usize,
        pattern: &[u8],
        size: u64,
        queue: QueueHandle,
    ) -> Result<()> {
        if !self.driver.can_memset() {
            return Err(PluginError::unsupported(
                "the CUDA driver has no cuMemsetD8Async, cuMemsetD16Async or cuMemsetD32Async",
            ));
        }
        let calls = memsets(dst as u64, pattern, size);
        self.on_queue(queue, |s| {
            self.activate()?;
            for m in &calls {
                self.driver
                    .memset(m.address, m.value, m.count, s)
                    .map_err(|e| failed(format!("filling {size} bytes at {dst:#x}"), e))?;
            }
            Ok(())
        })
    }

    // ---- copies ----

    pub(super) fn peer_access(&self, peer: &CudaDevice) -> Result<bool> {
        let index = peer.identity.ordinal as usize;
        let mut peers = lock(&self.peers);
        match peers.get(index).copied() {
            Some(PeerAccess::Enabled) => return Ok(true),
            Some(PeerAccess::Unavailable) | None => return Ok(false),
            Some(PeerAccess::Unknown) => {}
        }
        self.activate()?;
        let can = self
            .driver
            .can_access_peer(self.identity.handle, peer.identity.handle)
            .map_err(|e| failed("checking peer access", e))?;
        let state = if !can {
            PeerAccess::Unavailable
        } else {
            match self.driver.enable_peer_access(peer.context) {
                Ok(()) => PeerAccess::Enabled,
                Err(e) if e.code == driver::codes::TOO_MANY_PEERS => {
                    log::debug!("cuda: too many peers, copying through the driver instead");
                    PeerAccess::Unavailable
                }
                Err(e) => return Err(failed("enabling peer access", e)),
            }
        };
        peers[index] = state;
        Ok(state == PeerAccess::Enabled)
    }
}

/// One driver memset: `count` elements holding `value` from `address`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Memset {
    pub address: u64,
    pub value: MemsetValue,
    pub count: u64,
}

/// The driver memsets that fill `size` bytes at `dst` with `pattern` (1, 2 or 4 bytes, `size` a
/// whole number of them: plugin-api's rules). `cuMemsetD16Async` and `cuMemsetD32Async` refuse
/// a start that is not aligned to their width, so the widest call that the start and the size
/// are aligned to does it all when the pattern fits in its element (a narrower pattern
/// repeated); a 1-byte pattern otherwise takes one `cuMemsetD8Async`. A 2- or 4-byte pattern
/// from a start not aligned to it is split into aligned 4-byte words (`gpu_plugin::fill`, the
/// pattern rotated) and up to 3 bytes on either side, each side in at most two calls.
pub fn memsets(dst: u64, pattern: &[u8], size: u64) -> Vec<Memset> {
    let repeated = |i: usize| pattern[i % pattern.len()];
    let whole = |value: MemsetValue| Memset {
        address: dst,
        value,
        count: size / value.width(),
    };
    if dst.is_multiple_of(4) && size.is_multiple_of(4) {
        let word = u32::from_le_bytes(std::array::from_fn(repeated));
        return vec![whole(MemsetValue::D32(word))];
    }
    if pattern.len() <= 2 && dst.is_multiple_of(2) && size.is_multiple_of(2) {
        let half = u16::from_le_bytes(std::array::from_fn(repeated));
        return vec![whole(MemsetValue::D16(half))];
    }
    if pattern.len() == 1 {
        return vec![whole(MemsetValue::D8(pattern[0]))];
    }
    let plan = FillPlan::new(dst as usize, pattern, size as usize);
    let mut calls = Vec::with_capacity(5);
    edge(&plan.head, &mut calls);
    if plan.words.count > 0 {
        calls.push(Memset {
            address: plan.words.address as u64,
            value: MemsetValue::D32(plan.words.value),
            count: plan.words.count as u64,
        });
    }
    edge(&plan.tail, &mut calls);
    calls
}

/// Up to 3 bytes of a split fill: a 2-byte aligned pair in one `cuMemsetD16Async`, a lone byte
/// in one `cuMemsetD8Async`.
fn edge(edge: &Edge, calls: &mut Vec<Memset>) {
    let mut at = 0;
    while at < edge.bytes.len() {
        let address = (edge.address + at) as u64;
        let (value, len) = match edge.bytes.get(at..at + 2) {
            Some(&[a, b]) if address.is_multiple_of(2) => {
                (MemsetValue::D16(u16::from_le_bytes([a, b])), 2)
            }
            _ => (MemsetValue::D8(edge.bytes[at]), 1),
        };
        calls.push(Memset {
            address,
            value,
            count: 1,
        });
        at += len;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Carries the calls out on `memory`, standing for device memory at `base`, as the driver
    /// does: an element address not aligned to its width is the driver's INVALID_VALUE.
    fn run(calls: &[Memset], base: u64, memory: &mut [u8]) {
        for m in calls {
            let width = m.value.width();
            assert!(
                m.address.is_multiple_of(width),
                "{} at {:#x}: CUDA_ERROR_INVALID_VALUE",
                m.value.call(),
                m.address
            );
            let bytes: Vec<u8> = match m.value {
                MemsetValue::D8(v) => vec![v],
                MemsetValue::D16(v) => v.to_le_bytes().to_vec(),
                MemsetValue::D32(v) => v.to_le_bytes().to_vec(),
            };
            for i in 0..m.count * width {
                memory[(m.address - base + i) as usize] = bytes[(i % width) as usize];
            }
        }
    }

    #[test]
    fn every_start_and_length_fills_exactly_its_bytes_with_aligned_calls() {
        let base = 0x7f00_0000_1000u64;
        for pattern in [&[0xabu8][..], &[0x12, 0x34], &[0xde, 0xad, 0xbe, 0xef]] {
            for offset in 0..8u64 {
                for count in 1..14u64 {
                    let size = count * pattern.len() as u64;
                    let calls = memsets(base + offset, pattern, size);
                    assert!(calls.len() <= 5, "{calls:?}");
                    let mut memory = vec![0xeeu8; 80];
                    run(&calls, base, &mut memory);
                    let mut expected = vec![0xeeu8; 80];
                    for i in 0..size as usize {
                        expected[offset as usize + i] = pattern[i % pattern.len()];
                    }
                    assert_eq!(memory, expected, "{pattern:?} at +{offset}, {size} bytes");
                }
            }
        }
    }

    #[test]
    fn one_call_when_the_start_and_size_allow_it() {
        let mib = 1 << 20;
        let one = |dst, pattern: &[u8], size| {
            let calls = memsets(dst, pattern, size);
            assert_eq!(calls.len(), 1, "{calls:?}");
            (calls[0].value, calls[0].count)
        };
        // A byte widened to words, to half-words, or as it is.
        assert_eq!(
            one(0x1000, &[0x5a], mib),
            (MemsetValue::D32(0x5a5a_5a5a), mib / 4)
        );
        assert_eq!(
            one(0x1002, &[0x5a], mib),
            (MemsetValue::D16(0x5a5a), mib / 2)
        );
        assert_eq!(one(0x1001, &[0x5a], mib), (MemsetValue::D8(0x5a), mib));
        assert_eq!(one(0x1000, &[0x5a], 7), (MemsetValue::D8(0x5a), 7));
        // Two bytes doubled into words, or as they are.
        assert_eq!(
            one(0x1000, &[0x12, 0x34], 8),
            (MemsetValue::D32(0x3412_3412), 2)
        );
        assert_eq!(one(0x1002, &[0x12, 0x34], 8), (MemsetValue::D16(0x3412), 4));
        assert_eq!(
            one(0x1000, &[1, 2, 3, 4], 8),
            (MemsetValue::D32(0x0403_0201), 2)
        );
    }

    #[test]
    fn an_unaligned_wide_pattern_keeps_its_bulk_in_words() {
        // Four bytes from 1 past a word: 3 head bytes (one byte, then an aligned pair), the
        // words of the pattern rotated, and 1 tail byte.
        let calls = memsets(0x1001, &[1, 2, 3, 4], 4096);
        let values: Vec<_> = calls
            .iter()
            .map(|m| (m.address, m.value, m.count))
            .collect();
        assert_eq!(
            values,
            [
                (0x1001, MemsetValue::D8(1), 1),
                (0x1002, MemsetValue::D16(u16::from_le_bytes([2, 3])), 1),
                (
                    0x1004,
                    MemsetValue::D32(u32::from_le_bytes([4, 1, 2, 3])),
                    1023
                ),
                (0x2000, MemsetValue::D8(4), 1),
            ]
        );
    }
}
