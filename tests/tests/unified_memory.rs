//! APUs and coherent nodes: the emulated HSA runtime's MI300A-like APU
//! (`OMPTARGET_EMU_PROFILE=mi300a`, gfx942) and the emulated CUDA driver's Grace Hopper-like
//! node (`OMPTARGET_EMU_PROFILE=gh200`). Maps are zero-copy where the device reaches host
//! memory and its plugin chose so (LLVM's automatic zero-copy on APUs with XNACK), counted in
//! the bytes the emulated copy engines move; `requires unified_shared_memory` programs run
//! without copies where the device reaches host memory and fault where it does not;
//! `omp_target_is_accessible` asks each device. LLVM 22's own tests of these run on both
//! profiles, LLVM 22's runtime on the same emulators being the judge.

use std::path::{Path, PathBuf};
use tests::conformance::EmulatedGpu::{self, Amdgpu, Cuda};
use tests::emulated;
use tests::llvm_suite::{self, Release, Target};

/// LLVM 22's zero-copy, unified shared memory and `omp_target_is_accessible` tests on the
/// emulated APU (tests/llvm-offload-suite/22/amdgcn-emu-apu/): every test LLVM 22's runtime
/// passes there passes on ours.
#[test]
fn llvm22_unified_memory_tests_pass_on_the_emulated_apu() {
    llvm_suite::emulated_lists_pass(Release::Llvm22, Target::AmdgcnEmuApu);
}

/// The same on the emulated Grace Hopper node (tests/llvm-offload-suite/22/nvptx-emu-gh200/).
#[test]
fn llvm22_unified_memory_tests_pass_on_the_emulated_coherent_node() {
    llvm_suite::emulated_lists_pass(Release::Llvm22, Target::NvptxEmuGh200);
}

/// Bytes of the mapped arrays the emulated copy engines moved, from a trace: the HSA
/// runtime's `copy-done` lines and the CUDA driver's `cuMemcpy*` calls, each with its `size=`,
/// of at least a MiB (the runtimes' own small copies, such as the device environment, are
/// left out: LLVM writes some of them otherwise).
fn bytes_copied(trace: &str) -> u64 {
    trace
        .lines()
        .filter(|l| l.starts_with("copy-done") || l.starts_with("cuMemcpy"))
        .filter_map(|l| emulated::field(l, "size="))
        .filter_map(|v| v.parse::<u64>().ok())
        .filter(|&size| size >= 1 << 20)
        .sum()
}

/// The two mapped arrays of tests/programs/zero_copy_maps.c, 8 MiB each.
const ARRAY_BYTES: u64 = 8 << 20;

struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    bytes: u64,
}

/// A program and the program whose x86-64 twins its kernels run with.
struct Program {
    exe: PathBuf,
    twins: PathBuf,
}

fn run_ours(gpu: EmulatedGpu, program: &Program, name: &str, env: &[(&str, &str)]) -> Run {
    let exe = &program.exe;
    let mut all = vec![("OMPTARGET_EMU_TWINS", program.twins.to_str().unwrap())];
    all.extend_from_slice(env);
    let (code, stdout, stderr, trace) = emulated::run_traced(gpu, exe, name, &all);
    let bytes = bytes_copied(&trace);
    if std::env::var_os("UNIFIED_MEMORY_DEBUG").is_some() {
        eprintln!(
            "{name}: {} trace lines, {bytes} bytes\n{stderr}",
            trace.lines().count()
        );
    }
    Run {
        code,
        stdout,
        stderr,
        bytes,
    }
}

