//! Fuzz targets: each parser the runtime, its plugins and the driver emulator run over bytes
//! they did not make (a program's offload section and entry table, device images, image
//! metadata, a kernel's `printf` request), driven as the real code drives it. A target may
//! refuse its input with an error; it may not panic, hang or grow without bound.
//!
//! `scripts/fuzz.sh` runs them under libFuzzer (`src/bin/fuzz.rs`); `tests/replay.rs` runs
//! every saved corpus input and crash reproducer through them as an ordinary test.

use offload_image::cuda_image::SmVersion;
use plugin_api::abi_stable::std_types::{RSlice, RStr};

/// A fuzz target: its name (the directory of its corpus) and the function that takes one input.
pub struct Target {
    pub name: &'static str,
    pub run: fn(&[u8]),
    /// What it covers, for `scripts/fuzz.sh list`.
    pub covers: &'static str,
    /// The labels its corpus must hold seeds of (`seed-LABEL-...`): the compilers whose
    /// programs it reads, or the devices whose requests.
    pub seeded_by: &'static [&'static str],
}

const COMPILERS: &[&str] = &["clang19", "clang22"];

pub const TARGETS: &[Target] = &[
    Target {
        name: "offload_binary",
        run: offload_binary,
        covers: "a program's .llvm.offloading section: its containers, each unwrapped",
        seeded_by: COMPILERS,
    },
    Target {
        name: "offload_entries",
        run: offload_entries,
        covers: "offload-entry tables of both layouts (clang 19's 32-byte, clang 20+'s 56-byte)",
        seeded_by: COMPILERS,
    },
    Target {
        name: "host_image",
        run: host_image,
        covers: "the host plugin's check of an x86-64 image before glibc's loader maps it",
        seeded_by: COMPILERS,
    },
    Target {
        name: "cuda_image",
        run: cuda_image,
        covers:
            "the CUDA plugin's reading of a cubin or PTX before the driver: kind, layout, symbols",
        seeded_by: COMPILERS,
    },
    Target {
        name: "amdgpu_code_object",
        run: amdgpu_code_object,
        covers: "the AMDGPU plugin's reading of a code object before HSA's loader: target ID, \
                 layout, metadata note, symbols",
        seeded_by: COMPILERS,
    },
    Target {
        name: "amdgpu_metadata",
        run: amdgpu_metadata,
        covers: "the msgpack reader and the kernel metadata of an NT_AMDGPU_METADATA note",
        seeded_by: COMPILERS,
    },
    Target {
        name: "plugin_library",
        run: plugin_library,
        covers: "the runtime's check of a plugin library's file before dlopen",
        seeded_by: COMPILERS,
    },
    Target {
        name: "emu_cuda_image",
        run: emu_cuda_image,
        covers: "the CUDA driver emulator's cuModuleLoadData: image extent, cubin and PTX readers",
        seeded_by: COMPILERS,
    },
    Target {
        name: "rpc_printf",
        run: rpc_printf,
        covers: "the RPC server's device printf: a format and argument area as a GPU sends them, \
                 counted, its strings found, formatted",
        seeded_by: &["nvptx", "amdgpu"],
    },
];

pub fn target(name: &str) -> Option<&'static Target> {
    TARGETS.iter().find(|t| t.name == name)
}

/// What the core does with each device image of a registered program.
pub fn offload_binary(data: &[u8]) {
    for container in offload_image::offload_binary::containers(data) {
        let _ = offload_image::offload_binary::unwrap(container);
    }
    let _ = offload_image::offload_binary::unwrap(data);
}

/// The address the fuzzer's entry tables see their own input at: a name field holding
/// `NAMES_BASE + n` names the C string at input offset `n`.
pub const NAMES_BASE: u64 = 0x1000_0000;

/// Input: a 16-bit little-endian table length, the table, then anything (names among it).
pub fn offload_entries(data: &[u8]) {
    let Some((table, _)) = entry_input(data) else {
        return;
    };
    let mut names = |address: u64| name_in_input(data, address);
    if let Ok(table) = omptarget_core::abi::offload_entry::parse_entry_bytes(table, &mut names) {
        for entry in &table.entries {
            let _ = (entry.is_kernel(), entry.is_global(), entry.is_indirect());
        }
    }
}

/// The C string an `offload_entries` input holds at name address `address`, if any.
pub fn name_in_input(data: &[u8], address: u64) -> Option<String> {
    let start = usize::try_from(address.checked_sub(NAMES_BASE)?).ok()?;
    let tail = data.get(start..)?;
    let end = tail.iter().position(|&b| b == 0)?;
    Some(String::from_utf8_lossy(&tail[..end]).into_owned())
}

/// The table of an `offload_entries` input, and its length field.
pub fn entry_input(data: &[u8]) -> Option<(&[u8], usize)> {
    let len = u16::from_le_bytes([*data.first()?, *data.get(1)?]) as usize;
    Some((data.get(2..2 + len)?, len))
}

/// The host plugin's check, asked as the core asks it (with and without the container's
/// triple).
pub fn host_image(data: &[u8]) {
    for triple in ["x86_64-pc-linux-gnu", ""] {
        let _ = omptarget_rtl_host::elf_check::check(&plugin_api::ImageRef {
            bytes: RSlice::from_slice(data),
            triple: RStr::from_str(triple),
            arch: RStr::from_str(""),
        });
    }
}

/// The CUDA plugin before `cuModuleLoadData`, for an sm_90 device.
pub fn cuda_image(data: &[u8]) {
    if let Ok(image) = omptarget_rtl_cuda::image::check(data, SmVersion(90)) {
        for symbol in image.symbols.functions().chain(image.symbols.globals()) {
            let _ = image.symbols.find(&symbol.name);
        }
    }
}

