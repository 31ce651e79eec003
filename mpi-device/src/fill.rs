//! The program's fills of device memory (`Op::Fill`, behind `omp_target_memset`): the request
//! carries the pattern, and the device process writes it here, so no data crosses the wire.
//!
//! A fill writes where the program says, so the device process first checks that the range
//! lies in memory it handed out on that device (an allocation, or a global of an image it
//! loaded): a wrong address from the program is refused with the reason instead of writing
//! over whatever this process keeps there.

use mpi_wire::protocol::Fill;
use plugin_api::{ErrorCode, PluginError, QueueHandle};
use std::collections::{BTreeMap, HashMap};

type Result<T> = std::result::Result<T, PluginError>;

/// One range handed out: its length and, for a global, the image it belongs to (gone when the
/// image is unloaded).
struct Extent {
    size: u64,
    image: Option<u64>,
}

/// The device memory the device process handed out to the program, by device and start.
#[derive(Default)]
pub struct Allocations {
    devices: HashMap<u32, BTreeMap<usize, Extent>>,
}

impl Allocations {
    /// An allocation the program got (a kept block reused too).
    pub fn allocated(&mut self, device: u32, address: usize, size: u64) {
        self.insert(device, address, size, None);
    }

    /// The program freed the allocation at `address` (kept for reuse or not: it is not the
    /// program's any more).
    pub fn freed(&mut self, device: u32, address: usize) {
        if let Some(extents) = self.devices.get_mut(&device) {
            extents.remove(&address);
        }
    }

    /// A global of `image` the program asked for (`omp_get_mapped_ptr` of a `declare target`
    /// variable may be filled).
    pub fn global(&mut self, device: u32, image: u64, address: usize, size: u64) {
        self.insert(device, address, size, Some(image));
    }

    /// `image` was unloaded: its globals went with it.
    pub fn unloaded(&mut self, device: u32, image: u64) {
        if let Some(extents) = self.devices.get_mut(&device) {
            extents.retain(|_, e| e.image != Some(image));
        }
    }

    /// Empty ranges are not kept: no fill can lie in one, and the address of a zero-byte
    /// allocation may be another's.
    fn insert(&mut self, device: u32, address: usize, size: u64, image: Option<u64>) {
        if size > 0 && address != 0 {
            self.devices
                .entry(device)
                .or_default()
                .insert(address, Extent { size, image });
        }
    }

    /// `Ok` if `size` bytes at `dst` lie inside one range handed out on `device`.
    pub fn check(&self, device: u32, dst: usize, size: u64) -> Result<()> {
        let inside = self
            .devices
            .get(&device)
            .and_then(|extents| extents.range(..=dst).next_back())
            .is_some_and(|(&start, extent)| {
                (dst - start) as u64 <= extent.size && size <= extent.size - (dst - start) as u64
            });
        if inside {
            return Ok(());
        }
        Err(PluginError::new(
            ErrorCode::INVALID_ARGUMENT,
            format!(
                "cannot fill {size} bytes at {dst:#x}: the range is not inside memory the device \
                 process allocated on its device {device}"
            ),
        ))
    }
}

/// What a fill needs of a device: its plugin's fill, a copy for a plugin that cannot fill, and
/// completing a queue's work.
pub trait FillTarget {
    /// The plugin's fill; `None` for a plugin older than ABI 1.6.
    fn fill_memory(
        &self,
        dst: usize,
        pattern: &[u8],
        size: u64,
        queue: QueueHandle,
    ) -> Option<Result<()>>;

    /// # Safety
    /// `src` holds `size` bytes, valid until [`FillTarget::finish`] returns `Ok` for `queue`.
    unsafe fn copy_to_device(
        &self,
        dst: usize,
        src: usize,
        size: u64,
        queue: QueueHandle,
    ) -> Result<()>;

    /// Waits for the work on `queue` where it does not complete on submission.
    fn finish(&self, queue: QueueHandle) -> Result<()>;
}

