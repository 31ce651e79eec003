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
/// LLVM 22's other name for `LIBOMPTARGET_DEBUG`, read when that one is not set.
pub(crate) const OFFLOAD_DEBUG_VAR: &str = "LIBOFFLOAD_DEBUG";
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

/// `LIBOMPTARGET_DEBUG` (else LLVM 22's `LIBOFFLOAD_DEBUG`): debug output level (0 = off).
pub(crate) fn debug_level() -> i64 {
    env::var(DEBUG_VAR)
        .or_else(|_| env::var(OFFLOAD_DEBUG_VAR))
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

/// How a thread polling `nowait` constructs backs off into waiting (LLVM's
/// `ExponentialBackoff` in `__tgt_target_nowait_query`): each poll that finds work still
/// running adds one to the thread's count, up to `most`; above `threshold` the thread waits for
/// the work instead of polling; each construct it finishes multiplies the count by `factor`.
#[derive(Copy, Clone, Debug, PartialEq)]
pub(crate) struct QueryBackoff {
    /// `OMPTARGET_QUERY_COUNT_MAX`, 10.
    pub most: u32,
    /// `OMPTARGET_QUERY_COUNT_THRESHOLD`, 5.
    pub threshold: u32,
    /// `OMPTARGET_QUERY_COUNT_BACKOFF_FACTOR`, 0.5: in [0, 1).
    pub factor: f32,
}

impl QueryBackoff {
    pub(crate) const LLVM: QueryBackoff = QueryBackoff {
        most: 10,
        threshold: 5,
        factor: 0.5,
    };

    pub(crate) fn from_env() -> QueryBackoff {
        Self::from_lookup(|name| env::var(name).ok())
    }

    /// Read as LLVM reads them (`stoll`, `stof`: the leading number); a value that is not a
    /// number, or out of range, keeps the default, with a warning.
    pub(crate) fn from_lookup(get: impl Fn(&str) -> Option<String>) -> QueryBackoff {
        let count = |name: &str, default: u32| -> u32 {
            let Some(text) = get(name) else {
                return default;
            };
            match leading_number(&text).and_then(|n| n.parse::<i64>().ok()) {
                Some(n) if (0..=i64::from(u32::MAX)).contains(&n) => n as u32,
                _ => {
                    log::warn!("{name}={text:?} is not a count of 0 or more; using {default}");
                    default
                }
            }
        };
        let factor = match get("OMPTARGET_QUERY_COUNT_BACKOFF_FACTOR") {
            None => Self::LLVM.factor,
            Some(text) => match leading_number(&text).and_then(|n| n.parse::<f32>().ok()) {
                Some(f) if (0.0..1.0).contains(&f) => f,
                _ => {
                    log::warn!(
                        "OMPTARGET_QUERY_COUNT_BACKOFF_FACTOR={text:?} is not a number in \
                         [0, 1); using {}",
                        Self::LLVM.factor
                    );
                    Self::LLVM.factor
                }
            },
        };
        QueryBackoff {
            most: count("OMPTARGET_QUERY_COUNT_MAX", Self::LLVM.most),
            threshold: count("OMPTARGET_QUERY_COUNT_THRESHOLD", Self::LLVM.threshold),
            factor,
        }
    }

    /// The count after a poll that found the work still running.
    pub(crate) fn after_pending(&self, count: u32) -> u32 {
        count.saturating_add(1).min(self.most)
    }

    /// The count after a finished construct.
    pub(crate) fn after_finished(&self, count: u32) -> u32 {
        (count as f32 * self.factor) as u32
    }

    /// Whether a thread with this count waits for the work instead of polling.
    pub(crate) fn waits(&self, count: u32) -> bool {
        count > self.threshold
    }
}

/// The leading number of `text` as C's `stoll`/`stof` take it: optional sign, digits, and
/// for a float a fraction and exponent; `None` when there is none.
fn leading_number(text: &str) -> Option<&str> {
    let t = text.trim_start();
    let bytes = t.as_bytes();
    let mut end = usize::from(matches!(bytes.first(), Some(b'+' | b'-')));
    let digits_from = end;
    while end < bytes.len() && (bytes[end].is_ascii_digit() || bytes[end] == b'.') {
        end += 1;
    }
    if end < bytes.len() && matches!(bytes[end], b'e' | b'E') {
        let mut exp = end + 1;
        if exp < bytes.len() && matches!(bytes[exp], b'+' | b'-') {
            exp += 1;
        }
        if exp < bytes.len() && bytes[exp].is_ascii_digit() {
            end = exp;
            while end < bytes.len() && bytes[end].is_ascii_digit() {
                end += 1;
            }
        }
    }
    (end > digits_from).then(|| &t[..end])
}

#[test]
fn query_backoff_reads_like_llvm() {
    let with = |pairs: &'static [(&'static str, &'static str)]| {
        QueryBackoff::from_lookup(move |name| {
            pairs
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.to_string())
        })
    };
    assert_eq!(with(&[]), QueryBackoff::LLVM);
    let set = with(&[
        ("OMPTARGET_QUERY_COUNT_MAX", "100"),
        ("OMPTARGET_QUERY_COUNT_THRESHOLD", "20x"),
        ("OMPTARGET_QUERY_COUNT_BACKOFF_FACTOR", "0.25"),
    ]);
    assert_eq!((set.most, set.threshold, set.factor), (100, 20, 0.25));
    // Out of range or not a number: the default.
    let bad = with(&[
        ("OMPTARGET_QUERY_COUNT_MAX", "-3"),
        ("OMPTARGET_QUERY_COUNT_THRESHOLD", "many"),
        ("OMPTARGET_QUERY_COUNT_BACKOFF_FACTOR", "1.5"),
    ]);
    assert_eq!(bad, QueryBackoff::LLVM);
}

