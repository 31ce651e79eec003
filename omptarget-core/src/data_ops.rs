//! The mapping rules of `target data`, `target enter/exit data`, `target update` and the data
//! part of `target`, after LLVM's `targetDataBegin`/`targetDataEnd`/`targetDataUpdate`.

use crate::abi::map_args::{non_contig_dims, MapArg, NonContigDim};
use crate::abi::map_type::*;
use crate::abi::offload_entry::LlvmRelease;
use crate::abi::source_location::VarName;
use crate::error::{OffloadError, Result};
use crate::mapper;
use crate::mapping::{Changed, Lookup, Mapping, MappingKey, ShadowPointer, TransferEvent};
use crate::observe::info::{self, Ptr};
use crate::observe::logging;
use crate::queue::ConstructQueue;
use plugin_api::AllocKind;
use smallvec::SmallVec;

/// Arguments (by index) whose device base address `target data` returns to the program.
pub(crate) type DeviceBases = SmallVec<[(usize, usize); 4]>;
/// The values a kernel receives, one per kernel argument.
pub(crate) type KernelValues = SmallVec<[usize; 8]>;

const POINTER_SIZE: u64 = std::mem::size_of::<usize>() as u64;
/// Struct pieces are padded on the device to keep up to this alignment (LLVM's MaxAlignment).
const MAX_ALIGNMENT: usize = 16;
/// Firstprivates up to this size are packed into one transfer (LLVM's threshold).
const PACKED_FIRSTPRIVATE_LIMIT: u64 = 1024;

/// LLVM's message for absent `present` data (the caller adds what LLVM reports after it).
fn present_message(begin: usize, size: u64, what: &str) {
    logging::message(&format!(
        "device mapping required by 'present' {what} modifier does not exist for host address {} ({size} bytes)",
        Ptr(begin)
    ));
}

fn null_target_pointer(present: bool) -> OffloadError {
    OffloadError::new(format!(
        "Call to getTargetPointer returned null pointer ({}).",
        if present {
            "'present' map type modifier"
        } else {
            "device failure or illegal mapping"
        }
    ))
}

/// The alignment a struct piece starting at `base` needs on the device.
fn required_alignment(base: usize) -> usize {
    if base == 0 {
        return MAX_ALIGNMENT;
    }
    (1usize << base.trailing_zeros()).min(MAX_ALIGNMENT)
}

/// Where a small firstprivate starting at `host_begin` goes in the buffer that carries them all
/// to the device, once `end` bytes are taken: at an offset as aligned as its host address (up to
/// MAX_ALIGNMENT, to which the buffer itself is aligned). LLVM pads from the previous entry's
/// size alone, which can leave a `long` after a 12-byte array misaligned: a fault on a GPU.
fn packed_offset(end: usize, host_begin: usize) -> usize {
    end.next_multiple_of(required_alignment(host_begin))
}

/// What looking up or creating a mapping gave.
struct Placed {
    /// Device address of `begin`; 0 when nothing is mapped (an absent zero-length section).
    device_begin: usize,
    is_new: bool,
    /// The data was sent when the mapping was created.
    sent: bool,
    /// Unified shared memory: the device uses the host address itself.
    is_host: bool,
    /// Shadow pointers inside the range, to re-apply after data is sent again.
    shadows: Vec<ShadowPointer>,
    /// The existing mapping's last transfer, which this construct's use of it waits for.
    event: Option<TransferEvent>,
}

/// The flags of one `place` request.
struct Request {
    begin: usize,
    base: usize,
    size: u64,
    padding: usize,
    map_type: MapType,
    update_refs: bool,
    name: VarName,
}

