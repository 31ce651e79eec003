//! Real clang-19 programs whose device image is damaged in its header and metadata bytes: the
//! offload container's own header, entry and string table, and the image's ELF header, program
//! and section header tables and dynamic section. Every run must end with the program's correct
//! output (the image was refused and the region ran on the host, or the damage did not matter)
//! or a clear error from the runtime, never a signal, a hang or a wrong result. Host images
//! (with the default policy and with `OMP_TARGET_OFFLOAD=mandatory`), sm_90 cubins on the
//! emulated CUDA driver and gfx90a code objects on the emulated HSA runtime are damaged. The damage is pseudo-random with fixed seeds, so a failure
//! reproduces; the counts of each outcome are printed.

use object::{Object, ObjectSection};
use std::ops::Range;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};
use tests::{build_dir, compile, lib_dir, retry_while_busy, text, Compiler};

const EXPECTED: &str = "sum=65280";

/// xorshift64*: deterministic damage.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn u16_at(b: &[u8], at: usize) -> usize {
    u16::from_le_bytes([b[at], b[at + 1]]) as usize
}
fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}
fn u64_at(b: &[u8], at: usize) -> usize {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap()) as usize
}

/// Where the container of the image for `triple` lies in the program file, and the byte ranges
/// damaged here (relative to it): the container's own header, entry and string table (the
/// image's triple and architecture), and the image's ELF header, program headers, section
/// headers and dynamic section (where it has one); for an AMDGPU code object also its notes
/// (the `NT_AMDGPU_METADATA` msgpack the loaders read).
fn container_and_metadata(program: &[u8], triple: &str) -> (usize, Vec<Range<usize>>) {
    let file = object::File::parse(program).unwrap();
    let section = file.section_by_name(".llvm.offloading").unwrap();
    let (section_offset, _) = section.file_range().unwrap();
    let data = section.data().unwrap();
    let (container, image) = omptarget_core::offload_binary::containers(data)
        .into_iter()
        .map(|c| (c, omptarget_core::offload_binary::unwrap(c).unwrap()))
        .find(|(_, image)| image.triple.starts_with(triple))
        .unwrap_or_else(|| panic!("no {triple} image"));
    let start = section_offset as usize + (container.as_ptr() as usize - data.as_ptr() as usize);
    let image_at = image.bytes.as_ptr() as usize - container.as_ptr() as usize;
    let elf = image.bytes;
    let (phoff, phnum) = (u64_at(elf, 32), u16_at(elf, 56));
    let (shoff, shnum) = (u64_at(elf, 40), u16_at(elf, 60));
    let mut ranges = vec![
        0..image_at,
        image_at..image_at + 64,
        image_at + phoff..image_at + phoff + phnum * 56,
        image_at + shoff..image_at + shoff + shnum * 64,
    ];
    for i in 0..phnum {
        let at = phoff + i * 56;
        let kind = u32_at(elf, at);
        if kind == 2 || (kind == 4 && triple.starts_with("amdgcn")) {
            let (offset, size) = (u64_at(elf, at + 8), u64_at(elf, at + 32));
            ranges.push(image_at + offset..image_at + offset + size);
        }
    }
    (start, ranges)
}

enum Outcome {
    Correct,
    ClearError,
    Failure(String),
}