#[test]
fn query_backoff_counts_as_llvm() {
    let b = QueryBackoff::LLVM;
    let mut count = 0;
    for _ in 0..5 {
        count = b.after_pending(count);
        assert!(!b.waits(count));
    }
    count = b.after_pending(count);
    assert!(
        b.waits(count),
        "above the threshold of 5 after 6 pending polls"
    );
    for _ in 0..10 {
        count = b.after_pending(count);
    }
    assert_eq!(count, 10, "capped at the most");
    assert_eq!(b.after_finished(count), 5);
    assert_eq!(b.after_finished(5), 2);
    let never = QueryBackoff {
        threshold: 10,
        ..QueryBackoff::LLVM
    };
    assert!(
        !never.waits(never.after_pending(10)),
        "a threshold at the most never waits"
    );
}

/// `OMPTARGET_DUMP_OFFLOAD_ENTRIES`: the device whose offload entries are printed once its
/// images are loaded (LLVM reads it with `stoi`; -1, the default, is none).
pub(crate) fn dump_offload_entries() -> Option<i32> {
    let text = env::var("OMPTARGET_DUMP_OFFLOAD_ENTRIES").ok()?;
    i32::try_from(parse_leading_decimal(&text))
        .ok()
        .filter(|&device| device >= 0)
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

/// `OFFLOAD_TRACK_ALLOCATION_TRACES` (LLVM 22, default false): the plugins keep every
/// allocation and free with its stack, for reports of bad frees and memory faults.
pub(crate) fn track_allocation_traces() -> bool {
    flag("OFFLOAD_TRACK_ALLOCATION_TRACES")
}

/// `LIBOMPTARGET_TREAT_ATTACH_AUTO_AS_ALWAYS` (LLVM 22, default false): every ATTACH entry of a
/// construct attaches its pointer, as if the compiler had marked it `attach(always)`; by
/// default one attaches only when the construct newly mapped the pointer or the pointee.
pub(crate) fn treat_attach_auto_as_always() -> bool {
    flag("LIBOMPTARGET_TREAT_ATTACH_AUTO_AS_ALWAYS")
}

/// `LIBOMPTARGET_RECORD`: record each kernel's launch for `llvm-omp-kernel-replay`.
pub(crate) fn record_kernels() -> bool {
    flag("LIBOMPTARGET_RECORD")
}

/// `LIBOMPTARGET_RR_SAVE_OUTPUT`: also save the device memory after each recorded kernel.
pub(crate) fn record_saves_output() -> bool {
    flag("LIBOMPTARGET_RR_SAVE_OUTPUT")
}

/// `LIBOMPTARGET_LOCK_MAPPED_HOST_BUFFERS` (LLVM, default false): page-lock the host memory of
/// each new mapping for as long as it is mapped, so that its transfers go straight from and
/// to it instead of through a staging buffer.
/// Read once: every new mapping asks.
pub(crate) fn lock_mapped_host_buffers() -> bool {
    static SET: std::sync::LazyLock<bool> =
        std::sync::LazyLock::new(|| flag("LIBOMPTARGET_LOCK_MAPPED_HOST_BUFFERS"));
    *SET
}

/// `OMPX_EAGER_ZERO_COPY_MAPS` (AMD's runtime, default false): each zero-copy map enters its
/// host range in the device's page tables before the kernel runs, instead of letting the
/// kernel fault each page in.
/// Read once: every zero-copy map asks.
pub(crate) fn eager_zero_copy_maps() -> bool {
    static SET: std::sync::LazyLock<bool> =
        std::sync::LazyLock::new(|| flag("OMPX_EAGER_ZERO_COPY_MAPS"));
    *SET
}