/// Finds or creates the mapping of a list item, updating reference counts (LLVM's
/// `getTargetPointer`).
fn place(q: &mut ConstructQueue<'_>, r: &Request) -> Result<Placed> {
    let t = r.map_type;
    let (hold, implicit, present) = (t.has(OMPX_HOLD), t.has(IMPLICIT), t.has(PRESENT));
    let device = q.device;
    // Implicit maps may extend an existing mapping: they use what is there.
    let (mut table, found) = device.mapping.lookup(r.begin, r.size, r.base, implicit);
    if let Some(key) = found.serving(implicit) {
        let mut m = table.get_mut(key).unwrap();
        let action = if r.update_refs {
            if !m.is_infinite() || hold {
                if hold {
                    m.hold_refs = m.hold_refs.saturating_add(1);
                } else {
                    m.dynamic_refs = m.dynamic_refs.saturating_add(1);
                }
            }
            " (incremented)"
        } else {
            " (update suppressed)"
        };
        if info::enabled(info::MAPPING_EXISTS) {
            info::mapping_exists(
                device.id,
                &m,
                r.begin,
                r.size,
                implicit,
                hold,
                action,
                Some(r.name),
            );
        }
        let device_begin = m.device_address(r.begin);
        let shadows = m.shadows_within(r.begin, r.size);
        let event = m.event();
        drop(m);
        drop(table);
        // Members of a struct this construct just mapped are new on the device too.
        return Ok(Placed {
            device_begin,
            is_new: q.created_here(key.start),
            sent: false,
            is_host: false,
            shadows,
            event,
        });
    }
    match found {
        Lookup::Contained(_) => unreachable!("served above"),
        Lookup::Extends(key) => {
            let m = table.get_mut(key).unwrap();
            logging::message(&format!(
                "explicit extension not allowed: host address specified is {} ({} bytes), but device allocation maps to host at {} ({} bytes)",
                Ptr(r.begin),
                r.size,
                Ptr(m.host_begin),
                m.size()
            ));
            drop(m);
            drop(table);
            if present {
                present_message(r.begin, r.size, "map type");
            }
            Err(null_target_pointer(present))
        }
        Lookup::Absent if q.unified_shared_memory && !t.has(CLOSE) => {
            drop(table);
            if r.size > 0 && info::enabled(info::MAPPING_CHANGED) {
                info::line(
                    device.id,
                    format_args!(
                        "Return HstPtrBegin {} Size={} for unified shared memory",
                        Ptr(r.begin),
                        r.size
                    ),
                );
            }
            device.prefault_zero_copy_map(r.begin, r.size);
            Ok(Placed {
                device_begin: if r.size > 0 { r.begin } else { 0 },
                is_new: false,
                sent: false,
                is_host: r.size > 0,
                shadows: Vec::new(),
                event: None,
            })
        }
        Lookup::Absent if present => {
            drop(table);
            present_message(r.begin, r.size, "map type");
            Err(null_target_pointer(true))
        }
        // A zero-length section of unmapped data is not an error: nothing is mapped.
        Lookup::Absent if r.size == 0 => Ok(Placed {
            device_begin: 0,
            is_new: false,
            sent: false,
            is_host: false,
            shadows: Vec::new(),
            event: None,
        }),
        // The mapping is published before it holds its data. A short copy is made under the
        // table's lock; during a long one the mapping is marked moving and the lock let go, so
        // that only constructs that use this data wait for it (LLVM copies under the entry's
        // own lock).
        Lookup::Absent => {
            let device_alloc = device
                .alloc(r.size + r.padding as u64, r.begin, AllocKind::DEFAULT)
                .map_err(|e| {
                    logging::failure_message(&e.message);
                    null_target_pointer(false)
                })?;
            let device_begin = device_alloc + r.padding;
            let mut mapping =
                Mapping::new(r.base, r.begin, r.begin + r.size as usize, device_begin);
            mapping.device_padding = u8::try_from(r.padding).expect("padding under MAX_ALIGNMENT");
            if hold {
                mapping.hold_refs = 1;
            } else {
                mapping.dynamic_refs = 1;
            }
            mapping.owns_device_memory = true;
            mapping.host_locked = device.lock_mapped_host_buffer(r.begin, r.size);
            mapping.name = r.name;
            if info::enabled(info::MAPPING_CHANGED) {
                info::line(
                    device.id,
                    format_args!(
                        "Creating new map entry with HstPtrBase={}, HstPtrBegin={}, TgtAllocBegin={}, TgtPtrBegin={}, Size={}, DynRefCount={}, HoldRefCount={}, Name={}",
                        Ptr(r.base),
                        Ptr(r.begin),
                        Ptr(device_alloc),
                        Ptr(device_begin),
                        r.size,
                        mapping.dynamic_refs,
                        mapping.hold_refs,
                        r.name.variable()
                    ),
                );
            }
            let sent = t.has(TO) && r.size > 0;
            let fill = |q: &mut ConstructQueue<'_>| {
                // SAFETY: the list item's host storage (`MapArg`), valid for the construct.
                unsafe { q.copy_to_device_named(device_begin, r.begin, r.size, Some(r.name)) }?;
                q.transfer_event(None)
            };
            if sent && is_long(r.size) {
                mapping.moving = true;
                let key = table.insert(mapping);
                drop(table);
                move_data(q, key, fill)?;
            } else {
                let key = table.insert(mapping);
                if sent {
                    if let Some(event) = fill(q)? {
                        if let Some(mut m) = table.get_mut(key) {
                            m.set_event(Some(event));
                        }
                    }
                }
                drop(table);
            }
            q.note_created(r.begin);
            Ok(Placed {
                device_begin,
                is_new: true,
                sent,
                is_host: false,
                shadows: Vec::new(),
                event: None,
            })
        }
    }
}

/// Transfers at least this long (64 KiB: some microseconds of copying on the host, more on a
/// GPU through pageable memory) are made with the mapping marked moving and the table's lock
/// let go; shorter ones cost less than letting it go and taking it again.
const LONG_TRANSFER: u64 = 64 << 10;

fn is_long(size: u64) -> bool {
    size >= LONG_TRANSFER
}

