//! Device `printf` as our RPC server formats it (`gpu_plugin::rpc::printf`) against LLVM's
//! servers' own formatting: LLVM libc's `printf_core`, configured as each release's server
//! configures it (LLVM 22: `libc/shared/rpc_server.h`, which LLVM's plugins include; LLVM 19:
//! `libc/utils/gpu/server`), built for x86-64 from the sources
//! scripts/fetch-llvm-offload-tests.sh fetches (tests/programs/llvm_printf.cpp). The requests
//! are every saved input of the `rpc_printf` fuzz target: its seeds, device calls of every
//! family of conversions as NVPTX and AMDGPU lay out their arguments, and the thousands of
//! formats the fuzzer found and kept (`fuzz/corpus/rpc_printf.found.tar.xz`). More requests in
//! the same layout: `OMPTARGET_PRINTF_INPUTS=dir` (a copy of a fuzzer's work corpus, say).
//!
//! Where ours formats, LLVM's must format the same bytes, and both must count the same
//! argument bytes. Ours refuses where LLVM's servers would print on regardless, each on
//! purpose (gpu-plugin/src/rpc/printf.rs says why): `%n`, an argument area shorter than the
//! format reads, output over 64 MiB; LLVM's formatting is not asked for those. Ours writes
//! `%lc` as LLVM's libc does after its 22 release, so formats with one are not compared.
//! LLVM's is built with `-mlong-double-64`: the GPU's `long double`, which rpc_server.h
//! declares, where LLVM's x86-64 plugins, built without it, read 16 bytes for `%Lf`.

use gpu_plugin::rpc::printf::{self, FormatError};
use std::ffi::c_char;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use tests::llvm_suite::{self, Release};

type LlvmFormat = unsafe extern "C" fn(
    *const c_char,
    *const u8,
    u64,
    bool,
    *const *const c_char,
    u64,
    *mut u8,
    u64,
) -> i64;
type LlvmArgumentBytes = unsafe extern "C" fn(*const c_char, bool) -> u64;

/// tests/programs/llvm_printf.cpp for `release`, built once and loaded.
fn llvm_library(release: Release) -> &'static libloading::Library {
    static LLVM22: OnceLock<libloading::Library> = OnceLock::new();
    static LLVM19: OnceLock<libloading::Library> = OnceLock::new();
    let cell = match release {
        Release::Llvm22 => &LLVM22,
        Release::Llvm19 => &LLVM19,
    };
    cell.get_or_init(|| {
        let suite = llvm_suite::suite_root(release).unwrap_or_else(|e| panic!("{e}"));
        let libc = suite.parent().unwrap().parent().unwrap().join("libc");
        let out = tests::build_dir().join(format!(
            "libllvm{}_printf-{}.so",
            release.major(),
            std::process::id()
        ));
        let compiler = format!("clang++-{}", release.major());
        let mut build = std::process::Command::new(&compiler);
        // The GPU's `long double`, 8 bytes, which rpc_server.h declares.
        build.args(["-O1", "-shared", "-fPIC", "-std=c++17", "-mlong-double-64"]);
        build.arg(format!("-I{}", libc.display()));
        if release == Release::Llvm19 {
            // What libc/utils/gpu/server/CMakeLists.txt gives LLVM 19's server, and the
            // converters it links.
            build.args([
                "-DLLVM_19",
                "-DLIBC_NAMESPACE=__llvm_libc_19_1_7",
                "-DLIBC_COPT_USE_C_ASSERT",
                "-DLIBC_COPT_ARRAY_ARG_LIST",
                "-DLIBC_COPT_PRINTF_DISABLE_WRITE_INT",
                "-DLIBC_COPT_PRINTF_DISABLE_INDEX_MODE",
            ]);
            build.arg(format!("-I{}", libc.join("include").display()));
            for source in ["converter.cpp", "writer.cpp"] {
                build.arg(libc.join("src/stdio/printf_core").join(source));
            }
        }
        let status = build
            .arg(tests::program("llvm_printf.cpp"))
            .arg("-o")
            .arg(&out)
            .status()
            .unwrap_or_else(|e| panic!("run {compiler}: {e}"));
        assert!(
            status.success(),
            "llvm_printf.cpp did not build for LLVM {}",
            release.major()
        );
        // SAFETY: the library has no initialisers of consequence.
        let library = unsafe { libloading::Library::new(&out) }.expect("load llvm_printf");
        let _ = std::fs::remove_file(&out);
        library
    })
}

