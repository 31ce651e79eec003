//! Debug output (`LIBOMPTARGET_DEBUG`) through the `log` crate, and the user-facing messages
//! whose wording programs and tools rely on (`omptarget error:`, `omptarget fatal error N:`).

use log::{LevelFilter, Log, Metadata, Record};
use plugin_api::{abi_stable::std_types::RStr, HostServices, LogLevel};
use std::io::Write;

/// Writes `line` and a newline to `out` with one `write` call. Processes that share a stream
/// (an MPI job's program and its device processes, whose output `mpirun` forwards) then
/// interleave whole lines, as LLVM's `fprintf` lines do; `writeln!` on unbuffered stderr
/// writes each formatted piece on its own.
pub fn write_line(out: &mut dyn Write, line: std::fmt::Arguments<'_>) {
    let mut text = String::with_capacity(128);
    let _ = std::fmt::Write::write_fmt(&mut text, line);
    text.push('\n');
    let _ = out.write_all(text.as_bytes());
}

/// [`write_line`] to stderr.
pub fn stderr_line(line: std::fmt::Arguments<'_>) {
    write_line(&mut std::io::stderr().lock(), line);
}

struct StderrLogger;

impl Log for StderrLogger {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        metadata.level() <= log::max_level()
    }

    fn log(&self, record: &Record<'_>) {
        if self.enabled(record.metadata()) {
            let target = record.target();
            let who = if target.starts_with("omptarget_rtl_") {
                "PLUGIN"
            } else {
                "omptarget"
            };
            stderr_line(format_args!("{who} --> {}", record.args()));
        }
    }

    fn flush(&self) {}
}

/// Installs the logger once. In release builds too: users debug their programs with it.
pub fn init() {
    let level = match crate::config::debug_level() {
        i64::MIN..=0 => LevelFilter::Warn,
        1 => LevelFilter::Debug,
        _ => LevelFilter::Trace,
    };
    // Another logger (a host program embedding the core) wins; that is fine.
    if log::set_logger(&StderrLogger).is_ok() {
        log::set_max_level(level);
    }
}

extern "C" fn plugin_log(level: LogLevel, target: RStr<'_>, message: RStr<'_>) {
    if let Some(level) = level.to_log() {
        log::logger().log(
            &Record::builder()
                .level(level)
                .target(target.as_str())
                .args(format_args!("{}", message.as_str()))
                .build(),
        );
    }
}

extern "C" fn plugin_info_flags() -> u32 {
    crate::info::flags()
}

extern "C" fn plugin_info(device: i32, message: RStr<'_>) {
    crate::info::plugin_line(device, format_args!("{}", message.as_str()));
}

/// What plugins get at `init` to log through us.
pub fn host_services() -> HostServices {
    let max_level = match log::max_level().to_level() {
        Some(level) => LogLevel::from_log(level),
        None => LogLevel::OFF,
    };
    HostServices {
        max_level,
        log: plugin_log,
        info_flags: plugin_info_flags,
        info: plugin_info,
    }
}

/// `omptarget error: ...`, LLVM's FAILURE_MESSAGE.
pub fn failure_message(text: &str) {
    stderr_line(format_args!("omptarget error: {text}"));
}

/// `omptarget message: ...`, LLVM's MESSAGE.
pub fn message(text: &str) {
    stderr_line(format_args!("omptarget message: {text}"));
}

/// `omptarget fatal error N: ...` then abort, LLVM's FATAL_MESSAGE.
pub fn fatal(code: i64, text: &str) -> ! {
    // The profile of a program that dies here is what its user wants most.
    crate::profile::flush();
    stderr_line(format_args!("omptarget fatal error {code}: {text}"));
    std::process::abort()
}

#[test]
fn a_line_is_written_with_one_call() {
    struct Calls(Vec<Vec<u8>>);
    impl Write for Calls {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.push(bytes.to_vec());
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut out = Calls(Vec::new());
    write_line(
        &mut out,
        format_args!("omptarget device {} info: {}, Size={}", 0, "Copying", 4),
    );
    assert_eq!(
        out.0,
        [b"omptarget device 0 info: Copying, Size=4\n".to_vec()]
    );
}
