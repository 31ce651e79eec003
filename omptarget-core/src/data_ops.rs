//! The mapping rules of `target data`, `target enter/exit data`, `target update` and the data
//! part of `target`, after LLVM's `targetDataBegin`/`targetDataEnd`/`targetDataUpdate`.

use crate::abi::map_args::MapArg;
use crate::abi::map_type::*;
use crate::error::{OffloadError, Result};
use crate::logging;
use crate::mapping::{Lookup, Mapping, ShadowPointer};
use crate::queue::ConstructQueue;
use plugin_api::AllocKind;

const POINTER_SIZE: u64 = std::mem::size_of::<usize>() as u64;

fn unsupported(arg: &MapArg) -> Option<OffloadError> {
    if arg.has_mapper {
        return Some(OffloadError::new(
            "user-defined mappers ('declare mapper') are not supported by this runtime yet",
        ));
    }
    if arg.map_type.has(NON_CONTIG) {
        return Some(OffloadError::new(
            "non-contiguous 'target update' is not supported by this runtime yet",
        ));
    }
    None
}

fn present_error(begin: usize, size: u64) -> OffloadError {
    let text = format!(
        "device mapping required by 'present' map type modifier does not exist for host address {begin:#018x} ({size} bytes)"
    );
    logging::message(&text);
    OffloadError::new(text)
}

/// A mapped range after lookup or allocation.
struct Placed {
    device_begin: usize,
    is_new: bool,
    /// Shadow pointers inside the range, to re-apply after data is sent again.
    shadows: Vec<ShadowPointer>,
}

/// Finds or creates the mapping of [begin, begin+size), updating reference counts.
fn place(
    q: &mut ConstructQueue<'_>,
    begin: usize,
    size: u64,
    map_type: MapType,
    update_refs: bool,
) -> Result<Placed> {
    let device = q.device;
    let mut table = device.mapping.lock().unwrap();
    match table.lookup(begin, size) {
        Lookup::Contained(start) => {
            let m = table.get_mut(start).unwrap();
            if update_refs && !m.is_infinite() {
                if map_type.has(OMPX_HOLD) {
                    m.hold_refs += 1;
                } else {
                    m.dynamic_refs += 1;
                }
            }
            let shadows = m.shadows_within(begin, size);
            let device_begin = m.device_address(begin);
            drop(table);
            // Members of a struct this construct just mapped are new on the device too.
            Ok(Placed {
                device_begin,
                is_new: q.created_here(start),
                shadows,
            })
        }
        Lookup::Extends(start) => {
            let m = table.get(start).unwrap();
            let text = format!(
                "explicit extension not allowed: host address specified is {begin:#018x} ({size} bytes), but device allocation maps to host at {:#018x} ({} bytes)",
                m.host_begin,
                m.size()
            );
            logging::message(&text);
            Err(OffloadError::new(text))
        }
        Lookup::Absent if map_type.has(PRESENT) => Err(present_error(begin, size)),
        Lookup::Absent if size == 0 => {
            // Zero-length sections of unmapped data stay host addresses, as in LLVM.
            Ok(Placed {
                device_begin: begin,
                is_new: false,
                shadows: Vec::new(),
            })
        }
        Lookup::Absent => {
            drop(table);
            let device_begin = device.alloc(size, begin, AllocKind::DEFAULT)?;
            let hold = map_type.has(OMPX_HOLD);
            device.mapping.lock().unwrap().insert(Mapping {
                host_begin: begin,
                host_end: begin + size as usize,
                device_begin,
                dynamic_refs: if hold { 0 } else { 1 },
                hold_refs: if hold { 1 } else { 0 },
                owns_device_memory: true,
                shadow_pointers: Vec::new(),
            });
            q.note_created(begin);
            log::debug!(
                "mapped {begin:#x} ({size} bytes) to device {} at {device_begin:#x}",
                device.id
            );
            Ok(Placed {
                device_begin,
                is_new: true,
                shadows: Vec::new(),
            })
        }
    }
}

/// Sends host data and re-applies the device values of pointers attached inside it.
fn send(q: &mut ConstructQueue<'_>, placed: &Placed, begin: usize, size: u64) -> Result<()> {
    q.copy_to_device(placed.device_begin, begin, size)?;
    for s in &placed.shadows {
        q.write_device_word(s.device_address, s.device_value)?;
    }
    Ok(())
}