fn llvm_function<T: Copy>(release: Release, name: &str) -> T {
    // SAFETY: each name is looked up with the type of its definition in llvm_printf.cpp.
    unsafe { *llvm_library(release).get::<T>(name.as_bytes()).expect(name) }
}

/// The format up to its NUL, with one.
fn c_format(format: &[u8]) -> Vec<u8> {
    format
        .iter()
        .copied()
        .take_while(|&b| b != 0)
        .chain([0])
        .collect()
}

/// The bytes of arguments LLVM's server asks the client for.
fn llvm_argument_bytes(release: Release, format: &[u8], packed: bool) -> u64 {
    let format = c_format(format);
    // SAFETY: a NUL-terminated format.
    unsafe {
        llvm_function::<LlvmArgumentBytes>(release, "llvm_printf_argument_bytes")(
            format.as_ptr().cast(),
            packed,
        )
    }
}

/// The most of LLVM's text compared.
const OUT_LIMIT: usize = 1 << 20;

/// LLVM's formatting: the text (its first `OUT_LIMIT` bytes) and its whole length, or LLVM's
/// error code.
fn llvm_format(
    release: Release,
    format: &[u8],
    args: &[u8],
    packed: bool,
    strings: &[Vec<u8>],
) -> Result<(Vec<u8>, u64), i64> {
    let format = c_format(format);
    let strings: Vec<Vec<u8>> = strings
        .iter()
        .map(|s| [s.as_slice(), &[0]].concat())
        .collect();
    let pointers: Vec<*const c_char> = strings.iter().map(|s| s.as_ptr().cast()).collect();
    let mut out = vec![0u8; OUT_LIMIT];
    // SAFETY: a NUL-terminated format, the argument area and its length, NUL-terminated
    // strings and their count, an output buffer and its length.
    let written = unsafe {
        llvm_function::<LlvmFormat>(release, "llvm_printf_format")(
            format.as_ptr().cast(),
            args.as_ptr(),
            args.len() as u64,
            packed,
            pointers.as_ptr(),
            pointers.len() as u64,
            out.as_mut_ptr(),
            out.len() as u64,
        )
    };
    let length = u64::try_from(written).map_err(|_| written)?;
    out.truncate((length as usize).min(OUT_LIMIT));
    Ok((out, length))
}

/// How one request came out.
enum Comparison {
    Same,
    /// Ours refuses it or writes it differently on purpose (the module's header says which).
    NotCompared,
    Differs(String),
}

