//! Checks that a 64-bit little-endian ELF image is laid out consistently before a plugin hands it
//! to a loader (the dynamic loader for host images, a GPU driver for cubins and code objects).
//! Loaders trust these structures: glibc maps segments whose file sizes lie past the end of
//! the file (a SIGBUS when they are touched) and follows dynamic-section addresses wherever they
//! point. A damaged image must be refused with a message naming what is wrong, never crash the
//! program, so everything a loader reads before running the image's code is checked here:
//!
//! - the ELF header, and the program and section header tables lying inside the file;
//! - each section's bytes inside the file, alignments powers of two;
//! - each loadable segment's bytes inside the file, its file size within its memory size, its
//!   address congruent to its offset modulo its alignment, segments in address order;
//! - the dynamic section inside a loadable segment, and every table it names (strings,
//!   symbols, hashes, relocations, initialisers, versions) inside loaded memory;
//! - every relocation's target inside loaded memory.
//!
//! It reads nothing but bounds: machine code that is damaged still crashes when it runs.

use std::fmt;

/// What is wrong with an image.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LayoutError(pub String);

impl fmt::Display for LayoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

fn bad<T>(what: impl Into<String>) -> Result<T, LayoutError> {
    Err(LayoutError(what.into()))
}

const EHDR_SIZE: usize = 64;
const PHDR_SIZE: usize = 56;
const SHDR_SIZE: usize = 64;
const PT_LOAD: u32 = 1;
const PT_DYNAMIC: u32 = 2;
const PT_GNU_RELRO: u32 = 0x6474_e552;
const PT_TLS: u32 = 7;
const PT_GNU_EH_FRAME: u32 = 0x6474_e550;
const PF_R: u32 = 4;
const PF_W: u32 = 2;
const DT_TEXTREL: u64 = 22;
const DT_FLAGS: u64 = 30;
const DF_TEXTREL: u64 = 4;
const SHT_NOBITS: u32 = 8;
const PF_X: u32 = 1;
const SYM_SIZE: u64 = 24;
const STT_FUNC: u8 = 2;
const STT_TLS: u8 = 6;
const SHN_UNDEF: u16 = 0;
const SHN_ABS: u16 = 0xfff1;
const DT_HASH: u64 = 4;
const DT_STRSZ: u64 = 10;
const DT_SYMTAB: u64 = 6;
const DT_STRTAB: u64 = 5;
const DT_GNU_HASH: u64 = 0x6fff_fef5;
const DT_NEEDED: u64 = 1;
const DT_SONAME: u64 = 14;
const DT_RPATH: u64 = 15;
const DT_RUNPATH: u64 = 29;
const DT_INIT: u64 = 12;
const DT_FINI: u64 = 13;
const DT_RELAENT: u64 = 9;
const DT_RELENT: u64 = 19;
const DT_SYMENT: u64 = 11;
const DT_INIT_ARRAY: u64 = 25;
const DT_FINI_ARRAY: u64 = 26;
const DT_INIT_ARRAYSZ: u64 = 27;
const DT_FINI_ARRAYSZ: u64 = 28;
const DT_PREINIT_ARRAY: u64 = 32;
const DT_PREINIT_ARRAYSZ: u64 = 33;
const DT_RELACOUNT: u64 = 0x6fff_fff9;
const DT_RELCOUNT: u64 = 0x6fff_fffa;
const DT_VERSYM: u64 = 0x6fff_fff0;
const DT_VERDEF: u64 = 0x6fff_fffc;
const DT_VERDEFNUM: u64 = 0x6fff_fffd;
const DT_VERNEED: u64 = 0x6fff_fffe;
const DT_VERNEEDNUM: u64 = 0x6fff_ffff;
const DYN_SIZE: u64 = 16;
const RELA_SIZE: u64 = 24;
const REL_SIZE: u64 = 16;
/// More memory than any image asks for: a segment claiming it is damaged.
const MAX_SPAN: u64 = 1 << 40;

/// Dynamic tags whose value is an address the loader reads, with the tag of the table's size
/// when the dynamic section gives one (0: the size is not given there).
const DYNAMIC_TABLES: &[(u64, u64, &str)] = &[
    (4, 0, "DT_HASH"),
    (5, 10, "DT_STRTAB"),
    (6, 0, "DT_SYMTAB"),
    (7, 8, "DT_RELA"),
    (17, 18, "DT_REL"),
    (23, 2, "DT_JMPREL"),
    (25, 27, "DT_INIT_ARRAY"),
    (26, 28, "DT_FINI_ARRAY"),
    (0x6fff_fef5, 0, "DT_GNU_HASH"),
    (0x6fff_fff0, 0, "DT_VERSYM"),
    (0x6fff_fffc, 0, "DT_VERDEF"),
    (0x6fff_fffe, 0, "DT_VERNEED"),
];
const DT_NULL: u64 = 0;
const DT_PLTREL: u64 = 20;
const DT_RELA: u64 = 7;
const DT_RELASZ: u64 = 8;
const DT_REL: u64 = 17;
const DT_RELSZ: u64 = 18;
const DT_JMPREL: u64 = 23;
const DT_PLTRELSZ: u64 = 2;

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}
fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}
fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

/// `[offset, offset + size)` lies inside `len` bytes.
fn within(offset: u64, size: u64, len: usize) -> bool {
    offset
        .checked_add(size)
        .is_some_and(|end| end <= len as u64)
}

fn aligned_power_of_two(align: u64) -> bool {
    align == 0 || align.is_power_of_two()
}

/// A loadable segment.
#[derive(Copy, Clone)]
struct Segment {
    offset: u64,
    vaddr: u64,
    filesz: u64,
    memsz: u64,
    executable: bool,
    readable: bool,
    writable: bool,
}

