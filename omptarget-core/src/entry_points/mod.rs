//! Every C entry point of `libomptarget.so`, one module per API family. Each one catches panics
//! (none may unwind into C) and converts raw pointers through the `abi` module.
//!
//! These are C functions: the raw pointers they take are the C caller's contract, so marking
//! them `unsafe` in Rust would add nothing.
#![allow(clippy::not_unsafe_ptr_arg_deref)]

pub(crate) mod data;
pub(crate) mod device_api;
pub(crate) mod device_uid;
pub(crate) mod interop;
pub(crate) mod kernel_language;
pub(crate) mod mappers;
pub(crate) mod ompt;
pub(crate) mod queries;
pub(crate) mod record_replay;
pub(crate) mod registration;
pub(crate) mod target;

pub(crate) use crate::panic_boundary::guard;

/// `OFFLOAD_SUCCESS` / `OFFLOAD_FAIL` of LLVM's `omptarget.h`.
pub(crate) const OFFLOAD_SUCCESS: i32 = 0;
pub(crate) const OFFLOAD_FAIL: i32 = !0;

/// The profile span of a construct (`LIBOMPTARGET_PROFILE`): its kind, the program's source
/// location and the device asked for. Nothing (one branch) when profiling is off.
#[inline]
pub(crate) fn construct_span(
    kind: &'static str,
    loc: *const crate::abi::source_location::Ident,
    device_id: i64,
) -> Option<crate::observe::profile::Span> {
    if !crate::observe::profile::enabled() {
        return None;
    }
    construct_span_on(kind, loc, device_id)
}

#[cold]
fn construct_span_on(
    kind: &'static str,
    loc: *const crate::abi::source_location::Ident,
    device_id: i64,
) -> Option<crate::observe::profile::Span> {
    let mut span = crate::observe::profile::begin(kind)?;
    // SAFETY: `loc` is the compiler's ident_t or null.
    span.text("location", unsafe {
        crate::abi::source_location::describe_or_unknown(loc)
    });
    span.int("device", device_id);
    span.construct();
    Some(span)
}

/// Starts loading the table lines that the lookups of a construct's first arguments will read
/// ([`crate::mapping::MappingTable::prefetch`]), before the construct sets itself up.
///
/// # Safety
/// `begins` is null or points to `count` addresses (the compiler's `args` array).
pub(crate) unsafe fn prefetch_mappings(
    device: &crate::device::Device,
    count: usize,
    begins: *const *mut std::ffi::c_void,
) {
    if begins.is_null() {
        return;
    }
    // A few: a construct with many arguments has enough of its own work to hide the rest.
    for i in 0..count.min(4) {
        // SAFETY: `i` < `count`, inside the compiler's array.
        let begin = unsafe { *begins.add(i) } as usize;
        device.mapping.prefetch(begin);
    }
}

#[cfg(test)]
mod tests {
    /// Every `#[no_mangle]` entry point must be in exports.map, or the linked library hides it.
    #[test]
    fn exports_map_lists_every_entry_point() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let map = std::fs::read_to_string(root.join("exports.map")).unwrap();
        let exported: Vec<&str> = map
            .lines()
            .filter_map(|l| l.trim().strip_suffix(';'))
            .collect();
        let mut missing = Vec::new();
        for file in std::fs::read_dir(root.join("src/entry_points")).unwrap() {
            let text = std::fs::read_to_string(file.unwrap().path()).unwrap();
            let mut lines = text.lines().peekable();
            while let Some(line) = lines.next() {
                if line.trim() != "#[no_mangle]" {
                    continue;
                }
                // The function name follows on one of the next lines.
                for next in lines.by_ref() {
                    if let Some(rest) = next.trim().strip_prefix("pub extern \"C\" fn ") {
                        let name: String = rest
                            .chars()
                            .take_while(|c| c.is_alphanumeric() || *c == '_')
                            .collect();
                        if !name.starts_with('$')
                            && !name.is_empty()
                            && !exported.contains(&name.as_str())
                        {
                            missing.push(name);
                        }
                        break;
                    }
                    if next.trim().starts_with("pub extern \"C\" fn $") {
                        break;
                    }
                }
            }
        }
        assert!(missing.is_empty(), "not in exports.map: {missing:?}");
        assert!(exported.contains(&"__tgt_target_data_update_nowait_mapper"));
    }
}
