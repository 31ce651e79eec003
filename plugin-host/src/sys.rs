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

/// Fills `size` bytes at `dst` with `pattern` repeated; `size` is a whole number of patterns.
/// One byte (or a pattern of one repeated byte) is `memset`; a wider one is written once and
/// then doubled with `memcpy`, so that every length fills at copying speed.
///
/// # Safety
/// `dst` must be valid for writes of `size` bytes.
pub unsafe fn fill(dst: usize, pattern: &[u8], size: u64) {
    let size = size as usize;
    let to = dst as *mut u8;
    if pattern.iter().all(|&b| b == pattern[0]) {
        // SAFETY: the caller's promise.
        unsafe { std::ptr::write_bytes(to, pattern[0], size) };
        return;
    }
    let first = pattern.len().min(size);
    // SAFETY: the caller's promise; `first` <= `size`.
    unsafe { std::ptr::copy_nonoverlapping(pattern.as_ptr(), to, first) };
    let mut done = first;
    while done < size {
        let next = done.min(size - done);
        // SAFETY: `[0, done)` is filled and `[done, done + next)` lies inside the `size` bytes;
        // the two do not overlap.
        unsafe { std::ptr::copy_nonoverlapping(to, to.add(done), next) };
        done += next;
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn fills_repeat_the_pattern_to_the_last_byte() {
        for pattern in [&[7u8][..], &[1, 2], &[1, 2, 3, 4], &[9, 9, 9, 9]] {
            for count in [1usize, 2, 3, 7, 64, 1001] {
                let size = count * pattern.len();
                let mut buffer = vec![0u8; size + 3];
                // SAFETY: `buffer` holds `size` bytes and 3 more that must stay untouched.
                unsafe { super::fill(buffer.as_mut_ptr() as usize, pattern, size as u64) };
                let expected: Vec<u8> = pattern.iter().copied().cycle().take(size).collect();
                assert_eq!(&buffer[..size], &expected[..]);
                assert_eq!(&buffer[size..], &[0, 0, 0]);
            }
        }
    }
}
