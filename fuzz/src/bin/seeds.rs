//! Seeds the fuzz corpora from real programs: `omptarget-fuzz-seeds CORPUS LABEL FILE...`
//! writes, for each offload program, its `.llvm.offloading` section, each device image (by its
//! triple: host, CUDA and emulator, AMDGPU), an AMDGPU image's metadata note and the program's
//! entry table (names resolved from its relocations); for a shared library of no offload
//! program, the library (a plugin library's seed); for a PTX file, the text. Files are named
//! `seed-LABEL-<what>-<hash>` under `CORPUS/<target>/`. `omptarget-fuzz-seeds --printf CORPUS`
//! writes the `rpc_printf` seeds: device `printf` calls as NVPTX's and AMDGPU's clients lay out
//! their arguments. `scripts/fuzz.sh seeds` runs both.

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

/// One argument of a device `printf` call, after C's promotions.
#[derive(Clone, Copy)]
enum Arg {
    Int(i32),
    Long(i64),
    Double(f64),
    Pointer(u64),
    /// A `%s` argument: the string goes into the input, the argument points at it.
    Text(&'static str),
}

/// Calls as device code makes them: the formats of `tests/programs/rpc_gpu_libc.c` and of
/// LLVM libc's printf tests' families (every conversion, length, flag, `*` width and
/// precision, C23's `%b` and `%wN`, a null `%s`).
#[rustfmt::skip]
const PRINTF_CALLS: &[(&str, &[Arg])] = &[
    ("device printf: %d %s %#x %c\n", &[Arg::Int(42), Arg::Text("from the GPU"), Arg::Int(255), Arg::Int(b'z' as i32)]),
    ("device stderr: %ld\n", &[Arg::Long(-7)]),
    ("team %d of %d, thread %d: %s\n", &[Arg::Int(3), Arg::Int(108), Arg::Int(31), Arg::Text("ready")]),
    ("%s has %zu bytes at %p\n", &[Arg::Text("buffer"), Arg::Long(4096), Arg::Pointer(0x7f00_1234_5000)]),
    ("%5.2f %e %g %a|%-10.3F|%+E|%G|%A\n", &[Arg::Double(std::f64::consts::PI), Arg::Double(-1.5e-300), Arg::Double(1e21),
        Arg::Double(0.1), Arg::Double(f64::INFINITY), Arg::Double(2.5), Arg::Double(1e-5), Arg::Double(-0.0)]),
    ("%.0f %.20g %#.3g %010.4e %Lf\n", &[Arg::Double(2.5), Arg::Double(1.0 / 3.0), Arg::Double(100.0),
        Arg::Double(-6.02e23), Arg::Double(f64::NAN)]),
    ("%ld %lld %hhd %hd %lu %llx %jd %td %zd\n", &[Arg::Long(i64::MIN), Arg::Long(-1), Arg::Int(300), Arg::Int(70000),
        Arg::Long(-1), Arg::Long(0xdead_beef), Arg::Long(9), Arg::Long(-9), Arg::Long(12)]),
    ("%c%c%c %lc|%5c|%-3c|\n", &[Arg::Int(b'G' as i32), Arg::Int(b'P' as i32), Arg::Int(b'U' as i32), Arg::Int(0xe9),
        Arg::Int(b'x' as i32), Arg::Int(b'y' as i32)]),
    ("%-*.*d|%*s|%.*f|%*d\n", &[Arg::Int(8), Arg::Int(5), Arg::Int(42), Arg::Int(6), Arg::Text("abc"), Arg::Int(3),
        Arg::Double(std::f64::consts::E), Arg::Int(-4), Arg::Int(7)]),
    ("%#o %#x %#X %08.3d % d %+i %b %#B %u\n", &[Arg::Int(8), Arg::Int(0), Arg::Int(-1), Arg::Int(-12), Arg::Int(5),
        Arg::Int(5), Arg::Int(10), Arg::Int(5), Arg::Int(-1)]),
    ("%w32d %w64u %wf16x %wf64o %w8d\n", &[Arg::Int(-32), Arg::Long(64), Arg::Int(0x1ffff), Arg::Long(8), Arg::Int(0x1ff)]),
    ("100%% done, %s and %s\n", &[Arg::Pointer(0), Arg::Text("the rest")]),
    ("%.3s|%10.2s|%-8s|%s\n", &[Arg::Text("truncated"), Arg::Text("right"), Arg::Text("left"), Arg::Text("")]),
    ("plain text without conversions\n", &[]),
];

/// One `rpc_printf` input (`omptarget_fuzz::printf_input`'s layout) of a call: its arguments
/// laid out as the device's variadic area holds them (packed: back to back, as AMDGPU's client
/// sends them; else each at a multiple of its size, as NVPTX's), then its strings.
fn printf_seed(format: &str, args: &[Arg], packed: bool) -> Vec<u8> {
    let mut area = Vec::new();
    let mut texts: Vec<(usize, &str)> = Vec::new();
    for &arg in args {
        let (value, size) = match arg {
            Arg::Int(v) => (v as u32 as u64, 4),
            Arg::Long(v) => (v as u64, 8),
            Arg::Double(v) => (v.to_bits(), 8),
            Arg::Pointer(v) => (v, 8),
            Arg::Text(text) => {
                texts.push((
                    area.len().next_multiple_of(if packed { 1 } else { 8 }),
                    text,
                ));
                (0, 8)
            }
        };
        if !packed {
            area.resize(area.len().next_multiple_of(size), 0);
        }
        area.extend_from_slice(&value.to_le_bytes()[..size]);
    }
    let mut seed = vec![u8::from(packed)];
    seed.extend_from_slice(&u16::try_from(format.len()).unwrap().to_le_bytes());
    seed.extend_from_slice(format.as_bytes());
    let area_at = seed.len();
    seed.extend_from_slice(&area);
    for (slot, text) in texts {
        let address = omptarget_fuzz::STRINGS_BASE + seed.len() as u64;
        seed[area_at + slot..area_at + slot + 8].copy_from_slice(&address.to_le_bytes());
        seed.extend_from_slice(text.as_bytes());
        seed.push(0);
    }
    seed
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--list") {
        for target in omptarget_fuzz::TARGETS {
            println!("{:20} {}", target.name, target.covers);
        }
        return;
    }
    if let [flag, corpus] = args.as_slice() {
        if flag == "--printf" {
            for (index, (format, call)) in PRINTF_CALLS.iter().enumerate() {
                for (label, packed) in [("nvptx", false), ("amdgpu", true)] {
                    let seed = printf_seed(format, call, packed);
                    save(
                        Path::new(corpus),
                        "rpc_printf",
                        label,
                        &format!("call{index}"),
                        &seed,
                    );
                }
            }
            return;
        }
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
