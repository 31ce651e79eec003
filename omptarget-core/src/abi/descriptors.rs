//! `__tgt_bin_desc` and `__tgt_device_image`, as emitted by clang's offload wrapper.

use super::offload_entry::{read_entry_table, EntryTable, EntryTableError};
use std::ffi::c_void;

#[repr(C)]
pub(crate) struct TgtDeviceImage {
    pub image_start: *const c_void,
    pub image_end: *const c_void,
    pub entries_begin: *const c_void,
    pub entries_end: *const c_void,
}

#[repr(C)]
pub(crate) struct TgtBinDesc {
    pub num_device_images: i32,
    pub device_images: *const TgtDeviceImage,
    pub host_entries_begin: *const c_void,
    pub host_entries_end: *const c_void,
}

/// A device image as registered: bytes inside the program (valid until it unregisters).
pub(crate) struct RawImage {
    pub bytes: &'static [u8],
}

/// What a `__tgt_bin_desc` holds, read into Rust values.
pub(crate) struct BinaryDescription {
    pub images: Vec<RawImage>,
    pub host_entries: EntryTable,
}

#[derive(Debug)]
pub(crate) enum DescriptorError {
    Null,
    BadImageCount(i32),
    BadImageBounds(usize),
    Entries(EntryTableError),
}

impl std::fmt::Display for DescriptorError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DescriptorError::Null => write!(f, "null binary descriptor"),
            DescriptorError::BadImageCount(n) => write!(f, "invalid device image count {n}"),
            DescriptorError::BadImageBounds(i) => write!(f, "device image {i} has invalid bounds"),
            DescriptorError::Entries(e) => write!(f, "offload entry table: {e}"),
        }
    }
}

/// Reads a binary descriptor.
///
/// # Safety
/// `desc` must be null or point to a descriptor laid out as clang emits it, whose images and
/// entry tables stay valid for as long as the returned slices are used (until unregistration).
pub(crate) unsafe fn read_descriptor(
    desc: *const TgtBinDesc,
) -> Result<BinaryDescription, DescriptorError> {
    if desc.is_null() {
        return Err(DescriptorError::Null);
    }
    // SAFETY: non-null and laid out as clang emits it (caller's promise).
    let desc = unsafe { &*desc };
    if desc.num_device_images < 0 || desc.num_device_images > 4096 {
        return Err(DescriptorError::BadImageCount(desc.num_device_images));
    }
    let mut images = Vec::with_capacity(desc.num_device_images as usize);
    for i in 0..desc.num_device_images as usize {
        // SAFETY: `device_images` has `num_device_images` elements (caller's promise).
        let image = unsafe { &*desc.device_images.add(i) };
        let start = image.image_start as usize;
        let end = image.image_end as usize;
        if end < start || (start == 0 && end != 0) {
            return Err(DescriptorError::BadImageBounds(i));
        }
        if start == 0 {
            // An empty image (hand-made descriptors that only register `requires` flags):
            // nothing can run it, but the library's entries still count.
            images.push(RawImage { bytes: &[] });
            continue;
        }
        // SAFETY: [start, end) is the image embedded in the program, valid until unregistration.
        let bytes = unsafe { std::slice::from_raw_parts(start as *const u8, end - start) };
        images.push(RawImage { bytes });
    }
    // SAFETY: the entry table bounds come from the same descriptor (caller's promise).
    let host_entries = unsafe { read_entry_table(desc.host_entries_begin, desc.host_entries_end) }
        .map_err(DescriptorError::Entries)?;
    Ok(BinaryDescription {
        images,
        host_entries,
    })
}