impl Segment {
    /// The file offset of `[vaddr, vaddr + size)` when it lies in this segment's file bytes,
    /// loaded readable (where the loader reads its tables).
    fn file_offset(&self, vaddr: u64, size: u64) -> Option<u64> {
        let end = vaddr.checked_add(size)?;
        (self.readable && vaddr >= self.vaddr && end <= self.vaddr + self.filesz)
            .then(|| self.offset + (vaddr - self.vaddr))
    }
    /// Whether `[vaddr, vaddr + size)` lies in this segment's memory.
    fn holds(&self, vaddr: u64, size: u64) -> bool {
        vaddr
            .checked_add(size)
            .is_some_and(|end| vaddr >= self.vaddr && end <= self.vaddr + self.memsz)
    }
}

/// How the loader the image is meant for places segments.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Addresses {
    /// At their addresses (glibc's loader, HSA's): the address rules apply too (congruence
    /// with the file offset, ascending order, no overlap, the dynamic section's tables).
    Mapped,
    /// Not by address (NVIDIA's driver reads cubins whose segments all say address 0): only
    /// the bytes must lie in the file.
    Unused,
}

/// Checks an ELF image's layout (see the module's description).
pub fn check(bytes: &[u8], addresses: Addresses) -> Result<(), LayoutError> {
    if bytes.len() < EHDR_SIZE || &bytes[..4] != b"\x7fELF" {
        return bad("not an ELF file");
    }
    if bytes[4] != 2 || bytes[5] != 1 {
        return bad("not a 64-bit little-endian ELF file");
    }
    let phoff = u64_at(bytes, 32);
    let shoff = u64_at(bytes, 40);
    let ehsize = u16_at(bytes, 52);
    let phentsize = u16_at(bytes, 54) as usize;
    let phnum = u16_at(bytes, 56) as u64;
    let shentsize = u16_at(bytes, 58) as usize;
    let shnum = u16_at(bytes, 60) as u64;
    let shstrndx = u16_at(bytes, 62) as u64;
    if (ehsize as usize) < EHDR_SIZE {
        return bad(format!("ELF header size {ehsize} is below {EHDR_SIZE}"));
    }
    let mapped = addresses == Addresses::Mapped;
    let segments = check_program_headers(bytes, phoff, phentsize, phnum, mapped)?;
    check_section_headers(bytes, shoff, shentsize, shnum, shstrndx)?;
    match mapped {
        true => check_dynamic(bytes, phoff, phnum, &segments),
        false => Ok(()),
    }
}

fn check_program_headers(
    bytes: &[u8],
    phoff: u64,
    phentsize: usize,
    phnum: u64,
    mapped: bool,
) -> Result<Vec<Segment>, LayoutError> {
    if phnum == 0 {
        return Ok(Vec::new());
    }
    if phentsize != PHDR_SIZE {
        return bad(format!(
            "program header size {phentsize} is not {PHDR_SIZE}"
        ));
    }
    if !within(phoff, phnum * PHDR_SIZE as u64, bytes.len()) {
        return bad(format!(
            "the {phnum} program headers at offset {phoff:#x} lie outside the {}-byte file",
            bytes.len()
        ));
    }
    let mut segments = Vec::new();
    for i in 0..phnum {
        let at = (phoff + i * PHDR_SIZE as u64) as usize;
        if u32_at(bytes, at) != PT_LOAD {
            continue;
        }
        let segment = Segment {
            offset: u64_at(bytes, at + 8),
            vaddr: u64_at(bytes, at + 16),
            filesz: u64_at(bytes, at + 32),
            memsz: u64_at(bytes, at + 40),
            executable: u32_at(bytes, at + 4) & PF_X != 0,
            readable: u32_at(bytes, at + 4) & PF_R != 0,
            writable: u32_at(bytes, at + 4) & PF_W != 0,
        };
        let align = u64_at(bytes, at + 48);
        if !within(segment.offset, segment.filesz, bytes.len()) {
            return bad(format!(
                "loadable segment {i} ({:#x} bytes at offset {:#x}) runs past the end of the {}-byte file",
                segment.filesz,
                segment.offset,
                bytes.len()
            ));
        }
        if segment.filesz > segment.memsz {
            return bad(format!(
                "loadable segment {i} has {:#x} bytes in the file but only {:#x} in memory",
                segment.filesz, segment.memsz
            ));
        }
        if !aligned_power_of_two(align) {
            return bad(format!(
                "loadable segment {i} has alignment {align:#x}, not a power of two"
            ));
        }
        if !mapped {
            continue;
        }
        if align > 1 && segment.vaddr % align != segment.offset % align {
            return bad(format!(
                "loadable segment {i}: address {:#x} and offset {:#x} differ modulo its alignment {align:#x}",
                segment.vaddr, segment.offset
            ));
        }
        if segment.vaddr.checked_add(segment.memsz).is_none() || segment.memsz > MAX_SPAN {
            return bad(format!(
                "loadable segment {i} claims {:#x} bytes of memory",
                segment.memsz
            ));
        }
        if let Some(last) = segments.last() {
            let last: &Segment = last;
            if segment.vaddr < last.vaddr {
                return bad(format!(
                    "loadable segment {i} at {:#x} comes before the previous one at {:#x}",
                    segment.vaddr, last.vaddr
                ));
            }
            // A loader zero-fills each segment's memory past its file bytes: an overlap would
            // wipe the next segment.
            if last.vaddr + last.memsz > segment.vaddr {
                return bad(format!(
                    "loadable segment {i} at {:#x} overlaps the previous one, which ends at {:#x}",
                    segment.vaddr,
                    last.vaddr + last.memsz
                ));
            }
        }
        segments.push(segment);
    }
    if !mapped {
        return Ok(segments);
    }
    if let (Some(first), Some(last)) = (segments.first(), segments.last()) {
        if last.vaddr + last.memsz - first.vaddr > MAX_SPAN {
            return bad("the loadable segments span more than 1 TiB");
        }
    }
    // Ranges the loader or the unwinder use in place must be memory the loader loaded: the one
    // made read-only after relocation, the thread-local initial image, the unwind table index.
    for i in 0..phnum {
        let at = (phoff + i * PHDR_SIZE as u64) as usize;
        let what = match u32_at(bytes, at) {
            PT_GNU_RELRO => "the read-only-after-relocation range",
            PT_TLS => "the thread-local storage image",
            PT_GNU_EH_FRAME => "the unwind table index",
            _ => continue,
        };
        let (vaddr, size) = (u64_at(bytes, at + 16), u64_at(bytes, at + 40));
        if !segments.iter().any(|s| s.holds(vaddr, size)) {
            return bad(format!(
                "{what} ({size:#x} bytes at {vaddr:#x}) lies outside the loaded segments"
            ));
        }
    }
    Ok(segments)
}

