//! Whether a GPU's maps use host memory in place (zero-copy) instead of copying to device
//! memory: decided once per device from what the driver says the device reaches and from the
//! user's variables, the same way for every GPU plugin.
//!
//! - LLVM's rule (`useAutoZeroCopy`): automatic on an APU whose GPU reaches pageable memory
//!   (XNACK on), or on any GPU that reaches it when `OMPX_APU_MAPS=1`. On an APU the host's
//!   memory is the GPU's own HBM, so a copy only costs time and memory.
//! - AMD's eager maps (`OMPX_EAGER_ZERO_COPY_MAPS=1`): on an APU, zero-copy even without XNACK,
//!   each map entered in the GPU's page tables before its kernel runs.
//! - A coherent node (Grace Hopper) is not an APU: its GPU reaches host memory over the
//!   chip-to-chip link, far slower than its HBM, so maps copy unless the user asks otherwise.
//! - `OMPTARGET_ZERO_COPY_MAPS=on` or `off` forces the choice either way (`on` only where the
//!   device can reach host memory: elsewhere kernels would fault).

/// What the driver says about a device and host memory.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct HostMemoryReach {
    /// Kernels may touch pageable host memory the driver never saw (XNACK, HMM, ATS).
    pub pageable: bool,
    /// Host and device share the same physical memory (an APU).
    pub shared_physical_memory: bool,
    /// Host ranges can be entered in the device's page tables ahead of use (HSA's SVM).
    pub prefault: bool,
}

/// `OMPTARGET_ZERO_COPY_MAPS`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Forced {
    /// Unset: the rules above decide.
    No,
    /// `on`: zero-copy wherever the device can reach host memory.
    On,
    /// `off`: always copy.
    Off,
}

/// The variables that bear on the choice.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct ZeroCopySettings {
    /// `OMPX_APU_MAPS`: automatic zero-copy on a GPU that is not an APU.
    pub apu_maps: bool,
    /// `OMPX_EAGER_ZERO_COPY_MAPS`: prefault each map (and allow zero-copy on an APU without
    /// XNACK).
    pub eager: bool,
    pub forced: Forced,
}

impl ZeroCopySettings {
    pub fn from_env() -> ZeroCopySettings {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> ZeroCopySettings {
        let flag = |name: &str| {
            get(name).is_some_and(|v| {
                matches!(
                    v.trim().to_ascii_lowercase().as_str(),
                    "1" | "true" | "on" | "yes"
                )
            })
        };
        let forced = match get("OMPTARGET_ZERO_COPY_MAPS")
            .map(|v| v.trim().to_ascii_lowercase())
            .as_deref()
        {
            None | Some("") | Some("auto") => Forced::No,
            Some("1" | "on" | "true" | "yes") => Forced::On,
            Some("0" | "off" | "false" | "no") => Forced::Off,
            Some(other) => {
                log::warn!("OMPTARGET_ZERO_COPY_MAPS='{other}' is not on, off or auto; using auto");
                Forced::No
            }
        };
        ZeroCopySettings {
            apu_maps: flag("OMPX_APU_MAPS"),
            eager: flag("OMPX_EAGER_ZERO_COPY_MAPS"),
            forced,
        }
    }
}

/// The choice for one device, with the reason `omptarget-info` and the info lines show.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct ZeroCopyChoice {
    pub maps_in_place: bool,
    pub reason: &'static str,
}

/// Decides for a device that reaches host memory as `reach` says.
pub fn choose(reach: HostMemoryReach, settings: ZeroCopySettings) -> ZeroCopyChoice {
    let choice = |maps_in_place, reason| ZeroCopyChoice {
        maps_in_place,
        reason,
    };
    let eager_apu = settings.eager && reach.shared_physical_memory && reach.prefault;
    match settings.forced {
        Forced::Off => return choice(false, "copies: OMPTARGET_ZERO_COPY_MAPS=off"),
        Forced::On if reach.pageable || eager_apu => {
            return choice(true, "zero-copy: OMPTARGET_ZERO_COPY_MAPS=on")
        }
        Forced::On => {
            log::warn!(
                "OMPTARGET_ZERO_COPY_MAPS=on, but the device cannot reach pageable host memory: \
                 maps copy"
            );
            return choice(
                false,
                "copies: the device cannot reach pageable host memory",
            );
        }
        Forced::No => {}
    }
    if reach.pageable && reach.shared_physical_memory {
        choice(
            true,
            "zero-copy: an APU whose GPU reaches host memory (XNACK on)",
        )
    } else if reach.pageable && settings.apu_maps {
        choice(
            true,
            "zero-copy: OMPX_APU_MAPS=1 and the GPU reaches host memory",
        )
    } else if eager_apu {
        choice(
            true,
            "zero-copy: an APU with OMPX_EAGER_ZERO_COPY_MAPS=1 (each map prefaulted)",
        )
    } else if reach.shared_physical_memory {
        choice(
            false,
            "copies: an APU whose GPU cannot reach pageable memory (XNACK off)",
        )
    } else if reach.pageable {
        choice(
            false,
            "copies: the GPU reaches host memory, but over a link slower than its own memory",
        )
    } else {
        choice(false, "copies: the GPU cannot reach pageable host memory")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const APU_XNACK: HostMemoryReach = HostMemoryReach {
        pageable: true,
        shared_physical_memory: true,
        prefault: true,
    };
    const APU_NO_XNACK: HostMemoryReach = HostMemoryReach {
        pageable: false,
        shared_physical_memory: true,
        prefault: true,
    };
    const COHERENT: HostMemoryReach = HostMemoryReach {
        pageable: true,
        shared_physical_memory: false,
        prefault: false,
    };
    const DISCRETE: HostMemoryReach = HostMemoryReach {
        pageable: false,
        shared_physical_memory: false,
        prefault: false,
    };

    fn settings(vars: &[(&str, &str)]) -> ZeroCopySettings {
        ZeroCopySettings::from_lookup(|name| {
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.to_string())
        })
    }

    fn maps(reach: HostMemoryReach, vars: &[(&str, &str)]) -> bool {
        choose(reach, settings(vars)).maps_in_place
    }

    #[test]
    fn llvms_rule_apus_with_xnack_or_apu_maps() {
        assert!(maps(APU_XNACK, &[]));
        assert!(!maps(APU_NO_XNACK, &[]));
        assert!(!maps(DISCRETE, &[("OMPX_APU_MAPS", "1")]));
        // A discrete GPU with XNACK on (HSA_XNACK=1 on an MI210) or a coherent node: only
        // when asked.
        assert!(!maps(COHERENT, &[]));
        assert!(maps(COHERENT, &[("OMPX_APU_MAPS", "1")]));
    }

    #[test]
    fn eager_maps_allow_an_apu_without_xnack() {
        assert!(maps(APU_NO_XNACK, &[("OMPX_EAGER_ZERO_COPY_MAPS", "1")]));
        assert!(!maps(DISCRETE, &[("OMPX_EAGER_ZERO_COPY_MAPS", "1")]));
    }

    #[test]
    fn the_user_forces_either_way_where_the_device_can() {
        assert!(!maps(APU_XNACK, &[("OMPTARGET_ZERO_COPY_MAPS", "off")]));
        assert!(maps(COHERENT, &[("OMPTARGET_ZERO_COPY_MAPS", "on")]));
        assert!(!maps(DISCRETE, &[("OMPTARGET_ZERO_COPY_MAPS", "on")]));
        assert_eq!(
            settings(&[("OMPTARGET_ZERO_COPY_MAPS", "sometimes")]).forced,
            Forced::No
        );
    }
}
