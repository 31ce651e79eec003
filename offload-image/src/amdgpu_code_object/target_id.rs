//! AMDGPU target IDs: a processor with its XNACK and SRAMECC settings, read from a code
//! object's ELF flags or from text (`gfx90a:xnack+`, an HSA ISA name), and the rule that
//! says which device runs which image.

pub use crate::amdgpu_processors::{processor_by_mach, processor_by_name, Processor, PROCESSORS};
use std::fmt;

/// How a target feature (XNACK, SRAMECC) is set in an image or on a device.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum FeatureSetting {
    /// The processor has no such feature.
    Unsupported,
    /// The code works with the feature on or off (an image built without a setting).
    Any,
    On,
    Off,
}

impl FeatureSetting {
    /// `+`/`-` for a setting that is pinned, nothing otherwise.
    fn suffix(self) -> Option<char> {
        match self {
            FeatureSetting::On => Some('+'),
            FeatureSetting::Off => Some('-'),
            FeatureSetting::Any | FeatureSetting::Unsupported => None,
        }
    }

    /// Whether code built with `self` may run where the feature is `device`: a pinned
    /// setting needs the same setting on the device; anything else runs everywhere.
    fn accepts(self, device: FeatureSetting) -> bool {
        match self {
            FeatureSetting::On | FeatureSetting::Off => device == self,
            FeatureSetting::Any | FeatureSetting::Unsupported => true,
        }
    }
}

/// A processor and its feature settings, as in LLVM's target IDs (`gfx90a:sramecc+:xnack-`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TargetId {
    pub processor: String,
    pub xnack: FeatureSetting,
    pub sramecc: FeatureSetting,
}

/// `EF_AMDGPU_MACH`: the processor field of `e_flags`.
pub const EF_AMDGPU_MACH: u32 = 0xff;
/// Code object v3 feature bits (set: on, clear: off).
pub const EF_AMDGPU_FEATURE_XNACK_V3: u32 = 0x100;
pub const EF_AMDGPU_FEATURE_SRAMECC_V3: u32 = 0x200;
/// Code object v4 and later feature fields.
pub const EF_AMDGPU_FEATURE_XNACK_V4: u32 = 0x300;
pub const EF_AMDGPU_FEATURE_XNACK_ANY_V4: u32 = 0x100;
pub const EF_AMDGPU_FEATURE_XNACK_OFF_V4: u32 = 0x200;
pub const EF_AMDGPU_FEATURE_XNACK_ON_V4: u32 = 0x300;
pub const EF_AMDGPU_FEATURE_SRAMECC_V4: u32 = 0xc00;
pub const EF_AMDGPU_FEATURE_SRAMECC_ANY_V4: u32 = 0x400;
pub const EF_AMDGPU_FEATURE_SRAMECC_OFF_V4: u32 = 0x800;
pub const EF_AMDGPU_FEATURE_SRAMECC_ON_V4: u32 = 0xc00;
/// Code object v6: the version of a generic processor's code (`gfx9-4-generic` etc.).
pub const EF_AMDGPU_GENERIC_VERSION: u32 = 0xff00_0000;
pub const EF_AMDGPU_GENERIC_VERSION_OFFSET: u32 = 24;

/// `EI_ABIVERSION` values of `ELFOSABI_AMDGPU_HSA` code objects.
pub const ELFABIVERSION_AMDGPU_HSA_V2: u8 = 0;
pub const ELFABIVERSION_AMDGPU_HSA_V3: u8 = 1;
pub const ELFABIVERSION_AMDGPU_HSA_V4: u8 = 2;
pub const ELFABIVERSION_AMDGPU_HSA_V5: u8 = 3;
pub const ELFABIVERSION_AMDGPU_HSA_V6: u8 = 4;

/// Whether a processor has XNACK; one this table does not know may have it.
fn has_xnack(processor: Option<&Processor>) -> bool {
    match processor {
        Some(p) => p.has_xnack,
        None => true,
    }
}

/// Whether a processor has SRAMECC; one this table does not know may have it.
fn has_sramecc(processor: Option<&Processor>) -> bool {
    match processor {
        Some(p) => p.has_sramecc,
        None => true,
    }
}

impl TargetId {
    /// A target with no pinned features: `Any` for the features the processor has (all of
    /// them for a processor this table does not know), `Unsupported` for the others.
    pub fn new(processor: &str) -> TargetId {
        let known = processor_by_name(processor);
        let setting = |has: bool| {
            if has {
                FeatureSetting::Any
            } else {
                FeatureSetting::Unsupported
            }
        };
        TargetId {
            processor: processor.to_owned(),
            xnack: setting(has_xnack(known)),
            sramecc: setting(has_sramecc(known)),
        }
    }

    /// Parses a target ID: `gfx90a`, `gfx90a:xnack+`, `gfx90a:sramecc-:xnack+` (features in
    /// any order), or a full HSA ISA name, `amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-`.
    /// Features not named are `Any` (or `Unsupported` where the processor has none). `None`
    /// for anything else: an unknown feature, a feature named twice, a feature that the
    /// (known) processor lacks, or a processor name that is not `gfx...`.
    pub fn parse(text: &str) -> Option<TargetId> {
        let text = text.trim();
        let id = match text.split_once("--") {
            Some((triple, id)) => {
                let arch = triple.split('-').next().unwrap_or("");
                if !(arch.starts_with("amdgcn") || arch.starts_with("amdgpu")) {
                    return None;
                }
                id
            }
            None => text,
        };
        let mut parts = id.split(':');
        let processor = parts.next()?;
        let well_formed = processor.starts_with("gfx")
            && processor.len() > 3
            && processor
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
        if !well_formed {
            return None;
        }
        let known = processor_by_name(processor);
        let mut target = TargetId::new(processor);
        let (mut saw_xnack, mut saw_sramecc) = (false, false);
        for feature in parts {
            let (name, setting) = if let Some(name) = feature.strip_suffix('+') {
                (name, FeatureSetting::On)
            } else if let Some(name) = feature.strip_suffix('-') {
                (name, FeatureSetting::Off)
            } else {
                return None;
            };
            match name {
                "xnack" if !saw_xnack && has_xnack(known) => {
                    saw_xnack = true;
                    target.xnack = setting;
                }
                "sramecc" if !saw_sramecc && has_sramecc(known) => {
                    saw_sramecc = true;
                    target.sramecc = setting;
                }
                _ => return None,
            }
        }
        Some(target)
    }

