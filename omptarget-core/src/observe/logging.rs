//! Debug output (`LIBOMPTARGET_DEBUG`) through the `log` crate, and the user-facing messages
//! whose wording programs and tools rely on (`omptarget error:`, `omptarget message:`).

pub use crate::line_output::stderr_line;
use log::{LevelFilter, Log, Metadata, Record};
use plugin_api::{abi_stable::std_types::RStr, HostServices, LogLevel};

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
    crate::observe::info::flags()
}

extern "C" fn plugin_info(device: i32, message: RStr<'_>) {
    crate::observe::info::plugin_line(device, format_args!("{}", message.as_str()));
}

/// What plugins get at `init` to log through us.
pub(crate) fn host_services() -> HostServices {
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
pub(crate) fn failure_message(text: &str) {
    stderr_line(format_args!("omptarget error: {text}"));
}

/// `omptarget message: ...`, LLVM's MESSAGE.
pub(crate) fn message(text: &str) {
    stderr_line(format_args!("omptarget message: {text}"));
}
