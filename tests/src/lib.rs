//! Helpers for the end-to-end tests: find the install tree, compile OpenMP programs with the
//! real clang-19 and clang-22, and run them against our runtime.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

pub mod conformance;
pub mod emulated;
pub mod hang_report;
pub mod json;
pub mod llvm_suite;
pub mod outputs;

pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The install tree under test: `$OMPTARGET_DIST`, else `dist/` (made by scripts/build-dist.sh).
pub fn dist() -> PathBuf {
    let dir = std::env::var_os("OMPTARGET_DIST")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("dist"));
    assert!(
        dir.join("lib/libomptarget.so.22.1").exists(),
        "no install tree at {}: run scripts/build-dist.sh first (scripts/test.sh does)",
        dir.display()
    );
    dir
}

pub fn lib_dir() -> PathBuf {
    dist().join("lib")
}

/// Scratch directory for compiled programs.
pub fn build_dir() -> PathBuf {
    let dir = workspace_root().join("target/e2e");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

pub fn program(name: &str) -> PathBuf {
    workspace_root().join("tests/programs").join(name)
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Compiler {
    Clang19,
    Clang22,
}

pub const COMPILERS: [Compiler; 2] = [Compiler::Clang19, Compiler::Clang22];

/// Where `.ci/install-deps.sh` unpacked LLVM 22's libomp-22-dev (it conflicts with
/// libomp-19-dev) and liboffload-22 (LLVM 22's runtime, kept off the loader's path):
/// `$LLVM22_OMP_ROOT`, else `/opt/llvm22-omp`.
pub fn llvm22_root() -> PathBuf {
    std::env::var_os("LLVM22_OMP_ROOT")
        .map(PathBuf::from)
        .unwrap_or_else(|| "/opt/llvm22-omp".into())
}

/// clang-22's `omp.h` and friends.
pub fn clang22_include() -> PathBuf {
    llvm22_root().join("usr/lib/llvm-22/lib/clang/22/include")
}

/// LLVM 22's `libomptarget.so.22.1`, with its `libLLVMOffload.so.22.1`.
pub fn llvm22_lib_dir() -> PathBuf {
    llvm22_root().join("usr/lib/llvm-22/lib")
}

impl Compiler {
    pub fn tag(self) -> &'static str {
        match self {
            Compiler::Clang19 => "clang19",
            Compiler::Clang22 => "clang22",
        }
    }

    pub(crate) fn command(self, cpp: bool) -> Command {
        let name = match (self, cpp) {
            (Compiler::Clang19, false) => "clang-19",
            (Compiler::Clang19, true) => "clang++-19",
            (Compiler::Clang22, false) => "clang-22",
            (Compiler::Clang22, true) => "clang++-22",
        };
        let mut cmd = Command::new(name);
        cmd.args(["-O1", "-fopenmp", "-fopenmp-targets=x86_64-pc-linux-gnu"]);
        if self == Compiler::Clang22 {
            // clang-22 links -lomptarget: ours, found first; libomp comes from LLVM 19's tree.
            let include = clang22_include();
            assert!(
                include.join("omp.h").exists(),
                "clang-22's omp.h not found at {} (see .ci/install-deps.sh)",
                include.display()
            );
            cmd.arg(format!("-I{}", include.display()));
            cmd.arg(format!("-L{}", lib_dir().display()));
            cmd.arg("-L/usr/lib/llvm-19/lib");
        }
        cmd
    }
}

/// Compiles `sources` into an executable, once per test run and name; panics with the
/// compiler's output on failure.
pub fn compile(compiler: Compiler, sources: &[&str], extra: &[&str]) -> PathBuf {
    static LOCK: OnceLock<std::sync::Mutex<()>> = OnceLock::new();
    let stem = Path::new(sources[0]).file_stem().unwrap().to_str().unwrap();
    let out = build_dir().join(format!(
        "{stem}-{}{}",
        compiler.tag(),
        extra.join("").replace(['-', '=', '/'], "_")
    ));
    let cpp = sources.iter().any(|s| s.ends_with(".cpp"));
    let mut cmd = compiler.command(cpp);
    cmd.args(sources.iter().map(|s| program(s))).args(extra);
    // Compiling in parallel on a 2-core machine only thrashes.
    let _guard = LOCK
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    let program = cmd.get_program().to_owned();
    let output = outputs::build(cmd, &out).unwrap_or_else(|e| {
        panic!("cannot run {program:?}: {e} (install it: .ci/install-deps.sh)")
    });
    assert!(
        output.status.success(),
        "compiling {sources:?} with {compiler:?} failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    out
}

/// Runs a program against the install tree with extra environment variables.
pub fn run(exe: &Path, env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(exe);
    cmd.env("LD_LIBRARY_PATH", lib_dir());
    for var in [
        "OMP_TARGET_OFFLOAD",
        "LIBOMPTARGET_PLUGIN_PATH",
        "LIBOMPTARGET_PLUGINS_TO_LOAD",
        "LIBOMPTARGET_DEBUG",
    ] {
        cmd.env_remove(var);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    retry_while_busy(|| cmd.output())
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", exe.display()))
}

/// Starts a just-written executable: it can be briefly busy (ETXTBSY) or unreadable (EACCES)
/// while another test thread forks with its write descriptor still open, so try again.
pub fn retry_while_busy<T>(mut start: impl FnMut() -> std::io::Result<T>) -> std::io::Result<T> {
    let mut tries = 0;
    loop {
        match start() {
            Err(e) if matches!(e.raw_os_error(), Some(26 | 13)) && tries < 100 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            result => return result,
        }
    }
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The `// EXPECT: line` comments of a test program.
pub fn expectations(source: &str) -> Vec<String> {
    let text = std::fs::read_to_string(program(source)).unwrap();
    text.lines()
        .filter_map(|l| l.trim().strip_prefix("// EXPECT: "))
        .map(str::to_string)
        .collect()
}

/// Runs a program and checks it exits 0 and prints every expected line.
pub fn run_and_check(exe: &Path, source: &str, env: &[(&str, &str)]) {
    let output = run(exe, env);
    let stdout = text(&output.stdout);
    let stderr = text(&output.stderr);
    assert!(
        output.status.success(),
        "{} failed ({}):\nstdout:\n{stdout}\nstderr:\n{stderr}",
        exe.display(),
        output.status
    );
    for line in expectations(source) {
        assert!(
            stdout.lines().any(|l| l == line),
            "{}: expected line '{line}' in:\n{stdout}\nstderr:\n{stderr}",
            exe.display()
        );
    }
}

/// `omptarget-info` with extra environment.
pub fn info(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(dist().join("bin/omptarget-info"));
    for var in [
        "OMP_TARGET_OFFLOAD",
        "LIBOMPTARGET_PLUGIN_PATH",
        "LIBOMPTARGET_PLUGINS_TO_LOAD",
    ] {
        cmd.env_remove(var);
    }
    cmd.args(args).envs(env.iter().copied());
    cmd.output().expect("cannot run omptarget-info")
}

/// Compiles `sources` with every compiler and checks each program's output and exit status.
pub fn check_with_every_compiler(sources: &[&str]) {
    for compiler in COMPILERS {
        let exe = compile(compiler, sources, &[]);
        run_and_check(&exe, sources[0], &[]);
    }
}

/// Where the NVPTX toolchain is (ptxas, libdevice, one-cubin nvlink):
/// `$NVPTX_CUDA_PATH`, else /opt/cuda-min (made by scripts/setup-nvptx-toolchain.sh).
pub fn nvptx_cuda_path() -> PathBuf {
    let dir = std::env::var_os("NVPTX_CUDA_PATH")
        .map(PathBuf::from)
        .unwrap_or_else(|| "/opt/cuda-min".into());
    assert!(
        dir.join("bin/ptxas").exists(),
        "no NVPTX toolchain at {}: run scripts/setup-nvptx-toolchain.sh {0} (.ci/install-deps.sh does)",
        dir.display()
    );
    dir
}

/// `$PATH` with the NVPTX toolchain's `bin` (ptxas) first, for clang's device link.
pub fn path_with_ptxas() -> String {
    format!(
        "{}:{}",
        nvptx_cuda_path().join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// clang-19 flags (beside the usual ones) for an sm_90 image with an x86-64 twin, whose
/// kernels the emulated CUDA driver runs; with `--cuda-path` and ptxas on `PATH`. -foffload-lto
/// because the one-cubin nvlink cannot link several cubins.
pub const CUDA_TWIN_FLAGS: &[&str] = &[
    "-foffload-lto",
    "-fopenmp-targets=nvptx64-nvidia-cuda,x86_64-pc-linux-gnu",
    "-Xopenmp-target=nvptx64-nvidia-cuda",
    "-march=sm_90",
    "--libomptarget-nvptx-bc-path=/usr/lib/llvm-19/lib",
];

/// Compiles one C source into a program with an NVPTX (`sm_arch`) device image, with clang-19.
pub fn compile_nvptx(source: &str, arch: &str) -> PathBuf {
    let (cuda, path) = (nvptx_cuda_path(), path_with_ptxas());
    compile_device(
        source,
        arch,
        &[
            "-O1".into(),
            "-foffload-lto".into(),
            format!("--cuda-path={}", cuda.display()),
            "--libomptarget-nvptx-bc-path=/usr/lib/llvm-19/lib".into(),
        ],
        &path,
    )
}

/// Compiles one C source with clang-19 into a program with an sm_90 image and its x86-64 twin
/// (see [`CUDA_TWIN_FLAGS`]), for the emulated CUDA driver.
pub fn compile_cuda_twin(source: &str) -> PathBuf {
    let mut flags: Vec<String> = vec!["-O2".into()];
    flags.extend(clang19_twin_flags(conformance::EmulatedGpu::Cuda));
    build_once(
        source,
        "sm_90-twin",
        &flags,
        &clang19_twin_path(conformance::EmulatedGpu::Cuda),
    )
}

/// clang-19 flags (beside `-fopenmp` and an optimisation level) for a `gpu` image with an
/// x86-64 twin: [`CUDA_TWIN_FLAGS`] with the NVPTX toolchain (ptxas must be on the `PATH`,
/// [`path_with_ptxas`]), or [`AMDGPU_TWIN_FLAGS`].
pub fn clang19_twin_flags(gpu: conformance::EmulatedGpu) -> Vec<String> {
    match gpu {
        conformance::EmulatedGpu::Cuda => {
            let mut flags: Vec<String> = CUDA_TWIN_FLAGS.iter().map(|f| f.to_string()).collect();
            flags.push(format!("--cuda-path={}", nvptx_cuda_path().display()));
            flags
        }
        conformance::EmulatedGpu::Amdgpu => {
            AMDGPU_TWIN_FLAGS.iter().map(|f| f.to_string()).collect()
        }
    }
}

/// Compiles one C source (under tests/programs) with clang-19 for gfx90a with an x86-64 twin
/// (see [`AMDGPU_TWIN_FLAGS`]), for the emulated HSA runtime.
pub fn compile_amdgpu_twin(source: &str) -> PathBuf {
    let mut flags: Vec<String> = vec!["-O2".into()];
    let gpu = conformance::EmulatedGpu::Amdgpu;
    flags.extend(clang19_twin_flags(gpu));
    build_once(source, "gfx90a-twin", &flags, &clang19_twin_path(gpu))
}

/// As [`compile_amdgpu_twin`], with clang-22 (see [`clang22_twin_flags`]).
pub fn compile_amdgpu_twin_clang22(source: &str) -> PathBuf {
    compile_twin_clang22(source, conformance::EmulatedGpu::Amdgpu)
}

/// One C or C++ source built by clang-22 with a `gpu` image and its x86-64 twin.
fn compile_twin_clang22(source: &str, gpu: conformance::EmulatedGpu) -> PathBuf {
    compile_twin_clang22_for(source, gpu, gpu.arch())
}

/// As [`compile_amdgpu_twin_clang22`], for gfx942 (the emulated HSA runtime's `mi300a`
/// profile): LLVM 22's device runtime is built for every AMD GPU, so no other library is
/// needed unless kernels call math functions (see scripts/build-llvm22-device-runtime.sh).
pub fn compile_gfx942_twin_clang22(source: &str) -> PathBuf {
    compile_twin_clang22_for(source, conformance::EmulatedGpu::Amdgpu, "gfx942")
}

/// One C source built by clang-22 for gfx942 alone (no host image, so that no runtime numbers
/// host devices before the GPU; its kernels' twins come from [`compile_gfx942_twin_clang22`]
/// through `OMPTARGET_EMU_TWINS`), with LLVM 22's device runtime.
pub fn compile_gfx942_clang22(source: &str) -> PathBuf {
    let runtime = llvm22_device_runtime("amdgpu");
    let flags = vec![
        "-O2".to_string(),
        "-nogpulib".into(),
        "-Wno-unused-command-line-argument".into(),
        "--offload-arch=gfx942".into(),
        "-Xoffload-linker".into(),
        runtime.display().to_string(),
        format!("-I{}", clang22_include().display()),
        format!("-L{}", lib_dir().display()),
        "-L/usr/lib/llvm-19/lib".into(),
    ];
    let path = clang22_twin_path(conformance::EmulatedGpu::Amdgpu);
    build_once_with("clang-22", source, "gfx942-clang22", &flags, &path)
}

fn compile_twin_clang22_for(source: &str, gpu: conformance::EmulatedGpu, arch: &str) -> PathBuf {
    let mut flags = vec!["-O2".to_string()];
    flags.extend(
        clang22_twin_flags(gpu)
            .into_iter()
            .map(|f| match f.starts_with("-march=") {
                true => format!("-march={arch}"),
                false => f,
            }),
    );
    flags.push(format!("-I{}", clang22_include().display()));
    flags.push(format!("-L{}", lib_dir().display()));
    flags.push("-L/usr/lib/llvm-19/lib".into());
    let compiler = match source.ends_with(".cpp") {
        true => "clang++-22",
        false => "clang-22",
    };
    let flavour = format!("{arch}-twin-clang22");
    build_once_with(compiler, source, &flavour, &flags, &clang22_twin_path(gpu))
}

/// LLVM 22's GPU device runtime for `target` (`nvptx` or `amdgpu`): Debian does not package
/// it, so scripts/build-llvm22-device-runtime.sh builds it from LLVM 22's sources.
pub fn llvm22_device_runtime(target: &str) -> PathBuf {
    let file = format!("target/llvm22-device-runtime/libomptarget-{target}.bc");
    built_by_script(
        &file,
        "LLVM 22's device runtime",
        "build-llvm22-device-runtime.sh",
    )
}

/// `file` (relative to the workspace), which scripts/`script` builds and scripts/test.sh runs;
/// says so when it is missing.
fn built_by_script(file: &str, what: &str, script: &str) -> PathBuf {
    let path = workspace_root().join(file);
    assert!(
        path.exists(),
        "{what} is not built ({}): run scripts/{script} (scripts/test.sh does)",
        path.display()
    );
    path
}

/// clang-22 flags (beside its usual ones) for a `gpu` image with an x86-64 twin, whose kernels
/// the emulated driver runs: the image links LLVM 22's device runtime
/// ([`llvm22_device_runtime`]) explicitly (`-nogpulib`: clang-22 would look for the packaged
/// one), with -foffload-lto for sm_90 as [`CUDA_TWIN_FLAGS`] says why.
pub fn clang22_twin_flags(gpu: conformance::EmulatedGpu) -> Vec<String> {
    let (_, runtime) = gpu_triple_and_runtime(gpu);
    twin_flags_linking(gpu, &[llvm22_device_runtime(runtime)])
}

/// As [`clang22_twin_flags`], with LLVM 22's GPU libc linked into the GPU image, as the README
/// says: the device runtime built to use it and the libc, from scripts/build-llvm22-gpu-libc.sh.
pub fn clang22_gpu_libc_flags(gpu: conformance::EmulatedGpu) -> Vec<String> {
    let (triple, runtime) = gpu_triple_and_runtime(gpu);
    let file = format!("target/llvm22-gpu-libc/{triple}/libc.a");
    let libc = built_by_script(&file, "LLVM 22's GPU libc", "build-llvm22-gpu-libc.sh");
    let runtime = libc.with_file_name(format!("libomptarget-{runtime}.bc"));
    twin_flags_linking(gpu, &[runtime, libc])
}

/// LLVM 19's GPU libc for `gpu` (`libcgpu-nvptx.a` or `libcgpu-amdgpu.a`, in LLVM 19's form: host
/// objects that embed the GPU bitcode), from scripts/build-llvm19-gpu-libc.sh. It goes on the
/// host's link line with the program, as LLVM 19's lit.cfg and clang-19's driver put it.
pub fn llvm19_gpu_libc(gpu: conformance::EmulatedGpu) -> PathBuf {
    let name = match gpu {
        conformance::EmulatedGpu::Cuda => "libcgpu-nvptx.a",
        conformance::EmulatedGpu::Amdgpu => "libcgpu-amdgpu.a",
    };
    let file = format!("target/llvm19-gpu-libc/{name}");
    built_by_script(&file, "LLVM 19's GPU libc", "build-llvm19-gpu-libc.sh")
}

/// The GPU image's target triple and the name of LLVM 22's device runtime for it.
fn gpu_triple_and_runtime(gpu: conformance::EmulatedGpu) -> (&'static str, &'static str) {
    match gpu {
        conformance::EmulatedGpu::Cuda => ("nvptx64-nvidia-cuda", "nvptx"),
        conformance::EmulatedGpu::Amdgpu => ("amdgcn-amd-amdhsa", "amdgpu"),
    }
}

/// The flags of a `gpu` image with an x86-64 twin whose GPU link takes `libraries`.
fn twin_flags_linking(gpu: conformance::EmulatedGpu, libraries: &[PathBuf]) -> Vec<String> {
    let (triple, _) = gpu_triple_and_runtime(gpu);
    let mut flags = vec![
        "-nogpulib".to_string(),
        "-Wno-unused-command-line-argument".into(),
        format!("-fopenmp-targets={triple},x86_64-pc-linux-gnu"),
        format!("-Xopenmp-target={triple}"),
        format!("-march={}", gpu.arch()),
    ];
    for library in libraries {
        flags.push(format!("-Xoffload-linker-{triple}"));
        flags.push(library.display().to_string());
    }
    if gpu == conformance::EmulatedGpu::Cuda {
        flags.push("-foffload-lto".into());
        flags.push(format!("--cuda-path={}", nvptx_cuda_path().display()));
    }
    flags
}

/// `$PATH` for a clang-19 twin build ([`clang19_twin_flags`]): ptxas first for sm_90; for
/// gfx90a, as it is (LLVM 19's `ld.lld` is the one on it).
pub fn clang19_twin_path(gpu: conformance::EmulatedGpu) -> String {
    match gpu {
        conformance::EmulatedGpu::Cuda => path_with_ptxas(),
        conformance::EmulatedGpu::Amdgpu => std::env::var("PATH").unwrap_or_default(),
    }
}

/// `$PATH` for a clang-22 twin build: ptxas first for sm_90; for gfx90a, LLVM 22's `ld.lld`
/// (clang runs `ld.lld`, and LLVM 19's, on the PATH, cannot read LLVM 22's bitcode), through a
/// directory of its own.
pub fn clang22_twin_path(gpu: conformance::EmulatedGpu) -> String {
    if gpu == conformance::EmulatedGpu::Cuda {
        return path_with_ptxas();
    }
    let lld = build_dir().join("lld-22-bin");
    std::fs::create_dir_all(&lld).unwrap();
    let link = lld.join("ld.lld");
    if !link.exists() {
        let _ = std::os::unix::fs::symlink("/usr/bin/ld.lld-22", &link);
    }
    format!(
        "{}:{}",
        lld.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// Where rocm-device-libs puts the AMDGPU device libraries (ocml, ockl, oclc_*).
pub const ROCM_DEVICE_LIBS: &str = "/usr/lib/x86_64-linux-gnu/amdgcn/bitcode";

/// clang-19 flags for a gfx90a image with an x86-64 twin, whose kernels the emulated HSA
/// runtime runs.
pub const AMDGPU_TWIN_FLAGS: &[&str] = &[
    "-fopenmp-targets=amdgcn-amd-amdhsa,x86_64-pc-linux-gnu",
    "-Xopenmp-target=amdgcn-amd-amdhsa",
    "-march=gfx90a",
    "--rocm-device-lib-path=/usr/lib/x86_64-linux-gnu/amdgcn/bitcode",
];

/// Compiles one C source into a program with AMDGPU code objects for `archs` (comma-separated
/// target IDs such as `gfx90a,gfx1030`), with clang-19, lld-19 and rocm-device-libs.
pub fn compile_amdgpu(source: &str, archs: &str) -> PathBuf {
    assert!(
        Path::new(ROCM_DEVICE_LIBS).join("ockl.bc").exists(),
        "no AMDGPU device libraries at {ROCM_DEVICE_LIBS}: install lld-19 and rocm-device-libs (.ci/install-deps.sh does)"
    );
    compile_device(
        source,
        archs,
        // -O2: clang-19's AMDGPU back end crashes ("Function register usage analysis") on
        // team reductions at -O0 and -O1.
        &[
            "-O2".into(),
            format!("--rocm-device-lib-path={ROCM_DEVICE_LIBS}"),
        ],
        &std::env::var("PATH").unwrap_or_default(),
    )
}

/// Builds `source` with clang-19 for the offload architectures `archs`, once per test run.
fn compile_device(source: &str, archs: &str, flags: &[String], path: &str) -> PathBuf {
    let mut all: Vec<String> = archs
        .split(',')
        .map(|a| format!("--offload-arch={a}"))
        .collect();
    all.extend_from_slice(flags);
    build_once(source, &archs.replace([',', ':'], "_"), &all, path)
}

/// Builds `source` with `clang-19 -fopenmp FLAGS` into `<stem>-<flavour>`, once per test run.
fn build_once(source: &str, flavour: &str, flags: &[String], path: &str) -> PathBuf {
    build_once_with("clang-19", source, flavour, flags, path)
}

/// Compiles one C or C++ source with clang-22 into a program with an sm_90 image and its x86-64
/// twin, for the emulated CUDA driver (see [`clang22_twin_flags`]).
pub fn compile_cuda_twin_clang22(source: &str) -> PathBuf {
    compile_twin_clang22(source, conformance::EmulatedGpu::Cuda)
}

fn build_once_with(
    compiler: &str,
    source: &str,
    flavour: &str,
    flags: &[String],
    path: &str,
) -> PathBuf {
    static BUILT: OnceLock<std::sync::Mutex<Vec<PathBuf>>> = OnceLock::new();
    let stem = Path::new(source).file_stem().unwrap().to_str().unwrap();
    let out = build_dir().join(format!("{stem}-{flavour}"));
    // Tests share programs: build each once per run, never while another test reads it.
    let mut built = BUILT
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if built.contains(&out) {
        return out;
    }
    let mut cmd = Command::new(compiler);
    cmd.arg("-fopenmp")
        .args(flags)
        .arg(program(source))
        .env("PATH", path);
    let output = outputs::build(cmd, &out).unwrap_or_else(|e| panic!("cannot run {compiler}: {e}"));
    assert!(
        output.status.success(),
        "compiling {source} ({flavour}) failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    built.push(out.clone());
    out
}
