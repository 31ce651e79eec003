//! What a device image is, read without the driver: a cubin (an `EM_CUDA` ELF) with the SM
//! version it was built for, or PTX text for the driver to compile. Kernel and global lookups
//! and the initial values of globals (kernel environments) come from the cubin's ELF symbols.

use object::elf;
use object::read::elf::{ElfFile64, FileHeader, SectionHeader, Sym};
use object::{Endianness, Object, ObjectSection, ObjectSymbol};
use std::fmt;

/// An SM architecture, e.g. 90 for `sm_90`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct SmVersion(pub u32);

impl SmVersion {
    pub fn from_capability(major: i32, minor: i32) -> SmVersion {
        SmVersion((major.max(0) * 10 + minor.max(0)) as u32)
    }
    pub fn major(self) -> u32 {
        self.0 / 10
    }
    pub fn minor(self) -> u32 {
        self.0 % 10
    }
    /// Parses `sm_90` (also `sm_90a`).
    pub fn parse(text: &str) -> Option<SmVersion> {
        let digits: String = text
            .strip_prefix("sm_")?
            .chars()
            .take_while(|c| c.is_ascii_digit())
            .collect();
        digits.parse().ok().map(SmVersion)
    }
}

impl fmt::Display for SmVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sm_{}", self.0)
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ImageKind {
    /// Machine code for one architecture.
    Cubin { sm: SmVersion },
    /// PTX, compiled by the driver when loaded; `target` is its `.target` line.
    Ptx { target: Option<SmVersion> },
}

/// `EI_ABIVERSION` of cubins whose `e_flags` keep the SM in bits 0-7 (CUDA up to 12.x) and in
/// bits 8-15 (the newer layout).
const CUDA_ABI_V1: u8 = 7;
const CUDA_ABI_V2: u8 = 8;

/// Says what `bytes` is, or why it is not an NVIDIA image.
pub fn classify(bytes: &[u8]) -> Result<ImageKind, String> {
    if bytes.starts_with(b"\x7fELF") {
        let header = elf::FileHeader64::<Endianness>::parse(bytes)
            .map_err(|e| format!("not a valid 64-bit ELF image: {e}"))?;
        let endian = header
            .endian()
            .map_err(|e| format!("not a valid ELF image: {e}"))?;
        let machine = header.e_machine(endian);
        if machine != elf::EM_CUDA {
            return Err(format!(
                "an ELF image for machine {machine}, not an NVIDIA cubin (EM_CUDA, {})",
                elf::EM_CUDA
            ));
        }
        let flags = header.e_flags(endian);
        let sm = match header.e_ident().abi_version {
            CUDA_ABI_V2 => (flags >> 8) & 0xff,
            CUDA_ABI_V1 => flags & 0xff,
            other => {
                return Err(format!(
                    "a cubin with ELF ABI version {other}, which this plugin does not know"
                ))
            }
        };
        if sm == 0 {
            return Err("a cubin that names no SM architecture in its ELF flags".into());
        }
        return Ok(ImageKind::Cubin { sm: SmVersion(sm) });
    }
    if let Some(text) = ptx_text(bytes) {
        let target = text
            .lines()
            .map(str::trim)
            .find_map(|l| l.strip_prefix(".target"))
            .and_then(|rest| rest.split([',', ' ', '\t']).find_map(SmVersion::parse));
        return Ok(ImageKind::Ptx { target });
    }
    Err("neither a cubin nor PTX".into())
}

/// The image as PTX text, if it is PTX (text with a `.version` directive).
fn ptx_text(bytes: &[u8]) -> Option<&str> {
    let text = std::str::from_utf8(bytes.strip_suffix(&[0]).unwrap_or(bytes)).ok()?;
    text.lines()
        .any(|l| l.trim_start().starts_with(".version"))
        .then_some(text)
}

/// Whether a device of architecture `device` runs an image of `kind`; `Err` says why not,
/// naming both architectures.
pub fn compatible(kind: &ImageKind, device: SmVersion) -> Result<(), String> {
    match *kind {
        // A cubin runs on the same major architecture at the same or a higher minor version
        // (LLVM's rule, and the driver's).
        ImageKind::Cubin { sm } if sm.major() == device.major() && sm.minor() <= device.minor() => {
            Ok(())
        }
        ImageKind::Cubin { sm } if sm > device => Err(format!(
            "the image was built for {sm}, newer than the device ({device}); rebuild with \
             --offload-arch={device}"
        )),
        ImageKind::Cubin { sm } => Err(format!(
            "the image was built for {sm} and the device is {device}; cubins run only on their \
             own major architecture: rebuild with --offload-arch={device}"
        )),
        ImageKind::Ptx { target: Some(t) } if t > device => Err(format!(
            "the PTX targets {t}, newer than the device ({device})"
        )),
        ImageKind::Ptx { .. } => Ok(()),
    }
}

/// A symbol of a cubin.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImageSymbol {
    pub name: String,
    pub is_function: bool,
    pub size: u64,
    /// The symbol's initial bytes, if its section has contents and it is small (kernel
    /// environments and other runtime descriptors; large arrays are not kept).
    pub initial: Option<Vec<u8>>,
}

/// The defined symbols of a cubin (kernels, globals), for lookups and initial values.
#[derive(Clone, Debug, Default)]
pub struct SymbolTable {
    symbols: Vec<ImageSymbol>,
}

/// Largest global whose initial bytes are kept.
const MAX_KEPT_INITIAL: u64 = 4096;
/// NVIDIA's symbol type for variables in `.nv.global*`/`.nv.constant*` sections.
const STT_CUDA_OBJECT: u8 = 13;
/// Sections that occupy no file space (`.nv.global`, `.nv.shared.*`).
const SHT_CUDA_NOBITS: [u32; 2] = [elf::SHT_LOPROC + 7, elf::SHT_LOPROC + 10];

