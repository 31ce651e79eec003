//! What the emulator reads from a module image, without trusting it: a cubin's kernels (their
//! parameter layout, thread limit and static shared memory from `.nv.info.<kernel>` and
//! `.nv.shared.<kernel>`), its global variables with their sections' initial bytes and the
//! relocations that point them at each other; or a PTX text's `.target`, entries and globals.

use crate::status;
use object::elf;
use object::read::elf::{ElfFile64, FileHeader, SectionHeader, Sym};
use object::{Endianness, Object, ObjectSection, ObjectSymbol, RelocationFlags, RelocationTarget};
use offload_image::cuda_image::{self, ImageKind, SmVersion};
use std::collections::HashMap;

/// NVIDIA's symbol type for variables in `.nv.global*`/`.nv.constant*` sections.
const STT_CUDA_OBJECT: u8 = 13;
/// `st_other` bit of kernel entry points.
const STO_CUDA_ENTRY: u8 = 0x10;
/// `.nv.info` attributes (format byte 4: a 16-bit size, then that many bytes).
const EIATTR_MAX_THREADS: u8 = 0x05;
const EIATTR_REQNTID: u8 = 0x10;
const EIATTR_KPARAM_INFO: u8 = 0x17;
const EIATTR_CBANK_PARAM_SIZE: u8 = 0x19;
const EIFMT_SVAL: u8 = 0x04;
/// Relocations of data: 64-bit absolute addresses (R_CUDA_64, R_CUDA_G64) and 32-bit ones.
const R_CUDA_32: u32 = 1;
const R_CUDA_64: u32 = 2;
const R_CUDA_G64: u32 = 4;
/// A kernel's parameter space on devices of compute capability 7.0 and later (CUDA 12.1).
const MAX_PARAM_BYTES: u32 = 32764;
/// The most bytes of PTX variables with initialisers the reader builds (64 MiB).
const MAX_INITIALISED_BYTES: usize = 64 << 20;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Kernel {
    /// (offset, size) of each parameter in the parameter buffer, in order.
    pub params: Vec<(u32, u32)>,
    /// The parameter buffer's size.
    pub param_size: u32,
    /// The most threads per block the kernel was built for.
    pub max_threads: u32,
    pub static_shared: u32,
}