/// Executes a fill request on `device`, complete when it returns (the protocol's rule): the
/// plugin's own fill, or, where the plugin cannot fill (older than ABI 1.6, or not this
/// pattern width), a buffer of the pattern copied here, in this process, not over the wire.
pub fn fill(
    target: &impl FillTarget,
    allocations: &Allocations,
    device: u32,
    request: &Fill<'_>,
) -> Result<()> {
    let (dst, pattern, size) = (request.dst, request.pattern, request.size);
    let queue = QueueHandle(request.queue);
    allocations.check(device, dst, size)?;
    match target.fill_memory(dst, pattern, size, queue) {
        Some(Err(e)) if e.code == ErrorCode::UNSUPPORTED => {}
        Some(filled) => return filled.and_then(|()| target.finish(queue)),
        None => {}
    }
    let count = usize::try_from(size / pattern.len() as u64)
        .map_err(|_| PluginError::new(ErrorCode::OUT_OF_MEMORY, "fill too large"))?;
    let staging = pattern.repeat(count);
    // SAFETY: `staging` holds `size` bytes and is kept until `finish` has completed the
    // queue's work; it is leaked if that fails.
    let copied = unsafe { target.copy_to_device(dst, staging.as_ptr() as usize, size, queue) };
    let finished = copied.and_then(|()| target.finish(queue));
    if finished.is_err() {
        std::mem::forget(staging);
    }
    finished
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::{Cell, RefCell};

    /// A device whose memory is a buffer of the test's, at its real address; its plugin fills
    /// or not as told, and counts what it was asked.
    struct Buffer {
        memory: RefCell<Vec<u8>>,
        /// What the plugin's fill answers: `None` (older than ABI 1.6), or `UNSUPPORTED`.
        plugin_fills: Option<bool>,
        fills: Cell<u32>,
        copies: Cell<u32>,
    }

    impl Buffer {
        fn new(len: usize, plugin_fills: Option<bool>) -> Self {
            Buffer {
                memory: RefCell::new(vec![0x11; len]),
                plugin_fills,
                fills: Cell::new(0),
                copies: Cell::new(0),
            }
        }
        fn base(&self) -> usize {
            self.memory.borrow().as_ptr() as usize
        }
        fn at(&self, dst: usize, size: u64) -> std::ops::Range<usize> {
            let start = dst - self.base();
            start..start + size as usize
        }
    }

    impl FillTarget for Buffer {
        fn fill_memory(
            &self,
            dst: usize,
            pattern: &[u8],
            size: u64,
            _queue: QueueHandle,
        ) -> Option<Result<()>> {
            self.fills.set(self.fills.get() + 1);
            match self.plugin_fills? {
                false => Some(Err(PluginError::unsupported("no fill"))),
                true => {
                    let range = self.at(dst, size);
                    let mut memory = self.memory.borrow_mut();
                    for (i, b) in memory[range].iter_mut().enumerate() {
                        *b = pattern[i % pattern.len()];
                    }
                    Some(Ok(()))
                }
            }
        }

        unsafe fn copy_to_device(
            &self,
            dst: usize,
            src: usize,
            size: u64,
            _queue: QueueHandle,
        ) -> Result<()> {
            self.copies.set(self.copies.get() + 1);
            // SAFETY: the caller's promise: `src` holds `size` bytes.
            let bytes = unsafe { std::slice::from_raw_parts(src as *const u8, size as usize) };
            let range = self.at(dst, size);
            self.memory.borrow_mut()[range].copy_from_slice(bytes);
            Ok(())
        }

        fn finish(&self, _queue: QueueHandle) -> Result<()> {
            Ok(())
        }
    }

    fn request(dst: usize, size: u64, pattern: &[u8]) -> Fill<'_> {
        Fill {
            queue: 0,
            dst,
            size,
            pattern,
        }
    }

    #[test]
    fn a_fill_inside_an_allocation_writes_its_bytes_only() {
        for plugin_fills in [Some(true), Some(false), None] {
            let device = Buffer::new(64, plugin_fills);
            let base = device.base();
            let mut allocations = Allocations::default();
            allocations.allocated(3, base + 8, 48);
            // From an odd address to the allocation's last byte, with a 2-byte pattern.
            fill(
                &device,
                &allocations,
                3,
                &request(base + 9, 46, &[0xab, 0xcd]),
            )
            .unwrap();
            let memory = device.memory.borrow();
            let mut want = vec![0x11u8; 64];
            for (i, b) in want[9..55].iter_mut().enumerate() {
                *b = [0xab, 0xcd][i % 2];
            }
            assert_eq!(*memory, want, "plugin fills: {plugin_fills:?}");
            // The plugin's fill when it has one; a copy made here otherwise.
            let copies = u32::from(plugin_fills != Some(true));
            assert_eq!(
                device.copies.get(),
                copies,
                "plugin fills: {plugin_fills:?}"
            );
        }
    }

    #[test]
    fn a_fill_outside_what_the_device_process_handed_out_is_refused() {
        let device = Buffer::new(64, Some(true));
        let base = device.base();
        let mut allocations = Allocations::default();
        allocations.allocated(0, base + 8, 16);
        allocations.global(0, 7, base + 40, 8);
        let refused = |allocations: &Allocations, device_number: u32, dst: usize, size: u64| {
            let e = fill(
                &device,
                allocations,
                device_number,
                &request(dst, size, &[1]),
            )
            .unwrap_err();
            assert_eq!(e.code, ErrorCode::INVALID_ARGUMENT, "{}", e.message);
            assert!(e.message.contains("not inside memory"), "{}", e.message);
        };
        refused(&allocations, 0, base + 20, 5); // runs past the allocation's end
        refused(&allocations, 0, base + 4, 4); // before it
        refused(&allocations, 0, base + 24, 16); // between it and the global
        refused(&allocations, 0, base + 40, 9); // past the global
        refused(&allocations, 1, base + 8, 4); // another device's
        refused(&allocations, 0, usize::MAX, u64::MAX);
        assert_eq!(device.fills.get(), 0, "the plugin was never asked");
        assert_eq!(
            *device.memory.borrow(),
            vec![0x11; 64],
            "nothing was written"
        );

        // The global is fillable while its image is loaded, an allocation until it is freed.
        fill(&device, &allocations, 0, &request(base + 40, 8, &[2; 4])).unwrap();
        fill(&device, &allocations, 0, &request(base + 8, 16, &[3])).unwrap();
        allocations.unloaded(0, 7);
        allocations.freed(0, base + 8);
        refused(&allocations, 0, base + 40, 1);
        refused(&allocations, 0, base + 8, 1);
        assert_eq!(device.fills.get(), 2);
    }
}
