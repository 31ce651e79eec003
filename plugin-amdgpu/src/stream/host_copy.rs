//! The host step of two-step copies: a plain memcpy between user memory and a staging buffer.

/// Copies `size` bytes from address `src` to address `dst`.
///
/// # Safety
/// `src..src+size` must be readable and `dst..dst+size` writable for the whole call, and no
/// other thread may write either range meanwhile. Callers copy between a staging buffer the
/// stream owns until the slot completes and user memory the caller keeps valid until the
/// stream is synchronized.
pub(crate) unsafe fn host_memcpy(dst: usize, src: usize, size: usize) {
    // SAFETY: the caller guarantees both ranges are valid; they never overlap (one is a
    // staging buffer of ours, the other user memory), and `copy` tolerates overlap anyway.
    unsafe { std::ptr::copy(src as *const u8, dst as *mut u8, size) }
}