/// A section of global variables, placed in device memory when the module loads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DataSection {
    pub name: String,
    pub size: usize,
    /// Initial bytes (empty for zero-initialised sections).
    pub bytes: Vec<u8>,
    pub relocations: Vec<Relocation>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Relocation {
    pub offset: usize,
    pub width: usize,
    /// The target: a data section (index into `sections`) and offset in it.
    pub target: Option<(usize, usize)>,
    pub addend: i64,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Global {
    pub section: usize,
    pub offset: usize,
    pub size: usize,
}

#[derive(Clone, Debug, Default)]
pub struct ModuleImage {
    pub kernels: HashMap<String, Kernel>,
    pub sections: Vec<DataSection>,
    pub globals: HashMap<String, Global>,
}

impl ModuleImage {
    /// The initial bytes of global `name` (before relocations); `None` where it has none (a
    /// zero-initialised variable) or no such global.
    pub fn initial_bytes(&self, name: &str) -> Option<&[u8]> {
        let global = self.globals.get(name)?;
        let end = global.offset.checked_add(global.size)?;
        self.sections
            .get(global.section)?
            .bytes
            .get(global.offset..end)
    }
}

/// The size of an ELF image at `bytes` whose length the caller does not know (the driver is
/// handed a bare pointer): the end of its furthest header table or section. `None` if the
/// header is not a 64-bit little-endian ELF header.
pub fn elf_extent(header: &[u8; 64]) -> Option<u64> {
    if &header[..4] != b"\x7fELF" || header[4] != 2 || header[5] != 1 {
        return None;
    }
    let u16_at = |at: usize| u16::from_le_bytes([header[at], header[at + 1]]) as u64;
    let u64_at = |at: usize| u64::from_le_bytes(header[at..at + 8].try_into().unwrap());
    let (phoff, shoff) = (u64_at(32), u64_at(40));
    let ph_end = phoff.checked_add(u16_at(54).checked_mul(u16_at(56))?)?;
    let sh_end = shoff.checked_add(u16_at(58).checked_mul(u16_at(60))?)?;
    Some(ph_end.max(sh_end).max(64))
}

/// The end of the furthest section of a cubin whose header tables end at `bytes.len()`.
pub fn sections_extent(bytes: &[u8]) -> Option<u64> {
    let header = elf::FileHeader64::<Endianness>::parse(bytes).ok()?;
    let endian = header.endian().ok()?;
    let sections = header.section_headers(endian, bytes).ok()?;
    let mut end = bytes.len() as u64;
    for s in sections {
        if s.sh_type(endian) != elf::SHT_NOBITS {
            end = end.max(s.sh_offset(endian).checked_add(s.sh_size(endian))?);
        }
    }
    Some(end)
}

/// Why the driver refuses a module image: its status, and what it says on stderr.
#[derive(Debug)]
pub struct Refusal {
    pub status: status::Error,
    pub why: Option<String>,
}

/// `cuModuleLoadData`'s reading of an image whose bytes are known: what it is, whether it suits
/// a device of compute capability `device`, and what it holds.
pub fn read_module(bytes: &[u8], device: SmVersion) -> Result<ModuleImage, Refusal> {
    let refuse = |status, why: Option<String>| Refusal { status, why };
    let kind =
        cuda_image::classify(bytes).map_err(|why| refuse(status::INVALID_IMAGE, Some(why)))?;
    match kind {
        ImageKind::Cubin { sm } => {
            if cuda_image::compatible(&kind, device).is_err() {
                let why = format!("the cubin is for {sm}, the device is {device}");
                return Err(refuse(status::NO_BINARY_FOR_GPU, Some(why)));
            }
            ModuleImage::read_cubin(bytes).map_err(|why| refuse(status::INVALID_IMAGE, Some(why)))
        }
        ImageKind::Ptx { target } => match target {
            Some(t) if t > device => Err(refuse(status::INVALID_PTX, None)),
            _ => ModuleImage::read_ptx(&String::from_utf8_lossy(bytes))
                .map_err(|why| refuse(status::INVALID_PTX, Some(why))),
        },
    }
}

impl ModuleImage {
    pub fn read_cubin(bytes: &[u8]) -> Result<ModuleImage, String> {
        let file = ElfFile64::<Endianness>::parse(bytes)
            .map_err(|e| format!("the cubin's ELF structure is invalid: {e}"))?;
        let endian = file.endian();
        let mut image = ModuleImage::default();
        // Sections holding variables, by ELF section index.
        let mut placed: HashMap<usize, usize> = HashMap::new();
        for symbol in file.symbols() {
            let raw = symbol.elf_symbol();
            let kind = raw.st_type();
            let Some(index) = symbol.section_index() else {
                continue;
            };
            let Ok(name) = symbol.name() else { continue };
            if kind == elf::STT_FUNC && raw.st_other() & STO_CUDA_ENTRY != 0 {
                image
                    .kernels
                    .insert(name.to_owned(), kernel_info(&file, name)?);
                continue;
            }
            if kind != elf::STT_OBJECT && kind != STT_CUDA_OBJECT {
                continue;
            }
            let section = file
                .section_by_index(index)
                .map_err(|e| format!("symbol {name} names a missing section: {e}"))?;
            let section_name = section.name().unwrap_or("");
            if !section_name.starts_with(".nv.global") && !section_name.starts_with(".nv.constant")
            {
                continue;
            }
            let slot = match placed.get(&index.0) {
                Some(&slot) => slot,
                None => {
                    let slot = image.sections.len();
                    image.sections.push(data_section(&section, endian)?);
                    placed.insert(index.0, slot);
                    slot
                }
            };
            let (offset, size) = (raw.st_value(endian), raw.st_size(endian));
            let end = offset
                .checked_add(size)
                .filter(|&e| e <= image.sections[slot].size as u64);
            if end.is_none() {
                return Err(format!(
                    "global {name} lies outside its section {section_name}"
                ));
            }
            if raw.st_bind() != elf::STB_LOCAL || !image.globals.contains_key(name) {
                image.globals.insert(
                    name.to_owned(),
                    Global {
                        section: slot,
                        offset: offset as usize,
                        size: size as usize,
                    },
                );
            }
        }
        // Relocations of the placed sections, now that every target section has a slot.
        for (&index, &slot) in &placed {
            let section = file.section_by_index(object::SectionIndex(index)).unwrap();
            for (offset, relocation) in section.relocations() {
                let RelocationFlags::Elf { r_type } = relocation.flags() else {
                    continue;
                };
                let width = match r_type {
                    R_CUDA_64 | R_CUDA_G64 => 8,
                    R_CUDA_32 => 4,
                    _ => continue,
                };
                let in_bounds = offset
                    .checked_add(width as u64)
                    .is_some_and(|e| e <= image.sections[slot].size as u64);
                if !in_bounds {
                    return Err(format!(
                        "a relocation at {offset:#x} lies outside its section"
                    ));
                }
                let target = match relocation.target() {
                    RelocationTarget::Symbol(s) => file.symbol_by_index(s).ok().and_then(|t| {
                        let slot = *placed.get(&t.section_index()?.0)?;
                        Some((slot, t.address() as usize))
                    }),
                    _ => None,
                };
                image.sections[slot].relocations.push(Relocation {
                    offset: offset as usize,
                    width,
                    target,
                    addend: relocation.addend(),
                });
            }
        }
        Ok(image)
    }

    /// PTX: `.entry` kernels (parameters: what `.param` lines say) and the module's `.global`
    /// and `.const` variables with their initialisers (numbers, and addresses of variables as
    /// relocations), in one section. The twin's storage is used where it has the variable. A
    /// kernel whose parameters exceed the parameter space, as ptxas would, is refused, and so is
    /// an initialiser this reader does not model (it says which).
    pub fn read_ptx(text: &str) -> Result<ModuleImage, String> {
        let mut image = ModuleImage::default();
        let mut globals = DataSection {
            name: ".nv.global".into(),
            size: 0,
            bytes: Vec::new(),
            relocations: Vec::new(),
        };
        // Initialisers are read once every variable is placed: they may name later ones.
        let mut initialisers: Vec<(Global, usize, &str)> = Vec::new();
        let mut current: Option<String> = None;
        let mut functions = std::collections::HashSet::new();
        for line in text.lines().map(str::trim) {
            let words: Vec<&str> = line.split_whitespace().collect();
            if let Some(name) = ptx_function_name(line) {
                functions.insert(name);
            }
            if let Some(at) = words.iter().position(|w| *w == ".entry") {
                let name = words.get(at + 1).map(|w| w.split('(').next().unwrap_or(""));
                if let Some(name) = name.filter(|n| !n.is_empty()) {
                    image.kernels.insert(
                        name.to_owned(),
                        Kernel {
                            max_threads: 1024,
                            ..Kernel::default()
                        },
                    );
                    current = Some(name.to_owned());
                }
            } else if words.first() == Some(&".param") {
                if let (Some(kernel), Some(size)) = (&current, ptx_param_size(&words)) {
                    let k = image.kernels.get_mut(kernel).unwrap();
                    let offset = k.param_size.next_multiple_of(size.clamp(1, 8));
                    k.param_size = offset
                        .checked_add(size)
                        .filter(|&end| end <= MAX_PARAM_BYTES)
                        .ok_or_else(|| {
                            format!(
                                "kernel {kernel}'s parameters exceed the {MAX_PARAM_BYTES}-byte \
                                 parameter space"
                            )
                        })?;
                    k.params.push((offset, size));
                }
            } else if current.is_none() && is_module_variable(line) {
                let (declaration, initialiser) = match line.split_once('=') {
                    Some((d, i)) => (d, Some(i)),
                    None => (line, None),
                };
                let words: Vec<&str> = declaration.split_whitespace().collect();
                if let Some((name, size, element)) = ptx_global(&words) {
                    let placed = globals.size.checked_next_multiple_of(8);
                    let (offset, end) = placed
                        .and_then(|offset| Some((offset, offset.checked_add(size)?)))
                        .ok_or("the module's global variables overflow the address space")?;
                    globals.size = end;
                    let global = Global {
                        section: 0,
                        offset,
                        size,
                    };
                    if let Some(i) = initialiser {
                        initialisers.push((global.clone(), element, i));
                    }
                    image.globals.insert(name, global);
                }
            } else if line.starts_with('}') {
                current = None;
            }
        }
        if !initialisers.is_empty() {
            // The initial bytes are built here whole: a size no module's initialisers could
            // fill is refused rather than allocated.
            if globals.size > MAX_INITIALISED_BYTES {
                return Err(format!(
                    "the module's variables take {} bytes; the emulator builds the initial \
                     bytes of at most {MAX_INITIALISED_BYTES}",
                    globals.size
                ));
            }
            globals.bytes = vec![0; globals.size];
            for (global, element, initialiser) in initialisers {
                let names = Names {
                    variables: &image.globals,
                    functions: &functions,
                };
                initialise(&mut globals, &names, &global, element, initialiser)?;
            }
        }
        image.sections.push(globals);
        Ok(image)
    }
}

/// Whether a line outside kernels declares a `.global` or `.const` variable: those words before
/// any initialiser, and no parenthesis there (a function's parameters; an initialiser's
/// address expressions, `generic(x)`, may have them).
fn is_module_variable(line: &str) -> bool {
    let declaration = line.split('=').next().unwrap_or("");
    !declaration.contains('(')
        && declaration
            .split_whitespace()
            .any(|w| w == ".global" || w == ".const")
}

/// The function (`.entry` or `.func`) a PTX line declares or defines.
fn ptx_function_name(line: &str) -> Option<&str> {
    let rest = line
        .split_once(".entry ")
        .or_else(|| line.split_once(".func "))?
        .1
        .trim_start();
    // A `.func` may name its return value first: `.func (.param .b32 r) name(`.
    let rest = match rest.strip_prefix('(') {
        Some(after) => after.split_once(')')?.1.trim_start(),
        None => rest,
    };
    let name = rest
        .split(|c: char| c == '(' || c == ';' || c.is_whitespace())
        .next()?;
    (!name.is_empty()).then_some(name)
}

/// What a PTX initialiser may name.
struct Names<'a> {
    variables: &'a HashMap<String, Global>,
    functions: &'a std::collections::HashSet<&'a str>,
}

