//! The wrapper every emulated driver entry point runs in: the failure `OMPTARGET_EMU_FAIL`
//! injects, panics kept inside (none may cross the C boundary), and one line per call in the
//! `OMPTARGET_EMU_TRACE` file, starting with the function's name.

use crate::config::Config;
use std::collections::HashMap;
use std::fs::File;
use std::io::Write;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Mutex;

/// The details of one call, collected only while tracing.
pub struct Call {
    detail: Option<String>,
}

impl Call {
    /// Adds `key=value` text to the call's trace line (built only when tracing).
    pub fn note(&mut self, text: impl FnOnce() -> String) {
        if let Some(detail) = &mut self.detail {
            detail.push(' ');
            detail.push_str(&text());
        }
    }
}

/// Copies up to this many bytes show them in the trace.
pub const SHOWN_BYTES: usize = 256;

/// ` bytes=<hex>` for a small copy's bytes (so a trace shows what a plugin wrote into the
/// device runtime's globals and tables), nothing for a large one.
pub fn shown_bytes(bytes: &[u8]) -> String {
    if bytes.is_empty() || bytes.len() > SHOWN_BYTES {
        return String::new();
    }
    let mut text = String::with_capacity(7 + 2 * bytes.len());
    text.push_str(" bytes=");
    for b in bytes {
        text.push_str(&format!("{b:02x}"));
    }
    text
}

/// One emulator's trace file and failure counts.
pub struct Calls {
    /// For messages: `omptarget-emu (CUDA)`.
    pub emulator: &'static str,
    trace: Option<Mutex<File>>,
    fail: Option<(String, u64)>,
    counts: Mutex<HashMap<&'static str, u64>>,
}

impl Calls {
    pub fn new(emulator: &'static str, config: &Config) -> Calls {
        let trace = config.trace.as_ref().and_then(|path| {
            match File::options().create(true).append(true).open(path) {
                Ok(file) => Some(Mutex::new(file)),
                Err(e) => {
                    eprintln!("{emulator}: cannot open OMPTARGET_EMU_TRACE file {path}: {e}");
                    None
                }
            }
        });
        Calls {
            emulator,
            trace,
            fail: config.fail.clone(),
            counts: Mutex::new(HashMap::new()),
        }
    }

    /// Whether a trace is written.
    pub fn tracing(&self) -> bool {
        self.trace.is_some()
    }

    /// Writes one line (a newline is added) to the trace.
    pub fn trace_line(&self, line: impl FnOnce() -> String) {
        if let Some(file) = &self.trace {
            let mut text = line();
            text.push('\n');
            let _ = lock(file).write_all(text.as_bytes());
        }
    }

    /// Whether this call of `function` is the one `OMPTARGET_EMU_FAIL` names.
    fn injected_failure(&self, function: &'static str) -> bool {
        let Some((target, nth)) = &self.fail else {
            return false;
        };
        if target != function {
            return false;
        }
        let mut counts = lock(&self.counts);
        let count = counts.entry(function).or_insert(0);
        *count += 1;
        *count == *nth
    }

    /// Runs the body of entry point `function`. `Ok` is `success`; an injected failure
    /// returns `injected(function)`; a panic returns `internal`. `describe` names a result in
    /// the trace.
    pub fn run<S: Copy>(
        &self,
        function: &'static str,
        codes: Codes<S>,
        body: impl FnOnce(&mut Call) -> Result<(), S>,
    ) -> S {
        let mut details = Call {
            detail: self.trace.as_ref().map(|_| String::new()),
        };
        let result = if self.injected_failure(function) {
            details.note(|| "injected=OMPTARGET_EMU_FAIL".into());
            Err((codes.injected)(function))
        } else {
            catch_unwind(AssertUnwindSafe(|| body(&mut details))).unwrap_or_else(|_| {
                eprintln!("{}: internal error in {function}", self.emulator);
                Err(codes.internal)
            })
        };
        let code = result.err().unwrap_or(codes.success);
        if let Some(detail) = details.detail {
            self.trace_line(|| format!("{function}{detail} -> {}", (codes.describe)(code)));
        }
        code
    }
}

impl Calls {
    /// Runs entry point `function` that returns a value, not a status (a signal load, a queue
    /// index): never failed on purpose; `fallback` is returned if it panics.
    pub fn run_value<T: Copy + std::fmt::Debug>(
        &self,
        function: &'static str,
        fallback: T,
        body: impl FnOnce(&mut Call) -> T,
    ) -> T {
        let mut details = Call {
            detail: self.trace.as_ref().map(|_| String::new()),
        };
        let value = catch_unwind(AssertUnwindSafe(|| body(&mut details))).unwrap_or_else(|_| {
            eprintln!("{}: internal error in {function}", self.emulator);
            fallback
        });
        if let Some(detail) = details.detail {
            self.trace_line(|| format!("{function}{detail} -> {value:?}"));
        }
        value
    }
}

/// How an emulator's entry points report their results.
pub struct Codes<S: 'static> {
    pub success: S,
    pub internal: S,
    /// The error an injected failure returns, by function.
    pub injected: fn(&str) -> S,
    /// The result's name for the trace.
    pub describe: fn(S) -> String,
}

/// Locks `mutex` even if a panicking thread poisoned it (the emulator keeps going: the panic
/// was already turned into an error result): the workspace's one helper, re-exported for the
/// emulators' modules that name it here.
pub use sync_util::lock;
