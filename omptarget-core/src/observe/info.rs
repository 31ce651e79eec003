//! `LIBOMPTARGET_INFO`: user-facing information lines, in LLVM's wording, for the bits it
//! defines. Tools and users grep these lines, so their text follows LLVM 19 exactly.
//! Every check is one relaxed atomic load: nothing is formatted when the bit is off.

use crate::abi::map_args::MapArg;
use crate::abi::map_type::*;
use crate::abi::source_location::{self, Ident, VarName};
use crate::line_output::{stderr_line, write_line};
use crate::mapping::Mapping;
use std::io::Write;
use std::sync::atomic::{AtomicU32, Ordering};

pub(crate) const KERNEL_ARGS: u32 = 0x01;
pub(crate) const MAPPING_EXISTS: u32 = 0x02;
pub(crate) const DUMP_TABLE: u32 = 0x04;
pub(crate) const MAPPING_CHANGED: u32 = 0x08;
// The whole set of bits, as LLVM lists it: plugins test this one (plugin_api::info).
#[allow(dead_code)]
pub(crate) const PLUGIN_KERNEL: u32 = 0x10;
pub(crate) const DATA_TRANSFER: u32 = 0x20;
pub(crate) const EMPTY_MAPPING: u32 = 0x40;
/// Not one of LLVM's bits (AMD's runtime reports its eager zero-copy maps under it): which
/// devices map in place, and each eager map's prefault.
pub(crate) const ZERO_COPY: u32 = 0x80;

/// Set at start-up from the environment; `__tgt_set_info_flag` changes it later.
static FLAGS: AtomicU32 = AtomicU32::new(0);

pub fn init() {
    FLAGS.store(crate::config::info_flags(), Ordering::Relaxed);
}

pub(crate) fn set(flags: u32) {
    FLAGS.store(flags, Ordering::Relaxed);
}

pub(crate) fn flags() -> u32 {
    FLAGS.load(Ordering::Relaxed)
}

pub(crate) fn enabled(bit: u32) -> bool {
    FLAGS.load(Ordering::Relaxed) & bit != 0
}

/// `omptarget device N info: text`.
pub(crate) fn line(device: i32, text: std::fmt::Arguments<'_>) {
    stderr_line(format_args!("omptarget device {device} info: {text}"));
}

/// The plugin-side lines carry LLVM's (quoted) plugin prefix.
pub(crate) fn plugin_line(device: i32, text: std::fmt::Arguments<'_>) {
    stderr_line(format_args!(
        "\"PluginInterface\" device {device} info: {text}"
    ));
}

/// Pointers as LLVM prints them: `0x` and 16 hex digits.
pub(crate) struct Ptr(pub usize);

impl std::fmt::Display for Ptr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "0x{:016x}", self.0)
    }
}

pub(crate) fn ref_count(count: u64) -> String {
    if count == crate::mapping::INFINITE {
        "INF".into()
    } else {
        count.to_string()
    }
}

/// LLVM's "Mapping exists" line for a lookup of [begin, begin+size) in mapping `m`:
/// `action` says what happened to the count in use (the hold count when `hold`), and lookups
/// that may create a mapping also name the variable.
#[allow(clippy::too_many_arguments)]
pub(crate) fn mapping_exists(
    device: i32,
    m: &Mapping,
    begin: usize,
    size: u64,
    implicit: bool,
    hold: bool,
    action: &str,
    name: Option<VarName>,
) {
    let (dyn_action, hold_action) = if hold { ("", action) } else { (action, "") };
    let name = name
        .map(|n| format!(", Name={}", n.variable()))
        .unwrap_or_default();
    line(
        device,
        format_args!(
            "Mapping exists{} with HstPtrBegin={}, TgtPtrBegin={}, Size={size}, DynRefCount={}{dyn_action}, HoldRefCount={}{hold_action}{name}",
            if implicit { " (implicit)" } else { "" },
            Ptr(begin),
            Ptr(m.device_address(begin)),
            ref_count(m.dynamic_refs),
            ref_count(u64::from(m.hold_refs)),
        ),
    );
}

