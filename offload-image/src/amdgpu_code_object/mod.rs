//! AMDGPU device images (HSA code objects) read without the driver: which target an image
//! is built for and whether a device runs it, the kernels its `NT_AMDGPU_METADATA` note
//! describes, and its kernel and global symbols.
//!
//! A code object is an `EM_AMDGPU` ELF64 shared object with OS/ABI `ELFOSABI_AMDGPU_HSA`;
//! `EI_ABIVERSION` + 2 is the code object version (3 to 6 are read), `e_flags` hold the
//! processor (`EF_AMDGPU_MACH`) and the XNACK/SRAMECC settings.
//!
//! Public API:
//! ```text
//! enum FeatureSetting { Unsupported, Any, On, Off }
//! struct TargetId { processor: String, xnack: FeatureSetting, sramecc: FeatureSetting }
//!   TargetId::new(processor) -> TargetId                 // no pinned features
//!   TargetId::parse(text) -> Option<TargetId>             // "gfx90a", "gfx90a:xnack+",
//!       // "gfx90a:sramecc-:xnack+", "amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-"
//!   TargetId::from_elf_flags(e_flags, abi_version) -> Result<TargetId, String>
//!   TargetId::runs_on(&self, device: &TargetId) -> bool  // image target on device ISA
//!   TargetId::isa_name(&self) -> String                   // "amdgcn-amd-amdhsa--gfx90a:xnack+"
//!   impl Display: "gfx90a:sramecc+:xnack-" (only features set on or off)
//! struct CodeObject                                       // owns an (aligned) copy
//!   CodeObject::parse(bytes) -> Result<CodeObject, String>
//!   bytes() -> &[u8]; target() -> &TargetId; code_object_version() -> u32 (3..=6)
//!   e_flags() -> u32; generic_version() -> Option<u32>  // v6 generic processors
//!   metadata_version() -> Option<(u32, u32)>; metadata_target() -> Option<&str>
//!   kernels() -> &[KernelMetadata]
//!   kernel(name) -> Option<&KernelMetadata>              // by .name, if its .kd symbol exists
//!   kernel_descriptor(name) -> Option<SymbolInfo>        // the kernel's .kd symbol
//!   symbol(name) -> Option<SymbolInfo>; symbols() -> iterator of &SymbolInfo
//!   symbol_bytes(name) -> Option<&[u8]>                  // initial bytes; None for .bss
//! struct KernelMetadata { name, symbol, kernarg_segment_size, kernarg_segment_align,
//!   group_segment_fixed_size, private_segment_fixed_size, max_flat_workgroup_size,
//!   wavefront_size, sgpr_count, vgpr_count, agpr_count, sgpr_spill_count,
//!   vgpr_spill_count: u32, uses_dynamic_stack: bool, reqd_workgroup_size,
//!   workgroup_size_hint: Option<[u32; 3]>, args: Vec<KernelArgument> }
//!   explicit_args_size() -> u32; implicit_args_offset() -> Option<u32>;
//!   arg(value_kind) -> Option<&KernelArgument>
//! struct KernelArgument { offset: u32, size: u32, value_kind: String, name: Option<String> }
//!   is_hidden() -> bool
//! struct SymbolInfo { name, address, size: u64, is_kernel_descriptor, is_object,
//!   is_function, is_global: bool, section: Option<String>, zero_initialized: bool,
//!   file_offset: Option<u64> }
//!   segments() -> Result<Vec<Segment>, String>           // PT_LOAD: what a loader places
//!   dynamic_relocations() -> Result<Vec<DynamicRelocation>, String>  // what it then patches
//! fn check_compatibility(image: &TargetId, device_isas: &[TargetId]) -> Result<(), String>
//! fn identify(bytes) -> Result<TargetId, String>         // from the ELF header alone
//! mod msgpack { enum Value; fn decode(bytes) -> Result<Value, String> }
//! ```

pub mod loading;
pub mod metadata;
pub mod msgpack;
pub mod symbols;
pub mod target_id;
#[cfg(any(test, feature = "test-images"))]
pub mod test_images;