/// LLVM 22's runtime on the same emulator and binary, traced.
fn run_llvm22(gpu: EmulatedGpu, program: &Program, name: &str, env: &[(&str, &str)]) -> Run {
    let exe = &program.exe;
    let trace = std::env::temp_dir().join(format!("um-llvm22-{name}-{}", std::process::id()));
    let _ = std::fs::remove_file(&trace);
    let mut cmd = tests::emulated::llvm_22_command(exe, &program.twins, 120);
    cmd.env("OMPTARGET_EMU_TRACE", &trace)
        .env_remove("LIBOMPTARGET_INFO");
    for (k, v) in env {
        cmd.env(k, v);
    }
    // Its plugins dlopen the emulated driver from the library path, as in the suite's runs.
    let _ = gpu;
    let output = cmd.output().expect("run under LLVM 22");
    let text = std::fs::read_to_string(&trace).unwrap_or_default();
    let _ = std::fs::remove_file(&trace);
    Run {
        code: output.status.code(),
        stdout: tests::text(&output.stdout),
        stderr: tests::text(&output.stderr),
        bytes: bytes_copied(&text),
    }
}

/// A gfx942 program alone and with its twins: LLVM 22's runtime would number host devices
/// before the GPU for a program with an x86-64 image.
fn apu_program(source: &str) -> Program {
    Program {
        exe: tests::compile_gfx942_clang22(source),
        twins: tests::compile_gfx942_twin_clang22(source),
    }
}

/// A twin program run as it is (our runtime loads only the GPU's plugin).
fn twin_program(exe: PathBuf) -> Program {
    Program {
        twins: exe.clone(),
        exe,
    }
}

fn passed(run: &Run, what: &str) {
    assert!(
        run.code == Some(0) && run.stdout.contains("PASS"),
        "{what}: exit {:?}\n{}{}",
        run.code,
        run.stdout,
        run.stderr
    );
}

/// On the APU with XNACK, maps are zero-copy: the program moves no byte of its 16 MiB of
/// mapped arrays, and LLVM 22 on the same binary moves no fewer. With XNACK off, the copies
/// come back (both runtimes copy each array at least once).
#[test]
fn an_apu_with_xnack_moves_no_mapped_bytes_and_copies_without() {
    let exe = apu_program("zero_copy_maps.c");
    let apu = [("OMPTARGET_EMU_PROFILE", "mi300a"), ("HSA_XNACK", "1")];
    let ours = run_ours(Amdgpu, &exe, "apu-xnack", &apu);
    passed(&ours, "ours, mi300a, XNACK on");
    let llvm = run_llvm22(Amdgpu, &exe, "apu-xnack", &apu);
    passed(&llvm, "LLVM 22, mi300a, XNACK on");
    assert!(ours.bytes == 0, "zero-copy maps moved {} bytes", ours.bytes);
    assert!(
        llvm.bytes >= ours.bytes,
        "LLVM 22 moved {} bytes, ours {}",
        llvm.bytes,
        ours.bytes
    );
    assert!(ours.stdout.contains("accessible: 1"), "{}", ours.stdout);

    let no_xnack = [("OMPTARGET_EMU_PROFILE", "mi300a"), ("HSA_XNACK", "0")];
    let ours = run_ours(Amdgpu, &exe, "apu-no-xnack", &no_xnack);
    passed(&ours, "ours, mi300a, XNACK off");
    let llvm = run_llvm22(Amdgpu, &exe, "apu-no-xnack", &no_xnack);
    passed(&llvm, "LLVM 22, mi300a, XNACK off");
    for (who, run) in [("ours", &ours), ("LLVM 22", &llvm)] {
        assert!(
            run.bytes >= 2 * ARRAY_BYTES,
            "{who} copied only {} bytes without XNACK",
            run.bytes
        );
    }
    assert!(ours.stdout.contains("accessible: 0"), "{}", ours.stdout);
}

