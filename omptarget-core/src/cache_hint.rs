//! Telling the processor which memory is about to be read: a construct knows where its lookups
//! and its kernel will go well before they get there, and a line asked for early is in cache
//! (or on its way) when they do.

/// Asks the processor to load the cache line holding `address`, which may be any address: a
/// prefetch changes nothing the program can see and never faults.
pub(crate) fn prefetch_line(address: usize) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch has no effect the program can observe and never faults, whatever the
    // address (a stale table's, an unmapped one).
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(address as *const i8)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = address;
}
