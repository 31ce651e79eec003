//! A real clang-19 program whose x86_64 device image is damaged in its offload container's
//! metadata (header, entry, string table) or in its ELF header, its program and section header
//! tables and its dynamic section: every run must end with the program's correct output (the image was
//! refused and the region ran on the host, or the damage did not matter) or a clear error
//! from the runtime, never a signal, a hang or a wrong result. The damage is pseudo-random with
//! a fixed seed, so a failure reproduces; the counts of each outcome are printed.

use object::{Object, ObjectSection};
use std::ops::Range;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};
use tests::{build_dir, compile, lib_dir, retry_while_busy, text, Compiler};

const VARIANTS: usize = 400;
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
fn u64_at(b: &[u8], at: usize) -> usize {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap()) as usize
}

/// Where the image's container lies in the program file, and the byte ranges damaged here
/// (relative to it): the container's own header, entry and string table (the image's triple
/// and architecture), and the image's ELF header, program headers, section headers and
/// dynamic section.
fn container_and_metadata(program: &[u8]) -> (usize, Vec<Range<usize>>) {
    let file = object::File::parse(program).unwrap();
    let section = file.section_by_name(".llvm.offloading").unwrap();
    let (section_offset, _) = section.file_range().unwrap();
    let data = section.data().unwrap();
    let containers = omptarget_core::offload_binary::containers(data);
    assert_eq!(containers.len(), 1, "one x86_64 image expected");
    let container = containers[0];
    let image = omptarget_core::offload_binary::unwrap(container).unwrap();
    assert!(image.triple.starts_with("x86_64"), "{}", image.triple);
    let start = section_offset as usize + (container.as_ptr() as usize - data.as_ptr() as usize);
    let image_at = image.bytes.as_ptr() as usize - container.as_ptr() as usize;
    let elf = image.bytes;
    let phoff = image_at + u64_at(elf, 32);
    let phnum = u16_at(elf, 56);
    let shoff = image_at + u64_at(elf, 40);
    let shnum = u16_at(elf, 60);
    let ranges = vec![
        0..image_at,
        image_at..image_at + 64,
        phoff..phoff + phnum * 56,
        shoff..shoff + shnum * 64,
        dynamic(elf, image_at),
    ];
    (start, ranges)
}

/// The dynamic section's bytes (its segment's), relative to the container.
fn dynamic(elf: &[u8], image_at: usize) -> Range<usize> {
    let phoff = u64_at(elf, 32);
    for i in 0..u16_at(elf, 56) {
        let at = phoff + i * 56;
        if u32::from_le_bytes(elf[at..at + 4].try_into().unwrap()) == 2 {
            let (off, size) = (u64_at(elf, at + 8), u64_at(elf, at + 32));
            return image_at + off..image_at + off + size;
        }
    }
    panic!("no dynamic segment")
}

enum Outcome {
    Correct,
    ClearError,
    Failure(String),
}

fn run(exe: &Path) -> Outcome {
    let mut cmd = Command::new(exe);
    cmd.env("LD_LIBRARY_PATH", lib_dir())
        .env_remove("OMP_TARGET_OFFLOAD")
        .env_remove("LIBOMPTARGET_DEBUG")
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

#[test]
fn damaged_device_images_end_correctly_or_with_a_clear_error() {
    let exe = compile(Compiler::Clang19, &["damaged_image_probe.c"], &[]);
    let program = std::fs::read(&exe).unwrap();
    assert!(
        matches!(run(&exe), Outcome::Correct),
        "the undamaged program fails"
    );
    let (container_start, ranges) = container_and_metadata(&program);
    let dir = build_dir().join("damaged-images");
    std::fs::create_dir_all(&dir).unwrap();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let (mut correct, mut clear, mut failures) = (0, 0, Vec::new());
    for variant in 0..VARIANTS {
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
        std::fs::write(&path, &damaged).unwrap();
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        match run(&path) {
            Outcome::Correct => correct += 1,
            Outcome::ClearError => clear += 1,
            Outcome::Failure(why) => failures.push(format!(
                "variant {variant} (container bytes {what:x?}): {why}"
            )),
        }
    }
    eprintln!(
        "damaged images: {VARIANTS} runs, {correct} correct output, {clear} clear error, {} failures",
        failures.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