/// Writes a variable's initialiser (`5;` or `{1, 2, generic(x), y+8};`) into `section`: numbers
/// (decimal, hexadecimal, `0f`/`0d` floating-point bits) as `element`-byte values, and the
/// address of a variable of the module (`x`, `generic(x)`, plus an offset) as a relocation.
/// The address of a function is a relocation without a target, as a cubin's relocations of
/// function addresses are read: device code addresses are not modelled (kernels run through
/// the twin).
fn initialise(
    section: &mut DataSection,
    names: &Names<'_>,
    global: &Global,
    element: usize,
    initialiser: &str,
) -> Result<(), String> {
    let body = initialiser.trim().trim_end_matches(';').trim();
    let body = body
        .strip_prefix('{')
        .and_then(|b| b.strip_suffix('}'))
        .unwrap_or(body);
    for (i, item) in body.split(',').map(str::trim).enumerate() {
        let at = i
            .checked_mul(element)
            .filter(|at| at + element <= global.size)
            .ok_or_else(|| "an initialiser has more values than its variable holds".to_string())?;
        let offset = global.offset + at;
        if let Some(value) = ptx_number(item).filter(|_| element <= 8) {
            let bytes = value.to_le_bytes();
            section.bytes[offset..offset + element].copy_from_slice(&bytes[..element.min(8)]);
            continue;
        }
        let (name, addend) = match item.split_once('+') {
            Some((n, add)) => (n.trim(), ptx_number(add.trim()).map(|a| a as i64)),
            None => (item, Some(0)),
        };
        let name = name
            .strip_prefix("generic(")
            .and_then(|n| n.strip_suffix(')'))
            .unwrap_or(name);
        let target = match names.variables.get(name) {
            Some(v) => Some(Some((v.section, v.offset))),
            None if names.functions.contains(name) => Some(None),
            None => None,
        };
        let (Some(target), Some(addend), 4 | 8) = (target, addend, element) else {
            return Err(format!(
                "the emulator does not model the PTX initialiser `{item}` (numbers and \
                 addresses of variables and functions are modelled)"
            ));
        };
        section.relocations.push(Relocation {
            offset,
            width: element,
            target,
            addend,
        });
    }
    Ok(())
}

