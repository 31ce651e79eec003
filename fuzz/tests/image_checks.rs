//! Real clang images damaged in the ways that reach past the header tables: the layout check
//! refuses each with a reason that names the damage (let through, each would crash the
//! program in glibc's loader or at the first kernel call).

use object::read::elf::{ElfFile64, ProgramHeader, SectionHeader, Sym};
use object::{elf, Endianness};
use offload_image::elf_layout::{check, Addresses};
use std::path::Path;

/// A host image of clang-19 from the seed corpus.
fn host_image() -> Vec<u8> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus/host_image");
    let seed = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("seed-clang19-")
        })
        .expect("no clang-19 host image seed (scripts/fuzz.sh seeds)");
    std::fs::read(seed).unwrap()
}

fn refused_for(image: &[u8], words: &[&str]) {
    let why = check(image, Addresses::Mapped)
        .expect_err("the damaged image passes")
        .0;
    for word in words {
        assert!(why.contains(word), "'{why}' does not say '{word}'");
    }
}

#[test]
fn the_undamaged_image_passes() {
    check(&host_image(), Addresses::Mapped).unwrap();
}

/// Found by the end-to-end damage test: an executable segment's type or flags damaged leaves
/// the kernels unmapped or not executable, and the first launch dies of SIGSEGV.
#[test]
fn a_kernel_outside_executable_memory_is_refused() {
    let image = host_image();
    let file = ElfFile64::<Endianness>::parse(image.as_slice()).unwrap();
    let endian = file.endian();
    let phoff = file.elf_header().e_phoff.get(endian) as usize;
    let text = file
        .elf_program_headers()
        .iter()
        .position(|p| p.p_type(endian) == elf::PT_LOAD && p.p_flags(endian) & elf::PF_X != 0)
        .unwrap();
    let at = phoff + text * 56;
    let mut not_executable = image.clone();
    not_executable[at + 4] &= !(elf::PF_X as u8);
    refused_for(&not_executable, &["executable"]);
    let mut not_loaded = image.clone();
    not_loaded[at..at + 4].copy_from_slice(&0x1234u32.to_le_bytes());
    refused_for(&not_loaded, &["outside"]);
}

#[test]
fn damaged_symbols_and_hash_tables_are_refused() {
    let image = host_image();
    let file = ElfFile64::<Endianness>::parse(image.as_slice()).unwrap();
    let endian = file.endian();
    let section = |kind: u32| {
        file.elf_section_table()
            .iter()
            .find(|s| s.sh_type(endian) == kind)
            .unwrap()
    };
    // A defined dynamic symbol moved far away.
    let dynsym = section(elf::SHT_DYNSYM);
    let symbols: &[elf::Sym64<Endianness>] =
        dynsym.data_as_array(endian, image.as_slice()).unwrap();
    let defined = symbols
        .iter()
        .position(|s| s.st_shndx(endian) != 0 && s.st_type() == elf::STT_FUNC)
        .unwrap();
    let at = dynsym.sh_offset(endian) as usize + defined * 24;
    let mut moved = image.clone();
    moved[at + 8..at + 16].copy_from_slice(&0x7fff_0000_0000u64.to_le_bytes());
    refused_for(&moved, &["outside the loaded segments"]);
    // Its name past the string table.
    let mut renamed = image.clone();
    renamed[at..at + 4].copy_from_slice(&0xffff_fff0u32.to_le_bytes());
    refused_for(&renamed, &["name", "string table"]);
    // The GNU hash table's bucket count sent past the file.
    let gnu = section(elf::SHT_GNU_HASH).sh_offset(endian) as usize;
    let mut buckets = image.clone();
    buckets[gnu..gnu + 4].copy_from_slice(&0x0100_0000u32.to_le_bytes());
    refused_for(&buckets, &["GNU hash buckets"]);
}
