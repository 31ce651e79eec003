//! Each driver call goes through [`call`]: fault injection (`OMPTARGET_EMU_FAIL`), panics kept
//! inside, and one trace line (`OMPTARGET_EMU_TRACE`) with the call's details and result.

use crate::config;
use crate::status::{self, CuResult, Error, Result};
use std::collections::HashMap;
use std::fs::File;
use std::io::Write;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Mutex, OnceLock};

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

fn trace_file() -> Option<&'static Mutex<File>> {
    static FILE: OnceLock<Option<Mutex<File>>> = OnceLock::new();
    FILE.get_or_init(|| {
        let path = config::get().trace.as_ref()?;
        match File::options().create(true).append(true).open(path) {
            Ok(file) => Some(Mutex::new(file)),
            Err(e) => {
                eprintln!("omptarget-emu (CUDA): cannot open OMPTARGET_EMU_TRACE file {path}: {e}");
                None
            }
        }
    })
    .as_ref()
}

/// Whether this call is the one `OMPTARGET_EMU_FAIL` names.
fn injected_failure(function: &str) -> bool {
    let Some((target, nth)) = &config::get().fail else {
        return false;
    };
    if target != function {
        return false;
    }
    static COUNTS: OnceLock<Mutex<HashMap<String, u64>>> = OnceLock::new();
    let mut counts = COUNTS.get_or_init(Default::default).lock().unwrap();
    let count = counts.entry(function.to_owned()).or_insert(0);
    *count += 1;
    *count == *nth
}

/// The error an injected failure returns: what the driver says when it runs out.
fn injected_error(function: &str) -> Error {
    if function.contains("Alloc") || function.contains("Register") {
        status::OUT_OF_MEMORY
    } else if function == "cuLaunchKernel" {
        status::LAUNCH_FAILED
    } else {
        status::UNKNOWN
    }
}

/// Runs the body of driver entry point `function`.
pub fn call(function: &'static str, body: impl FnOnce(&mut Call) -> Result<()>) -> CuResult {
    let file = trace_file();
    let mut details = Call {
        detail: file.map(|_| String::new()),
    };
    let result = if injected_failure(function) {
        details.note(|| "injected=OMPTARGET_EMU_FAIL".into());
        Err(injected_error(function))
    } else {
        catch_unwind(AssertUnwindSafe(|| body(&mut details))).unwrap_or_else(|_| {
            eprintln!("omptarget-emu (CUDA): internal error in {function}");
            Err(status::UNKNOWN)
        })
    };
    let code = match result {
        Ok(()) => status::SUCCESS,
        Err(Error(code)) => code,
    };
    if let (Some(file), Some(detail)) = (file, details.detail) {
        let line = format!("{function}{detail} -> {}\n", status::describe(code));
        let _ = file.lock().unwrap().write_all(line.as_bytes());
    }
    code
}
