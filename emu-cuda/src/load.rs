//! `cuModuleLoadData`: reading an image from a bare pointer, checking it as the driver does,
//! placing its variables in device memory and finding its twin.

use crate::driver::{Driver, Module};
use crate::image::{self, ModuleImage};
use crate::memory::{Kind, Region};
use crate::profile;
use crate::status::{self, Result};
use offload_image::cuda_image::SmVersion;
use offload_image::twin;
use std::collections::HashMap;
use std::sync::Mutex;

/// The image at `address`, its length found from its own headers (ELF) or its terminating NUL
/// (PTX).
fn image_bytes(address: usize) -> Result<&'static [u8]> {
    let header = read(address, 64)?;
    if header.starts_with(b"\x7fELF") {
        let extent = image::elf_extent(header.try_into().unwrap()).ok_or(status::INVALID_IMAGE)?;
        let headers = read(
            address,
            usize::try_from(extent).map_err(|_| status::INVALID_IMAGE)?,
        )?;
        let full = image::sections_extent(headers).ok_or(status::INVALID_IMAGE)?;
        return read(
            address,
            usize::try_from(full).map_err(|_| status::INVALID_IMAGE)?,
        );
    }
    // SAFETY: the driver's contract: a PTX image is a NUL-terminated string.
    let text = unsafe { std::ffi::CStr::from_ptr(address as *const std::ffi::c_char) };
    Ok(text.to_bytes())
}

fn read(address: usize, len: usize) -> Result<&'static [u8]> {
    if address == 0 || len > 1 << 32 {
        return Err(status::INVALID_VALUE);
    }
    // SAFETY: the driver's contract: the caller's image stays readable during the load; its
    // headers say how long it is.
    Ok(unsafe { std::slice::from_raw_parts(address as *const u8, len) })
}

pub fn load(driver: &Driver, device: usize, address: usize) -> Result<Module> {
    let bytes = image_bytes(address)?;
    let image = image::read_module(bytes, SmVersion(profile::SM)).map_err(|refusal| {
        if let Some(why) = &refusal.why {
            eprintln!("omptarget-emu (CUDA): cuModuleLoadData: {why}");
        }
        refusal.status
    })?;
    let storage = place(driver, device, &image)?;
    let kernels: Vec<&str> = image.kernels.keys().map(String::as_str).collect();
    let twins = crate::config::get().twins.as_deref();
    let twin = match twin::load_for(address, bytes.len(), &kernels, twins) {
        Ok(twin) => twin,
        Err(why) => {
            eprintln!("omptarget-emu (CUDA): {why}");
            None
        }
    };
    let code = twin
        .as_ref()
        .and_then(|t| crate::faults::register(t, image.kernels.keys()));
    let module = Module {
        device,
        image,
        storage,
        twin,
        code,
        twin_regions: Mutex::new(Vec::new()),
        functions: Mutex::new(HashMap::new()),
    };
    // Every variable is device memory from the load on, as a GPU module's globals are, also
    // where the twin holds it: device code hands out their addresses (a pointer variable's
    // initialiser) that the host then copies to without asking the driver for the name.
    for name in module.image.globals.keys() {
        let _ = module.global(name, &driver.book);
    }
    Ok(module)
}

/// Puts each data section in device memory with its initial bytes and relocations applied.
fn place(driver: &Driver, device: usize, image: &ModuleImage) -> Result<Vec<usize>> {
    let mut storage = Vec::new();
    for section in &image.sections {
        match driver.devices[device].memory.allocate(section.size.max(1)) {
            Ok(start) => {
                driver.book.insert(Region {
                    start,
                    size: section.size.max(1),
                    kind: Kind::ModuleGlobal,
                    device: Some(device),
                });
                storage.push(start);
            }
            Err(e) => {
                for &start in &storage {
                    driver.book.remove(start);
                    let _ = driver.devices[device].memory.free(start);
                }
                return Err(e);
            }
        }
    }
    for (section, &start) in image.sections.iter().zip(&storage) {
        // SAFETY: `start` is a fresh accessible allocation of at least `section.size` bytes
        // and `bytes` is at most that long (checked by the image reader).
        unsafe {
            std::ptr::copy_nonoverlapping(
                section.bytes.as_ptr(),
                start as *mut u8,
                section.bytes.len(),
            )
        };
        for relocation in &section.relocations {
            let target = relocation
                .target
                .map_or(0, |(slot, offset)| storage[slot] + offset)
                .wrapping_add_signed(relocation.addend as isize);
            let at = (start + relocation.offset) as *mut u8;
            // SAFETY: the reader checked that offset + width lies inside the section.
            unsafe {
                match relocation.width {
                    8 => at.cast::<u64>().write_unaligned(target as u64),
                    _ => at.cast::<u32>().write_unaligned(target as u32),
                }
            }
        }
    }
    Ok(storage)
}