/// How a damaged program runs: its library path and environment.
struct Setting {
    library_path: String,
    env: Vec<(&'static str, String)>,
}

fn run(exe: &Path, setting: &Setting) -> Outcome {
    let mut cmd = Command::new(exe);
    cmd.env("LD_LIBRARY_PATH", &setting.library_path)
        .env_remove("OMP_TARGET_OFFLOAD")
        .env_remove("LIBOMPTARGET_DEBUG")
        .env_remove("LIBOMPTARGET_PLUGINS_TO_LOAD")
        .envs(setting.env.iter().map(|(k, v)| (*k, v)))
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = retry_while_busy(|| cmd.spawn()).unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Outcome::Failure("hung".into());
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let out = child.wait_with_output().unwrap();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    // LLVM's fatal offload error (a construct failed while devices exist) aborts by design.
    if out.status.signal() == Some(6) && stderr.contains("omptarget fatal error") {
        return Outcome::ClearError;
    }
    if let Some(signal) = out.status.signal() {
        return Outcome::Failure(format!("died of signal {signal}; stderr: {stderr}"));
    }
    match (out.status.success(), stdout.contains(EXPECTED)) {
        (true, true) => Outcome::Correct,
        (true, false) => Outcome::Failure(format!("exit 0 with wrong output: {stdout}")),
        (false, _) if stderr.contains("omptarget") => Outcome::ClearError,
        (false, _) => Outcome::Failure(format!(
            "failed without a runtime message: {}; stdout: {stdout}; stderr: {stderr}",
            out.status
        )),
    }
}

/// Damages the `triple` image of `exe` `variants` ways from `seed` and runs each; panics with
/// every failure, after printing the count of each outcome.
fn damage_and_run(
    name: &str,
    exe: &Path,
    triple: &str,
    variants: usize,
    seed: u64,
    setting: &Setting,
) {
    let program = std::fs::read(exe).unwrap();
    assert!(
        matches!(run(exe, setting), Outcome::Correct),
        "{name}: the undamaged program fails"
    );
    let (container_start, ranges) = container_and_metadata(&program, triple);
    let dir = build_dir().join(format!("damaged-images-{name}"));
    std::fs::create_dir_all(&dir).unwrap();
    let mut rng = Rng(seed);
    let (mut correct, mut clear, mut failures) = (0, 0, Vec::new());
    for variant in 0..variants {
        let mut damaged = program.clone();
        let range = &ranges[rng.below(ranges.len())];
        let mut what = Vec::new();
        // One to three changes: a flipped bit, a byte or an 8-byte word rewritten, or a run of
        // up to 16 bytes zeroed.
        for _ in 0..1 + rng.below(3) {
            let at = container_start + range.start + rng.below(range.len());
            match rng.below(4) {
                0 => damaged[at] ^= 1 << rng.below(8),
                1 => damaged[at] = rng.next() as u8,
                2 => {
                    let end = (at + 1 + rng.below(16)).min(container_start + range.end);
                    damaged[at..end].fill(0);
                }
                _ => {
                    let end = (at + 8).min(container_start + range.end);
                    let word = rng.next().to_le_bytes();
                    damaged[at..end].copy_from_slice(&word[..end - at]);
                }
            }
            what.push(at - container_start);
        }
        let path = dir.join(format!("variant-{variant}"));
        tests::outputs::write(&path, &damaged, 0o755).unwrap();
        match run(&path, setting) {
            Outcome::Correct => correct += 1,
            Outcome::ClearError => clear += 1,
            Outcome::Failure(why) => failures.push(format!(
                "variant {variant} (container bytes {what:x?}): {why}"
            )),
        }
    }
    eprintln!(
        "damaged images ({name}): {variants} runs, {correct} correct output, {clear} clear error, {} failures",
        failures.len()
    );
    assert!(failures.is_empty(), "{name}:\n{}", failures.join("\n"));
}

fn host_program() -> PathBuf {
    compile(Compiler::Clang19, &["damaged_image_probe.c"], &[])
}

#[test]
fn damaged_host_images_end_correctly_or_with_a_clear_error() {
    let setting = Setting {
        library_path: lib_dir().display().to_string(),
        env: vec![],
    };
    damage_and_run(
        "host",
        &host_program(),
        "x86_64",
        400,
        0x9e37_79b9_7f4a_7c15,
        &setting,
    );
}

/// Where offloading is mandatory, a refused image is LLVM's fatal error, never a crash.
#[test]
fn damaged_host_images_with_offload_mandatory_end_correctly_or_with_a_clear_error() {
    let setting = Setting {
        library_path: lib_dir().display().to_string(),
        env: vec![("OMP_TARGET_OFFLOAD", "mandatory".into())],
    };
    damage_and_run(
        "mandatory",
        &host_program(),
        "x86_64",
        100,
        0x0123_4567_89ab_cdef,
        &setting,
    );
}

/// An sm_90 cubin damaged, run by our CUDA plugin on the emulated CUDA driver (the program's
/// x86_64 twin image runs the kernels there, and on the host plugin when the cubin is refused).
#[test]
fn damaged_cubins_on_the_emulated_driver_end_correctly_or_with_a_clear_error() {
    let exe = tests::compile_cuda_twin("damaged_image_probe.c");
    let setting = Setting {
        library_path: format!(
            "{}:{}",
            tests::dist().join("emu").display(),
            lib_dir().display()
        ),
        // The emulated GPU alone, as device 0.
        env: vec![("LIBOMPTARGET_PLUGINS_TO_LOAD", "cuda".into())],
    };
    damage_and_run(
        "cubin",
        &exe,
        "nvptx64",
        200,
        0x5555_aaaa_1234_9876,
        &setting,
    );
}

/// A gfx90a code object damaged, run by our AMDGPU plugin on the emulated HSA runtime (the
/// program's x86_64 twin runs the kernels there, and on the host plugin when the code object is
/// refused).
#[test]
fn damaged_code_objects_on_the_emulated_hsa_runtime_end_correctly_or_with_a_clear_error() {
    let exe = tests::compile_amdgpu_twin("damaged_image_probe.c");
    let runtime = tests::dist().join("emu/libhsa-runtime64.so.1");
    let setting = Setting {
        library_path: lib_dir().display().to_string(),
        // The emulated GPUs alone, device 0 first.
        env: vec![
            ("LIBOMPTARGET_PLUGINS_TO_LOAD", "amdgpu".into()),
            ("HSA_RUNTIME_LIB", runtime.display().to_string()),
        ],
    };
    damage_and_run(
        "code-object",
        &exe,
        "amdgcn",
        200,
        0x0bad_c0de_5eed_2026,
        &setting,
    );
}

/// An entry whose name pointer points nowhere readable (a damaged relocation): registration
/// ends with the runtime's message naming the entry, and the program goes on.
#[test]
fn an_entry_name_pointing_nowhere_is_refused_with_a_message() {
    let exe = compile(Compiler::Clang19, &["damaged_entry_names.c"], &[]);
    let out = tests::run(&exe, &[]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{:?}\n{stdout}\n{stderr}", out.status);
    assert!(stdout.contains("survived"), "{stdout}");
    assert!(stderr.contains("entry 1's name cannot be read"), "{stderr}");
}
