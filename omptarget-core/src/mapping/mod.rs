//! The host-to-device mapping table of one device: which host ranges have device copies, with
//! their reference counts (OpenMP's dynamic count, and the `ompx_hold` count beside it).
//!
//! [`Mapping`] is one entry; [`sorted::SortedMappings`] answers range lookups over a set of
//! entries; [`table::MappingTable`] is the device's table, split by host address so that host
//! threads mapping their own data do not wait for each other.

mod extent;
mod sorted;
mod start_hash;
mod start_index;
mod table;

use crate::abi::source_location::VarName;
use plugin_api::{EventHandle, QueueHandle};

pub(crate) use sorted::Lookup;
pub(crate) use table::{Changed, MappingKey, MappingTable};

/// Reference count of data that is never unmapped (`declare target` globals).
pub(crate) const INFINITE: u64 = u64::MAX;

/// A pointer inside mapped data that was rewritten on the device to point at device memory
/// (`ptr_and_obj`), with both values, so either side can be restored after a copy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ShadowPointer {
    pub host_address: usize,
    pub host_value: usize,
    pub device_address: usize,
    pub device_value: usize,
}

/// An event marking the end of work queued on mapped data, with the queue it was recorded on:
/// later work on that same queue runs after it anyway and need not wait for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TransferEvent {
    pub handle: EventHandle,
    pub queue: QueueHandle,
}

/// The events of a mapping whose data moves on queues that run asynchronously.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct MappingEvents {
    /// Marks the end of the last transfer of this data still running on some construct's
    /// queue: constructs on other queues that use the data wait for it (LLVM's per-entry
    /// event, `LIBOMPTARGET_MAP_FORCE_ATOMIC`).
    pub transfer: Option<TransferEvent>,
    /// Marks the end of the work of the constructs that let go of this mapping without ending
    /// it: their kernels may still run on their queues. Chained (each such construct waits
    /// for the previous one's before recording it), so one event stands for all. Whoever
    /// copies the data back last waits for it; constructs that only use the data do not, so
    /// independent `nowait` regions on present data run side by side.
    pub released: Option<TransferEvent>,
}

/// The rarely used parts of a mapping, boxed together: most mappings have none of them, and
/// a smaller entry is a faster table (one cache line per mapping, see [`Mapping`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Uncommon {
    shadow_pointers: Vec<ShadowPointer>,
    events: MappingEvents,
    /// The list item's base, when it lies too far below the mapping's start for
    /// [`Mapping::base_offset`].
    far_base: Option<usize>,
}

/// `base_offset` when the base is kept in [`Uncommon::far_base`].
const FAR_BASE: u32 = u32::MAX;

/// One mapped host range. Kept in 64 bytes, one cache line in the table's hash: a lookup of
/// a random mapping among a million then misses the cache once at the entry, not twice.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Mapping {
    pub host_begin: usize,
    pub host_end: usize,
    pub device_begin: usize,
    pub dynamic_refs: u64,
    /// The variable's name as the compiler gave it, for diagnostics.
    pub name: VarName,
    uncommon: Option<Box<Uncommon>>,
    /// `host_begin` minus the base of the mapped list item (the array, for a section of it):
    /// zero-length sections between base and begin still find this mapping, as the spec
    /// requires. [`FAR_BASE`]: the base is in `uncommon`.
    base_offset: u32,
    /// The `ompx_hold` count: holds are taken by constructs in flight, so 32 bits are plenty.
    pub hold_refs: u32,
    /// Constructs that are ending this mapping and have not completed yet: the last of them
    /// removes it (LLVM's data-end thread count).
    pub ends_in_flight: u32,
    /// Bytes between the start of the device allocation and `device_begin`, which keep a
    /// struct member's alignment (under 16, so one byte).
    pub device_padding: u8,
    /// Whether the runtime allocated the device memory (and so frees it on removal).
    pub owns_device_memory: bool,
    /// The host range was page-locked for this mapping (`LIBOMPTARGET_LOCK_MAPPED_HOST_BUFFERS`)
    /// and is unlocked on removal.
    pub host_locked: bool,
    /// A construct is moving this data outside the table's locks (filling the new device copy,
    /// or copying it back): whoever needs the data waits for the end of the move
    /// ([`MappingTable::serving`]).
    pub moving: bool,
}

impl Mapping {
    /// A mapping of [host_begin, host_end) at `device_begin`, with no references yet.
    #[inline]
    pub(crate) fn new(
        host_base: usize,
        host_begin: usize,
        host_end: usize,
        device_begin: usize,
    ) -> Self {
        let mut m = Mapping {
            host_begin,
            host_end,
            device_begin,
            dynamic_refs: 0,
            name: VarName::UNKNOWN,
            uncommon: None,
            base_offset: 0,
            hold_refs: 0,
            ends_in_flight: 0,
            device_padding: 0,
            owns_device_memory: false,
            host_locked: false,
            moving: false,
        };
        m.set_host_base(host_base);
        m
    }