#[cfg(test)]
mod tests;

pub use metadata::{KernelArgument, KernelMetadata};
pub use symbols::SymbolInfo;
pub use target_id::{FeatureSetting, TargetId};

use object::elf;
use object::read::elf::{FileHeader, ProgramHeader, SectionHeader};
use object::LittleEndian;
use symbols::Symbols;

/// `EM_AMDGPU`.
pub const EM_AMDGPU: u16 = 224;
/// `ELFOSABI_AMDGPU_HSA`.
pub const ELFOSABI_AMDGPU_HSA: u8 = 64;
const ELFOSABI_AMDGPU_PAL: u8 = 65;
const ELFOSABI_AMDGPU_MESA3D: u8 = 66;

/// A code object, read: its target, kernels and symbols, and a copy of its bytes.
#[derive(Clone, Debug)]
pub struct CodeObject {
    bytes: AlignedBytes,
    target: TargetId,
    version: u32,
    e_flags: u32,
    metadata: metadata::Metadata,
    symbols: Symbols,
}

/// What the ELF header says, checked.
struct HeaderInfo {
    target: TargetId,
    version: u32,
    e_flags: u32,
}

/// Whether `bytes` is an AMDGPU code object at all, from its ELF header alone: the target
/// it is built for, or why it is not one.
pub fn identify(bytes: &[u8]) -> Result<TargetId, String> {
    read_header(bytes).map(|h| h.target)
}

/// Whether the image can run on a device with these ISAs (HSA lists one or more per agent,
/// e.g. the exact processor and a generic one). `Err` says which target the image was
/// built for and which the device is.
pub fn check_compatibility(image: &TargetId, device_isas: &[TargetId]) -> Result<(), String> {
    if device_isas.iter().any(|isa| image.runs_on(isa)) {
        return Ok(());
    }
    let Some(device) = device_isas
        .iter()
        .find(|isa| isa.processor == image.processor)
        .or_else(|| device_isas.first())
    else {
        return Err(format!(
            "the image is built for {image}, and the device reports no ISA"
        ));
    };
    let all: Vec<String> = device_isas.iter().map(TargetId::isa_name).collect();
    let mut message = format!(
        "the image is built for {image}, the device is {} ({})",
        device.restricted_to(image),
        all.join(", ")
    );
    if device.processor != image.processor {
        message.push_str(&format!(
            "; code objects run only on the processor they are built for: rebuild with \
             --offload-arch={}",
            device.processor
        ));
    } else {
        message.push_str(&format!(
            "; an image built with xnack or sramecc on (+) or off (-) runs only where the \
             device has the same setting: rebuild with --offload-arch={} (runs with either) \
             or --offload-arch={device}",
            device.processor
        ));
        if image.xnack == FeatureSetting::On && device.xnack == FeatureSetting::Off {
            message.push_str(", or turn XNACK on with HSA_XNACK=1");
        }
    }
    Err(message)
}

/// Everything the plugin reads of a code object before the HSA runtime's loader, which trusts
/// it, sees it: its layout, then the code object itself; whether it suits a device, then,
/// is [`check_compatibility`] with the code object's target.
pub fn check(bytes: &[u8]) -> Result<CodeObject, String> {
    crate::elf_layout::check(bytes, crate::elf_layout::Addresses::Mapped)
        .map_err(|e| format!("the code object is damaged: {e}"))?;
    CodeObject::parse(bytes)
}