/// Maps every argument on entry to a construct. Returns, for `return_param` arguments
/// (`use_device_ptr`), the device base address to hand back to the program.
pub fn begin(q: &mut ConstructQueue<'_>, args: &[MapArg]) -> Result<Vec<(usize, usize)>> {
    let mut returned = Vec::new();
    for (index, arg) in args.iter().enumerate() {
        let t = arg.map_type;
        if t.is_by_value() || t.is_private() || t.has(ATTACH) {
            continue;
        }
        if let Some(e) = unsupported(arg) {
            return Err(e);
        }
        let update_refs = t.member_of().is_none();
        let mut pointee_base = arg.base;
        let mut pointer = None;
        if t.has(PTR_AND_OBJ) {
            // The pointer itself (at `base`) is mapped too; its device copy is made to point at
            // the device copy of the pointee below.
            let placed = place(
                q,
                arg.base,
                POINTER_SIZE,
                MapType(t.0 & (PRESENT | OMPX_HOLD)),
                update_refs,
            )?;
            // SAFETY: `base` is the address of a host pointer variable (ptr_and_obj contract).
            pointee_base = unsafe { std::ptr::read_unaligned(arg.base as *const usize) };
            pointer = Some(placed.device_begin);
        }
        let placed = place(q, arg.begin, arg.size, t, update_refs || pointer.is_some())?;
        if t.has(TO) && (placed.is_new || t.has(ALWAYS)) {
            send(q, &placed, arg.begin, arg.size)?;
        }
        if let Some(pointer_device) = pointer {
            let device_value = placed
                .device_begin
                .wrapping_sub(arg.begin.wrapping_sub(pointee_base));
            attach(q, arg.base, pointee_base, pointer_device, device_value)?;
        }
        if t.has(RETURN_PARAM) {
            returned.push((
                index,
                placed
                    .device_begin
                    .wrapping_sub(arg.begin.wrapping_sub(arg.base)),
            ));
        }
    }
    // ATTACH entries (clang 22+) come after every other map of the construct. PRIVATE|ATTACH
    // ones initialise a private pointer and are handled with the kernel's private arguments.
    for arg in args
        .iter()
        .filter(|a| a.map_type.has(ATTACH) && !a.map_type.is_private())
    {
        attach_after_mapping(q, arg)?;
    }
    Ok(returned)
}

/// An ATTACH entry: `base` is the host pointer's address, `begin` the pointee, `size` the
/// pointer's size. When both are mapped, the device pointer is made to point at the device
/// pointee; when either is not, there is nothing to attach.
fn attach_after_mapping(q: &mut ConstructQueue<'_>, arg: &MapArg) -> Result<()> {
    let (pointer_device, pointee_device) = {
        let table = q.device.mapping.lock().unwrap();
        let pointer = table
            .find(arg.base, arg.size)
            .map(|m| m.device_address(arg.base));
        let pointee = table
            .find(arg.begin, 0)
            .map(|m| m.device_address(arg.begin));
        (pointer, pointee)
    };
    let (Some(pointer_device), Some(pointee_device)) = (pointer_device, pointee_device) else {
        log::debug!(
            "attach {:#x} -> {:#x}: pointer or pointee not mapped; skipped",
            arg.base,
            arg.begin
        );
        return Ok(());
    };
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
    {
        let mut table = q.device.mapping.lock().unwrap();
        let Lookup::Contained(start) = table.lookup(host_address, POINTER_SIZE) else {
            return Err(OffloadError::new(format!(
                "attached pointer at {host_address:#x} is not mapped"
            )));
        };
        let m = table.get_mut(start).unwrap();
        if let Some(s) = m
            .shadow_pointers
            .iter_mut()
            .find(|s| s.host_address == host_address)
        {
            if s.device_value == device_value {
                return Ok(());
            }
            s.host_value = host_value;
            s.device_value = device_value;
        } else {
            m.shadow_pointers.push(ShadowPointer {
                host_address,
                host_value,
                device_address,
                device_value,
            });
        }
    }
    log::debug!("attached pointer {host_address:#x}: device copy at {device_address:#x} now holds {device_value:#x}");
    q.write_device_word(device_address, device_value)
}

/// Copies device data back into host memory, then restores the host values of attached
/// pointers inside it (the device copies hold device addresses).
fn receive(
    q: &mut ConstructQueue<'_>,
    begin: usize,
    size: u64,
    device_begin: usize,
    shadows: &[ShadowPointer],
) -> Result<()> {
    q.copy_from_device(begin, device_begin, size)?;
    for s in shadows {
        q.write_host_word_after_sync(s.host_address, s.host_value);
    }
    Ok(())
}

