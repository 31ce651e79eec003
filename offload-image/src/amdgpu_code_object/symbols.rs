//! The symbols of a code object: kernel descriptors (`<kernel>.kd`), kernel functions and
//! global variables, from `.dynsym` (what the HSA loader exports) and `.symtab`.

use object::elf;
use object::read::elf::{FileHeader, SectionHeader, SectionTable, Sym};
use object::LittleEndian;
use std::collections::HashMap;

type Header = elf::FileHeader64<LittleEndian>;

/// A defined symbol of a code object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SymbolInfo {
    pub name: String,
    /// `st_value`: the symbol's address in the code object, relative to where the loader
    /// places it.
    pub address: u64,
    /// `st_size` in bytes (64 for a kernel descriptor, 4 for an `int`).
    pub size: u64,
    /// A kernel descriptor: an object named `<kernel>.kd`.
    pub is_kernel_descriptor: bool,
    /// A data object (`STT_OBJECT`; kernel descriptors are objects too).
    pub is_object: bool,
    /// Code (`STT_FUNC`, or the old `STT_AMDGPU_HSA_KERNEL`).
    pub is_function: bool,
    /// Visible outside the code object (global or weak binding): what the HSA loader can
    /// look up. Local symbols come only from `.symtab`.
    pub is_global: bool,
    /// The name of the symbol's section (`.rodata`, `.bss`, ...); `None` for absolute
    /// symbols.
    pub section: Option<String>,
    /// In a section without file contents (`SHT_NOBITS`, `.bss`): the initial value is zero.
    pub zero_initialized: bool,
    /// Where the symbol's initial bytes are in the code object, when it has file contents
    /// that lie wholly inside the file.
    pub file_offset: Option<u64>,
}

/// A symbol's section, with the table that names it.
type SectionRef<'a, 'd> = (
    &'a SectionTable<'d, Header, &'d [u8]>,
    &'d elf::SectionHeader64<LittleEndian>,
);

/// `STT_AMDGPU_HSA_KERNEL`, the kernel symbol type of code object v2.
const STT_AMDGPU_HSA_KERNEL: u8 = 10;

/// The defined symbols, found by name.
#[derive(Clone, Debug, Default)]
pub struct Symbols {
    list: Vec<SymbolInfo>,
    by_name: HashMap<String, usize>,
}

impl Symbols {
    /// Reads `.dynsym` and `.symtab`. A name in both is taken from `.dynsym`; a global
    /// symbol wins over a local one of the same name.
    pub fn read<'d>(
        data: &'d [u8],
        header: &Header,
        sections: &SectionTable<'d, Header, &'d [u8]>,
    ) -> Result<Symbols, String> {
        let endian = header
            .endian()
            .map_err(|e| format!("the ELF header is invalid: {e}"))?;
        let mut symbols = Symbols::default();
        for (kind, label) in [(elf::SHT_DYNSYM, ".dynsym"), (elf::SHT_SYMTAB, ".symtab")] {
            let table = sections
                .symbols(endian, data, kind)
                .map_err(|e| format!("the symbol table {label} is unreadable: {e}"))?;
            for (index, sym) in table.enumerate() {
                let Ok(Some(section_index)) = table.symbol_section(endian, sym, index) else {
                    // Undefined, absolute or common symbols, or a bad extended index.
                    if sym.st_shndx(endian) == elf::SHN_ABS {
                        if let Some(info) = symbol(&table, endian, sym, None, data) {
                            symbols.add(info);
                        }
                    }
                    continue;
                };
                let Ok(section) = sections.section(section_index) else {
                    continue;
                };
                if let Some(info) = symbol(&table, endian, sym, Some((sections, section)), data) {
                    symbols.add(info);
                }
            }
        }
        Ok(symbols)
    }

    fn add(&mut self, info: SymbolInfo) {
        match self.by_name.get(&info.name) {
            Some(&at) if self.list[at].is_global || !info.is_global => {}
            Some(&at) => self.list[at] = info,
            None => {
                self.by_name.insert(info.name.clone(), self.list.len());
                self.list.push(info);
            }
        }
    }

    pub fn get(&self, name: &str) -> Option<&SymbolInfo> {
        self.by_name.get(name).map(|&i| &self.list[i])
    }

    pub fn iter(&self) -> impl Iterator<Item = &SymbolInfo> {
        self.list.iter()
    }
}

fn symbol<'d>(
    table: &object::read::elf::SymbolTable<'d, Header, &'d [u8]>,
    endian: LittleEndian,
    sym: &elf::Sym64<LittleEndian>,
    section: Option<SectionRef<'_, 'd>>,
    data: &[u8],
) -> Option<SymbolInfo> {
    let name = std::str::from_utf8(table.symbol_name(endian, sym).ok()?).ok()?;
    if name.is_empty() {
        return None;
    }
    let kind = sym.st_type();
    if kind == elf::STT_SECTION || kind == elf::STT_FILE {
        return None;
    }
    let address = sym.st_value(endian);
    let size = sym.st_size(endian);
    let is_object = kind == elf::STT_OBJECT;
    let is_function = kind == elf::STT_FUNC || kind == STT_AMDGPU_HSA_KERNEL;
    let bind = sym.st_bind();
    let (section_name, zero_initialized, file_offset) = match section {
        None => (None, false, None),
        Some((sections, header)) => {
            let name = sections
                .section_name(endian, header)
                .ok()
                .map(|n| String::from_utf8_lossy(n).into_owned());
            let nobits = header.sh_type(endian) == elf::SHT_NOBITS;
            let offset = if nobits {
                None
            } else {
                file_offset(endian, header, address, size, data)
            };
            (name, nobits, offset)
        }
    };
    Some(SymbolInfo {
        name: name.to_owned(),
        address,
        size,
        is_kernel_descriptor: is_object && name.ends_with(".kd"),
        is_object,
        is_function,
        is_global: bind == elf::STB_GLOBAL || bind == elf::STB_WEAK,
        section: section_name,
        zero_initialized,
        file_offset,
    })
}

/// The file offset of `[address, address + size)` in `section`, if it lies inside both the
/// section and the file.
fn file_offset(
    endian: LittleEndian,
    section: &elf::SectionHeader64<LittleEndian>,
    address: u64,
    size: u64,
    data: &[u8],
) -> Option<u64> {
    let start = address.checked_sub(section.sh_addr(endian))?;
    let end = start.checked_add(size)?;
    if end > section.sh_size(endian) {
        return None;
    }
    let offset = section.sh_offset(endian).checked_add(start)?;
    (offset.checked_add(size)? <= data.len() as u64).then_some(offset)
}
