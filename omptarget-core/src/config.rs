//! Environment variables the runtime reads, with LLVM's names and meanings.

use std::env;

/// `OMP_TARGET_OFFLOAD`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum OffloadPolicySetting {
    /// Offload when a device can run the construct; otherwise run on the host.
    Default,
    /// Offloading must succeed; a failure is a fatal error.
    Mandatory,
    /// Never offload; there are no non-host devices.
    Disabled,
}

pub(crate) const PLUGIN_PATH_VAR: &str = "LIBOMPTARGET_PLUGIN_PATH";
pub(crate) const PLUGINS_TO_LOAD_VAR: &str = "LIBOMPTARGET_PLUGINS_TO_LOAD";
pub(crate) const DEBUG_VAR: &str = "LIBOMPTARGET_DEBUG";
pub(crate) const INFO_VAR: &str = "LIBOMPTARGET_INFO";
pub(crate) const OFFLOAD_VAR: &str = "OMP_TARGET_OFFLOAD";

pub(crate) fn offload_policy() -> OffloadPolicySetting {
    match env::var(OFFLOAD_VAR).map(|v| v.trim().to_ascii_lowercase()) {
        Ok(v) if v == "mandatory" => OffloadPolicySetting::Mandatory,
        Ok(v) if v == "disabled" => OffloadPolicySetting::Disabled,
        _ => OffloadPolicySetting::Default,
    }
}

/// `LIBOMPTARGET_MAP_FORCE_ATOMIC` (default true, as LLVM): data a construct transfers for a
/// mapping is complete before another construct's work on another queue uses it.
pub(crate) fn map_force_atomic() -> bool {
    match env::var("LIBOMPTARGET_MAP_FORCE_ATOMIC") {
        Ok(v) => !matches!(
            v.trim().to_ascii_lowercase().as_str(),
            "0" | "false" | "off" | "no"
        ),
        Err(_) => true,
    }
}

/// Parses a number as LLVM's runtime does for these variables: decimal, or hex with `0x`.
pub(crate) fn parse_number(text: &str) -> Option<i64> {
    let t = text.trim();
    if let Some(hex) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        i64::from_str_radix(hex, 16).ok()
    } else {
        t.parse().ok()
    }
}

/// `LIBOMPTARGET_DEBUG`: debug output level (0 = off).
pub(crate) fn debug_level() -> i64 {
    env::var(DEBUG_VAR)
        .ok()
        .and_then(|v| parse_number(&v))
        .unwrap_or(0)
}

/// `LIBOMPTARGET_INFO`: bit flags of user-facing information. Read as LLVM does (`stoi`):
/// the leading decimal digits, so "0x20" is 0 and "-1" sets every bit.
pub(crate) fn info_flags() -> u32 {
    env::var(INFO_VAR)
        .ok()
        .map(|v| parse_leading_decimal(&v) as u32)
        .unwrap_or(0)
}

/// C's `stoi` without the exception: optional sign, then the leading digits (0 if none).
pub(crate) fn parse_leading_decimal(text: &str) -> i64 {
    let t = text.trim_start();
    let (sign, digits) = match t.strip_prefix('-') {
        Some(rest) => (-1, rest),
        None => (1, t.strip_prefix('+').unwrap_or(t)),
    };
    let end = digits
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(digits.len());
    sign * digits[..end].parse::<i64>().unwrap_or(0)
}

/// `LIBOMPTARGET_PLUGINS_TO_LOAD`: plugin names (or files), in order; `None` means all found.
pub(crate) fn plugins_to_load() -> Option<Vec<String>> {
    let value = env::var(PLUGINS_TO_LOAD_VAR).ok()?;
    let names: Vec<String> = value
        .split([',', ';', ':'])
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect();
    Some(names)
}

/// `LIBOMPTARGET_PLUGIN_PATH`: colon-separated files or directories.
pub fn plugin_path() -> Option<Vec<String>> {
    let value = env::var(PLUGIN_PATH_VAR).ok()?;
    Some(
        value
            .split(':')
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect(),
    )
}

#[test]
fn numbers_parse_like_llvm() {
    assert_eq!(parse_number("0x20"), Some(32));
    assert_eq!(parse_number(" 3 "), Some(3));
    assert_eq!(parse_number("-1"), Some(-1));
    assert_eq!(parse_number("x"), None);
    assert_eq!(parse_leading_decimal("0x20"), 0);
    assert_eq!(parse_leading_decimal("-1"), -1);
    assert_eq!(parse_leading_decimal(" 12abc"), 12);
}

/// A boolean variable as LLVM's `BoolEnvar` reads it: `1`, `true`, `on` or `yes`.
fn flag(name: &str) -> bool {
    env::var(name).is_ok_and(|v| {
        matches!(
            v.trim().to_ascii_lowercase().as_str(),
            "1" | "true" | "on" | "yes"
        )
    })
}

/// `LIBOMPTARGET_RECORD`: record each kernel's launch for `llvm-omp-kernel-replay`.
pub(crate) fn record_kernels() -> bool {
    flag("LIBOMPTARGET_RECORD")
}

/// `LIBOMPTARGET_RR_SAVE_OUTPUT`: also save the device memory after each recorded kernel.
pub(crate) fn record_saves_output() -> bool {
    flag("LIBOMPTARGET_RR_SAVE_OUTPUT")
}
