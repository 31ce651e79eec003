//! The names clang gives OpenMP kernels (`__omp_offloading_<device>_<file>_<function>_l<line>`,
//! with an optional `_<count>`), and the way LLVM 22 shows them in its reports:
//! `omp target in main @ 29 (__omp_offloading_fe00_5101bf_main_l29)`, C++ functions
//! demangled (`omp target in void f<S>(int, S*) @ 12 (…__Z1fI1SEviPT__l12)`).

use std::ffi::{c_char, c_int, c_void, CStr, CString};

/// An OpenMP kernel's name as LLVM 22 shows it: `__omp_offloading_<hash>_<hash>_<function>_l<line>`
/// (with an optional `_<count>` after the line) becomes `omp target in <function> @ <line>
/// (<name>)`; any other name is shown as it is. An AMDGPU symbol's `.kd` is left out.
pub fn pretty_kernel_name(name: &str) -> String {
    let name = name.strip_suffix(".kd").unwrap_or(name);
    match openmp_kernel_origin(name) {
        Some((function, line)) => {
            let function = demangle_cxx(function).unwrap_or_else(|| function.to_owned());
            format!("omp target in {function} @ {line} ({name})")
        }
        None => name.to_owned(),
    }
}

/// The function and line of an OpenMP kernel's name.
fn openmp_kernel_origin(name: &str) -> Option<(&str, u32)> {
    let rest = name.strip_prefix("__omp_offloading_")?;
    // Two hexadecimal hashes (device and file), then the function.
    let mut parts = rest.splitn(3, '_');
    let (_, _, tail) = (parts.next()?, parts.next()?, parts.next()?);
    // The line is the last `_l<digits>` part, possibly followed by `_<count>`.
    let at = tail
        .rmatch_indices("_l")
        .find(|&(at, _)| line_after(&tail[at + 2..]).is_some())?
        .0;
    let function = &tail[..at];
    let line = line_after(&tail[at + 2..])?;
    (!function.is_empty()).then_some((function, line))
}

/// The line number at the start of `text` if nothing but `_<digits>` follows it.
fn line_after(text: &str) -> Option<u32> {
    let digits = text.len() - text.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    let (line, rest) = text.split_at(digits);
    let count_ok = rest.is_empty()
        || rest
            .strip_prefix('_')
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
    (digits > 0 && count_ok)
        .then(|| line.parse().ok())
        .flatten()
}

/// A C++ symbol (`_Z…`) demangled by the process's C++ runtime (`__cxa_demangle` of
/// libstdc++ or libc++abi, which every C++ program loads; only C++ programs have C++ names);
/// `None` for any other name, or where no C++ runtime is loaded.
pub fn demangle_cxx(symbol: &str) -> Option<String> {
    if !symbol.starts_with("_Z") {
        return None;
    }
    let demangle = cxa_demangle()?;
    let mangled = CString::new(symbol).ok()?;
    let mut status: c_int = 0;
    // SAFETY: a NUL-terminated name; with no buffer the function allocates its result.
    let out = unsafe {
        demangle(
            mangled.as_ptr(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            &mut status,
        )
    };
    if out.is_null() {
        return None;
    }
    // SAFETY: a NUL-terminated string the function allocated with malloc.
    let text = unsafe { CStr::from_ptr(out) }
        .to_string_lossy()
        .into_owned();
    // SAFETY: allocated with malloc by `__cxa_demangle` and used no more.
    unsafe { libc::free(out.cast()) };
    (status == 0).then_some(text)
}

/// `abi::__cxa_demangle(mangled, buffer, length, status)`, as the Itanium C++ ABI defines it.
type CxaDemangle =
    unsafe extern "C" fn(*const c_char, *mut c_char, *mut usize, *mut c_int) -> *mut c_char;

/// The process's `__cxa_demangle`, if a C++ runtime is loaded.
fn cxa_demangle() -> Option<CxaDemangle> {
    // SAFETY: a NUL-terminated name looked up in the default scope.
    let address: *mut c_void =
        unsafe { libc::dlsym(libc::RTLD_DEFAULT, c"__cxa_demangle".as_ptr()) };
    // SAFETY: every C++ runtime's `__cxa_demangle` has the ABI's signature.
    (!address.is_null())
        .then(|| unsafe { std::mem::transmute::<*mut c_void, CxaDemangle>(address) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openmp_kernel_names_are_shown_as_llvm_shows_them() {
        assert_eq!(
            pretty_kernel_name("__omp_offloading_fe00_5101bf_main_l16"),
            "omp target in main @ 16 (__omp_offloading_fe00_5101bf_main_l16)"
        );
        assert_eq!(
            pretty_kernel_name("__omp_offloading_10302_2ac4a1f_do_a_lot_l42_3.kd"),
            "omp target in do_a_lot @ 42 (__omp_offloading_10302_2ac4a1f_do_a_lot_l42_3)"
        );
        // A function whose own name holds `_l`.
        assert_eq!(
            pretty_kernel_name("__omp_offloading_1_2_fill_lines_l7"),
            "omp target in fill_lines @ 7 (__omp_offloading_1_2_fill_lines_l7)"
        );
        for other in [
            "vector_add",
            "__omp_offloading_1_2_main",
            "__omp_offloading_x",
        ] {
            assert_eq!(pretty_kernel_name(other), other);
        }
    }

    /// With a C++ runtime loaded, as in every C++ program.
    fn load_cxx_runtime() {
        use libloading::os::unix::{Library, RTLD_GLOBAL, RTLD_NOW};
        // SAFETY: libstdc++ runs no code of consequence when loaded.
        let library = unsafe { Library::open(Some("libstdc++.so.6"), RTLD_NOW | RTLD_GLOBAL) };
        std::mem::forget(library.expect("libstdc++.so.6"));
    }

    #[test]
    fn cxx_kernels_are_shown_with_their_functions_demangled() {
        load_cxx_runtime();
        assert_eq!(
            pretty_kernel_name("__omp_offloading_fd00_2cfae6ae__Z17cxx_function_nameI1SEviPT__l12"),
            "omp target in void cxx_function_name<S>(int, S*) @ 12 \
             (__omp_offloading_fd00_2cfae6ae__Z17cxx_function_nameI1SEviPT__l12)"
        );
        assert_eq!(demangle_cxx("main"), None);
        assert_eq!(demangle_cxx("_Znot a symbol"), None);
    }
}
