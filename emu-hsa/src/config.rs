//! The emulator's settings, read once from the environment (two GPUs by default), and the
//! system it emulates: `OMPTARGET_EMU_PROFILE` names the model (an MI210-like discrete GPU by
//! default, `mi300a` for an MI300A-like APU) and, on the APU, `HSA_XNACK=1` turns XNACK on as
//! ROCm reads it.

pub use omptarget_emu_support::config::Config;
use std::sync::OnceLock;

pub fn get() -> &'static Config {
    static CONFIG: OnceLock<Config> = OnceLock::new();
    CONFIG.get_or_init(|| Config::from_env(2))
}

/// The emulated system's model and mode.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Profile {
    /// An MI300A-like APU (gfx942) instead of the default MI210-like GPU (gfx90a).
    pub apu: bool,
    /// XNACK (recoverable GPU page faults) is on: the GPUs may reach any host memory.
    pub xnack: bool,
}

impl Profile {
    /// The profile of the variables `var` gives; `Err` says why a profile name was refused
    /// (the default profile is used then).
    pub fn from(var: impl Fn(&str) -> Option<String>) -> (Profile, Option<String>) {
        let apu = match var("OMPTARGET_EMU_PROFILE").as_deref().map(str::trim) {
            None | Some("") | Some("default") | Some("mi210") => Ok(false),
            Some(name) if name.eq_ignore_ascii_case("mi300a") => Ok(true),
            Some(other) => Err(format!(
                "omptarget-emu (HSA): OMPTARGET_EMU_PROFILE={other} is not a profile this \
                 emulator knows (mi300a, or unset for the MI210-like default); using the default"
            )),
        };
        // ROCm: HSA_XNACK=1 asks for XNACK; anything else leaves it off here. The default
        // profile stays as it always was, XNACK off.
        let xnack = var("HSA_XNACK").is_some_and(|v| v.trim() == "1");
        match apu {
            Ok(apu) => (
                Profile {
                    apu,
                    xnack: apu && xnack,
                },
                None,
            ),
            Err(why) => (Profile::default(), Some(why)),
        }
    }
}

/// The profile of this process's environment; a refused name is reported once.
pub fn profile() -> Profile {
    static PROFILE: OnceLock<Profile> = OnceLock::new();
    *PROFILE.get_or_init(|| {
        let (profile, refused) = Profile::from(|name| std::env::var(name).ok());
        if let Some(why) = refused {
            eprintln!("{why}");
        }
        profile
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(vars: &[(&str, &str)]) -> (Profile, Option<String>) {
        Profile::from(|name| {
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.to_string())
        })
    }

    #[test]
    fn profiles_and_xnack_are_read_as_documented() {
        assert_eq!(read(&[]), (Profile::default(), None));
        assert_eq!(read(&[("HSA_XNACK", "1")]), (Profile::default(), None));
        let apu = read(&[("OMPTARGET_EMU_PROFILE", "mi300a")]).0;
        assert_eq!(
            apu,
            Profile {
                apu: true,
                xnack: false
            }
        );
        let on = read(&[("OMPTARGET_EMU_PROFILE", "MI300A"), ("HSA_XNACK", "1")]).0;
        assert!(on.apu && on.xnack);
        let off = read(&[("OMPTARGET_EMU_PROFILE", "mi300a"), ("HSA_XNACK", "0")]).0;
        assert!(off.apu && !off.xnack);
        let (unknown, why) = read(&[("OMPTARGET_EMU_PROFILE", "mi250")]);
        assert_eq!(unknown, Profile::default());
        assert!(why.unwrap().contains("mi250"));
    }
}
