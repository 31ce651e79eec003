//! Running one benchmark program: its RESULT lines, wall time and peak memory.

use std::collections::BTreeMap;
use std::ffi::c_int;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

/// What one run of a program produced.
pub struct Run {
    /// `RESULT name value unit` lines: name -> value.
    pub results: BTreeMap<String, f64>,
    pub wall_seconds: f64,
    pub peak_rss_kib: i64,
}

/// `struct rusage` of Linux (x86_64 and aarch64 alike): two timevals, then 14 longs.
#[repr(C)]
struct Rusage {
    utime: [i64; 2],
    stime: [i64; 2],
    maxrss: i64,
    rest: [i64; 13],
}

extern "C" {
    fn wait4(pid: c_int, status: *mut c_int, options: c_int, usage: *mut Rusage) -> c_int;
}

/// Runs `program args` with `LD_LIBRARY_PATH=lib_dir`; fails if it exits non-zero.
pub fn run(program: &Path, args: &[String], lib_dir: &Path) -> Result<Run, String> {
    let start = Instant::now();
    let child = Command::new(program)
        .args(args)
        .env("LD_LIBRARY_PATH", lib_dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", program.display()))?;
    let pid = child.id() as c_int;
    // Read the output first (the pipes must drain), then reap the child with wait4 for its
    // resource usage; std's wait would not report it.
    let mut stdout = String::new();
    let mut stderr = String::new();
    {
        use std::io::Read;
        let mut child = child;
        if let Some(mut out) = child.stdout.take() {
            let _ = out.read_to_string(&mut stdout);
        }
        if let Some(mut err) = child.stderr.take() {
            let _ = err.read_to_string(&mut stderr);
        }
        std::mem::forget(child); // reaped below
    }
    let mut status: c_int = 0;
    let mut usage = Rusage {
        utime: [0; 2],
        stime: [0; 2],
        maxrss: 0,
        rest: [0; 13],
    };
    // SAFETY: `pid` is our unreaped child; status and usage are valid out-parameters.
    let reaped = unsafe { wait4(pid, &mut status, 0, &mut usage) };
    let wall_seconds = start.elapsed().as_secs_f64();
    if reaped != pid {
        return Err(format!("wait4 failed for {}", program.display()));
    }
    // WIFEXITED && WEXITSTATUS == 0
    if status & 0x7f != 0 || (status >> 8) & 0xff != 0 {
        return Err(format!(
            "{} {} failed (status {status:#x}):\n{stdout}{stderr}",
            program.display(),
            args.join(" ")
        ));
    }
    let mut results = BTreeMap::new();
    for line in stdout.lines() {
        let mut words = line.split_whitespace();
        if words.next() != Some("RESULT") {
            continue;
        }
        if let (Some(name), Some(value)) = (words.next(), words.next()) {
            if let Ok(v) = value.parse::<f64>() {
                results.insert(name.to_string(), v);
            }
        }
    }
    Ok(Run {
        results,
        wall_seconds,
        peak_rss_kib: usage.maxrss,
    })
}