/// The user's choice wins either way: `OMPTARGET_ZERO_COPY_MAPS=off` copies on the APU with
/// XNACK; on the Grace Hopper node maps copy by default (its GPU reads host memory over the
/// chip-to-chip link, slower than its HBM) and `OMPTARGET_ZERO_COPY_MAPS=on` or LLVM's
/// `OMPX_APU_MAPS=1` makes them zero-copy.
#[test]
fn the_user_forces_zero_copy_either_way() {
    let exe = apu_program("zero_copy_maps.c");
    let off = [
        ("OMPTARGET_EMU_PROFILE", "mi300a"),
        ("HSA_XNACK", "1"),
        ("OMPTARGET_ZERO_COPY_MAPS", "off"),
    ];
    let run = run_ours(Amdgpu, &exe, "apu-forced-off", &off);
    passed(&run, "mi300a with OMPTARGET_ZERO_COPY_MAPS=off");
    assert!(run.bytes >= 2 * ARRAY_BYTES, "copied {} bytes", run.bytes);

    let exe = twin_program(tests::compile_cuda_twin_clang22("zero_copy_maps.c"));
    let gh200 = [("OMPTARGET_EMU_PROFILE", "gh200")];
    let default = run_ours(Cuda, &exe, "gh200-default", &gh200);
    passed(&default, "gh200");
    assert!(
        default.bytes >= 2 * ARRAY_BYTES,
        "copied {} bytes",
        default.bytes
    );
    assert!(
        default.stdout.contains("accessible: 1"),
        "{}",
        default.stdout
    );
    for var in [("OMPTARGET_ZERO_COPY_MAPS", "on"), ("OMPX_APU_MAPS", "1")] {
        let env = [gh200[0], var];
        let run = run_ours(Cuda, &exe, "gh200-zero-copy", &env);
        passed(&run, &format!("gh200 with {}={}", var.0, var.1));
        assert!(run.bytes == 0, "{var:?}: copied {} bytes", run.bytes);
    }
    // A discrete H100 cannot: the request is refused with a warning and maps copy.
    let run = run_ours(
        Cuda,
        &exe,
        "h100-zero-copy",
        &[("OMPTARGET_ZERO_COPY_MAPS", "on")],
    );
    passed(&run, "H100 with OMPTARGET_ZERO_COPY_MAPS=on");
    assert!(run.bytes >= 2 * ARRAY_BYTES, "copied {} bytes", run.bytes);
    assert!(run.stdout.contains("accessible: 0"), "{}", run.stdout);
}

/// A program that requires unified shared memory runs without copies where the device
/// reaches host memory (the APU with XNACK, the Grace Hopper node), and faults as the
/// hardware would where it does not (the APU without XNACK; the runtime warns first).
#[test]
fn requires_unified_shared_memory_runs_in_place_or_faults() {
    let exe = apu_program("usm_requires.c");
    let run = run_ours(
        Amdgpu,
        &exe,
        "usm-xnack",
        &[("OMPTARGET_EMU_PROFILE", "mi300a"), ("HSA_XNACK", "1")],
    );
    passed(&run, "mi300a, XNACK on");
    assert_eq!(run.bytes, 0, "copied bytes");
    let run = run_ours(
        Amdgpu,
        &exe,
        "usm-no-xnack",
        &[("OMPTARGET_EMU_PROFILE", "mi300a"), ("HSA_XNACK", "0")],
    );
    assert_ne!(run.code, Some(0), "{}{}", run.stdout, run.stderr);
    assert!(
        run.stderr
            .contains("cannot access pageable host memory (XNACK is off)")
            && run.stderr.to_lowercase().contains("memory access fault"),
        "{}",
        run.stderr
    );
    let exe = twin_program(tests::compile_cuda_twin_clang22("usm_requires.c"));
    let run = run_ours(
        Cuda,
        &exe,
        "usm-gh200",
        &[("OMPTARGET_EMU_PROFILE", "gh200")],
    );
    passed(&run, "gh200");
    assert_eq!(run.bytes, 0, "copied bytes");
}

