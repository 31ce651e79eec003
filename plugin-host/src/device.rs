//! One host device: its loaded images and its allocations.

use crate::sys;
use log::debug;
use plugin_api::address_map::AddressMap;
use plugin_api::{ErrorCode, GlobalInfo, ImageHandle, KernelHandle, PluginError};
use std::collections::HashMap;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

type Result<T> = std::result::Result<T, PluginError>;

/// An image loaded into this process for one device.
struct LoadedImage {
    library: libloading::os::unix::Library,
    /// Kept open while loaded: the loader knows the image by its `/proc/self/fd/N` name, and a
    /// reused descriptor number would make it hand back this image for a different one.
    _file: OwnedFd,
}

pub struct HostDevice {
    index: i32,
    images: Mutex<HashMap<u64, LoadedImage>>,
    /// Live allocations and their sizes, so a bad `free` is an error rather than heap corruption.
    allocations: Mutex<AddressMap<usize, u64>>,
    /// Name and execution mode of each kernel handed out, for launch information.
    kernels: Mutex<HashMap<u64, KernelInfo>>,
    next_handle: AtomicU64,
}

/// What `LIBOMPTARGET_INFO` says about a kernel at launch.
#[derive(Clone)]
pub struct KernelInfo {
    pub name: String,
    /// From the image's `<kernel>_exec_mode` global: 1 generic, 2 SPMD, 3 generic-SPMD.
    pub mode: u8,
}

impl KernelInfo {
    /// LLVM's name for the execution mode.
    pub fn mode_name(&self) -> &'static str {
        match self.mode {
            2 => "SPMD",
            3 => "Generic-SPMD",
            _ => "Generic",
        }
    }
}

impl HostDevice {
    pub fn new(index: i32) -> Self {
        HostDevice {
            index,
            images: Mutex::new(HashMap::new()),
            allocations: Mutex::new(AddressMap::default()),
            kernels: Mutex::new(HashMap::new()),
            next_handle: AtomicU64::new(1),
        }
    }

    pub fn new_handle(&self) -> u64 {
        self.next_handle.fetch_add(1, Ordering::Relaxed)
    }

    pub fn load_image(&self, bytes: &[u8]) -> Result<ImageHandle> {
        let handle = self.new_handle();
        let name = format!("omptarget-host-dev{}-image{}", self.index, handle);
        let file = sys::memory_file(&name, bytes).map_err(|e| {
            PluginError::failed(format!(
                "cannot create an in-memory file for the image: {e}"
            ))
        })?;
        let path = sys::fd_path(&file);
        let library = sys::open_library(&path).map_err(|e| {
            PluginError::failed(format!("the dynamic loader refused the image: {e}"))
        })?;
        debug!(
            "host device {}: loaded image {} from {}",
            self.index, handle, path
        );
        self.images.lock().unwrap().insert(
            handle,
            LoadedImage {
                library,
                _file: file,
            },
        );
        Ok(ImageHandle(handle))
    }

    pub fn unload_image(&self, image: ImageHandle) -> Result<()> {
        let loaded = self.images.lock().unwrap().remove(&image.0);
        match loaded {
            Some(loaded) => {
                loaded
                    .library
                    .close()
                    .map_err(|e| PluginError::failed(format!("unloading image failed: {e}")))?;
                Ok(())
            }
            None => Err(unknown_image(image)),
        }
    }

    fn symbol(&self, image: ImageHandle, name: &str) -> Result<usize> {
        let images = self.images.lock().unwrap();
        let loaded = images.get(&image.0).ok_or_else(|| unknown_image(image))?;
        sys::symbol_address(&loaded.library, name).ok_or_else(|| {
            PluginError::new(
                ErrorCode::NOT_FOUND,
                format!("symbol '{name}' not found in the image"),
            )
        })
    }

    /// Kernels are identified by their entry address, valid while the image is loaded.
    pub fn kernel(&self, image: ImageHandle, name: &str) -> Result<KernelHandle> {
        let address = self.symbol(image, name)?;
        let mode = self
            .symbol(image, &format!("{name}_exec_mode"))
            // SAFETY: clang's `<kernel>_exec_mode` is a one-byte global of the loaded image.
            .map(|mode| unsafe { std::ptr::read_volatile(mode as *const u8) })
            .unwrap_or(1);
        self.kernels.lock().unwrap().insert(
            address as u64,
            KernelInfo {
                name: name.to_string(),
                mode,
            },
        );
        Ok(KernelHandle(address as u64))
    }

    pub fn kernel_info(&self, kernel: KernelHandle) -> Option<KernelInfo> {
        self.kernels.lock().unwrap().get(&kernel.0).cloned()
    }

    pub fn global(&self, image: ImageHandle, name: &str, size: u64) -> Result<GlobalInfo> {
        // The dynamic symbol table does not reliably give sizes after dlopen; trust the host's.
        self.symbol(image, name)
            .map(|address| GlobalInfo { address, size })
    }

    pub fn allocate(&self, size: u64) -> Result<usize> {
        let ptr = sys::allocate(size).ok_or_else(|| {
            PluginError::new(
                ErrorCode::OUT_OF_MEMORY,
                format!("cannot allocate {size} bytes on host device {}", self.index),
            )
        })?;
        self.allocations.lock().unwrap().insert(ptr, size);
        Ok(ptr)
    }

    pub fn free(&self, ptr: usize) -> Result<()> {
        if self.allocations.lock().unwrap().remove(&ptr).is_none() {
            return Err(PluginError::invalid_argument(format!(
                "{ptr:#x} is not an allocation of host device {}",
                self.index
            )));
        }
        // SAFETY: the pointer was returned by `allocate` and was just removed from the live set,
        // so it is freed exactly once.
        unsafe { sys::deallocate(ptr) };
        Ok(())
    }

    pub fn image_count(&self) -> usize {
        self.images.lock().unwrap().len()
    }
}

impl Drop for HostDevice {
    fn drop(&mut self) {
        for (&ptr, _) in self.allocations.get_mut().unwrap().iter() {
            // SAFETY: every key is a live allocation from `allocate`, freed once here.
            unsafe { sys::deallocate(ptr) };
        }
    }
}

fn unknown_image(image: ImageHandle) -> PluginError {
    PluginError::invalid_argument(format!(
        "image handle {} is not loaded on this device",
        image.0
    ))
}