impl CodeObject {
    /// Reads a code object: its ELF header and target, the metadata note and the symbols.
    pub fn parse(bytes: &[u8]) -> Result<CodeObject, String> {
        let info = read_header(bytes)?;
        let bytes = AlignedBytes::copy(bytes);
        let data = bytes.as_slice();
        let header = elf::FileHeader64::<LittleEndian>::parse(data)
            .map_err(|e| format!("the ELF header is invalid: {e}"))?;
        let endian = LittleEndian;
        let sections = header.sections(endian, data).map_err(|e| {
            table_error(
                "section header table",
                header.e_shoff(endian),
                u64::from(header.e_shnum(endian)) * 64,
                data.len(),
                e,
            )
        })?;

        // The metadata note, from the note sections or, without section headers, from the
        // note segments.
        let mut note_desc: Option<&[u8]> = None;
        let mut saw_notes = false;
        for section in sections.iter() {
            let notes = section
                .notes(endian, data)
                .map_err(|e| format!("a note section is truncated or corrupt: {e}"))?;
            if let Some(notes) = notes {
                saw_notes = true;
                if let Some(desc) = find_metadata(notes)? {
                    note_desc = Some(desc);
                    break;
                }
            }
        }
        if note_desc.is_none() && sections.is_empty() {
            let segments = header.program_headers(endian, data).map_err(|e| {
                table_error(
                    "program header table",
                    header.e_phoff(endian),
                    u64::from(header.e_phnum(endian)) * 56,
                    data.len(),
                    e,
                )
            })?;
            for segment in segments {
                let notes = segment
                    .notes(endian, data)
                    .map_err(|e| format!("a note segment is truncated or corrupt: {e}"))?;
                if let Some(notes) = notes {
                    saw_notes = true;
                    if let Some(desc) = find_metadata(notes)? {
                        note_desc = Some(desc);
                        break;
                    }
                }
            }
        }
        let Some(desc) = note_desc else {
            return Err(format!(
                "the code object has no AMDGPU metadata note (NT_AMDGPU_METADATA, owner \
                 \"AMDGPU\"){}",
                if saw_notes {
                    "; its notes are all of other kinds"
                } else {
                    "; it has no notes"
                }
            ));
        };
        let metadata = metadata::parse(desc)
            .map_err(|e| format!("the AMDGPU metadata note is invalid: {e}"))?;
        let symbols = Symbols::read(data, header, &sections)?;
        Ok(CodeObject {
            target: info.target,
            version: info.version,
            e_flags: info.e_flags,
            metadata,
            symbols,
            bytes,
        })
    }

    /// The image, as given to [`CodeObject::parse`].
    pub fn bytes(&self) -> &[u8] {
        self.bytes.as_slice()
    }

    /// The target the image is built for, from its ELF flags.
    pub fn target(&self) -> &TargetId {
        &self.target
    }

    /// 3, 4, 5 or 6.
    pub fn code_object_version(&self) -> u32 {
        self.version
    }

    /// The ELF header's `e_flags`.
    pub fn e_flags(&self) -> u32 {
        self.e_flags
    }

    /// For a code object v6 built for a generic processor (`gfx10-3-generic`), the version
    /// of that generic target (`EF_AMDGPU_GENERIC_VERSION`).
    pub fn generic_version(&self) -> Option<u32> {
        let v = (self.e_flags & target_id::EF_AMDGPU_GENERIC_VERSION)
            >> target_id::EF_AMDGPU_GENERIC_VERSION_OFFSET;
        (self.version >= 6 && v != 0).then_some(v)
    }

    /// The metadata's `amdhsa.version` (`[1, 2]` for code object v5).
    pub fn metadata_version(&self) -> Option<(u32, u32)> {
        self.metadata.version
    }

    /// The metadata's `amdhsa.target` (`amdgcn-amd-amdhsa--gfx90a:xnack+`).
    pub fn metadata_target(&self) -> Option<&str> {
        self.metadata.target.as_deref()
    }

    /// The kernels of the metadata note, in its order.
    pub fn kernels(&self) -> &[KernelMetadata] {
        &self.metadata.kernels
    }

    /// The kernel of this name (without `.kd`), if the metadata describes it and its kernel
    /// descriptor symbol exists.
    pub fn kernel(&self, name: &str) -> Option<&KernelMetadata> {
        self.metadata
            .kernels
            .iter()
            .find(|k| k.name == name)
            .filter(|k| {
                self.symbols
                    .get(&k.symbol)
                    .is_some_and(|s| s.is_kernel_descriptor)
            })
    }