/// `OMPX_EAGER_ZERO_COPY_MAPS=1` on the APU without XNACK: maps are zero-copy, each entered
/// in the GPU's page tables before its kernel runs (`hsa_amd_svm_attributes_set`), reported
/// under `LIBOMPTARGET_INFO` bit 128, and the program runs without a fault or a copy.
#[test]
fn eager_maps_prefault_on_an_apu_without_xnack() {
    let exe = apu_program("zero_copy_maps.c");
    let env = [
        ("OMPTARGET_EMU_PROFILE", "mi300a"),
        ("HSA_XNACK", "0"),
        ("OMPX_EAGER_ZERO_COPY_MAPS", "1"),
        ("LIBOMPTARGET_INFO", "128"),
    ];
    let trace = std::env::temp_dir().join(format!("um-eager-{}", std::process::id()));
    let mut all: Vec<(&str, String)> = env.iter().map(|&(k, v)| (k, v.to_string())).collect();
    all.push(("OMPTARGET_EMU_TRACE", trace.display().to_string()));
    all.push(("OMPTARGET_EMU_TWINS", exe.twins.display().to_string()));
    let (code, stdout, stderr) = emulated::run(Amdgpu, &exe.exe, &[], &all);
    let text = std::fs::read_to_string(&trace).unwrap_or_default();
    let _ = std::fs::remove_file(&trace);
    assert!(
        code == Some(0) && stdout.contains("PASS"),
        "{stdout}{stderr}"
    );
    assert!(bytes_copied(&text) == 0, "copied {}", bytes_copied(&text));
    assert!(
        text.lines()
            .any(|l| l.starts_with("hsa_amd_svm_attributes_set")),
        "no prefault in the trace"
    );
    assert!(
        stderr.contains("Zero-copy map HstPtrBegin=")
            && stderr.contains("entered in the device's page tables"),
        "{stderr}"
    );
}

/// `LIBOMPTARGET_LOCK_MAPPED_HOST_BUFFERS=1` page-locks each mapped host range for as long as
/// it is mapped: on the default (discrete) profile, the trace shows one lock and one unlock of
/// each mapping, and the program's results are right. (Copies of a MiB or more lock their
/// host buffer for the copy anyway; a larger threshold makes the plugin stage them instead.)
#[test]
fn mapped_host_buffers_are_locked_while_mapped() {
    let exe = tests::compile_amdgpu_twin_clang22("zero_copy_maps.c");
    let (code, stdout, stderr, trace) = emulated::run_traced(
        Amdgpu,
        &exe,
        "lock-mapped",
        &[
            ("OMPTARGET_EMU_TWINS", exe.to_str().unwrap()),
            ("LIBOMPTARGET_LOCK_MAPPED_HOST_BUFFERS", "1"),
            ("LIBOMPTARGET_AMDGPU_MAX_ASYNC_COPY_BYTES", "1073741824"),
        ],
    );
    assert!(
        code == Some(0) && stdout.contains("PASS"),
        "{stdout}{stderr}"
    );
    let count = |name: &str| trace.lines().filter(|l| l.starts_with(name)).count();
    let (locks, unlocks) = (count("hsa_amd_memory_lock"), count("hsa_amd_memory_unlock"));
    assert!(locks >= 2, "{locks} locks:\n{trace}");
    assert_eq!(locks, unlocks, "every lock is undone");
    // Without the variable the program locks nothing of its own.
    let (_, _, _, plain) = emulated::run_traced(
        Amdgpu,
        &exe,
        "no-lock-mapped",
        &[
            ("OMPTARGET_EMU_TWINS", exe.to_str().unwrap()),
            ("LIBOMPTARGET_AMDGPU_MAX_ASYNC_COPY_BYTES", "1073741824"),
        ],
    );
    assert_eq!(
        plain
            .lines()
            .filter(|l| l.starts_with("hsa_amd_memory_lock"))
            .count(),
        0,
        "locks without the variable"
    );
}