/// Ours against LLVM `release`'s on one request.
fn compare(release: Release, data: &[u8]) -> Comparison {
    use Comparison::*;
    let Some(input) = omptarget_fuzz::printf_input(data) else {
        return NotCompared;
    };
    let (format, args, packed) = (input.format, input.args, input.packed);
    let counted = printf::argument_bytes(format, packed);
    let llvm_counted = llvm_argument_bytes(release, format, packed);
    if counted != llvm_counted {
        return Differs(format!(
            "argument bytes: ours {counted}, LLVM's {llvm_counted}"
        ));
    }
    if has_wide_character(format) {
        return NotCompared;
    }
    // The client sends as many bytes of arguments as the server counted: the input's, cut
    // or filled with zeroes to that length.
    let mut args = args.to_vec();
    args.resize(counted as usize, 0);
    let args = args.as_slice();
    let strings = omptarget_fuzz::fetched_strings(data, format, args, packed);
    let show = |bytes: &[u8]| String::from_utf8_lossy(&bytes[..bytes.len().min(200)]).into_owned();
    match printf::format(format, args, packed, &strings) {
        Ok(text) => match llvm_format(release, format, args, packed, &strings) {
            Ok((llvm_text, length))
                if text.len() as u64 == length && text.starts_with(&llvm_text) =>
            {
                Same
            }
            Ok((llvm_text, length)) => Differs(format!(
                "ours {:?} ({} bytes), LLVM's {:?} ({length} bytes)",
                show(&text),
                text.len(),
                show(&llvm_text)
            )),
            Err(code) => Differs(format!("ours {:?}, LLVM's error {code}", show(&text))),
        },
        // Refused on purpose where LLVM's server prints on, and LLVM's is not asked: `%n`
        // (LLVM copies it as text); an argument area shorter than the format reads (LLVM
        // reads -1 or past the end); output over 64 MiB, from widths and precisions near
        // `INT_MAX`, where LLVM's converters overflow an `int` and some write outside their
        // buffers (`%.2147483647A` of -1.0 crashes LLVM's formatting).
        Err(
            FormatError::WriteCountRefused { .. }
            | FormatError::ArgumentsTooShort { .. }
            | FormatError::OutputTooLong { .. },
        ) => NotCompared,
        Err(
            error @ (FormatError::InvalidWideCharacter { .. } | FormatError::MissingString { .. }),
        ) => Differs(format!("ours refused ({error})")),
    }
}

/// Whether `format` has a `%lc` conversion.
fn has_wide_character(format: &[u8]) -> bool {
    let mut at = 0;
    while let Some(start) = format[at..].iter().position(|&b| b == b'%') {
        at += start + 1;
        if format.get(at) == Some(&b'%') {
            at += 1;
            continue;
        }
        while format
            .get(at)
            .is_some_and(|b| b"-+ #0123456789.*".contains(b))
        {
            at += 1;
        }
        if format[at..].starts_with(b"lc") {
            return true;
        }
    }
    false
}

/// The saved inputs of the `rpc_printf` fuzz target: seeds, then what the fuzzer kept
/// (unpacked once for both tests).
fn saved_requests() -> &'static [PathBuf] {
    static FILES: OnceLock<Vec<PathBuf>> = OnceLock::new();
    FILES.get_or_init(|| {
        let seeds = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus/rpc_printf");
        let mut files = omptarget_fuzz::saved_files(&seeds);
        let found = tests::build_dir().join(format!("rpc_printf-found-{}", std::process::id()));
        files.extend(omptarget_fuzz::unpack_found("rpc_printf", &found));
        if let Some(more) = std::env::var_os("OMPTARGET_PRINTF_INPUTS") {
            files.extend(omptarget_fuzz::saved_files(Path::new(&more)));
        }
        files
    })
}

#[test]
fn device_printf_formats_as_llvm_22s_server_does() {
    formats_as_llvm(Release::Llvm22);
}

#[test]
fn device_printf_formats_as_llvm_19s_server_does() {
    formats_as_llvm(Release::Llvm19);
}

fn formats_as_llvm(release: Release) {
    let requests = saved_requests();
    let seeds = requests
        .iter()
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("seed-")
        })
        .count();
    assert!(
        seeds >= 20 && requests.len() > seeds + 100,
        "{seeds} seeds of {} requests",
        requests.len()
    );
    let mut differences = Vec::new();
    let mut same = 0;
    for path in requests {
        match compare(release, &std::fs::read(path).unwrap()) {
            Comparison::Same => same += 1,
            Comparison::NotCompared => {}
            Comparison::Differs(why) => differences.push(format!("{}: {why}", path.display())),
        }
    }
    eprintln!(
        "LLVM {}: {} requests, {same} formatted the same, {} differently, the rest not compared",
        release.major(),
        requests.len(),
        differences.len()
    );
    // Most requests are compared: the exemptions stay exceptions.
    assert!(
        same * 4 > requests.len() * 3,
        "{same} of {} compared",
        requests.len()
    );
    assert!(
        differences.is_empty(),
        "{} of {} requests formatted differently, the first:\n{}",
        differences.len(),
        requests.len(),
        differences[..differences.len().min(20)].join("\n")
    );
}
