//! Device images of one device: which images the device accepts, loading them, and finding
//! kernels and globals by symbol name.
//!
//! Our images are x86-64 ELF shared objects, loaded with the dynamic loader. A real plugin
//! replaces `check` with its own format test (an ELF `e_machine` and architecture flags, a
//! fat-binary header, ...), and `load`/`symbol` with its driver's module calls.

use crate::lock;
use libloading::os::unix::{Library, RTLD_LOCAL, RTLD_NOW};
use plugin_api::{
    ErrorCode, GlobalInfo, ImageCompatibility, ImageHandle, ImageRef, KernelHandle, PluginError,
};
use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_uint, c_void, CString};
use std::fs::File;
use std::io::Write;
use std::os::fd::{AsRawFd, FromRawFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

type Result<T> = std::result::Result<T, PluginError>;

const EM_X86_64: u16 = 62;
const ET_DYN: u16 = 3;

/// Why an image is not one this device runs, in words a user can act on.
fn refusal(image: &ImageRef<'_>) -> Option<String> {
    let triple = image.triple.as_str();
    if !triple.is_empty() && !triple.starts_with("x86_64") {
        return Some(format!(
            "found an image for '{triple}'; the example device runs x86_64 images"
        ));
    }
    if !cfg!(all(target_arch = "x86_64", target_os = "linux")) {
        return Some("the example device simulates an x86_64 Linux accelerator only".into());
    }
    let bytes = image.bytes.as_slice();
    let Some(header) = bytes.get(..20) else {
        return Some(format!(
            "found {} bytes, too few for an ELF header",
            bytes.len()
        ));
    };
    if header[..4] != *b"\x7fELF" {
        return Some(format!(
            "found no ELF magic (the image starts {:02x?})",
            &header[..4]
        ));
    }
    if header[4] != 2 || header[5] != 1 {
        return Some(format!(
            "found an ELF file of class {} and byte order {}; only 64-bit little-endian runs here",
            header[4], header[5]
        ));
    }
    let e_type = u16::from_le_bytes([header[16], header[17]]);
    let machine = u16::from_le_bytes([header[18], header[19]]);
    if machine != EM_X86_64 {
        let name = match machine {
            183 => "AArch64",
            190 => "NVIDIA CUDA",
            224 => "AMD GPU",
            _ => "not x86-64",
        };
        return Some(format!(
            "found an ELF file for machine {machine} ({name}); the example device runs x86-64"
        ));
    }
    if e_type != ET_DYN {
        return Some(format!(
            "found an x86-64 ELF file of type {e_type}; the example device loads shared objects"
        ));
    }
    None
}

pub fn check(image: &ImageRef<'_>) -> ImageCompatibility {
    refusal(image).map_or_else(ImageCompatibility::yes, ImageCompatibility::no)
}

struct Loaded {
    library: Library,
    /// The in-memory file the loader opened. It stays open while the image is loaded so its
    /// `/proc/self/fd/N` name is not reused for another image (the loader matches by name).
    _file: File,
}

/// A kernel handed out by `get_kernel`.
#[derive(Clone)]
pub struct Kernel {
    pub address: usize,
    pub name: String,
    image: ImageHandle,
}

pub struct Images {
    device: i32,
    loaded: Mutex<HashMap<u64, Loaded>>,
    kernels: Mutex<HashMap<u64, Kernel>>,
    next_handle: AtomicU64,
}

extern "C" {
    fn memfd_create(name: *const c_char, flags: c_uint) -> c_int;
    fn dladdr1(
        addr: *const c_void,
        info: *mut DlInfo,
        extra: *mut *const Elf64Sym,
        flags: c_int,
    ) -> c_int;
}

#[repr(C)]
struct DlInfo {
    file_name: *const c_char,
    file_base: *mut c_void,
    symbol_name: *const c_char,
    symbol_address: *mut c_void,
}

#[repr(C)]
struct Elf64Sym {
    name: u32,
    info: u8,
    other: u8,
    section: u16,
    value: u64,
    size: u64,
}

const RTLD_DL_SYMENT: c_int = 1;

/// The size the image's symbol table gives the object at `address` (what a driver's
/// "get global" call returns along with the address).
fn symbol_size(address: usize) -> Option<u64> {
    // SAFETY: DlInfo is plain data; all-zero is a valid value to be overwritten.
    let mut info: DlInfo = unsafe { std::mem::zeroed() };
    let mut sym: *const Elf64Sym = std::ptr::null();
    // SAFETY: dladdr1 only reads `address` as a lookup key and writes the two out-parameters.
    let found = unsafe {
        dladdr1(
            address as *const c_void,
            &mut info,
            &mut sym,
            RTLD_DL_SYMENT,
        )
    };
    if found == 0 || sym.is_null() || info.symbol_address as usize != address {
        return None;
    }
    // SAFETY: on success `sym` points into the loaded object's symbol table.
    Some(unsafe { (*sym).size })
}

impl Images {
    pub fn new(device: i32) -> Self {
        Images {
            device,
            loaded: Mutex::default(),
            kernels: Mutex::default(),
            next_handle: AtomicU64::new(1),
        }
    }

    /// Loads a private copy of the image: the bytes are only borrowed for this call, and each
    /// device gets its own `declare target` globals, as on separate GPUs.
    pub fn load(&self, image: &ImageRef<'_>) -> Result<ImageHandle> {
        if let Some(why) = refusal(image) {
            return Err(PluginError::invalid_argument(format!(
                "cannot load image: {why}"
            )));
        }
        let handle = self.next_handle.fetch_add(1, Ordering::Relaxed);
        let failed = |what: &str, e: &dyn std::fmt::Display| {
            PluginError::failed(format!("example device {}: {what}: {e}", self.device))
        };
        let name = CString::new(format!("example{}-image{handle}", self.device))
            .map_err(|e| failed("bad image name", &e))?;
        // SAFETY: `name` is NUL-terminated; memfd_create has no other requirements.
        let fd = unsafe {
            memfd_create(name.as_ptr(), 1 /* MFD_CLOEXEC */)
        };
        if fd < 0 {
            return Err(failed("memfd_create", &std::io::Error::last_os_error()));
        }
        // SAFETY: the descriptor is new and owned by nothing else.
        let mut file = unsafe { File::from_raw_fd(fd) };
        file.write_all(image.bytes.as_slice())
            .map_err(|e| failed("writing the image", &e))?;
        let path = format!("/proc/self/fd/{}", file.as_raw_fd());
        // SAFETY: opening runs the image's initialisers: compiler-generated code of the
        // program being offloaded, which is what running it on this device means. RTLD_LOCAL
        // keeps its symbols private, so several devices can load the same image.
        let library = unsafe { Library::open(Some(&path), RTLD_NOW | RTLD_LOCAL) }
            .map_err(|e| failed("the dynamic loader refused the image", &e))?;
        lock(&self.loaded).insert(
            handle,
            Loaded {
                library,
                _file: file,
            },
        );
        log::debug!("example device {}: loaded image {handle}", self.device);
        Ok(ImageHandle(handle))
    }

    pub fn unload(&self, image: ImageHandle) -> Result<()> {
        let loaded = lock(&self.loaded).remove(&image.0);
        let loaded = loaded.ok_or_else(|| self.unknown_image(image))?;
        lock(&self.kernels).retain(|_, k| k.image != image);
        loaded
            .library
            .close()
            .map_err(|e| PluginError::failed(format!("unloading image {}: {e}", image.0)))
    }

    fn unknown_image(&self, image: ImageHandle) -> PluginError {
        PluginError::invalid_argument(format!(
            "image {} is not loaded on example device {}",
            image.0, self.device
        ))
    }

    fn symbol(&self, image: ImageHandle, name: &str) -> Result<usize> {
        let not_found = || {
            PluginError::new(
                ErrorCode::NOT_FOUND,
                format!(
                    "symbol '{name}' not found in image {} on example device {}",
                    image.0, self.device
                ),
            )
        };
        let c_name = CString::new(name).map_err(|_| not_found())?;
        let loaded = lock(&self.loaded);
        let entry = loaded
            .get(&image.0)
            .ok_or_else(|| self.unknown_image(image))?;
        // SAFETY: only the symbol's address is taken; nothing is called or read here.
        let symbol = unsafe { entry.library.get::<*mut c_void>(c_name.as_bytes_with_nul()) };
        match symbol.map(|s| s.into_raw() as usize) {
            Ok(address) if address != 0 => Ok(address),
            _ => Err(not_found()),
        }
    }

    pub fn kernel(&self, image: ImageHandle, name: &str) -> Result<KernelHandle> {
        let address = self.symbol(image, name)?;
        let handle = self.next_handle.fetch_add(1, Ordering::Relaxed);
        let kernel = Kernel {
            address,
            name: name.to_string(),
            image,
        };
        lock(&self.kernels).insert(handle, kernel);
        Ok(KernelHandle(handle))
    }

    /// The kernel behind a handle; an unknown handle is an error, never a call to nowhere.
    pub fn kernel_entry(&self, kernel: KernelHandle) -> Result<Kernel> {
        let found = lock(&self.kernels).get(&kernel.0).cloned();
        found.ok_or_else(|| {
            PluginError::invalid_argument(format!(
                "kernel {} is not a kernel of example device {}",
                kernel.0, self.device
            ))
        })
    }

    /// Address and size of a global; `host_size` (0: unknown) must match the device object's.
    pub fn global(&self, image: ImageHandle, name: &str, host_size: u64) -> Result<GlobalInfo> {
        let address = self.symbol(image, name)?;
        let size = match symbol_size(address) {
            Some(device_size) if host_size != 0 && host_size != device_size => {
                return Err(PluginError::invalid_argument(format!(
                    "global '{name}' has {device_size} bytes on the device, the host expects {host_size}"
                )))
            }
            Some(device_size) => device_size,
            None => host_size,
        };
        Ok(GlobalInfo { address, size })
    }

    pub fn count(&self) -> usize {
        lock(&self.loaded).len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use plugin_api::abi_stable::std_types::{RSlice, RStr};

    fn answer(bytes: &[u8], triple: &'static str) -> ImageCompatibility {
        check(&ImageRef {
            bytes: RSlice::from_slice(bytes),
            triple: RStr::from_str(triple),
            arch: RStr::from_str(""),
        })
    }

    fn elf_header(class: u8, e_type: u16, machine: u16) -> Vec<u8> {
        let mut h = b"\x7fELF".to_vec();
        h.extend([class, 1, 1]);
        h.resize(16, 0);
        h.extend(e_type.to_le_bytes());
        h.extend(machine.to_le_bytes());
        h.resize(64, 0);
        h
    }

    #[test]
    fn refusals_name_what_was_found() {
        assert!(answer(&elf_header(2, ET_DYN, EM_X86_64), "x86_64-pc-linux-gnu").compatible);
        let cases: [(Vec<u8>, &'static str, &str); 6] = [
            (elf_header(2, ET_DYN, 190), "", "NVIDIA CUDA"),
            (
                elf_header(2, ET_DYN, EM_X86_64),
                "nvptx64-nvidia-cuda",
                "nvptx64",
            ),
            (elf_header(1, ET_DYN, EM_X86_64), "", "class 1"),
            (elf_header(2, 2, EM_X86_64), "", "type 2"),
            (
                b"#!/bin/sh\necho this is not a device image\n".to_vec(),
                "",
                "no ELF magic",
            ),
            (b"\x7fEL".to_vec(), "", "found 3 bytes"),
        ];
        for (bytes, triple, expected) in cases {
            let a = answer(&bytes, triple);
            assert!(
                !a.compatible && a.reason.contains(expected),
                "{expected}: {}",
                a.reason
            );
        }
    }

    #[test]
    fn unknown_images_and_kernels_are_errors() {
        let images = Images::new(2);
        assert!(images.unload(ImageHandle(5)).is_err());
        assert!(images.kernel_entry(KernelHandle(5)).is_err());
        let e = images.kernel(ImageHandle(5), "k").unwrap_err();
        assert!(
            e.message.contains("not loaded on example device 2"),
            "{}",
            e.message
        );
        let bytes = elf_header(2, ET_DYN, 190);
        let image = ImageRef {
            bytes: RSlice::from_slice(&bytes),
            triple: RStr::from_str(""),
            arch: RStr::from_str(""),
        };
        assert_eq!(
            images.load(&image).unwrap_err().code,
            ErrorCode::INVALID_ARGUMENT
        );
    }
}
