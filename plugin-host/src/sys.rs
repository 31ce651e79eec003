//! The operating-system calls the host plugin needs, each in one small function. Loading
//! images and calling kernels are shared with the driver emulators: offload_image::native_code.

pub use offload_image::native_code::{
    call_with_args, fd_path, memory_file, open_library, symbol_address,
};
use std::ffi::c_void;

extern "C" {
    fn malloc(size: usize) -> *mut c_void;
    fn free(ptr: *mut c_void);
}

/// Allocates with the C allocator (16-byte aligned), as LLVM's host plugin does.
pub fn allocate(size: u64) -> Option<usize> {
    let size = usize::try_from(size).ok()?.max(1);
    // SAFETY: malloc accepts any size and returns null on failure.
    let ptr = unsafe { malloc(size) };
    (!ptr.is_null()).then_some(ptr as usize)
}

/// Frees memory from [`allocate`].
///
/// # Safety
/// `ptr` must come from [`allocate`] and not have been freed.
pub unsafe fn deallocate(ptr: usize) {
    // SAFETY: guaranteed by the caller.
    unsafe { free(ptr as *mut c_void) }
}

/// Copies `size` bytes between two addresses of this process.
///
/// # Safety
/// Both ranges must be valid for `size` bytes and not overlap.
pub unsafe fn copy(dst: usize, src: usize, size: u64) {
    // SAFETY: guaranteed by the caller.
    unsafe { std::ptr::copy_nonoverlapping(src as *const u8, dst as *mut u8, size as usize) }
}
