//! Seeds the fuzz corpora from real programs: `omptarget-fuzz-seeds CORPUS LABEL FILE...`
//! writes, for each offload program, its `.llvm.offloading` section, each device image (by its
//! triple: host, CUDA and emulator, AMDGPU), an AMDGPU image's metadata note and the program's
//! entry table (names resolved from its relocations); for a shared library of no offload
//! program, the library (a plugin library's seed); for a PTX file, the text. Files are named
//! `seed-LABEL-<what>-<hash>` under `CORPUS/<target>/`. `scripts/fuzz.sh seeds` runs it.

use object::read::elf::{ElfFile64, NoteIterator, SectionHeader};
use object::{Endianness, Object, ObjectSection, RelocationTarget};
use omptarget_fuzz::NAMES_BASE;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::path::Path;

fn save(corpus: &Path, target: &str, label: &str, what: &str, bytes: &[u8]) {
    assert!(
        omptarget_fuzz::target(target).is_some(),
        "no target {target}"
    );
    let mut hasher = DefaultHasher::new();
    bytes.hash(&mut hasher);
    let dir = corpus.join(target);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("seed-{label}-{what}-{:016x}", hasher.finish()));
    std::fs::write(&path, bytes).unwrap();
    println!("{} ({} bytes)", path.display(), bytes.len());
}

/// The descriptor of the `AMDGPU` metadata note (type 32) of a code object.
fn amdgpu_metadata(image: &[u8]) -> Option<Vec<u8>> {
    let file = ElfFile64::<Endianness>::parse(image).ok()?;
    let endian = file.endian();
    for section in file.elf_section_table().iter() {
        let notes: Option<NoteIterator<_>> = section.notes(endian, image).ok()?;
        for note in notes
            .into_iter()
            .flat_map(|mut n| std::iter::from_fn(move || n.next().ok()?))
        {
            if note.name() == b"AMDGPU" && note.n_type(endian) == 32 {
                return Some(note.desc().to_vec());
            }
        }
    }
    None
}

/// The C string at a virtual address of the program, if one is there.
fn string_at(file: &object::File, address: u64) -> Option<Vec<u8>> {
    for section in file.sections() {
        let (start, size) = (section.address(), section.size());
        if address >= start && address < start + size {
            let data = section.data().ok()?;
            let tail = data.get((address - start) as usize..)?;
            let end = tail.iter().position(|&b| b == 0)?;
            let text = &tail[..end];
            return (!text.is_empty() && text.iter().all(|b| b.is_ascii_graphic()))
                .then(|| text.to_vec());
        }
    }
    None
}

/// The entry table as the fuzzer's `offload_entries` target takes it: each relocated pointer
/// of the table filled in, and names pointing at copies of the strings after the table.
fn entry_seed(file: &object::File) -> Option<Vec<u8>> {
    let section = file.sections().find(|s| {
        matches!(
            s.name(),
            Ok("omp_offloading_entries" | "llvm_offload_entries")
        )
    })?;
    let mut table = section.data().ok()?.to_vec();
    let (start, size) = (section.address(), section.size());
    let mut names: Vec<u8> = Vec::new();
    let names_at = 2 + table.len() as u64;
    for (offset, relocation) in file.dynamic_relocations()? {
        if offset < start || offset + 8 > start + size {
            continue;
        }
        let value = match relocation.target() {
            RelocationTarget::Absolute => relocation.addend() as u64,
            RelocationTarget::Symbol(index) => file
                .symbol_by_index(index)
                .ok()
                .map(|s| {
                    use object::ObjectSymbol;
                    s.address()
                })?
                .wrapping_add(relocation.addend() as u64),
            _ => continue,
        };
        let slot = (offset - start) as usize;
        let value = match string_at(file, value) {
            Some(name) => {
                let at = NAMES_BASE + names_at + names.len() as u64;
                names.extend_from_slice(&name);
                names.push(0);
                at
            }
            None => value,
        };
        table[slot..slot + 8].copy_from_slice(&value.to_le_bytes());
    }
    let mut seed = u16::try_from(table.len()).ok()?.to_le_bytes().to_vec();
    seed.extend_from_slice(&table);
    seed.extend_from_slice(&names);
    Some(seed)
}

fn seed_program(corpus: &Path, label: &str, bytes: &[u8]) {
    let file = object::File::parse(bytes).expect("not an object file");
    if file.section_by_name(".llvm.offloading").is_none() {
        // A shared library of no offload program: a plugin library's seed.
        save(corpus, "plugin_library", label, "library", bytes);
        return;
    }
    if let Some(seed) = entry_seed(&file) {
        save(corpus, "offload_entries", label, "entries", &seed);
    }
    let section = file.section_by_name(".llvm.offloading").unwrap();
    let data = section.data().unwrap();
    save(corpus, "offload_binary", label, "section", data);
    for container in offload_image::offload_binary::containers(data) {
        let image = offload_image::offload_binary::unwrap(container).unwrap();
        let triple = image.triple.as_str();
        if triple.starts_with("x86_64") {
            save(corpus, "host_image", label, "x86_64", image.bytes);
        } else if triple.starts_with("nvptx64") {
            save(corpus, "cuda_image", label, &image.arch, image.bytes);
            save(corpus, "emu_cuda_image", label, &image.arch, image.bytes);
        } else if triple.starts_with("amdgcn") {
            save(
                corpus,
                "amdgpu_code_object",
                label,
                &image.arch,
                image.bytes,
            );
            let desc = amdgpu_metadata(image.bytes).expect("a code object without metadata");
            save(corpus, "amdgpu_metadata", label, &image.arch, &desc);
        } else {
            panic!("an image for {triple}: no fuzz target reads it");
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--list") {
        for target in omptarget_fuzz::TARGETS {
            println!("{:20} {}", target.name, target.covers);
        }
        return;
    }
    let [corpus, label, files @ ..] = args.as_slice() else {
        eprintln!("usage: omptarget-fuzz-seeds CORPUS LABEL FILE...");
        std::process::exit(2);
    };
    for file in files {
        let bytes = std::fs::read(file).unwrap_or_else(|e| panic!("{file}: {e}"));
        if bytes.starts_with(b"\x7fELF") {
            seed_program(Path::new(corpus), label, &bytes);
        } else {
            // A PTX text, as the CUDA plugin may be handed.
            save(Path::new(corpus), "cuda_image", label, "ptx", &bytes);
            save(Path::new(corpus), "emu_cuda_image", label, "ptx", &bytes);
        }
    }
}