/// Makes a long transfer of a mapping marked moving, with the table let go, then ends the move
/// (also when the transfer failed), giving the mapping the transfer's event if it has one.
fn move_data(
    q: &mut ConstructQueue<'_>,
    key: MappingKey,
    transfer: impl FnOnce(&mut ConstructQueue<'_>) -> Result<Option<TransferEvent>>,
) -> Result<()> {
    let moved = transfer(q);
    let event = moved.as_ref().ok().copied().flatten();
    q.device.mapping.end_move(key, |m| {
        if event.is_some() {
            m.set_event(event);
        }
    });
    moved.map(drop)
}

/// Gives the mapping holding [begin, begin+size) the event of the transfer just queued.
fn set_event(q: &ConstructQueue<'_>, begin: usize, size: u64, event: TransferEvent) {
    let mut table = q.device.mapping.view(begin, size, begin);
    if let Some(mut m) = table.find_overlapping(begin, size) {
        m.set_event(Some(event));
    };
}

/// Sends host data and re-applies the device values of pointers attached inside it, so that
/// re-sent data keeps pointing at device memory.
///
/// # Safety
/// `begin..begin + size` must be readable host memory for the rest of the construct.
unsafe fn send(
    q: &mut ConstructQueue<'_>,
    device_begin: usize,
    shadows: &[ShadowPointer],
    begin: usize,
    size: u64,
) -> Result<()> {
    // SAFETY: the caller's promise.
    unsafe { q.copy_to_device(device_begin, begin, size) }?;
    for s in shadows {
        q.write_device_word(s.device_address, s.device_value, VarName::UNKNOWN)?;
    }
    Ok(())
}

/// What `use_device_ptr`/`use_device_addr` hand back for data that is not mapped. OpenMP 5.1
/// and LLVM 22 keep the host address (the program vouches that the device can use it); LLVM 19
/// gave a NULL-based address, and its own tests expect clang-19 programs to get one.
fn unmapped_device_base(host_base: usize, offset: usize) -> usize {
    let release = crate::runtime::Runtime::get()
        .registry
        .read()
        .unwrap()
        .release();
    match release {
        LlvmRelease::Llvm22 => host_base,
        LlvmRelease::Llvm19 => 0usize.wrapping_sub(offset),
    }
}

/// Maps every argument on entry to a construct. Adds to `returned`, for `return_param`
/// arguments (`use_device_ptr`), the device base address to hand back to the program (filled
/// in place: returned by value, the list was copied at each level).
pub(crate) fn begin(
    q: &mut ConstructQueue<'_>,
    args: &[MapArg],
    returned: &mut DeviceBases,
) -> Result<()> {
    let mut attaching = AttachEntries::new();
    begin_list(q, args, false, returned, &mut attaching)?;
    if attaching.is_empty() {
        return Ok(());
    }
    let always = treat_attach_auto_as_always();
    if always {
        log::debug!(
            "treating ATTACH(auto) as ATTACH(always): LIBOMPTARGET_TREAT_ATTACH_AUTO_AS_ALWAYS is set"
        );
    }
    for arg in &attaching {
        attach_after_mapping(q, arg, always)?;
    }
    Ok(())
}

/// The ATTACH entries of a construct (clang 22+), its mappers' included, in argument order:
/// handled once every other map of the construct is done, since whether one attaches depends
/// on what the construct mapped.
type AttachEntries = SmallVec<[MapArg; 2]>;

/// `LIBOMPTARGET_TREAT_ATTACH_AUTO_AS_ALWAYS`, read once (LLVM reads it once too).
fn treat_attach_auto_as_always() -> bool {
    static SETTING: std::sync::LazyLock<bool> =
        std::sync::LazyLock::new(crate::config::treat_attach_auto_as_always);
    *SETTING
}

fn begin_list(
    q: &mut ConstructQueue<'_>,
    args: &[MapArg],
    from_mapper: bool,
    returned: &mut DeviceBases,
    attaching: &mut AttachEntries,
) -> Result<()> {
    for (index, arg) in args.iter().enumerate() {
        let t = arg.map_type;
        if t.is_by_value() || t.is_private() || t.has(ATTACH) {
            // PRIVATE|ATTACH entries initialise a private pointer: they are handled with the
            // kernel's private arguments.
            if t.has(ATTACH) && !t.is_private() && arg.mapper.is_none() {
                attaching.push(arg.clone());
            }
            continue;
        }
        if let Some(m) = arg.mapper {
            let components = mapper::expand(arg, m);
            // The components' own `return_param` results are not the program's.
            begin_list(q, &components, true, &mut DeviceBases::new(), attaching)?;
            continue;
        }
        // A struct entry followed by its members: keep the start's alignment on the device.
        let is_combined = t.member_of().is_none()
            && args.get(index + 1).and_then(|n| n.map_type.member_of()) == Some(index);
        let padding = if is_combined {
            arg.begin % required_alignment(arg.base)
        } else {
            0
        };
        let mut update_refs = t.member_of().is_none() && !(from_mapper && index == 0);
        let mut pointee_base = arg.base;
        let mut pointer = None;
        if t.has(PTR_AND_OBJ) {
            // The pointer itself (at `base`) is mapped too; its device copy is made to point at
            // the device copy of the pointee below.
            let placed = place(
                q,
                &Request {
                    begin: arg.base,
                    base: arg.base,
                    size: POINTER_SIZE,
                    padding: 0,
                    map_type: MapType(t.0 & (PRESENT | OMPX_HOLD | CLOSE | IMPLICIT)),
                    update_refs,
                    name: VarName::UNKNOWN,
                },
            )?;
            if placed.device_begin == 0 {
                return Err(null_target_pointer(t.has(PRESENT)));
            }
            // SAFETY: `base` is the address of a host pointer variable (ptr_and_obj contract).
            pointee_base = unsafe { std::ptr::read_unaligned(arg.base as *const usize) };
            if !placed.is_new && !placed.is_host && !t.has(PRESENT) {
                q.wait_for_transfer(placed.event)?;
            }
            pointer = Some(placed);
            update_refs = !from_mapper || index != 0;
        }
        let placed = place(
            q,
            &Request {
                begin: arg.begin,
                base: pointee_base,
                size: arg.size,
                padding,
                map_type: t,
                update_refs,
                name: arg.name,
            },
        )?;
        if placed.device_begin == 0 && (arg.size > 0 || t.has(PRESENT)) {
            return Err(null_target_pointer(t.has(PRESENT)));
        }
        if !from_mapper && t.has(TARGET_PARAM) && placed.device_begin != 0 {
            q.note_placed(index, placed.device_begin);
            q.device.prefetch_kernel_data(placed.device_begin);
        }
        let needs_data = placed.is_new && !placed.sent || t.has(ALWAYS);
        if t.has(TO) && needs_data && !placed.is_host && arg.size > 0 {
            // SAFETY: the list item's host storage (`MapArg`), valid for the construct.
            unsafe { send(q, placed.device_begin, &placed.shadows, arg.begin, arg.size) }?;
            if let Some(event) = q.transfer_event(placed.event)? {
                set_event(q, arg.begin, arg.size, event);
            }
        } else if !placed.is_new && !placed.is_host && !t.has(PRESENT) {
            // Data another construct is still sending (on its own queue) is waited for.
            q.wait_for_transfer(placed.event)?;
        }
        if t.has(RETURN_PARAM) {
            // use_device_ptr/use_device_addr. For a pointer-and-pointee entry
            // (`use_device_addr` of a reference member, say) the base is the pointee's, read
            // through the pointer above.
            let offset = arg.begin.wrapping_sub(pointee_base);
            let device_base = match placed.device_begin {
                0 => unmapped_device_base(pointee_base, offset),
                begin => begin.wrapping_sub(offset),
            };
            returned.push((index, device_base));
        }
        if placed.device_begin == 0
            && t.0 != 0
            && t.member_of().is_none()
            && !t.has(IMPLICIT)
            && info::enabled(info::EMPTY_MAPPING)
        {
            info::line(
                q.device.id,
                format_args!(
                    "variable {} does not have a valid device counterpart",
                    arg.name.variable()
                ),
            );
        }
        if let Some(pointer) = pointer.filter(|p| !p.is_host && !placed.is_host) {
            let device_value = placed
                .device_begin
                .wrapping_sub(arg.begin.wrapping_sub(pointee_base));
            attach(
                q,
                arg.base,
                pointee_base,
                pointer.device_begin,
                device_value,
            )?;
        }
    }
    Ok(())
}

/// An ATTACH entry: `base` is the host pointer's address, `begin` the pointee, `size` the
/// pointer's size. When both are mapped, the device pointer is made to point at the device
/// pointee; when either is not, there is nothing to attach.
///
/// LLVM 22's rule (OpenMP 6.0's `attach(auto)`): the pointer is attached only when this
/// construct newly mapped the pointer or the pointee. A pointer that was attached before, or
/// that the program re-pointed at data mapped earlier, is left as it is on the device. An
/// `ALWAYS` entry, or every entry with `LIBOMPTARGET_TREAT_ATTACH_AUTO_AS_ALWAYS` (`always`),
/// attaches regardless.
///
/// Where maps use host memory in place (zero-copy, unified shared memory), an unmapped pointee
/// is the host data itself: a pointer with a device copy (a `declare target` variable) is made
/// to point at it, whatever this construct mapped, since nothing else would.
fn attach_after_mapping(q: &mut ConstructQueue<'_>, arg: &MapArg, always: bool) -> Result<()> {
    let mapping = &q.device.mapping;
    // Each as (device address, host start of the mapping holding it).
    let pointer = mapping
        .view(arg.base, arg.size, arg.base)
        .find(arg.base, arg.size)
        .map(|m| (m.device_address(arg.base), m.host_begin));
    let mapped_pointee = mapping
        .view(arg.begin, 0, arg.begin)
        .find(arg.begin, 0)
        .map(|m| (m.device_address(arg.begin), m.host_begin));
    let in_place = mapped_pointee.is_none() && q.unified_shared_memory;
    let pointee = mapped_pointee.or(in_place.then_some((arg.begin, arg.begin)));
    let (Some((pointer_device, pointer_mapping)), Some((pointee_device, pointee_mapping))) =
        (pointer, pointee)
    else {
        log::debug!(
            "attach {:#x} -> {:#x}: pointer or pointee not mapped; skipped",
            arg.base,
            arg.begin
        );
        return Ok(());
    };
    let always = always || in_place || arg.map_type.has(ALWAYS);
    if !always && !q.created_here(pointer_mapping) && !q.created_here(pointee_mapping) {
        log::debug!(
            "attach {:#x} -> {:#x}: neither pointer nor pointee newly mapped; skipped",
            arg.base,
            arg.begin
        );
        return Ok(());
    }
    // SAFETY: `base` is the address of a host pointer variable (ATTACH contract).
    let host_value = unsafe { std::ptr::read_unaligned(arg.base as *const usize) };
    let device_value = pointee_device.wrapping_sub(arg.begin.wrapping_sub(host_value));
    attach(q, arg.base, host_value, pointer_device, device_value)
}

/// Records a shadow pointer and writes the device pointer, unless already attached the same way.
fn attach(
    q: &mut ConstructQueue<'_>,
    host_address: usize,
    host_value: usize,
    device_address: usize,
    device_value: usize,
) -> Result<()> {
    let name = {
        let (mut table, key) =
            q.device
                .mapping
                .serving(host_address, POINTER_SIZE, host_address, false);
        let Some(mut m) = key.and_then(|key| table.get_mut(key)) else {
            return Err(OffloadError::new(format!(
                "attached pointer at {host_address:#x} is not mapped"
            )));
        };
        let shadows = m.shadow_pointers_mut();
        if let Some(s) = shadows.iter_mut().find(|s| s.host_address == host_address) {
            if s.device_value == device_value {
                return Ok(());
            }
            s.host_value = host_value;
            s.device_value = device_value;
        } else {
            shadows.push(ShadowPointer {
                host_address,
                host_value,
                device_address,
                device_value,
            });
        }
        m.name
    };
    log::debug!("attached pointer {host_address:#x}: device copy at {device_address:#x} now holds {device_value:#x}");
    q.write_device_word(device_address, device_value, name)
}

/// Copies device data back into host memory, then restores the host values of attached
/// pointers inside it (the device copies hold device addresses).
///
/// # Safety
/// `begin..begin + size` must be writable host memory, not otherwise used until the
/// construct's work is complete.
unsafe fn receive(
    q: &mut ConstructQueue<'_>,
    begin: usize,
    size: u64,
    device_begin: usize,
    shadows: &[ShadowPointer],
) -> Result<()> {
    // SAFETY: the caller's promise.
    unsafe { q.copy_from_device(begin, device_begin, size) }?;
    restore_host_pointers(q, shadows);
    Ok(())
}

fn restore_host_pointers(q: &mut ConstructQueue<'_>, shadows: &[ShadowPointer]) {
    for s in shadows {
        q.write_host_word_after_sync(s.host_address, s.host_value);
    }
}

/// Unmaps every argument at the end of a construct, in reverse order as LLVM does. Mappings
/// whose counts reach zero are removed after the construct's queue has completed, and only by
/// the last construct still ending them, so neither later arguments of the construct nor other
/// threads' copies back ever see freed memory (LLVM's deferred deletion).
///
/// On a device whose queues complete work on submission, the construct's last argument
/// (which no later one can look up again) removes its mapping at once, under the lock it holds
/// already, unless another end of it is pending (a struct member's, another construct's): what
/// follows a removal (its information line, the free) still waits for the construct's
/// completion, in LLVM's order.
pub(crate) fn end(q: &mut ConstructQueue<'_>, args: &[MapArg]) -> Result<()> {
    end_list(q, args, false)
}

fn end_list(q: &mut ConstructQueue<'_>, args: &[MapArg], from_mapper: bool) -> Result<()> {
    for (index, arg) in args.iter().enumerate().rev() {
        let t = arg.map_type;
        if t.is_by_value() || t.is_private() || t.has(ATTACH) {
            continue;
        }
        if let Some(m) = arg.mapper {
            let components = mapper::expand(arg, m);
            end_list(q, &components, true)?;
            continue;
        }
        let update_refs =
            (t.member_of().is_none() || t.has(PTR_AND_OBJ)) && !(from_mapper && index == 0);
        let (hold, delete, implicit) = (t.has(OMPX_HOLD), t.has(DELETE), t.has(IMPLICIT));
        let device = q.device;
        // Work queued on a device whose queues complete on submission is done already: only
        // the end of the last reference waits for the construct's completion to remove the
        // mapping, and not even that for the construct's last argument (see `end`). Elsewhere
        // every end waits, so that the mapping outlives this construct's work.
        let synchronous = device.queues_complete_on_submission();
        // A struct member never removes its parent's mapping; the parent's own entry does.
        let may_remove = t.member_of().is_none() || t.has(PTR_AND_OBJ);
        let (mut table, served) = device
            .mapping
            .serving(arg.begin, arg.size, arg.begin, implicit);
        let removable_here = synchronous
            && index == 0
            && !from_mapper
            && may_remove
            && served.is_some_and(|key| table.can_remove(key));
        let Some(key) = served else {
            drop(table);
            if q.unified_shared_memory {
                continue; // the host data itself was used
            }
            if t.has(PRESENT) {
                present_message(arg.begin, arg.size, "map type");
                return Err(OffloadError::already_reported());
            }
            log::debug!(
                "{:#x} ({} bytes) is not mapped; nothing to unmap",
                arg.begin,
                arg.size
            );
            continue;
        };
        // What the end needs of the mapping, read while its entry is borrowed (locals: a
        // struct carrying them out cost some hundred instructions of copying).
        let mut m = table.get_mut(key).unwrap();
        let is_last = release(&mut m, hold, delete, update_refs);
        let copies_back = t.has(FROM) && (is_last || t.has(ALWAYS)) && arg.size > 0;
        let moving = copies_back && is_long(arg.size);
        m.moving = moving;
        if is_last || !synchronous {
            m.ends_in_flight += 1;
        }
        if info::enabled(info::MAPPING_EXISTS) {
            let action = match (update_refs, is_last, delete) {
                (false, _, _) => " (update suppressed)",
                (true, true, true) => " (reset, delayed deletion)",
                (true, true, false) => " (decremented, delayed deletion)",
                (true, false, _) => " (decremented)",
            };
            info::mapping_exists(
                q.device.id,
                &m,
                arg.begin,
                arg.size,
                false,
                hold,
                action,
                None,
            );
        }
        let copy_back = copies_back.then(|| CopyBack {
            host_begin: arg.begin,
            device_begin: m.device_address(arg.begin),
            size: arg.size,
            name: m.name,
            after: m.event(),
            released: m.released(),
            is_last,
        });
        let shadows = m.shadows_within(arg.begin, arg.size);
        let released = m.released();
        let infinite = m.is_infinite();
        drop(m);
        let mut removed = false;
        if moving {
            table.count_move();
        }
        // The copy back is issued while no other construct can use the mapping, as LLVM
        // copies under the entry's lock: issued after letting it go, threads mapping one
        // variable tofrom at once lost updates (conformance threads/shared_counter_map_back,
        // about 3% of runs on 2 cores). A short one under the table's lock, a long one with the
        // mapping marked moving and the table let go.
        if moving {
            drop(table);
            move_data(q, key, |q| copy_back.map_or(Ok(None), |c| c.issue(q)))?;
        } else {
            if let Some(copy_back) = copy_back {
                if let Some(event) = copy_back.issue(q)? {
                    if let Some(mut m) = table.get_mut(key) {
                        m.set_event(Some(event));
                    }
                }
            } else if !is_last && update_refs && !infinite {
                // The data stays mapped, but this construct's work on it (its kernel) may still
                // be running on this queue: whoever copies it back last, from another queue,
                // must wait for that too. Chained after the previous such event, so that one
                // event stands for every construct that let go of it (found on the emulated
                // CUDA driver: threads/shared_counter_map_back lost updates in one run of five).
                // Kept apart from the mapping's transfer event, which constructs using the data
                // wait for: chained into it, every later region on the data waited for the
                // kernels before it.
                q.wait_for_transfer(released)?;
                if let Some(event) = q.transfer_event(released)? {
                    if let Some(mut m) = table.get_mut(key) {
                        m.set_released(event);
                    }
                }
            }
            if is_last && removable_here {
                // Only if this is the one end in flight: else (a struct member of this
                // construct released it above, or another construct is ending it) the last of
                // those ends removes it, as below.
                let only_this_end = |m: &mut Mapping| m.total_refs() == 0 && m.ends_in_flight == 1;
                if let Changed::Removed(m) = table.change_or_remove(key, only_this_end) {
                    q.report_removal_after_sync(m);
                    removed = true;
                }
            }
            drop(table);
        }
        if (is_last && !removed) || !synchronous {
            q.release_after_sync(key, may_remove);
        }
        if t.has(FROM) {
            restore_host_pointers(q, &shadows);
        }
    }
    Ok(())
}

/// The copy back of mapped data at the end of a construct.
struct CopyBack {
    host_begin: usize,
    device_begin: usize,
    size: u64,
    name: VarName,
    /// The mapping's last transfer (on another construct's queue, maybe), to copy after.
    after: Option<TransferEvent>,
    /// The work of the constructs that let go of the mapping before, to copy after too.
    released: Option<TransferEvent>,
    is_last: bool,
}

impl CopyBack {
    /// Queues the copy; for the last reference, returns the event that a construct reusing
    /// the mapping before this one removes it must wait for before copying back (as LLVM).
    #[inline]
    fn issue(&self, q: &mut ConstructQueue<'_>) -> Result<Option<TransferEvent>> {
        q.wait_for_transfer(self.after)?;
        q.wait_for_transfer(self.released)?;
        // SAFETY: the mapping's host storage: the list item of a construct ending now, or of
        // the one that mapped it (OpenMP keeps it valid while mapped).
        unsafe {
            q.copy_from_device_named(
                self.host_begin,
                self.device_begin,
                self.size,
                Some(self.name),
            )
        }?;
        if self.is_last {
            q.transfer_event(self.after)
        } else {
            Ok(None)
        }
    }
}

/// One release of a mapping at the end of a construct; whether it was the last reference
/// (LLVM's `decShouldRemove` with its `delete` reset).
fn release(m: &mut Mapping, hold: bool, delete: bool, update_refs: bool) -> bool {
    if m.is_infinite() {
        return false;
    }
    let (this, other) = if hold {
        (u64::from(m.hold_refs), m.dynamic_refs)
    } else {
        (m.dynamic_refs, u64::from(m.hold_refs))
    };
    // The other count keeps the data mapped whatever happens to this one.
    let is_last = other == 0 && (delete || this == 1);
    let left = if delete {
        0
    } else if update_refs {
        this.saturating_sub(1)
    } else {
        this
    };
    if hold {
        // Never more than it was, so it fits.
        m.hold_refs = left as u32;
    } else {
        m.dynamic_refs = left;
    }
    is_last
}

/// `target update`: copies in the direction each argument names, for mapped data only.
pub(crate) fn update(q: &mut ConstructQueue<'_>, args: &[MapArg]) -> Result<()> {
    for arg in args {
        let t = arg.map_type;
        if t.is_by_value() || t.is_private() || t.has(ATTACH) {
            continue;
        }
        if let Some(m) = arg.mapper {
            update(q, &mapper::expand(arg, m))?;
            continue;
        }
        if t.has(NON_CONTIG) {
            // SAFETY: for NON_CONTIG entries `begin` points to `size` dimension descriptors.
            let dims = unsafe { non_contig_dims(arg) };
            update_strided(q, arg, &dims)?;
        } else {
            // SAFETY: the list item's host storage (`MapArg`), valid for the construct.
            unsafe { update_contiguous(q, arg.begin, arg.size, t) }?;
        }
    }
    Ok(())
}

/// A strided section: one contiguous copy per run of the innermost dimension, after merging
/// dimensions that are contiguous with the next outer one (LLVM's scheme).
fn update_strided(q: &mut ConstructQueue<'_>, arg: &MapArg, dims: &[NonContigDim]) -> Result<()> {
    let Some(last) = dims.last() else {
        return Ok(());
    };
    let run = last.count * last.stride;
    let merged = (1..dims.len())
        .filter(|&i| dims[i].count * dims[i].stride == dims[i - 1].stride)
        .count();
    let dims = &dims[..dims.len() - merged];
    fn walk(
        q: &mut ConstructQueue<'_>,
        arg: &MapArg,
        dims: &[NonContigDim],
        run: u64,
        offset: u64,
    ) -> Result<()> {
        let Some((dim, inner)) = dims.split_first() else {
            // SAFETY: the compiler's dimensions select elements of the list item's storage.
            return unsafe { update_contiguous(q, arg.base + offset as usize, run, arg.map_type) };
        };
        // The innermost dimension is already contiguous: its first element starts the run.
        let count = if inner.is_empty() { 1 } else { dim.count };
        for i in 0..count {
            walk(q, arg, inner, run, offset + (dim.offset + i) * dim.stride)?;
        }
        Ok(())
    }
    walk(q, arg, dims, run, 0)
}

/// # Safety
/// `begin..begin + size` must be host memory the construct may read and write.
unsafe fn update_contiguous(
    q: &mut ConstructQueue<'_>,
    begin: usize,
    size: u64,
    t: MapType,
) -> Result<()> {
    let Some((device_begin, shadows)) = find_in_use(q, begin, size, true) else {
        if t.has(PRESENT) && !q.unified_shared_memory {
            present_message(begin, size, "motion");
            return Err(OffloadError::already_reported());
        }
        log::debug!("target update: {begin:#x} ({size} bytes) is not mapped; skipped");
        return Ok(());
    };
    if t.has(TO) {
        // SAFETY: the caller's promise.
        unsafe { send(q, device_begin, &shadows, begin, size) }?;
    }
    if t.has(FROM) {
        // SAFETY: the caller's promise.
        unsafe { receive(q, begin, size, device_begin, &shadows) }?;
    }
    Ok(())
}

/// Looks up mapped data without changing reference counts (LLVM's `getTgtPtrBegin`), for
/// kernel arguments and `target update`: the device address of `begin` and the attached
/// pointers inside the range.
fn find_in_use(
    q: &ConstructQueue<'_>,
    begin: usize,
    size: u64,
    must_contain: bool,
) -> Option<(usize, Vec<ShadowPointer>)> {
    let (mut table, key) = q.device.mapping.serving(begin, size, begin, !must_contain);
    let m = table.get_mut(key?)?;
    if info::enabled(info::MAPPING_EXISTS) {
        let action = " (update suppressed)";
        info::mapping_exists(q.device.id, &m, begin, size, false, false, action, None);
    }
    Some((m.device_address(begin), m.shadows_within(begin, size)))
}

/// LLVM's lambda capture entries: by-reference captures inside a lambda object that was
/// passed to the kernel, to be pointed at the device copies of what they capture.
fn is_lambda_capture(t: MapType) -> bool {
    t.has(PTR_AND_OBJ) && t.has(LITERAL) && t.has(IMPLICIT)
}

/// A small firstprivate waiting to be packed into the one shared transfer.
struct PackedPrivate {
    value_index: usize,
    host: usize,
    size: u64,
    padding: usize,
    base_offset: usize,
}

/// The values a kernel receives for its arguments: by-value literals, private copies, and the
/// device addresses of mapped data (translated from each argument's base), as LLVM's
/// `processDataBefore`.
pub(crate) fn kernel_arguments(
    q: &mut ConstructQueue<'_>,
    args: &[MapArg],
) -> Result<KernelValues> {
    if args.is_empty() {
        return Ok(KernelValues::new());
    }
    let mut values = KernelValues::with_capacity(args.len());
    let mut packed: SmallVec<[PackedPrivate; 4]> = SmallVec::new();
    let mut packed_size = 0usize;
    for (index, arg) in args.iter().enumerate() {
        let t = arg.map_type;
        if !t.has(TARGET_PARAM) {
            if is_lambda_capture(t) {
                fix_lambda_capture(q, args, arg, &values)?;
            }
            continue;
        }
        let base_offset = arg.base.wrapping_sub(arg.begin);
        if t.is_by_value() {
            values.push(arg.base);
        } else if t.is_private() {
            let first_private = t.has(TO);
            let member_follows = args
                .get(index + 1)
                .is_some_and(|n| n.map_type.has(MEMBER_OF));
            if first_private && arg.size <= PACKED_FIRSTPRIVATE_LIMIT && !member_follows {
                // Pack with the other small firstprivates.
                let padding = packed_offset(packed_size, arg.begin) - packed_size;
                packed_size += padding + arg.size as usize;
                packed.push(PackedPrivate {
                    value_index: values.len(),
                    host: arg.begin,
                    size: arg.size,
                    padding,
                    base_offset,
                });
                values.push(0); // filled in once the pack is allocated
            } else {
                let private = q.device.alloc(arg.size, arg.begin, AllocKind::DEFAULT)?;
                q.free_after_sync(private, arg.size);
                if first_private {
                    // SAFETY: the list item's host storage (`MapArg`), valid for the construct.
                    unsafe { q.copy_to_device(private, arg.begin, arg.size) }?;
                }
                values.push(private.wrapping_add(base_offset));
            }
        } else {
            let host_base = if t.has(PTR_AND_OBJ) {
                // SAFETY: `base` is the address of a host pointer variable (ptr_and_obj contract).
                unsafe { std::ptr::read_unaligned(arg.base as *const usize) }
            } else {
                arg.base
            };
            // LLVM looks the data up again here and says so under LIBOMPTARGET_INFO; the
            // lines are kept by doing the same when they are asked for.
            let placed = if info::enabled(info::MAPPING_EXISTS) {
                None
            } else {
                q.placed_at(index)
            };
            let device_begin = placed
                .or_else(|| {
                    find_in_use(q, arg.begin, arg.size, false).map(|(device_begin, _)| device_begin)
                })
                // Unmapped data keeps its host address (firstprivate semantics, as LLVM).
                .unwrap_or(arg.begin);
            values.push(device_begin.wrapping_add(host_base.wrapping_sub(arg.begin)));
        }
    }
    if !packed.is_empty() {
        send_packed_firstprivates(q, &packed, packed_size, &mut values)?;
    }
    Ok(values)
}

fn send_packed_firstprivates(
    q: &mut ConstructQueue<'_>,
    packed: &[PackedPrivate],
    total: usize,
    values: &mut [usize],
) -> Result<()> {
    let mut buffer = vec![0u8; total];
    let mut at = 0;
    for p in packed {
        at += p.padding;
        // SAFETY: a firstprivate's host range of `size` bytes (the compiler's contract).
        let bytes = unsafe { std::slice::from_raw_parts(p.host as *const u8, p.size as usize) };
        buffer[at..at + bytes.len()].copy_from_slice(bytes);
        at += bytes.len();
    }
    let device = q
        .device
        .alloc(total as u64, buffer.as_ptr() as usize, AllocKind::DEFAULT)?;
    q.free_after_sync(device, total as u64);
    q.copy_bytes_to_device(device, buffer)?;
    let mut at = device;
    for p in packed {
        at += p.padding;
        values[p.value_index] = at.wrapping_add(p.base_offset);
        at += p.size as usize;
    }
    Ok(())
}

/// Where argument `index` is among the kernel's values: every `TARGET_PARAM` argument adds
/// exactly one value, in order.
fn value_position(args: &[MapArg], index: usize) -> Option<usize> {
    let arg = args.get(index)?;
    arg.map_type.has(TARGET_PARAM).then(|| {
        args[..index]
            .iter()
            .filter(|a| a.map_type.has(TARGET_PARAM))
            .count()
    })
}

/// Points a by-reference capture inside the device copy of a lambda at the device copy of the
/// captured variable (when it is mapped).
fn fix_lambda_capture(
    q: &mut ConstructQueue<'_>,
    args: &[MapArg],
    arg: &MapArg,
    values: &[usize],
) -> Result<()> {
    let Some(parent) = arg.map_type.member_of() else {
        return Ok(());
    };
    let Some(&lambda_device) = value_position(args, parent).and_then(|p| values.get(p)) else {
        return Ok(());
    };
    let lambda_host = args[parent].begin;
    let capture_device = lambda_device.wrapping_add(arg.base.wrapping_sub(lambda_host));
    let captured = find_in_use(q, arg.begin, arg.size, false).map(|(d, _)| d);
    match captured {
        Some(target) => q.write_device_word(capture_device, target, VarName::UNKNOWN),
        None => Ok(()), // not mapped (or shared memory): the capture stays as it is
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The small firstprivates of `map_types/firstprivate_many.cpp` as clang-19 passed them
    /// (sizes and host addresses): LLVM's padding put the `long[2]` at offset 28, and the
    /// kernel's copy of it stopped with CUDA_ERROR_MISALIGNED_ADDRESS on an H100.
    #[test]
    fn packed_firstprivates_keep_their_host_alignment() {
        let args = [
            (12, 0x7fff_47ac_acb8usize),
            (8, 0x7fff_47ac_acc8),
            (16, 0x7fff_47ac_acf0),
            (24, 0x7fff_47ac_acd0),
            (5, 0x7fff_47ac_aca8),
            (3, 0x7fff_47ac_ac01),
            (8, 0x7fff_47ac_ac00),
        ];
        let mut end = 0;
        for (size, host) in args {
            let offset = packed_offset(end, host);
            assert!(offset >= end, "entries overlap");
            let wanted = (1 << host.trailing_zeros()).min(MAX_ALIGNMENT);
            assert_eq!(
                offset % wanted,
                0,
                "{size} bytes from {host:#x} at offset {offset}"
            );
            end = offset + size;
        }
        assert_eq!(packed_offset(4, 0), MAX_ALIGNMENT);
    }
}