    /// The kernel descriptor symbol (`<name>.kd`) of the kernel of this name.
    pub fn kernel_descriptor(&self, name: &str) -> Option<SymbolInfo> {
        self.kernel(name).and_then(|k| self.symbol(&k.symbol))
    }

    /// A defined symbol: a kernel descriptor, a kernel function or a global variable.
    pub fn symbol(&self, name: &str) -> Option<SymbolInfo> {
        self.symbols.get(name).cloned()
    }

    /// All defined symbols.
    pub fn symbols(&self) -> impl Iterator<Item = &SymbolInfo> {
        self.symbols.iter()
    }

    /// A symbol's initial bytes in the image. `None` if there is no such symbol or it has
    /// no contents in the file (`zero_initialized`: its initial value is all zeros).
    pub fn symbol_bytes(&self, name: &str) -> Option<&[u8]> {
        let symbol = self.symbols.get(name)?;
        let start = usize::try_from(symbol.file_offset?).ok()?;
        let end = start.checked_add(usize::try_from(symbol.size).ok()?)?;
        self.bytes().get(start..end)
    }
}

/// The descriptor of the first `NT_AMDGPU_METADATA` note of owner "AMDGPU".
fn find_metadata<'d>(
    mut notes: object::read::elf::NoteIterator<'d, elf::FileHeader64<LittleEndian>>,
) -> Result<Option<&'d [u8]>, String> {
    while let Some(note) = notes
        .next()
        .map_err(|e| format!("a note is truncated or corrupt: {e}"))?
    {
        if note.name() == metadata::NOTE_OWNER
            && note.n_type(LittleEndian) == metadata::NT_AMDGPU_METADATA
        {
            return Ok(Some(note.desc()));
        }
    }
    Ok(None)
}

/// Says whether a header table lies past the end of the image, or else what is wrong.
fn table_error(what: &str, offset: u64, size: u64, len: usize, e: object::read::Error) -> String {
    let end = offset.saturating_add(size);
    if end > len as u64 {
        format!(
            "the code object is truncated: its {what} ends at byte {end}, the image has {len} \
             bytes"
        )
    } else {
        format!("the {what} is invalid: {e}")
    }
}

/// A machine for messages: its name and `e_machine` (with the constant's name where
/// common), e.g. "x86-64 (e_machine 62, EM_X86_64)".
fn machine_name(machine: u16) -> String {
    let (name, constant) = match machine {
        0 => ("no machine", "EM_NONE"),
        3 => ("x86", "EM_386"),
        8 => ("MIPS", "EM_MIPS"),
        20 => ("PowerPC", "EM_PPC"),
        21 => ("PowerPC64", "EM_PPC64"),
        22 => ("s390", "EM_S390"),
        40 => ("ARM", "EM_ARM"),
        62 => ("x86-64", "EM_X86_64"),
        183 => ("AArch64", "EM_AARCH64"),
        190 => ("NVIDIA CUDA", "EM_CUDA"),
        224 => ("AMDGPU", "EM_AMDGPU"),
        243 => ("RISC-V", "EM_RISCV"),
        247 => ("BPF", "EM_BPF"),
        258 => ("LoongArch", "EM_LOONGARCH"),
        _ => return format!("an unknown machine (e_machine {machine})"),
    };
    format!("{name} (e_machine {machine}, {constant})")
}