fn check_section_headers(
    bytes: &[u8],
    shoff: u64,
    shentsize: usize,
    shnum: u64,
    shstrndx: u64,
) -> Result<(), LayoutError> {
    if shoff == 0 {
        return Ok(()); // no section headers: loaders do not need them
    }
    if shentsize != SHDR_SIZE {
        return bad(format!(
            "section header size {shentsize} is not {SHDR_SIZE}"
        ));
    }
    if !within(shoff, SHDR_SIZE as u64, bytes.len()) {
        return bad(format!(
            "the section headers at offset {shoff:#x} lie outside the {}-byte file",
            bytes.len()
        ));
    }
    // With 0xff00 sections or more, the count is in section 0's size (ELF's extended numbering).
    let count = match shnum {
        0 => u64_at(bytes, shoff as usize + 32),
        n => n,
    };
    if !within(shoff, count.saturating_mul(SHDR_SIZE as u64), bytes.len()) {
        return bad(format!(
            "the {count} section headers at offset {shoff:#x} lie outside the {}-byte file",
            bytes.len()
        ));
    }
    const SHN_XINDEX: u64 = 0xffff;
    if shstrndx != SHN_XINDEX && shstrndx >= count.max(1) {
        return bad(format!(
            "the section name table is section {shstrndx} of {count}"
        ));
    }
    for i in 0..count {
        let at = (shoff + i * SHDR_SIZE as u64) as usize;
        let kind = u32_at(bytes, at + 4);
        let offset = u64_at(bytes, at + 24);
        let size = u64_at(bytes, at + 32);
        let align = u64_at(bytes, at + 48);
        if kind != SHT_NOBITS && i != 0 && !within(offset, size, bytes.len()) {
            return bad(format!(
                "section {i} ({size:#x} bytes at offset {offset:#x}) runs past the end of the {}-byte file",
                bytes.len()
            ));
        }
        if !aligned_power_of_two(align) {
            return bad(format!(
                "section {i} has alignment {align:#x}, not a power of two"
            ));
        }
    }
    Ok(())
}

fn check_dynamic(
    bytes: &[u8],
    phoff: u64,
    phnum: u64,
    segments: &[Segment],
) -> Result<(), LayoutError> {
    let mut dynamic = None;
    for i in 0..phnum {
        let at = (phoff + i * PHDR_SIZE as u64) as usize;
        if u32_at(bytes, at) == PT_DYNAMIC {
            dynamic = Some((u64_at(bytes, at + 16), u64_at(bytes, at + 32)));
        }
    }
    let Some((vaddr, size)) = dynamic else {
        return Ok(());
    };
    let Some(offset) = segments.iter().find_map(|s| s.file_offset(vaddr, size)) else {
        return bad(format!(
            "the dynamic section ({size:#x} bytes at {vaddr:#x}) lies outside the loaded file bytes"
        ));
    };
    // The entries up to DT_NULL (the loader stops there). Linkers leave only DT_NULLs after
    // it (spare entries): an entry there is one cut off by a damaged tag.
    let mut entries = Vec::new();
    let mut ended = false;
    for i in 0..size / DYN_SIZE {
        let at = (offset + i * DYN_SIZE) as usize;
        let (tag, value) = (u64_at(bytes, at), u64_at(bytes, at + 8));
        match (tag, ended) {
            (DT_NULL, _) => ended = true,
            (_, false) => entries.push((tag, value)),
            (_, true) => {
                return bad(format!(
                    "dynamic entry {i} (tag {tag:#x}) follows the DT_NULL that ends the section"
                ))
            }
        }
    }
    let value = |tag: u64| entries.iter().find(|(t, _)| *t == tag).map(|(_, v)| *v);
    check_entries(&entries, &value, segments)?;
    let in_memory = |address: u64, size: u64| {
        segments
            .iter()
            .any(|s| s.readable && s.holds(address, size))
    };
    for &(tag, size_tag, name) in DYNAMIC_TABLES {
        let Some(address) = value(tag) else { continue };
        let size = match size_tag {
            0 => 1,
            t => value(t).unwrap_or(0),
        };
        if !in_memory(address, size.max(1)) {
            return bad(format!(
                "{name} ({size:#x} bytes at {address:#x}) lies outside the loaded segments"
            ));
        }
    }
    // Relocations write where they say: their targets must be loaded memory too.
    let jmprel_entry = match value(DT_PLTREL) {
        Some(DT_REL) => REL_SIZE,
        _ => RELA_SIZE,
    };
    let machine = u16_at(bytes, 18);
    // With text relocations the loader makes read-only segments writable while relocating.
    let text_relocations =
        value(DT_TEXTREL).is_some() || value(DT_FLAGS).is_some_and(|f| f & DF_TEXTREL != 0);
    for (table, table_size, entry) in [
        (DT_RELA, DT_RELASZ, RELA_SIZE),
        (DT_REL, DT_RELSZ, REL_SIZE),
        (DT_JMPREL, DT_PLTRELSZ, jmprel_entry),
    ] {
        check_relative_count(bytes, segments, &value, table, machine)?;
        let (Some(address), Some(size)) = (value(table), value(table_size)) else {
            continue;
        };
        let Some(offset) = segments.iter().find_map(|s| s.file_offset(address, size)) else {
            return bad(format!(
                "relocation table at {address:#x} ({size:#x} bytes) lies outside the loaded file bytes"
            ));
        };
        // Relocations come sorted by target in practice: ask the segment of the last one first.
        let mut home = 0..0;
        let table = &bytes[offset as usize..(offset + size) as usize];
        for (i, record) in table.chunks_exact(entry as usize).enumerate() {
            let target = u64::from_le_bytes(record[..8].try_into().unwrap());
            if home.contains(&target) && home.end - target >= 8 {
                continue;
            }
            match segments.iter().find(|s| s.holds(target, 8)) {
                Some(segment) if segment.writable || text_relocations => {
                    home = segment.vaddr..segment.vaddr + segment.memsz;
                }
                Some(_) => {
                    return bad(format!(
                        "relocation {i} of the table at {address:#x} writes to {target:#x}, in a segment loaded read-only"
                    ))
                }
                None => {
                    return bad(format!(
                        "relocation {i} of the table at {address:#x} writes to {target:#x}, outside the loaded segments"
                    ))
                }
            }
        }
    }
    check_relocation_sections(bytes, &value)?;
    let symbols = check_symbols(bytes, segments, &value)?;
    check_versions(bytes, segments, &value, symbols)
}

