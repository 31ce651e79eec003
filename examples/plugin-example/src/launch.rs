//! Calling a kernel of our simulated device.
//!
//! clang's x86-64 offload kernels are C functions taking one pointer-sized value per argument.
//! A Rust function pointer needs its arity at compile time, so we pick it with a `match` on the
//! argument count. A real device does not call the kernel itself: it hands the argument array
//! to its driver's launch call (`cuLaunchKernel`-like) with the grid from `LaunchConfig`.

use plugin_api::PluginError;

/// Most arguments a kernel can take here, the launch-environment pointer included.
pub const MAX_ARGS: usize = 16;

/// Expands to a call of `$entry` as an `extern "C" fn` taking the listed elements of `$args`.
macro_rules! call_with {
    (@word $index:tt) => { usize };
    ($entry:expr, $args:expr; $($index:tt)*) => {{
        let entry: extern "C" fn($(call_with!(@word $index)),*) =
            // SAFETY: `invoke`'s caller guarantees `$entry` is such a function.
            unsafe { std::mem::transmute::<*const (), _>($entry) };
        entry($($args[$index]),*)
    }};
}

/// Calls the C function at `entry` with `args`, one `usize` each.
///
/// # Safety
/// `entry` must be the address of a C function taking exactly `args.len()` pointer-sized
/// integer or pointer arguments, and calling it with these values must be sound.
pub unsafe fn invoke(entry: usize, args: &[usize]) -> Result<(), PluginError> {
    let f = entry as *const ();
    let a = args;
    match args.len() {
        0 => call_with!(f, a;),
        1 => call_with!(f, a; 0),
        2 => call_with!(f, a; 0 1),
        3 => call_with!(f, a; 0 1 2),
        4 => call_with!(f, a; 0 1 2 3),
        5 => call_with!(f, a; 0 1 2 3 4),
        6 => call_with!(f, a; 0 1 2 3 4 5),
        7 => call_with!(f, a; 0 1 2 3 4 5 6),
        8 => call_with!(f, a; 0 1 2 3 4 5 6 7),
        9 => call_with!(f, a; 0 1 2 3 4 5 6 7 8),
        10 => call_with!(f, a; 0 1 2 3 4 5 6 7 8 9),
        11 => call_with!(f, a; 0 1 2 3 4 5 6 7 8 9 10),
        12 => call_with!(f, a; 0 1 2 3 4 5 6 7 8 9 10 11),
        13 => call_with!(f, a; 0 1 2 3 4 5 6 7 8 9 10 11 12),
        14 => call_with!(f, a; 0 1 2 3 4 5 6 7 8 9 10 11 12 13),
        15 => call_with!(f, a; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14),
        16 => call_with!(f, a; 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15),
        n => return Err(too_many(n)),
    }
    Ok(())
}

pub fn too_many(n: usize) -> PluginError {
    PluginError::unsupported(format!(
        "a kernel with {n} arguments: the example device passes at most {MAX_ARGS}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    static SEEN: AtomicUsize = AtomicUsize::new(0);

    extern "C" fn none() {
        SEEN.store(1000, Ordering::SeqCst);
    }

    extern "C" fn three(a: usize, b: usize, c: usize) {
        SEEN.store(a * 100 + b * 10 + c, Ordering::SeqCst);
    }

    #[allow(clippy::too_many_arguments)]
    extern "C" fn sixteen(
        a0: usize,
        a1: usize,
        a2: usize,
        a3: usize,
        a4: usize,
        a5: usize,
        a6: usize,
        a7: usize,
        a8: usize,
        a9: usize,
        a10: usize,
        a11: usize,
        a12: usize,
        a13: usize,
        a14: usize,
        a15: usize,
    ) {
        let all = [
            a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15,
        ];
        // Weighted so a swapped pair changes the result.
        SEEN.store(
            all.iter().enumerate().map(|(i, v)| (i + 1) * v).sum(),
            Ordering::SeqCst,
        );
    }

    #[test]
    fn arguments_arrive_in_order_for_every_arity_used() {
        let (none, three) = (none as *const () as usize, three as *const () as usize);
        // SAFETY (all four calls): each function is an `extern "C" fn` taking exactly as many
        // `usize` as passed, except the last call, which is refused before any call is made.
        unsafe { invoke(none, &[]) }.unwrap();
        assert_eq!(SEEN.load(Ordering::SeqCst), 1000);
        // SAFETY: see above.
        unsafe { invoke(three, &[1, 2, 3]) }.unwrap();
        assert_eq!(SEEN.load(Ordering::SeqCst), 123);
        let args: Vec<usize> = (1..=16).collect();
        // SAFETY: see above.
        unsafe { invoke(sixteen as *const () as usize, &args) }.unwrap();
        let weighted: usize = (1..=16).map(|i| i * i).sum();
        assert_eq!(SEEN.load(Ordering::SeqCst), weighted);
        // SAFETY: see above.
        let e = unsafe { invoke(three, &[0; 17]) }.unwrap_err();
        assert_eq!(e.code, plugin_api::ErrorCode::UNSUPPORTED);
    }
}