/// Unmaps every argument at the end of a construct, in reverse order as LLVM does.
pub fn end(q: &mut ConstructQueue<'_>, args: &[MapArg]) -> Result<()> {
    for arg in args.iter().rev() {
        let t = arg.map_type;
        if t.is_by_value() || t.is_private() || t.has(ATTACH) {
            continue;
        }
        if let Some(e) = unsupported(arg) {
            return Err(e);
        }
        let update_refs = t.member_of().is_none() || t.has(PTR_AND_OBJ);
        let (device_begin, is_last, shadows, owned) = {
            let mut table = q.device.mapping.lock().unwrap();
            let Lookup::Contained(start) = table.lookup(arg.begin, arg.size) else {
                if t.has(PRESENT) {
                    return Err(present_error(arg.begin, arg.size));
                }
                log::debug!(
                    "{:#x} ({} bytes) is not mapped; nothing to unmap",
                    arg.begin,
                    arg.size
                );
                continue;
            };
            let m = table.get_mut(start).unwrap();
            let is_last = if m.is_infinite() {
                false
            } else if update_refs {
                if t.has(DELETE) {
                    m.dynamic_refs = 0;
                } else if t.has(OMPX_HOLD) {
                    m.hold_refs = m.hold_refs.saturating_sub(1);
                } else {
                    m.dynamic_refs = m.dynamic_refs.saturating_sub(1);
                }
                m.total_refs() == 0
            } else {
                // A struct member: last when its parent's pending decrement will remove it.
                t.has(DELETE) || m.total_refs() == 1
            };
            let removes = is_last && update_refs;
            let shadows = m.shadows_within(arg.begin, arg.size);
            let device_begin = m.device_address(arg.begin);
            let owned = removes
                .then(|| table.remove(start).unwrap())
                .filter(|m| m.owns_device_memory);
            (device_begin, is_last, shadows, owned)
        };
        if t.has(FROM) && (is_last || t.has(ALWAYS)) {
            receive(q, arg.begin, arg.size, device_begin, &shadows)?;
        }
        if let Some(m) = owned {
            q.free_after_sync(m.device_begin);
        }
    }
    Ok(())
}

/// `target update`: copies in the direction each argument names, for mapped data only.
pub fn update(q: &mut ConstructQueue<'_>, args: &[MapArg]) -> Result<()> {
    for arg in args.iter().filter(|a| !a.map_type.has(ATTACH)) {
        if let Some(e) = unsupported(arg) {
            return Err(e);
        }
        let found = {
            let table = q.device.mapping.lock().unwrap();
            table.find(arg.begin, arg.size).map(|m| {
                (
                    m.device_address(arg.begin),
                    m.shadows_within(arg.begin, arg.size),
                )
            })
        };
        let Some((device_begin, shadows)) = found else {
            if arg.map_type.has(PRESENT) {
                return Err(present_error(arg.begin, arg.size));
            }
            log::debug!(
                "target update: {:#x} ({} bytes) is not mapped; skipped",
                arg.begin,
                arg.size
            );
            continue;
        };
        if arg.map_type.has(TO) {
            let placed = Placed {
                device_begin,
                is_new: false,
                shadows: shadows.clone(),
            };
            send(q, &placed, arg.begin, arg.size)?;
        }
        if arg.map_type.has(FROM) {
            receive(q, arg.begin, arg.size, device_begin, &shadows)?;
        }
    }
    Ok(())
}

/// The values a kernel receives for its arguments: by-value literals, private copies, and the
/// device addresses of mapped data (translated from each argument's base).
pub fn kernel_arguments(q: &mut ConstructQueue<'_>, args: &[MapArg]) -> Result<Vec<usize>> {
    let mut values = Vec::with_capacity(args.len());
    for arg in args.iter().filter(|a| a.map_type.has(TARGET_PARAM)) {
        let t = arg.map_type;
        let offset = arg.begin.wrapping_sub(arg.base);
        if t.is_by_value() {
            values.push(arg.base);
        } else if t.is_private() {
            let private = q.device.alloc(arg.size, arg.begin, AllocKind::DEFAULT)?;
            q.free_after_sync(private);
            if t.has(TO) {
                q.copy_to_device(private, arg.begin, arg.size)?;
            }
            values.push(private.wrapping_sub(offset));
        } else {
            let device_begin = q
                .device
                .mapping
                .lock()
                .unwrap()
                .find(arg.begin, arg.size)
                .map(|m| m.device_address(arg.begin));
            match device_begin {
                Some(d) => values.push(d.wrapping_sub(offset)),
                // Unmapped zero-length sections keep their host address, as in LLVM.
                None => values.push(arg.base),
            }
        }
    }
    Ok(values)
}
