//! Plugins log through the core: each plugin library has its own copy of the `log` crate, so the
//! core hands its logger over at `init` as a C callback.
//!
//! A plugin just uses the `log` macros (`log` 0.4, the version `plugin-api` uses). The `init`
//! shim installs a logger that forwards records to [`HostServices::log`]. The core prints them
//! on stderr as `PLUGIN --> <message>` when the record's target starts with `omptarget_rtl_`
//! (the plugin crate's name). Warnings and errors are always shown; `debug` from
//! `LIBOMPTARGET_DEBUG=1` on, `trace` above 1. For `LIBOMPTARGET_INFO` lines, see [`info`].

use abi_stable::std_types::RStr;
use abi_stable::StableAbi;

/// A log level across the C boundary: `log::Level`'s numbering, with 0 for "off". An open set:
/// values above 5 are read as `TRACE`.
#[repr(transparent)]
#[derive(StableAbi, Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct LogLevel(pub u32);

impl LogLevel {
    /// Nothing is printed (only as `max_level`).
    pub const OFF: LogLevel = LogLevel(0);
    pub const ERROR: LogLevel = LogLevel(1);
    pub const WARN: LogLevel = LogLevel(2);
    pub const INFO: LogLevel = LogLevel(3);
    pub const DEBUG: LogLevel = LogLevel(4);
    pub const TRACE: LogLevel = LogLevel(5);

    /// The level of a `log` record.
    pub fn from_log(level: log::Level) -> Self {
        LogLevel(level as u32)
    }

    /// The `log` level, `None` for [`LogLevel::OFF`].
    pub fn to_log(self) -> Option<log::Level> {
        match self.0 {
            1 => Some(log::Level::Error),
            2 => Some(log::Level::Warn),
            3 => Some(log::Level::Info),
            4 => Some(log::Level::Debug),
            5.. => Some(log::Level::Trace),
            _ => None,
        }
    }

    fn to_filter(self) -> log::LevelFilter {
        self.to_log()
            .map_or(log::LevelFilter::Off, |l| l.to_level_filter())
    }
}

/// Services the core offers to a plugin, passed to `init`. The shim keeps a copy; the function
/// pointers stay valid for the life of the process. Plugins normally use them through the `log`
/// macros and the [`info`] module rather than directly.
#[repr(C)]
#[derive(StableAbi, Copy, Clone)]
pub struct HostServices {
    /// Most verbose level the core will print; the plugin need not format messages above it.
    pub max_level: LogLevel,
    /// Prints one message through the core's logger.
    pub log: extern "C" fn(level: LogLevel, target: RStr<'_>, message: RStr<'_>),
    /// The current `LIBOMPTARGET_INFO` bits (they can change while the program runs).
    pub info_flags: extern "C" fn() -> u32,
    /// Prints one `LIBOMPTARGET_INFO` line for a device of the plugin (its local number), with
    /// LLVM's prefix: `"PluginInterface" device <device> info: <message>`.
    pub info: extern "C" fn(device: i32, message: RStr<'_>),
}

/// `LIBOMPTARGET_INFO` for plugins: LLVM's bits, checked before formatting anything.
///
/// ```ignore
/// if plugin_api::info::enabled(plugin_api::info::PLUGIN_KERNEL) {
///     plugin_api::info::line(device, &format!("Kernel {name} has {n} registers"));
/// }
/// // The launch line itself, in the program's release's wording:
/// plugin_api::info::kernel_launch(device, config, name, [blocks, 1, 1], [threads, 1, 1], "SPMD");
/// ```
pub mod info {
    use super::HostServices;
    use abi_stable::std_types::RStr;
    use std::sync::OnceLock;

    /// Kernel launch details (grid, threads, execution mode), in LLVM's wording: `Launching
    /// kernel <name> with <B> blocks and <T> threads in <mode> mode`.
    pub const PLUGIN_KERNEL: u32 = 0x10;

    pub(crate) static SERVICES: OnceLock<HostServices> = OnceLock::new();

    /// Whether `bit` is set in the current `LIBOMPTARGET_INFO` bits (they can change while the
    /// program runs, so ask each time). False before `init`.
    pub fn enabled(bit: u32) -> bool {
        SERVICES.get().is_some_and(|s| (s.info_flags)() & bit != 0)
    }

    /// Prints one information line for local device `device`; nothing before `init`.
    pub fn line(device: i32, text: &str) {
        if let Some(s) = SERVICES.get() {
            (s.info)(device, RStr::from_str(text));
        }
    }

    /// The [`PLUGIN_KERNEL`] line of a launch, if that bit is set, in the wording of the
    /// program's LLVM release: LLVM 19 names the x dimensions (`with 4 blocks and 128
    /// threads`), LLVM 22 all three (`with [4,1,1] blocks and [128,1,1] threads`).
    pub fn kernel_launch(
        device: i32,
        config: &crate::LaunchConfig,
        kernel: &str,
        blocks: [u32; 3],
        threads: [u32; 3],
        mode: &str,
    ) {
        if !enabled(PLUGIN_KERNEL) {
            return;
        }
        let text = match config.is_llvm22_program() {
            true => format!(
                "Launching kernel {kernel} with [{},{},{}] blocks and [{},{},{}] threads in {mode} mode",
                blocks[0], blocks[1], blocks[2], threads[0], threads[1], threads[2]
            ),
            false => format!(
                "Launching kernel {kernel} with {} blocks and {} threads in {mode} mode",
                blocks[0], threads[0]
            ),
        };
        line(device, &text);
    }
}

/// The `log` implementation installed in each plugin library: forwards to the core.
struct ForwardingLogger {
    services: HostServices,
}

impl log::Log for ForwardingLogger {
    fn enabled(&self, metadata: &log::Metadata<'_>) -> bool {
        LogLevel::from_log(metadata.level()) <= self.services.max_level
    }

    fn log(&self, record: &log::Record<'_>) {
        if self.enabled(record.metadata()) {
            let message = record.args().to_string();
            (self.services.log)(
                LogLevel::from_log(record.level()),
                RStr::from_str(record.target()),
                RStr::from_str(&message),
            );
        }
    }

    fn flush(&self) {}
}

/// Routes this plugin library's `log` macros to the core. Only the first call has an effect.
pub(crate) fn install(services: HostServices) {
    let _ = info::SERVICES.set(services);
    if log::set_boxed_logger(Box::new(ForwardingLogger { services })).is_ok() {
        log::set_max_level(services.max_level.to_filter());
    }
}