    /// The base of the mapped list item (at or below `host_begin`).
    pub(crate) fn host_base(&self) -> usize {
        if self.base_offset == FAR_BASE {
            if let Some(base) = self.uncommon.as_ref().and_then(|u| u.far_base) {
                return base;
            }
        }
        self.host_begin.wrapping_sub(self.base_offset as usize)
    }

    pub(crate) fn set_host_base(&mut self, base: usize) {
        match u32::try_from(self.host_begin.wrapping_sub(base)) {
            Ok(offset) if offset != FAR_BASE => {
                self.base_offset = offset;
                if let Some(u) = self.uncommon.as_deref_mut() {
                    u.far_base = None;
                }
            }
            _ => {
                self.base_offset = FAR_BASE;
                self.uncommon_mut().far_base = Some(base);
            }
        }
    }

    fn uncommon_mut(&mut self) -> &mut Uncommon {
        self.uncommon.get_or_insert_with(Box::default)
    }

    /// The attached pointers stored inside this mapping's data (`ptr_and_obj`).
    pub(crate) fn shadow_pointers(&self) -> &[ShadowPointer] {
        self.uncommon
            .as_deref()
            .map_or(&[], |u| u.shadow_pointers.as_slice())
    }

    pub(crate) fn shadow_pointers_mut(&mut self) -> &mut Vec<ShadowPointer> {
        &mut self.uncommon_mut().shadow_pointers
    }

    /// The mapping's events, on a device that runs queues asynchronously (none on most).
    pub(crate) fn events(&self) -> Option<&MappingEvents> {
        self.uncommon.as_deref().map(|u| &u.events)
    }

    /// The last transfer's event (see [`MappingEvents::transfer`]).
    pub(crate) fn event(&self) -> Option<TransferEvent> {
        self.uncommon.as_ref().and_then(|u| u.events.transfer)
    }

    /// The released constructs' event (see [`MappingEvents::released`]).
    pub(crate) fn released(&self) -> Option<TransferEvent> {
        self.uncommon.as_ref().and_then(|u| u.events.released)
    }

    pub(crate) fn set_event(&mut self, event: Option<TransferEvent>) {
        if event.is_some() || self.uncommon.is_some() {
            self.uncommon_mut().events.transfer = event;
        }
    }

    pub(crate) fn set_released(&mut self, event: TransferEvent) {
        self.uncommon_mut().events.released = Some(event);
    }

    /// A mapping of memory the runtime does not own (globals, associated pointers), never
    /// unmapped by reference counting.
    pub(crate) fn permanent(host_begin: usize, size: u64, device_begin: usize) -> Mapping {
        let mut m = Mapping::new(
            host_begin,
            host_begin,
            host_begin + size as usize,
            device_begin,
        );
        m.dynamic_refs = INFINITE;
        m
    }

    /// Start of the device allocation (what is freed).
    pub(crate) fn device_alloc(&self) -> usize {
        self.device_begin - self.device_padding as usize
    }

    /// Bytes of its device allocation: the data and the padding before it.
    pub(crate) fn device_bytes(&self) -> u64 {
        self.size() + u64::from(self.device_padding)
    }

    pub(crate) fn size(&self) -> u64 {
        (self.host_end - self.host_begin) as u64
    }
    /// Device address of a host address inside this mapping.
    /// Also for addresses just outside it, which implicit maps that extend a mapping use.
    pub(crate) fn device_address(&self, host: usize) -> usize {
        self.device_begin
            .wrapping_add(host.wrapping_sub(self.host_begin))
    }
    pub(crate) fn total_refs(&self) -> u64 {
        self.dynamic_refs.saturating_add(u64::from(self.hold_refs))
    }
    pub(crate) fn is_infinite(&self) -> bool {
        self.dynamic_refs == INFINITE
    }
    /// The attached pointers stored inside [begin, begin+size): those a copy of that range
    /// overwrites and must restore.
    #[inline]
    pub(crate) fn shadows_within(&self, begin: usize, size: u64) -> Vec<ShadowPointer> {
        // Most mappings have none: skip the collecting loop (some 25 instructions).
        let all = self.shadow_pointers();
        if all.is_empty() {
            return Vec::new();
        }
        let end = begin + size as usize;
        all.iter()
            .filter(|s| s.host_address >= begin && s.host_address < end)
            .cloned()
            .collect()
    }
}