impl SymbolTable {
    /// Reads the symbols of a cubin; PTX has none (the driver resolves its names).
    pub fn read(bytes: &[u8]) -> Result<SymbolTable, String> {
        if !bytes.starts_with(b"\x7fELF") {
            return Ok(SymbolTable::default());
        }
        let file = ElfFile64::<Endianness>::parse(bytes)
            .map_err(|e| format!("the cubin's ELF structure is invalid: {e}"))?;
        let endian = file.endian();
        let mut symbols = Vec::new();
        for symbol in file.symbols() {
            let raw = symbol.elf_symbol();
            let kind = raw.st_type();
            let is_function = kind == elf::STT_FUNC;
            if !(is_function || kind == elf::STT_OBJECT || kind == STT_CUDA_OBJECT)
                || raw.st_shndx(endian) == elf::SHN_UNDEF
            {
                continue;
            }
            let Ok(name) = symbol.name() else { continue };
            let size = raw.st_size(endian);
            let initial = symbol
                .section_index()
                .and_then(|i| file.section_by_index(i).ok())
                .and_then(|section| {
                    let header = section.elf_section_header();
                    let kind = header.sh_type(endian);
                    if kind == elf::SHT_NOBITS || SHT_CUDA_NOBITS.contains(&kind) {
                        return None;
                    }
                    let (offset, length) = section.file_range()?;
                    let start = offset.checked_add(raw.st_value(endian))?;
                    let end = start.checked_add(size)?;
                    let fits = end <= offset + length && end as usize <= bytes.len();
                    (fits && size <= MAX_KEPT_INITIAL)
                        .then(|| bytes[start as usize..end as usize].to_vec())
                });
            symbols.push(ImageSymbol {
                name: name.to_owned(),
                is_function,
                size,
                initial,
            });
        }
        Ok(SymbolTable { symbols })
    }

    pub fn is_empty(&self) -> bool {
        self.symbols.is_empty()
    }

    pub fn find(&self, name: &str) -> Option<&ImageSymbol> {
        self.symbols.iter().find(|s| s.name == name)
    }

    pub fn functions(&self) -> impl Iterator<Item = &ImageSymbol> {
        self.symbols.iter().filter(|s| s.is_function)
    }

    pub fn globals(&self) -> impl Iterator<Item = &ImageSymbol> {
        self.symbols.iter().filter(|s| !s.is_function)
    }

    /// Names starting with `prefix` (constructor and destructor tables).
    pub fn with_prefix<'a>(&'a self, prefix: &'a str) -> impl Iterator<Item = &'a ImageSymbol> {
        self.symbols
            .iter()
            .filter(move |s| s.name.starts_with(prefix))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cubin_header(abi: u8, flags: u32, machine: u16) -> Vec<u8> {
        let mut h = vec![0u8; 64];
        h[..4].copy_from_slice(b"\x7fELF");
        h[4] = 2; // 64-bit
        h[5] = 1; // little endian
        h[6] = 1;
        h[7] = 0x33; // CUDA OS/ABI
        h[8] = abi;
        h[16..18].copy_from_slice(&1u16.to_le_bytes()); // ET_REL
        h[18..20].copy_from_slice(&machine.to_le_bytes());
        h[20..24].copy_from_slice(&1u32.to_le_bytes());
        h[48..52].copy_from_slice(&flags.to_le_bytes());
        h[52..54].copy_from_slice(&64u16.to_le_bytes());
        h[58..60].copy_from_slice(&64u16.to_le_bytes());
        h
    }

    #[test]
    fn reads_the_sm_from_both_flag_layouts() {
        assert_eq!(
            classify(&cubin_header(7, 0x5a055a, elf::EM_CUDA)),
            Ok(ImageKind::Cubin { sm: SmVersion(90) })
        );
        assert_eq!(
            classify(&cubin_header(8, 0x6400, elf::EM_CUDA)),
            Ok(ImageKind::Cubin { sm: SmVersion(100) })
        );
        let err = classify(&cubin_header(7, 0x5a, elf::EM_X86_64)).unwrap_err();
        assert!(err.contains("not an NVIDIA cubin"), "{err}");
        assert!(classify(&cubin_header(9, 0x5a, elf::EM_CUDA)).is_err());
        assert!(classify(b"\x7fELF\x02").is_err());
        assert_eq!(classify(b"garbage").unwrap_err(), "neither a cubin nor PTX");
    }

    #[test]
    fn reads_the_ptx_target() {
        let ptx = b"//\n.version 8.0\n.target sm_80, debug\n.address_size 64\n\0";
        assert_eq!(
            classify(ptx),
            Ok(ImageKind::Ptx {
                target: Some(SmVersion(80))
            })
        );
    }

    #[test]
    fn applies_the_architecture_rules() {
        let sm = |n| ImageKind::Cubin { sm: SmVersion(n) };
        assert!(compatible(&sm(90), SmVersion(90)).is_ok());
        assert!(compatible(&sm(80), SmVersion(86)).is_ok());
        let newer = compatible(&sm(90), SmVersion(80)).unwrap_err();
        assert!(
            newer.contains("sm_90") && newer.contains("sm_80"),
            "{newer}"
        );
        assert!(newer.contains("newer"), "{newer}");
        let older_major = compatible(&sm(80), SmVersion(90)).unwrap_err();
        assert!(
            older_major.contains("own major architecture"),
            "{older_major}"
        );
        let ptx = |t| ImageKind::Ptx {
            target: Some(SmVersion(t)),
        };
        assert!(compatible(&ptx(70), SmVersion(90)).is_ok());
        assert!(compatible(&ptx(90), SmVersion(80)).is_err());
    }
}
