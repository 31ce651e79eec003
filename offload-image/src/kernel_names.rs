//! The names clang gives OpenMP kernels (`__omp_offloading_<device>_<file>_<function>_l<line>`,
//! with an optional `_<count>`), and the way LLVM 22 shows them in its reports:
//! `omp target in main @ 29 (__omp_offloading_fe00_5101bf_main_l29)`.

/// An OpenMP kernel's name as LLVM 22 shows it: `__omp_offloading_<hash>_<hash>_<function>_l<line>`
/// (with an optional `_<count>` after the line) becomes `omp target in <function> @ <line>
/// (<name>)`; any other name is shown as it is. An AMDGPU symbol's `.kd` is left out.
pub fn pretty_kernel_name(name: &str) -> String {
    let name = name.strip_suffix(".kd").unwrap_or(name);
    match openmp_kernel_origin(name) {
        Some((function, line)) => format!("omp target in {function} @ {line} ({name})"),
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
}