/// Where section headers describe the image, each allocated relocation section must be one the
/// dynamic section names: a table left out (its entry's tag damaged away) is relocations the
/// loader silently skips. (The header tables were checked to lie in the file.)
fn check_relocation_sections(
    bytes: &[u8],
    value: &dyn Fn(u64) -> Option<u64>,
) -> Result<(), LayoutError> {
    const SHT_RELA: u32 = 4;
    const SHT_REL: u32 = 9;
    const SHF_ALLOC: u64 = 2;
    let shoff = u64_at(bytes, 40);
    if shoff == 0 {
        return Ok(());
    }
    let count = match u16_at(bytes, 60) {
        0 => u64_at(bytes, shoff as usize + 32),
        n => u64::from(n),
    };
    let named: Vec<(u64, u64)> = [
        (DT_RELA, DT_RELASZ),
        (DT_REL, DT_RELSZ),
        (DT_JMPREL, DT_PLTRELSZ),
    ]
    .iter()
    .filter_map(|&(table, size)| Some((value(table)?, value(size).unwrap_or(0))))
    .collect();
    for i in 1..count {
        let at = (shoff + i * SHDR_SIZE as u64) as usize;
        let kind = u32_at(bytes, at + 4);
        let (flags, address, size) = (
            u64_at(bytes, at + 8),
            u64_at(bytes, at + 16),
            u64_at(bytes, at + 32),
        );
        if !matches!(kind, SHT_RELA | SHT_REL) || flags & SHF_ALLOC == 0 || size == 0 {
            continue;
        }
        let covered = named.iter().any(|&(start, len)| {
            address >= start && address.saturating_add(size) <= start.saturating_add(len)
        });
        if !covered {
            return bad(format!(
                "relocation section {i} ({size:#x} bytes at {address:#x}) is not named by the dynamic section"
            ));
        }
    }
    Ok(())
}

/// DT_RELACOUNT (DT_RELCOUNT): the loader applies that many leading relocations of the table as
/// relative ones without looking at their types, so they must exist and be relative.
fn check_relative_count(
    bytes: &[u8],
    segments: &[Segment],
    value: &dyn Fn(u64) -> Option<u64>,
    table: u64,
    machine: u16,
) -> Result<(), LayoutError> {
    let (count_tag, size_tag, entry, name) = match table {
        DT_RELA => (DT_RELACOUNT, DT_RELASZ, RELA_SIZE, "DT_RELACOUNT"),
        DT_REL => (DT_RELCOUNT, DT_RELSZ, REL_SIZE, "DT_RELCOUNT"),
        _ => return Ok(()),
    };
    let (Some(count), Some(address)) = (value(count_tag), value(table)) else {
        return Ok(());
    };
    let total = value(size_tag).unwrap_or(0) / entry;
    if count > total {
        return bad(format!(
            "{name} says {count} relative relocations, the table has {total}"
        ));
    }
    // The relative relocation type of the machines whose images we load.
    let relative = match machine {
        62 => 8,     // R_X86_64_RELATIVE
        224 => 13,   // R_AMDGPU_RELATIVE64
        183 => 1027, // R_AARCH64_RELATIVE
        _ => return Ok(()),
    };
    let Some(records) = loaded(bytes, segments, address, count * entry) else {
        return Ok(()); // the table's own check says where it is
    };
    for (i, record) in records.chunks_exact(entry as usize).enumerate() {
        let kind = u32::from_le_bytes(record[8..12].try_into().unwrap());
        if kind != relative {
            return bad(format!(
                "{name} counts relocation {i} as relative, its type is {kind}"
            ));
        }
    }
    Ok(())
}