/// `omptarget-info` shows each profile's device as the real one would be shown, with what its
/// maps do and why.
#[test]
fn omptarget_info_shows_the_profiles() {
    let info = |gpu: EmulatedGpu, env: &[(&str, &str)]| {
        let mut all = vec![("LIBOMPTARGET_PLUGINS_TO_LOAD", gpu.plugin())];
        let hsa = tests::dist().join("emu/libhsa-runtime64.so.1");
        let hsa = hsa.to_str().unwrap().to_string();
        if gpu == Amdgpu {
            all.push(("HSA_RUNTIME_LIB", hsa.as_str()));
        }
        all.extend_from_slice(env);
        let emu = tests::dist().join("emu");
        let path = format!("{}:{}", emu.display(), tests::lib_dir().display());
        all.push(("LD_LIBRARY_PATH", &path));
        let out = tests::info(&[], &all);
        tests::text(&out.stdout)
    };
    let apu = info(
        Amdgpu,
        &[("OMPTARGET_EMU_PROFILE", "mi300a"), ("HSA_XNACK", "1")],
    );
    for want in ["gfx942", "MI300A", "xnack+", "APU", "zero-copy"] {
        assert!(apu.contains(want), "no {want:?} in\n{apu}");
    }
    let gh200 = info(Cuda, &[("OMPTARGET_EMU_PROFILE", "gh200")]);
    assert!(gh200.contains("GH200"), "{gh200}");
    assert!(
        gh200
            .lines()
            .any(|l| l.contains("pageable memory access") && l.trim_end().ends_with('1')),
        "{gh200}"
    );
}

/// The README's gfx942 build line, for a kernel that calls math functions (ocml, from the device
/// libraries scripts/build-llvm22-device-runtime.sh completes for gfx942): it builds, and the
/// program runs on the emulated APU with its twin built the same way.
#[test]
fn the_readme_builds_gfx942_kernels_that_call_math_functions() {
    let runtime = tests::workspace_root().join("target/llvm22-device-runtime");
    assert!(
        runtime
            .join("gfx942-device-libs/oclc_isa_version_942.bc")
            .exists()
            && runtime.join("amdgpu/libompdevice.a").exists(),
        "run scripts/build-llvm22-device-runtime.sh (scripts/test.sh does)"
    );
    let readme = [
        "-O2".to_string(),
        "-fopenmp".into(),
        format!(
            "--rocm-device-lib-path={}",
            runtime.join("gfx942-device-libs").display()
        ),
        "-Xoffload-linker-amdgcn-amd-amdhsa".into(),
        format!("-L{}", runtime.join("amdgpu").display()),
        format!("-I{}", tests::clang22_include().display()),
        "-L/usr/lib/llvm-19/lib".into(),
        "-lm".into(),
    ];
    let source = tests::program("gfx942_math.c");
    let build = |out: &Path, targets: &[&str]| {
        let mut cmd = std::process::Command::new("clang-22");
        cmd.args(&readme)
            .args(targets)
            .arg(&source)
            .env("PATH", tests::clang22_twin_path(Amdgpu));
        let output = tests::outputs::build(cmd, out).expect("run clang-22");
        assert!(output.status.success(), "{}", tests::text(&output.stderr));
    };
    let dir = tests::build_dir();
    let (exe, twins) = (
        dir.join("gfx942_math-readme"),
        dir.join("gfx942_math-readme.twin"),
    );
    build(&exe, &["--offload-arch=gfx942"]);
    build(
        &twins,
        &[
            "-fopenmp-targets=amdgcn-amd-amdhsa,x86_64-pc-linux-gnu",
            "-Xopenmp-target=amdgcn-amd-amdhsa",
            "-march=gfx942",
        ],
    );
    let program = Program { exe, twins };
    let run = run_ours(
        Amdgpu,
        &program,
        "gfx942-math",
        &[("OMPTARGET_EMU_PROFILE", "mi300a")],
    );
    passed(&run, "gfx942 math program");
}
