//! An emulator's settings, read once from the environment.

pub struct Config {
    /// `OMPTARGET_EMU_DEVICES`: how many devices (each emulator has its own default).
    pub devices: usize,
    /// `OMPTARGET_EMU_MEMORY`: each device's memory in bytes (default 4 GiB; `K`, `M`, `G`
    /// suffixes accepted).
    pub memory: u64,
    /// `OMPTARGET_EMU_DELAY_US`: a delay before each stream operation, so that a missing
    /// synchronisation reads data that is not there yet.
    pub delay_us: u64,
    /// `OMPTARGET_EMU_INIT_DELAY_MS`: how long driver start-up (`cuInit`, `hsa_init`) takes,
    /// standing in for a real driver's (0.1-0.5 s); 0 by default.
    pub init_delay_ms: u64,
    /// `OMPTARGET_EMU_TRACE`: the file that gets one line per driver call.
    pub trace: Option<String>,
    /// `OMPTARGET_EMU_FAIL=FUNCTION:N`: the Nth call of FUNCTION fails.
    pub fail: Option<(String, u64)>,
    /// `OMPTARGET_EMU_TWINS=FILE`: a program whose offload section also provides twins, for
    /// tools that load a program's GPU image from its file instead of running the program
    /// (`omptarget-plugin-check --image`).
    pub twins: Option<String>,
}

pub const DEFAULT_MEMORY: u64 = 4 << 30;

impl Config {
    /// The settings in this process's environment; `devices` when `OMPTARGET_EMU_DEVICES` is
    /// not set.
    pub fn from_env(devices: usize) -> Config {
        Config::from(devices, |name| std::env::var(name).ok())
    }

    pub fn from(default_devices: usize, var: impl Fn(&str) -> Option<String>) -> Config {
        let fail = var("OMPTARGET_EMU_FAIL").and_then(|spec| {
            let (function, n) = spec.rsplit_once(':')?;
            Some((function.trim().to_owned(), n.trim().parse().ok()?))
        });
        Config {
            devices: var("OMPTARGET_EMU_DEVICES")
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(default_devices),
            memory: var("OMPTARGET_EMU_MEMORY")
                .and_then(|v| parse_size(&v))
                .unwrap_or(DEFAULT_MEMORY),
            delay_us: var("OMPTARGET_EMU_DELAY_US")
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0),
            init_delay_ms: var("OMPTARGET_EMU_INIT_DELAY_MS")
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0),
            trace: var("OMPTARGET_EMU_TRACE").filter(|v| !v.is_empty()),
            fail,
            twins: var("OMPTARGET_EMU_TWINS").filter(|v| !v.is_empty()),
        }
    }
}

/// `4096`, `64K`, `512M`, `4G`.
pub fn parse_size(text: &str) -> Option<u64> {
    let text = text.trim();
    let (digits, shift) = match text.as_bytes().last()? {
        b'K' | b'k' => (&text[..text.len() - 1], 10),
        b'M' | b'm' => (&text[..text.len() - 1], 20),
        b'G' | b'g' => (&text[..text.len() - 1], 30),
        _ => (text, 0),
    };
    digits.parse::<u64>().ok()?.checked_mul(1 << shift)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_variables() {
        let c = Config::from(1, |name| match name {
            "OMPTARGET_EMU_DEVICES" => Some("2".into()),
            "OMPTARGET_EMU_MEMORY" => Some("64M".into()),
            "OMPTARGET_EMU_FAIL" => Some("cuMemAlloc_v2:3".into()),
            _ => None,
        });
        assert_eq!(c.devices, 2);
        assert_eq!(c.memory, 64 << 20);
        assert_eq!(c.fail, Some(("cuMemAlloc_v2".into(), 3)));
        let d = Config::from(2, |_| None);
        assert_eq!((d.devices, d.memory, d.delay_us), (2, DEFAULT_MEMORY, 0));
        assert_eq!(parse_size("x"), None);
    }
}