/// What the loader assumes of the dynamic section's entries without checking: the tables it
/// looks names up in, the sizes of table entries, each table's companion entries, names within
/// the string table, initialisers in executable memory.
fn check_entries(
    entries: &[(u64, u64)],
    value: &dyn Fn(u64) -> Option<u64>,
    segments: &[Segment],
) -> Result<(), LayoutError> {
    for (tag, name) in [
        (DT_STRTAB, "DT_STRTAB"),
        (DT_STRSZ, "DT_STRSZ"),
        (DT_SYMTAB, "DT_SYMTAB"),
    ] {
        if value(tag).is_none() {
            return bad(format!("the dynamic section has no {name}"));
        }
    }
    if value(DT_HASH).is_none() && value(DT_GNU_HASH).is_none() {
        return bad("the dynamic section names no hash table (DT_HASH or DT_GNU_HASH)");
    }
    for (tag, size, name) in [
        (DT_RELAENT, RELA_SIZE, "DT_RELAENT"),
        (DT_RELENT, REL_SIZE, "DT_RELENT"),
        (DT_SYMENT, SYM_SIZE, "DT_SYMENT"),
    ] {
        if let Some(found) = value(tag).filter(|&v| v != size) {
            return bad(format!("{name} is {found}, not {size}"));
        }
    }
    for (table, companions, name) in [
        (DT_RELA, &[DT_RELASZ, DT_RELAENT][..], "DT_RELA"),
        (DT_REL, &[DT_RELSZ, DT_RELENT][..], "DT_REL"),
        (DT_INIT_ARRAY, &[DT_INIT_ARRAYSZ][..], "DT_INIT_ARRAY"),
        (DT_FINI_ARRAY, &[DT_FINI_ARRAYSZ][..], "DT_FINI_ARRAY"),
        (
            DT_PREINIT_ARRAY,
            &[DT_PREINIT_ARRAYSZ][..],
            "DT_PREINIT_ARRAY",
        ),
        (DT_JMPREL, &[DT_PLTRELSZ, DT_PLTREL][..], "DT_JMPREL"),
        (DT_VERNEED, &[DT_VERNEEDNUM, DT_VERSYM][..], "DT_VERNEED"),
        (DT_VERDEF, &[DT_VERDEFNUM, DT_VERSYM][..], "DT_VERDEF"),
        (DT_VERNEEDNUM, &[DT_VERNEED][..], "DT_VERNEEDNUM"),
        (DT_VERDEFNUM, &[DT_VERDEF][..], "DT_VERDEFNUM"),
        // A size whose table is gone: the relocations or initialisers are silently skipped.
        (DT_RELASZ, &[DT_RELA][..], "DT_RELASZ"),
        (DT_RELSZ, &[DT_REL][..], "DT_RELSZ"),
        (DT_PLTRELSZ, &[DT_JMPREL][..], "DT_PLTRELSZ"),
        (DT_RELACOUNT, &[DT_RELA][..], "DT_RELACOUNT"),
        (DT_RELCOUNT, &[DT_REL][..], "DT_RELCOUNT"),
        (DT_INIT_ARRAYSZ, &[DT_INIT_ARRAY][..], "DT_INIT_ARRAYSZ"),
        (DT_FINI_ARRAYSZ, &[DT_FINI_ARRAY][..], "DT_FINI_ARRAYSZ"),
    ] {
        if value(table).is_some() && companions.iter().any(|&c| value(c).is_none()) {
            return bad(format!("{name} lacks the entries that go with it"));
        }
    }
    if value(DT_PLTREL).is_some_and(|kind| kind != DT_RELA && kind != DT_REL) {
        return bad("DT_PLTREL names neither DT_RELA nor DT_REL");
    }
    let strsz = value(DT_STRSZ).unwrap_or(0);
    for &(tag, at) in entries {
        if matches!(tag, DT_NEEDED | DT_SONAME | DT_RPATH | DT_RUNPATH) && at >= strsz {
            return bad(format!(
                "a dynamic entry (tag {tag}) names string {at:#x}, past the {strsz:#x}-byte string table"
            ));
        }
    }
    for (tag, name) in [(DT_INIT, "DT_INIT"), (DT_FINI, "DT_FINI")] {
        if let Some(address) = value(tag) {
            if !segments.iter().any(|s| s.executable && s.holds(address, 1)) {
                return bad(format!(
                    "{name} ({address:#x}) lies outside the executable segments"
                ));
            }
        }
    }
    Ok(())
}

/// The symbol version tables: DT_VERSYM's entry per symbol, and the DT_VERNEED and DT_VERDEF
/// chains (their records, counts, links and names) within loaded bytes.
fn check_versions(
    bytes: &[u8],
    segments: &[Segment],
    value: &dyn Fn(u64) -> Option<u64>,
    symbols: u64,
) -> Result<(), LayoutError> {
    let strsz = value(DT_STRSZ).unwrap_or(0);
    let read = |what: &str, vaddr: u64, size: u64| {
        loaded(bytes, segments, vaddr, size).ok_or_else(|| {
            LayoutError(format!(
                "{what} ({size:#x} bytes at {vaddr:#x}) lies outside the loaded file bytes"
            ))
        })
    };
    let u16_in = |b: &[u8], at: usize| u64::from(u16::from_le_bytes([b[at], b[at + 1]]));
    let u32_in =
        |b: &[u8], at: usize| u64::from(u32::from_le_bytes(b[at..at + 4].try_into().unwrap()));
    let name = |what: &str, offset: u64| match offset < strsz {
        true => Ok(()),
        false => bad(format!(
            "{what} names string {offset:#x}, past the {strsz:#x}-byte string table"
        )),
    };
    if let Some(versym) = value(DT_VERSYM) {
        read(
            "the symbol version table",
            versym,
            symbols.saturating_mul(2),
        )?;
    }
    // The loader follows each chain to a zero link, as here; a chain that does not end within
    // this many records is damaged.
    let mut budget = 1u32 << 16;
    let mut visit = |what: &str| match budget.checked_sub(1) {
        Some(left) => {
            budget = left;
            Ok(())
        }
        None => bad(format!("{what} chain does not end")),
    };
    for (tag, what) in [
        (DT_VERNEED, "a version requirement"),
        (DT_VERDEF, "a version definition"),
    ] {
        let Some(mut at) = value(tag) else {
            continue;
        };
        let needs = tag == DT_VERNEED;
        loop {
            visit(what)?;
            let record = read(what, at, if needs { 16 } else { 20 })?;
            // Verneed: version, cnt, file, aux, next. Verdef: version, flags, ndx, cnt, hash,
            // aux, next.
            let (entries, aux, next) = match needs {
                true => (u16_in(record, 2), u32_in(record, 8), u32_in(record, 12)),
                false => (u16_in(record, 6), u32_in(record, 12), u32_in(record, 16)),
            };
            if needs {
                name(what, u32_in(record, 4))?;
            }
            let mut aux_at = at.saturating_add(aux);
            for _ in 0..entries {
                visit(what)?;
                // Vernaux: hash, flags, other, name, next. Verdaux: name, next.
                let record = read(what, aux_at, if needs { 16 } else { 8 })?;
                let (aux_name, aux_next) = match needs {
                    true => (u32_in(record, 8), u32_in(record, 12)),
                    false => (u32_in(record, 0), u32_in(record, 4)),
                };
                name(what, aux_name)?;
                if aux_next == 0 {
                    break;
                }
                aux_at = aux_at.saturating_add(aux_next);
            }
            if next == 0 {
                break;
            }
            at = at.saturating_add(next);
        }
    }
    Ok(())
}