/// A PTX number: decimal, `0x` hexadecimal (either maybe negative), or `0f`/`0d` followed by
/// the hexadecimal bits of a float or double.
fn ptx_number(text: &str) -> Option<u64> {
    let (negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let value = if let Some(hex) = digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
    {
        u64::from_str_radix(hex.trim_end_matches('U'), 16).ok()?
    } else if let Some(bits) = digits
        .strip_prefix("0f")
        .or_else(|| digits.strip_prefix("0d"))
        .or_else(|| digits.strip_prefix("0F"))
        .or_else(|| digits.strip_prefix("0D"))
    {
        u64::from_str_radix(bits, 16).ok()?
    } else {
        digits.trim_end_matches('U').parse::<u64>().ok()?
    };
    Some(if negative {
        value.wrapping_neg()
    } else {
        value
    })
}

fn ptx_type_size(ty: &str) -> Option<u32> {
    let digits: String = ty.chars().filter(|c| c.is_ascii_digit()).collect();
    Some(digits.parse::<u32>().ok()? / 8).filter(|&s| s > 0)
}

/// `.param .u64 name` or `.param .align 8 .b8 name[16]`.
fn ptx_param_size(words: &[&str]) -> Option<u32> {
    let ty = words.iter().find(|w| {
        w.starts_with(".u") || w.starts_with(".b") || w.starts_with(".s") || w.starts_with(".f")
    })?;
    let element = ptx_type_size(ty)?;
    let count = words
        .last()?
        .split_once('[')
        .and_then(|(_, n)| n.trim_end_matches([']', ',', ';']).parse::<u32>().ok())
        .unwrap_or(1);
    element.checked_mul(count)
}

/// `.visible .global .align 4 .b8 name[12];` or `.global .u32 name` (before any `=`): the name,
/// the size and the element's size.
fn ptx_global(words: &[&str]) -> Option<(String, usize, usize)> {
    let at = words.iter().position(|w| {
        w.starts_with(".u") || w.starts_with(".b") || w.starts_with(".s") || w.starts_with(".f")
    })?;
    let element = ptx_type_size(words[at])? as usize;
    let declarator = words.get(at + 1)?.trim_end_matches(';');
    let (name, count) = match declarator.split_once('[') {
        Some((name, n)) => (name, n.trim_end_matches(']').parse::<usize>().ok()?),
        None => (declarator, 1),
    };
    Some((name.to_owned(), element.checked_mul(count)?, element))
}

fn data_section(
    section: &object::read::elf::ElfSection64<'_, '_, Endianness>,
    endian: Endianness,
) -> Result<DataSection, String> {
    let header = section.elf_section_header();
    let size = usize::try_from(header.sh_size(endian)).map_err(|_| "section too large")?;
    if size > 1 << 32 {
        return Err(format!("section of {size} bytes"));
    }
    let bytes = if header.sh_type(endian) == elf::SHT_PROGBITS {
        let data = section
            .data()
            .map_err(|e| format!("section data outside the image: {e}"))?;
        if data.len() != size {
            return Err("section data outside the image".into());
        }
        data.to_vec()
    } else {
        Vec::new()
    };
    Ok(DataSection {
        name: section.name().unwrap_or("").to_owned(),
        size,
        bytes,
        relocations: Vec::new(),
    })
}

/// A kernel's attributes from its `.nv.info.<name>` and `.nv.shared.<name>` sections.
fn kernel_info(file: &ElfFile64<'_, Endianness>, name: &str) -> Result<Kernel, String> {
    let mut kernel = Kernel {
        max_threads: 1024,
        ..Kernel::default()
    };
    if let Some(shared) = file.section_by_name(&format!(".nv.shared.{name}")) {
        kernel.static_shared = u32::try_from(shared.size()).unwrap_or(u32::MAX);
    }
    let Some(info) = file.section_by_name(&format!(".nv.info.{name}")) else {
        return Ok(kernel);
    };
    let data = info.data().map_err(|e| format!("kernel {name}: {e}"))?;
    let mut at = 0usize;
    while let Some(record) = data.get(at..at + 4) {
        let (format, attribute) = (record[0], record[1]);
        let value = u16::from_le_bytes([record[2], record[3]]);
        at += 4;
        if format != EIFMT_SVAL {
            if attribute == EIATTR_CBANK_PARAM_SIZE {
                kernel.param_size = value as u32;
            }
            continue;
        }
        let body = data
            .get(at..at + value as usize)
            .ok_or_else(|| format!("kernel {name}: .nv.info record past its section"))?;
        at += value as usize;
        let word = |i: usize| {
            body.get(i * 4..i * 4 + 4)
                .map(|b| u32::from_le_bytes(b.try_into().unwrap()))
        };
        match attribute {
            EIATTR_KPARAM_INFO => {
                let (Some(position), Some(flags)) = (word(1), word(2)) else {
                    return Err(format!("kernel {name}: short parameter record"));
                };
                let offset = position >> 16;
                let size = (flags >> 18) & 0x3fff;
                kernel.params.push((offset, size));
            }
            EIATTR_MAX_THREADS | EIATTR_REQNTID => {
                if let (Some(x), Some(y), Some(z)) = (word(0), word(1), word(2)) {
                    let product = x.saturating_mul(y).saturating_mul(z);
                    if product > 0 {
                        kernel.max_threads = kernel.max_threads.min(product);
                    }
                }
            }
            _ => {}
        }
    }
    kernel.params.sort_unstable();
    let end = kernel.params.iter().map(|&(o, s)| o + s).max().unwrap_or(0);
    kernel.param_size = kernel.param_size.max(end);
    Ok(kernel)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A module as LLVM's NVPTX back end writes one: variables with numbers, byte strings and
    /// addresses of other variables (generic or not, forward references included) as
    /// initialisers, a `.const` variable, and a kernel.
    const PTX: &str = r#"
.version 8.5
.target sm_90
.address_size 64
.weak .const .align 8 .b8 env[16];
.global .align 1 .b8 text[4] = {104, 105, 0, 255};
.global .align 8 .u64 table[3] = {7, generic(text), later+8};
.visible .global .align 4 .u32 answer = 42;
.global .align 4 .f32 one = 0f3F800000;
.global .align 8 .u64 later[2] = {-1, 0x10};
.visible .global .align 8 .u64 pointer = helper;
.visible .func  (.param .b32 func_retval0) helper(
	.param .b32 helper_param_0
)
{
	ret;
}
.visible .entry kernel(
	.param .u64 kernel_param_0,
	.param .u32 kernel_param_1
)
{
	ld.global.u32 %r1, [answer];
	ret;
}
"#;

    #[test]
    fn ptx_variables_get_their_initial_values_and_addresses() {
        let image = ModuleImage::read_ptx(PTX).unwrap();
        let section = &image.sections[0];
        let at = |name: &str| &image.globals[name];
        let bytes = |name: &str| {
            let g = at(name);
            &section.bytes[g.offset..g.offset + g.size]
        };
        assert_eq!(at("env").size, 16);
        assert_eq!(bytes("text"), &[104, 105, 0, 255]);
        assert_eq!(bytes("answer"), &42u32.to_le_bytes());
        assert_eq!(bytes("one"), &1.0f32.to_le_bytes());
        assert_eq!(&bytes("later")[..8], &u64::MAX.to_le_bytes());
        assert_eq!(&bytes("later")[8..], &16u64.to_le_bytes());
        assert_eq!(&bytes("table")[..8], &7u64.to_le_bytes());
        let table = at("table").offset;
        let relocations: Vec<_> = section
            .relocations
            .iter()
            .map(|r| (r.offset - table, r.width, r.target, r.addend))
            .collect();
        assert_eq!(
            relocations[..2],
            [
                (8, 8, Some((0, at("text").offset)), 0),
                (16, 8, Some((0, at("later").offset)), 8),
            ]
        );
        let pointer = &section.relocations[2];
        assert_eq!(
            (pointer.offset, pointer.width, pointer.target),
            (at("pointer").offset, 8, None),
            "a function's address"
        );
        assert_eq!(ptx_function_name(".visible .entry kernel("), Some("kernel"));
        assert_eq!(ptx_function_name(".extern .func helper2;"), Some("helper2"));
        let kernel = &image.kernels["kernel"];
        assert_eq!(kernel.params, [(0, 8), (8, 4)]);
    }

    #[test]
    fn an_unmodelled_ptx_initialiser_is_refused_with_its_text() {
        let ptx = ".global .align 8 .u64 x[1] = {0xFF00(generic(y))>>8};\n.global .u64 y;";
        let e = ModuleImage::read_ptx(ptx).unwrap_err();
        assert!(e.contains("0xFF00(generic(y))>>8"), "{e}");
        let e = ModuleImage::read_ptx(".global .u32 x[1] = {1, 2};").unwrap_err();
        assert!(e.contains("more values"), "{e}");
    }
}