/// LLVM's data-transfer line, naming the mapped variable.
pub(crate) fn copy(
    device: i32,
    to_device: bool,
    host: usize,
    target: usize,
    size: u64,
    name: VarName,
) {
    // LLVM names the source first.
    let (from, to, first, second) = if to_device {
        ("host", "device", ("Hst", host), ("Tgt", target))
    } else {
        ("device", "host", ("Tgt", target), ("Hst", host))
    };
    line(
        device,
        format_args!(
            "Copying data from {from} to {to}, {}Ptr={}, {}Ptr={}, Size={size}, Name={}",
            first.0,
            Ptr(first.1),
            second.0,
            Ptr(second.1),
            name.variable()
        ),
    );
}

/// "Entering OpenMP kernel at file:line:col with N arguments:" and one line per argument.
// `loc` is the compiler's ident_t, passed through unchanged from a C entry point.
#[allow(clippy::not_unsafe_ptr_arg_deref)]
pub(crate) fn kernel_arguments(device: i32, loc: *const Ident, region: &str, args: &[MapArg]) {
    // SAFETY: `loc` is null or the compiler's ident_t.
    let at = unsafe { source_location::describe_or_unknown(loc) };
    line(
        device,
        format_args!("{region} at {at} with {} arguments:", args.len()),
    );
    for a in args {
        let t = a.map_type;
        let kind = if t.has(TO) && t.has(FROM) {
            "tofrom"
        } else if t.has(TO) {
            "to"
        } else if t.has(FROM) {
            "from"
        } else if t.has(PRIVATE) {
            "private"
        } else if t.has(LITERAL) {
            "firstprivate"
        } else if a.size != 0 {
            "alloc"
        } else {
            "use_address"
        };
        let implicit = if t.has(IMPLICIT) { "(implicit)" } else { "" };
        line(
            device,
            format_args!("{kind}({})[{}] {implicit}", a.name.variable(), a.size),
        );
    }
}

/// The mapping table after a construct (bit 4), or for `ompx_dump_mapping_tables` on stdout.
pub(crate) fn dump_table(device: i32, loc_text: &str, table: &[Mapping], to_stdout: bool) {
    let mut out: Box<dyn Write> = if to_stdout {
        Box::new(std::io::stdout().lock())
    } else {
        Box::new(std::io::stderr().lock())
    };
    let prefix = format!("omptarget device {device} info: ");
    if table.is_empty() {
        write_line(
            &mut out,
            format_args!("{prefix}OpenMP Host-Device pointer mappings table empty"),
        );
        return;
    }
    write_line(
        &mut out,
        format_args!("{prefix}OpenMP Host-Device pointer mappings after block at {loc_text}:"),
    );
    write_line(
        &mut out,
        format_args!(
            "{prefix}{:<18} {:<18} Size (B) DynRefCount HoldRefCount Declaration",
            "Host Ptr", "Target Ptr"
        ),
    );
    for m in table.iter() {
        write_line(
            &mut out,
            format_args!(
                "{prefix}{} {} {:<8} {:<11} {:<12} {}",
                Ptr(m.host_begin),
                Ptr(m.device_begin),
                m.size(),
                ref_count(m.dynamic_refs),
                ref_count(u64::from(m.hold_refs)),
                declaration(m)
            ),
        );
    }
    let _ = out.flush();
}

/// "name at file:line:col" from the mapping's map_var_info_t.
fn declaration(m: &Mapping) -> String {
    let Some(text) = m.name.text() else {
        return "unknown at unknown:0:0".into();
    };
    // Globals carry their plain symbol name rather than ";name;file;line;col;;".
    if !text.contains(';') {
        return format!("{text} at unknown:0:0");
    }
    let parts: Vec<&str> = text.split(';').collect();
    let field = |i: usize, default: &'static str| {
        parts
            .get(i)
            .filter(|s| !s.is_empty())
            .map(|s| s.to_string())
            .unwrap_or_else(|| default.to_string())
    };
    format!(
        "{} at {}:{}:{}",
        field(1, "unknown"),
        source_location::base_name(&field(2, "unknown")),
        field(3, "0"),
        field(4, "0")
    )
}