/// Checks the ELF header of a code object and reads its target and version.
fn read_header(bytes: &[u8]) -> Result<HeaderInfo, String> {
    if !bytes.starts_with(b"\x7fELF") {
        return Err(if bytes.starts_with(&[0x10, 0xff, 0x10, 0xad]) {
            "not an ELF file but an offload binary (clang-offload-packager output): extract \
             its images first"
                .into()
        } else if bytes.starts_with(b"__CLANG_OFFLOAD_BUNDLE__") {
            "not an ELF file but a clang offload bundle: unbundle it first".into()
        } else if bytes.len() < 4 {
            format!(
                "not an ELF file: {} bytes, too short for the ELF magic",
                bytes.len()
            )
        } else {
            "not an ELF file (no \\x7fELF magic)".into()
        });
    }
    if bytes.len() < 64 {
        return Err(format!(
            "the code object is truncated: {} bytes, less than an ELF64 header (64 bytes)",
            bytes.len()
        ));
    }
    let u16_at = |at: usize| u16::from_le_bytes([bytes[at], bytes[at + 1]]);
    let machine = u16_at(18);
    // e_ident: EI_CLASS (4), EI_DATA (5), EI_OSABI (7), EI_ABIVERSION (8).
    match (bytes[4], bytes[5]) {
        (elf::ELFCLASS64, elf::ELFDATA2LSB) => {}
        (elf::ELFCLASS32, _) => {
            return Err(format!(
                "a 32-bit ELF file for {}, not an AMDGPU code object (ELF64, EM_AMDGPU)",
                machine_name(machine)
            ))
        }
        (elf::ELFCLASS64, elf::ELFDATA2MSB) => {
            return Err(format!(
                "a big-endian ELF file for {}, not an AMDGPU code object",
                machine_name(u16::from_be_bytes([bytes[18], bytes[19]]))
            ))
        }
        (class, data) => {
            return Err(format!(
                "an ELF file with an invalid class ({class}) or data encoding ({data})"
            ))
        }
    }
    if machine != EM_AMDGPU {
        return Err(format!(
            "an ELF file for {}, not an AMDGPU code object (EM_AMDGPU, {EM_AMDGPU})",
            machine_name(machine)
        ));
    }
    let osabi = bytes[7];
    if osabi != ELFOSABI_AMDGPU_HSA {
        let name = match osabi {
            ELFOSABI_AMDGPU_PAL => "AMDGPU PAL",
            ELFOSABI_AMDGPU_MESA3D => "Mesa 3D",
            0 => "none (SYSV)",
            _ => "unknown",
        };
        return Err(format!(
            "an AMDGPU ELF file for OS/ABI {osabi} ({name}), not an HSA code object \
             (ELFOSABI_AMDGPU_HSA, {ELFOSABI_AMDGPU_HSA})"
        ));
    }
    let abi_version = bytes[8];
    let e_flags = u32::from_le_bytes([bytes[48], bytes[49], bytes[50], bytes[51]]);
    let target = TargetId::from_elf_flags(e_flags, abi_version)?;
    match u16_at(16) {
        elf::ET_DYN | elf::ET_EXEC => {}
        elf::ET_REL => {
            return Err(format!(
                "a relocatable AMDGPU object (ET_REL) for {target}, not a linked code object: \
                 link it (ld.lld -shared) first"
            ))
        }
        other => {
            return Err(format!(
                "an AMDGPU ELF file of type {other}, not a code object"
            ))
        }
    }
    Ok(HeaderInfo {
        target,
        version: u32::from(abi_version) + 2,
        e_flags,
    })
}

/// A copy of the image kept 8-byte aligned, as the ELF reader needs for its tables.
#[derive(Clone)]
struct AlignedBytes {
    words: Vec<u64>,
    len: usize,
}

impl AlignedBytes {
    fn copy(bytes: &[u8]) -> AlignedBytes {
        let mut words = vec![0u64; bytes.len().div_ceil(8)];
        for (word, chunk) in words.iter_mut().zip(bytes.chunks(8)) {
            let mut buf = [0u8; 8];
            buf[..chunk.len()].copy_from_slice(chunk);
            *word = u64::from_ne_bytes(buf);
        }
        AlignedBytes {
            words,
            len: bytes.len(),
        }
    }

    fn as_slice(&self) -> &[u8] {
        // Safety: `words` holds at least `len` initialized bytes, and u8 has no alignment
        // or validity requirements; the slice borrows `self`.
        unsafe { std::slice::from_raw_parts(self.words.as_ptr().cast::<u8>(), self.len) }
    }
}

impl std::fmt::Debug for AlignedBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "<{} bytes>", self.len)
    }
}
