//! The emulator's settings, read once from the environment (two GPUs by default).

pub use omptarget_emu_support::config::Config;
use std::sync::OnceLock;

pub fn get() -> &'static Config {
    static CONFIG: OnceLock<Config> = OnceLock::new();
    CONFIG.get_or_init(|| Config::from_env(2))
}
