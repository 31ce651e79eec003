//! What a loader places and patches of a code object: its loadable segments (`PT_LOAD`),
//! which ROCr's loader puts in one block of the agent's memory, and the dynamic relocations
//! it then applies there (a pointer initialised with another variable's address, say, whose
//! place the linker could not know).

use super::CodeObject;
use object::elf;
use object::read::elf::{FileHeader, ProgramHeader, Rela, SectionHeader, Sym};
use object::LittleEndian;

type Header = elf::FileHeader64<LittleEndian>;

/// A loadable segment: `memory_size` bytes at `address` (relative to where the block is
/// placed), of which the first `file_size` come from the image at `file_offset`, the rest zero.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    pub address: u64,
    pub memory_size: u64,
    pub file_offset: u64,
    pub file_size: u64,
}

/// `R_AMDGPU_ABS32_LO`: the low 32 bits of S + A.
pub const R_AMDGPU_ABS32_LO: u32 = 1;
/// `R_AMDGPU_ABS32_HI`: the high 32 bits of S + A.
pub const R_AMDGPU_ABS32_HI: u32 = 2;
/// `R_AMDGPU_ABS64`: S + A.
pub const R_AMDGPU_ABS64: u32 = 3;
/// `R_AMDGPU_ABS32`: S + A, 32 bits.
pub const R_AMDGPU_ABS32: u32 = 6;
/// `R_AMDGPU_RELATIVE64`: B + A, where the block is placed plus the addend.
pub const R_AMDGPU_RELATIVE64: u32 = 13;

/// A dynamic relocation: at `offset` (relative to the block), of ELF type `kind`, against
/// `symbol` (none for a relative one) with `addend`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DynamicRelocation {
    pub offset: u64,
    pub kind: u32,
    pub symbol: Option<RelocationSymbol>,
    pub addend: i64,
}

/// The symbol a relocation names: its name, and its address in the code object where the
/// code object defines it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RelocationSymbol {
    pub name: String,
    pub address: Option<u64>,
    /// A weak symbol the code object does not define: its address is 0 when nothing else does.
    pub weak: bool,
}

impl DynamicRelocation {
    /// How many bytes the relocation writes, for the kinds a loader applies.
    pub fn width(&self) -> Option<usize> {
        match self.kind {
            R_AMDGPU_ABS64 | R_AMDGPU_RELATIVE64 => Some(8),
            R_AMDGPU_ABS32_LO | R_AMDGPU_ABS32_HI | R_AMDGPU_ABS32 => Some(4),
            _ => None,
        }
    }
}

impl CodeObject {
    /// The loadable segments, in the order of the program headers.
    pub fn segments(&self) -> Result<Vec<Segment>, String> {
        let data = self.bytes();
        let header = Header::parse(data).map_err(|e| format!("the ELF header is invalid: {e}"))?;
        let endian = LittleEndian;
        let headers = header
            .program_headers(endian, data)
            .map_err(|e| format!("the program header table is invalid: {e}"))?;
        let mut segments = Vec::new();
        for segment in headers.iter().filter(|p| p.p_type(endian) == elf::PT_LOAD) {
            let found = Segment {
                address: segment.p_vaddr(endian),
                memory_size: segment.p_memsz(endian),
                file_offset: segment.p_offset(endian),
                file_size: segment.p_filesz(endian),
            };
            let in_file = found
                .file_offset
                .checked_add(found.file_size)
                .is_some_and(|end| end <= data.len() as u64);
            if found.file_size > found.memory_size || !in_file {
                return Err(format!(
                    "a loadable segment at {:#x} ({} bytes, {} from the file at {:#x}) does not \
                     fit its image of {} bytes",
                    found.address,
                    found.memory_size,
                    found.file_size,
                    found.file_offset,
                    data.len()
                ));
            }
            segments.push(found);
        }
        Ok(segments)
    }

    /// The dynamic relocations: those of the allocated `SHT_RELA` sections (`.rela.dyn`), each
    /// with the symbol it names read from its linked symbol table.
    pub fn dynamic_relocations(&self) -> Result<Vec<DynamicRelocation>, String> {
        let data = self.bytes();
        let header = Header::parse(data).map_err(|e| format!("the ELF header is invalid: {e}"))?;
        let endian = LittleEndian;
        let sections = header
            .sections(endian, data)
            .map_err(|e| format!("the section header table is invalid: {e}"))?;
        let mut relocations = Vec::new();
        for section in sections.iter() {
            if section.sh_type(endian) != elf::SHT_RELA
                || section.sh_flags(endian) & u64::from(elf::SHF_ALLOC) == 0
            {
                continue;
            }
            let Some((entries, link)) = section
                .rela(endian, data)
                .map_err(|e| format!("a relocation section is invalid: {e}"))?
            else {
                continue;
            };
            let symbols = if entries.iter().any(|r| r.r_sym(endian, false) != 0) {
                Some(
                    sections
                        .symbol_table_by_index(endian, data, link)
                        .map_err(|e| format!("a relocation section's symbols are invalid: {e}"))?,
                )
            } else {
                None
            };
            for entry in entries {
                let index = entry.r_sym(endian, false);
                let symbol = match (&symbols, index) {
                    (_, 0) => None,
                    (None, _) => unreachable!("a table is read when any entry names a symbol"),
                    (Some(table), index) => {
                        let sym = table
                            .symbol(object::SymbolIndex(index as usize))
                            .map_err(|e| format!("a relocation names a missing symbol: {e}"))?;
                        let name = table
                            .symbol_name(endian, sym)
                            .map_err(|e| format!("a relocation's symbol has no name: {e}"))?;
                        let defined = sym.st_shndx(endian) != elf::SHN_UNDEF;
                        Some(RelocationSymbol {
                            name: String::from_utf8_lossy(name).into_owned(),
                            address: defined.then(|| sym.st_value(endian)),
                            weak: sym.st_bind() == elf::STB_WEAK,
                        })
                    }
                };
                relocations.push(DynamicRelocation {
                    offset: entry.r_offset(endian),
                    kind: entry.r_type(endian, false),
                    symbol,
                    addend: entry.r_addend(endian),
                });
            }
        }
        Ok(relocations)
    }
}