    /// The target of a code object from its ELF header: `e_flags` and `EI_ABIVERSION`
    /// (1 = code object v3 ... 4 = v6).
    pub fn from_elf_flags(e_flags: u32, abi_version: u8) -> Result<TargetId, String> {
        let mach = e_flags & EF_AMDGPU_MACH;
        let processor = match processor_by_mach(mach) {
            Some(p) => p,
            None if mach == 0 => {
                return Err("the ELF flags name no processor (EF_AMDGPU_MACH is 0)".into())
            }
            None if mach < 0x20 => {
                return Err(format!(
                    "the ELF flags name an R600-family processor (EF_AMDGPU_MACH {mach:#x}), \
                     which HSA does not run"
                ))
            }
            None => {
                return Err(format!(
                    "the ELF flags name a processor this runtime does not know \
                     (EF_AMDGPU_MACH {mach:#x})"
                ))
            }
        };
        let (xnack, sramecc) = match abi_version {
            ELFABIVERSION_AMDGPU_HSA_V2 => {
                return Err(
                    "a code object v2 image, which this runtime does not load (v3 to v6 are \
                     supported; rebuild with a newer compiler)"
                        .into(),
                )
            }
            ELFABIVERSION_AMDGPU_HSA_V3 => {
                // v3 has one bit per feature: set means on, clear means off (or absent).
                let v3 = |has: bool, bit: u32| match (has, e_flags & bit != 0) {
                    (false, _) => FeatureSetting::Unsupported,
                    (true, true) => FeatureSetting::On,
                    (true, false) => FeatureSetting::Off,
                };
                (
                    v3(processor.has_xnack, EF_AMDGPU_FEATURE_XNACK_V3),
                    v3(processor.has_sramecc, EF_AMDGPU_FEATURE_SRAMECC_V3),
                )
            }
            ELFABIVERSION_AMDGPU_HSA_V4..=ELFABIVERSION_AMDGPU_HSA_V6 => {
                let xnack = match e_flags & EF_AMDGPU_FEATURE_XNACK_V4 {
                    EF_AMDGPU_FEATURE_XNACK_ANY_V4 => FeatureSetting::Any,
                    EF_AMDGPU_FEATURE_XNACK_OFF_V4 => FeatureSetting::Off,
                    EF_AMDGPU_FEATURE_XNACK_ON_V4 => FeatureSetting::On,
                    _ => FeatureSetting::Unsupported,
                };
                let sramecc = match e_flags & EF_AMDGPU_FEATURE_SRAMECC_V4 {
                    EF_AMDGPU_FEATURE_SRAMECC_ANY_V4 => FeatureSetting::Any,
                    EF_AMDGPU_FEATURE_SRAMECC_OFF_V4 => FeatureSetting::Off,
                    EF_AMDGPU_FEATURE_SRAMECC_ON_V4 => FeatureSetting::On,
                    _ => FeatureSetting::Unsupported,
                };
                (xnack, sramecc)
            }
            other => {
                return Err(format!(
                    "an unknown code object version (EI_ABIVERSION {other}, code object v{}); \
                     this runtime loads v3 to v6",
                    u32::from(other) + 2
                ))
            }
        };
        Ok(TargetId {
            processor: processor.name.to_owned(),
            xnack,
            sramecc,
        })
    }

    /// Whether an image built for `self` can run on a device whose ISA is `device`: the
    /// processors must be the same, and a feature the image pins (`+`/`-`) must be set the
    /// same way on the device; an image that leaves a feature open (`Any`) runs either way.
    pub fn runs_on(&self, device: &TargetId) -> bool {
        self.processor == device.processor
            && self.xnack.accepts(device.xnack)
            && self.sramecc.accepts(device.sramecc)
    }

    /// The HSA ISA name of this target, `amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-`.
    pub fn isa_name(&self) -> String {
        format!("amdgcn-amd-amdhsa--{self}")
    }

    /// This target with only the features that `image` pins, for messages: the part of a
    /// device's ISA that decided against the image.
    pub(crate) fn restricted_to(&self, image: &TargetId) -> TargetId {
        let keep = |mine: FeatureSetting, theirs: FeatureSetting| {
            if theirs.suffix().is_some() {
                mine
            } else {
                FeatureSetting::Any
            }
        };
        TargetId {
            processor: self.processor.clone(),
            xnack: keep(self.xnack, image.xnack),
            sramecc: keep(self.sramecc, image.sramecc),
        }
    }
}

impl fmt::Display for TargetId {
    /// `gfx90a`, `gfx90a:xnack+`, `gfx90a:sramecc+:xnack-`: features in LLVM's canonical
    /// (alphabetical) order, only those set to on or off.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.processor)?;
        if let Some(sign) = self.sramecc.suffix() {
            write!(f, ":sramecc{sign}")?;
        }
        if let Some(sign) = self.xnack.suffix() {
            write!(f, ":xnack{sign}")?;
        }
        Ok(())
    }
}