/// The AMDGPU plugin: `check_image` (the target ID alone), then loading's checks for a gfx90a
/// device, then what launches ask of the kernels.
pub fn amdgpu_code_object(data: &[u8]) {
    use omptarget_rtl_amdgpu::code_object::{self, TargetId};
    let _ = code_object::identify(data);
    let Ok(code) = code_object::check(data) else {
        return;
    };
    let _ = code_object::check_compatibility(code.target(), &[TargetId::new("gfx90a")]);
    for kernel in code.kernels() {
        let _ = (kernel.explicit_args_size(), kernel.implicit_args_offset());
        let _ = code.kernel_descriptor(&kernel.name);
    }
    for symbol in code.symbols() {
        let _ = code.symbol_bytes(&symbol.name);
    }
}

/// A metadata note's descriptor alone, where most of a code object's structure lies.
pub fn amdgpu_metadata(data: &[u8]) {
    let _ = omptarget_rtl_amdgpu::code_object::msgpack::decode(data);
    let _ = omptarget_rtl_amdgpu::code_object::metadata::parse(data);
}

/// What the runtime reads of a plugin library's file before the system loader opens it.
pub fn plugin_library(data: &[u8]) {
    let _ = omptarget_core::plugins::file_check::check(data);
}

/// The emulator's `cuModuleLoadData`: the image's extent from its headers, as it finds it from a
/// bare pointer (an extent past the input is where the driver would read on: not this
/// reader's concern), then the image read for an sm_90 device.
pub fn emu_cuda_image(data: &[u8]) {
    use omptarget_emu_cuda::image;
    if let Some(header) = data.get(..64) {
        if let Some(extent) = image::elf_extent(header.try_into().unwrap()) {
            if let Some(headers) = usize::try_from(extent).ok().and_then(|e| data.get(..e)) {
                let _ = image::sections_extent(headers);
            }
        }
    }
    let _ = image::read_module(data, SmVersion(90));
}

/// Where the strings of an `rpc_printf` input are: a `%s` argument holding `STRINGS_BASE + n`
/// points at the C string at input offset `n`.
pub const STRINGS_BASE: u64 = NAMES_BASE;

/// An `rpc_printf` input: a flags byte (bit 0: the argument area is packed, as AMDGPU's
/// client sends it; else each argument is aligned, as NVPTX's), a 16-bit little-endian format
/// length, the format, then the argument area (the rest of the input, strings among it).
pub struct PrintfInput<'a> {
    pub packed: bool,
    pub format: &'a [u8],
    pub args: &'a [u8],
}

pub fn printf_input(data: &[u8]) -> Option<PrintfInput<'_>> {
    let (&flags, rest) = data.split_first()?;
    let len = u16::from_le_bytes([*rest.first()?, *rest.get(1)?]) as usize;
    Some(PrintfInput {
        packed: flags & 1 != 0,
        format: rest.get(2..2 + len)?,
        args: rest.get(2 + len..)?,
    })
}

/// The text of each non-null `%s` argument of an `rpc_printf` input whose format and
/// argument area are `format` and `args`, as the server fetches them from the device.
pub fn fetched_strings(data: &[u8], format: &[u8], args: &[u8], packed: bool) -> Vec<Vec<u8>> {
    gpu_plugin::rpc::printf::string_arguments(format, args, packed)
        .into_iter()
        .map(|address| string_in_input(data, address))
        .collect()
}

/// The text a device `%s` argument of an `rpc_printf` input points at, without its NUL; empty
/// where it points outside the input.
fn string_in_input(data: &[u8], address: u64) -> Vec<u8> {
    let tail = address
        .checked_sub(STRINGS_BASE)
        .and_then(|n| usize::try_from(n).ok())
        .and_then(|n| data.get(n..))
        .unwrap_or_default();
    let end = tail.iter().position(|&b| b == 0).unwrap_or(tail.len());
    tail[..end].to_vec()
}

/// The server's three passes over a request, as it serves one: the bytes of arguments the
/// format reads (sent back to the device), the `%s` arguments to fetch, the formatting. Beyond
/// not panicking, the passes must agree: an argument area as long as the first pass said is
/// never too short for the last, and every string the second asked for is there for it.
pub fn rpc_printf(data: &[u8]) {
    use gpu_plugin::rpc::printf::{self, FormatError, MAX_OUTPUT};
    let Some(input) = printf_input(data) else {
        return;
    };
    let needed = printf::argument_bytes(input.format, input.packed);
    let strings = fetched_strings(data, input.format, input.args, input.packed);
    match printf::format(input.format, input.args, input.packed, &strings) {
        Ok(text) => assert!(text.len() <= MAX_OUTPUT, "{} bytes formatted", text.len()),
        Err(
            error @ (FormatError::ArgumentsTooShort { .. } | FormatError::MissingString { .. }),
        ) if input.args.len() as u64 >= needed => {
            panic!("{error} with the {needed} bytes of arguments the format was counted to read")
        }
        Err(_) => {}
    }
}

/// The files of a directory of saved inputs, sorted; none where there is no such directory.
pub fn saved_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(dir)
        .map(|entries| entries.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default();
    files.sort();
    files
}

/// What the fuzzer found and kept for `target` (`corpus/<target>.found.tar.xz`), unpacked into
/// `dir` (emptied first); none without the archive.
pub fn unpack_found(target: &str, dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let archive = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("corpus")
        .join(format!("{target}.found.tar.xz"));
    if !archive.exists() {
        return Vec::new();
    }
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).unwrap();
    let status = std::process::Command::new("tar")
        .arg("-xJf")
        .arg(&archive)
        .arg("-C")
        .arg(dir)
        .status()
        .expect("run tar");
    assert!(status.success(), "unpacking {}", archive.display());
    saved_files(dir)
}