/// The loaded file bytes at `[vaddr, vaddr + size)`, where a table the loader reads must be.
fn loaded<'b>(bytes: &'b [u8], segments: &[Segment], vaddr: u64, size: u64) -> Option<&'b [u8]> {
    let offset = segments.iter().find_map(|s| s.file_offset(vaddr, size))?;
    bytes.get(offset as usize..(offset + size) as usize)
}

/// The symbols the loader finds by name (those its hash table reaches, the GNU one where
/// there is one, as glibc prefers it): the table's structure within loaded bytes, every
/// chain ending inside the symbol table, and each defined symbol's name within the string
/// table and its address within the loaded segments, a function's in an executable one. A
/// symbol the plugin looks up and calls must be code the loader mapped. Returns how many
/// symbols the table has, as far as the hash table tells.
fn check_symbols(
    bytes: &[u8],
    segments: &[Segment],
    value: &dyn Fn(u64) -> Option<u64>,
) -> Result<u64, LayoutError> {
    let Some(symtab) = value(DT_SYMTAB) else {
        return Ok(0);
    };
    let strsz = value(DT_STRSZ).unwrap_or(0);
    let table = |what: &str, vaddr: u64, size: u64| {
        loaded(bytes, segments, vaddr, size).ok_or_else(|| {
            LayoutError(format!(
                "the {what} ({size:#x} bytes at {vaddr:#x}) lies outside the loaded file bytes"
            ))
        })
    };
    let words = |b: &[u8]| -> Vec<u32> {
        b.chunks_exact(4)
            .map(|w| u32::from_le_bytes(w.try_into().unwrap()))
            .collect()
    };
    // The symbol indices the hash table reaches.
    let mut reached: Vec<u64> = Vec::new();
    let mut count = 0;
    if let Some(gnu) = value(DT_GNU_HASH) {
        let header = words(table("GNU hash table", gnu, 16)?);
        let (nbuckets, symoffset, bloom_size) = (header[0] as u64, header[1] as u64, header[2]);
        count = symoffset;
        let bloom_bytes = u64::from(bloom_size) * 8;
        let buckets_at = gnu.saturating_add(16).saturating_add(bloom_bytes);
        let buckets = words(table("GNU hash buckets", buckets_at, nbuckets * 4)?);
        let chains_at = buckets_at.saturating_add(nbuckets * 4);
        for &start in buckets.iter().filter(|&&b| b != 0) {
            let mut index = u64::from(start);
            if index < symoffset {
                return bad(format!(
                    "a GNU hash bucket starts at symbol {index}, below the table's first hashed symbol {symoffset}"
                ));
            }
            loop {
                if reached.len() > 1 << 20 {
                    return bad("the GNU hash chains do not end");
                }
                reached.push(index);
                let link = chains_at.saturating_add((index - symoffset) * 4);
                let hash =
                    u32::from_le_bytes(table("GNU hash chain", link, 4)?.try_into().unwrap());
                if hash & 1 == 1 {
                    break;
                }
                index = index.saturating_add(1);
            }
        }
    } else if let Some(sysv) = value(DT_HASH) {
        let header = words(table("hash table", sysv, 8)?);
        let (nbucket, nchain) = (header[0] as u64, header[1] as u64);
        let rest = words(table(
            "hash table",
            sysv.saturating_add(8),
            (nbucket + nchain) * 4,
        )?);
        if let Some(bad_index) = rest.iter().find(|&&i| u64::from(i) >= nchain) {
            return bad(format!(
                "the hash table names symbol {bad_index} of {nchain}"
            ));
        }
        reached.extend(0..nchain);
        count = nchain;
    }
    count = count.max(reached.iter().max().map_or(0, |&i| i + 1));
    for index in reached {
        let at = symtab.saturating_add(index.saturating_mul(SYM_SIZE));
        let symbol = table("dynamic symbol table", at, SYM_SIZE)?;
        let name = u32::from_le_bytes(symbol[..4].try_into().unwrap());
        let kind = symbol[4] & 0xf;
        let section = u16::from_le_bytes([symbol[6], symbol[7]]);
        let address = u64::from_le_bytes(symbol[8..16].try_into().unwrap());
        if u64::from(name) >= strsz.max(1) {
            return bad(format!(
                "dynamic symbol {index}'s name lies outside the {strsz:#x}-byte string table"
            ));
        }
        if matches!(section, SHN_UNDEF | SHN_ABS) || kind == STT_TLS {
            continue;
        }
        let home = segments.iter().find(|s| s.holds(address, 1));
        match home {
            None => {
                return bad(format!(
                    "dynamic symbol {index} is defined at {address:#x}, outside the loaded segments"
                ))
            }
            Some(segment) if kind == STT_FUNC && !segment.executable => {
                return bad(format!(
                "function symbol {index} at {address:#x} lies in a segment that is not executable"
            ))
            }
            Some(_) => {}
        }
    }
    Ok(count)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal shared object: header, one PT_LOAD over the whole file, a PT_DYNAMIC with a
    /// string table entry, one section header table of two entries.
    fn image() -> Vec<u8> {
        let mut b = vec![0u8; 0x200];
        b[..4].copy_from_slice(b"\x7fELF");
        b[4] = 2;
        b[5] = 1;
        b[6] = 1;
        b[20] = 1;
        b[16] = 3; // ET_DYN
        b[18] = 62;
        b[32..40].copy_from_slice(&64u64.to_le_bytes()); // phoff
        b[40..48].copy_from_slice(&0x180u64.to_le_bytes()); // shoff
        b[52..54].copy_from_slice(&64u16.to_le_bytes());
        b[54..56].copy_from_slice(&56u16.to_le_bytes());
        b[56..58].copy_from_slice(&2u16.to_le_bytes());
        b[58..60].copy_from_slice(&64u16.to_le_bytes());
        b[60..62].copy_from_slice(&2u16.to_le_bytes());
        b[62..64].copy_from_slice(&1u16.to_le_bytes());
        // PT_LOAD: the whole file at address 0.
        let load = 64;
        b[load..load + 4].copy_from_slice(&PT_LOAD.to_le_bytes());
        b[load + 4..load + 8].copy_from_slice(&PF_R.to_le_bytes());
        b[load + 32..load + 40].copy_from_slice(&0x200u64.to_le_bytes());
        b[load + 40..load + 48].copy_from_slice(&0x200u64.to_le_bytes());
        b[load + 48..load + 56].copy_from_slice(&0x1000u64.to_le_bytes());
        // PT_DYNAMIC at 0x100, eight entries: DT_STRTAB 0xb0 (DT_STRSZ 0x10), DT_SYMTAB 0xd0,
        // DT_HASH 0xc0 (one bucket, one chain: the null symbol), then DT_NULL.
        let dynamic = 64 + 56;
        b[dynamic..dynamic + 4].copy_from_slice(&PT_DYNAMIC.to_le_bytes());
        b[dynamic + 8..dynamic + 16].copy_from_slice(&0x100u64.to_le_bytes());
        b[dynamic + 16..dynamic + 24].copy_from_slice(&0x100u64.to_le_bytes());
        b[dynamic + 32..dynamic + 40].copy_from_slice(&0x80u64.to_le_bytes());
        for (i, (tag, value)) in [(5u64, 0xb0u64), (10, 0x10), (6, 0xd0), (4, 0xc0)]
            .into_iter()
            .enumerate()
        {
            b[0x100 + 16 * i..0x108 + 16 * i].copy_from_slice(&tag.to_le_bytes());
            b[0x108 + 16 * i..0x110 + 16 * i].copy_from_slice(&value.to_le_bytes());
        }
        b[0xc0..0xc4].copy_from_slice(&1u32.to_le_bytes());
        b[0xc4..0xc8].copy_from_slice(&1u32.to_le_bytes());
        // Section 1: the string table.
        let s1 = 0x180 + 64;
        b[s1 + 4..s1 + 8].copy_from_slice(&3u32.to_le_bytes());
        b[s1 + 24..s1 + 32].copy_from_slice(&0xb0u64.to_le_bytes());
        b[s1 + 32..s1 + 40].copy_from_slice(&0x10u64.to_le_bytes());
        b
    }

    fn error(b: &[u8]) -> String {
        check(b, Addresses::Mapped).unwrap_err().0
    }

    #[test]
    fn a_consistent_image_passes() {
        assert_eq!(check(&image(), Addresses::Mapped), Ok(()));
    }

    #[test]
    fn unmapped_images_skip_the_address_rules() {
        let mut b = image();
        b[64 + 16..64 + 24].copy_from_slice(&0x10u64.to_le_bytes());
        assert_eq!(check(&b, Addresses::Unused), Ok(()));
        b[64 + 32..64 + 40].copy_from_slice(&0x10_0000u64.to_le_bytes());
        assert!(check(&b, Addresses::Unused).is_err());
    }

    #[test]
    fn segments_past_the_end_or_inconsistent_are_refused() {
        let mut b = image();
        b[64 + 32..64 + 40].copy_from_slice(&0x10_0000u64.to_le_bytes());
        assert!(error(&b).contains("runs past the end"), "{}", error(&b));
        let mut b = image();
        b[64 + 40..64 + 48].copy_from_slice(&0x100u64.to_le_bytes());
        assert!(error(&b).contains("only 0x100 in memory"));
        let mut b = image();
        b[64 + 48..64 + 56].copy_from_slice(&0x1001u64.to_le_bytes());
        assert!(error(&b).contains("not a power of two"));
        let mut b = image();
        b[64 + 16..64 + 24].copy_from_slice(&0x10u64.to_le_bytes());
        assert!(error(&b).contains("differ modulo"));
    }

    #[test]
    fn header_tables_outside_the_file_are_refused() {
        let mut b = image();
        b[32..40].copy_from_slice(&0x1f0u64.to_le_bytes());
        assert!(error(&b).contains("program headers"), "{}", error(&b));
        let mut b = image();
        b[60..62].copy_from_slice(&200u16.to_le_bytes());
        assert!(error(&b).contains("section headers"));
        let mut b = image();
        b[62..64].copy_from_slice(&9u16.to_le_bytes());
        assert!(error(&b).contains("section name table"));
        let mut b = image();
        b[0x180 + 64 + 32..0x180 + 64 + 40].copy_from_slice(&0x1000u64.to_le_bytes());
        assert!(error(&b).contains("section 1"));
    }

    #[test]
    fn dynamic_tables_outside_loaded_memory_are_refused() {
        let mut b = image();
        b[0x108..0x110].copy_from_slice(&0x9000u64.to_le_bytes());
        assert!(error(&b).contains("DT_STRTAB"), "{}", error(&b));
        let mut b = image();
        b[64 + 56 + 16..64 + 56 + 24].copy_from_slice(&0x5000u64.to_le_bytes());
        assert!(error(&b).contains("dynamic section"));
    }

    #[test]
    fn relocations_writing_outside_loaded_memory_are_refused() {
        let mut b = image();
        // DT_RELA at 0xe8, 24 bytes: one relocation targeting 0x8000.
        b[0x140..0x148].copy_from_slice(&DT_RELA.to_le_bytes());
        b[0x148..0x150].copy_from_slice(&0xe8u64.to_le_bytes());
        b[0x150..0x158].copy_from_slice(&DT_RELASZ.to_le_bytes());
        b[0x158..0x160].copy_from_slice(&24u64.to_le_bytes());
        b[0xe8..0xf0].copy_from_slice(&0x80u64.to_le_bytes());
        assert!(error(&b).contains("DT_RELA lacks"), "{}", error(&b));
        b[0x160..0x168].copy_from_slice(&DT_RELAENT.to_le_bytes());
        b[0x168..0x170].copy_from_slice(&24u64.to_le_bytes());
        // The target must be writable when the loader relocates.
        assert!(error(&b).contains("read-only"), "{}", error(&b));
        b[64 + 4..64 + 8].copy_from_slice(&(PF_R | PF_W).to_le_bytes());
        assert_eq!(check(&b, Addresses::Mapped), Ok(()));
        // DT_RELACOUNT: the leading relocations the loader applies as relative ones unseen.
        let mut counted = b.clone();
        counted[0x170..0x178].copy_from_slice(&DT_RELACOUNT.to_le_bytes());
        counted[0x178..0x180].copy_from_slice(&2u64.to_le_bytes());
        assert!(
            error(&counted).contains("says 2 relative"),
            "{}",
            error(&counted)
        );
        counted[0x178..0x180].copy_from_slice(&1u64.to_le_bytes());
        assert!(
            error(&counted).contains("its type is 0"),
            "{}",
            error(&counted)
        );
        counted[0xf0..0xf4].copy_from_slice(&8u32.to_le_bytes()); // R_X86_64_RELATIVE
        assert_eq!(check(&counted, Addresses::Mapped), Ok(()));
        // Tables in a segment loaded unreadable.
        let mut unreadable = b.clone();
        unreadable[64 + 4..64 + 8].copy_from_slice(&0u32.to_le_bytes());
        assert!(
            error(&unreadable).contains("dynamic section"),
            "{}",
            error(&unreadable)
        );
        b[0xe8..0xf0].copy_from_slice(&0x8000u64.to_le_bytes());
        assert!(error(&b).contains("relocation 0"), "{}", error(&b));
    }

    /// The dynamic entries glibc's loader trusts (found by damaging a real program's dynamic
    /// section: each let through crashes the loader or the program).
    #[test]
    fn dynamic_entries_the_loader_trusts_are_checked() {
        let entry = |b: &mut Vec<u8>, i: usize, tag: u64, value: u64| {
            b[0x100 + 16 * i..0x108 + 16 * i].copy_from_slice(&tag.to_le_bytes());
            b[0x108 + 16 * i..0x110 + 16 * i].copy_from_slice(&value.to_le_bytes());
        };
        // A DT_NULL written over DT_SYMTAB ends the section early, hiding what follows.
        let mut b = image();
        entry(&mut b, 2, 0, 0);
        assert!(error(&b).contains("follows the DT_NULL"), "{}", error(&b));
        entry(&mut b, 2, 0x1234, 0xd0);
        assert!(error(&b).contains("no DT_SYMTAB"), "{}", error(&b));
        let mut b = image();
        entry(&mut b, 3, 0x1234, 0xc0);
        assert!(error(&b).contains("no hash table"), "{}", error(&b));
        let mut b = image();
        entry(&mut b, 4, DT_RELAENT, 25);
        assert!(error(&b).contains("DT_RELAENT is 25"), "{}", error(&b));
        let mut b = image();
        entry(&mut b, 4, DT_NEEDED, 0x10);
        assert!(
            error(&b).contains("past the 0x10-byte string table"),
            "{}",
            error(&b)
        );
        entry(&mut b, 4, DT_NEEDED, 0xf);
        assert_eq!(check(&b, Addresses::Mapped), Ok(()));
        let mut b = image();
        entry(&mut b, 4, DT_VERNEED, 0xe8);
        entry(&mut b, 5, DT_VERNEEDNUM, 1);
        assert!(error(&b).contains("DT_VERNEED lacks"), "{}", error(&b));
        // DT_INIT must be code: the one segment is not executable, then is.
        let mut b = image();
        entry(&mut b, 4, DT_INIT, 0xe8);
        assert!(error(&b).contains("DT_INIT"), "{}", error(&b));
        b[64 + 4..64 + 8].copy_from_slice(&5u32.to_le_bytes());
        assert_eq!(check(&b, Addresses::Mapped), Ok(()));
    }
}
