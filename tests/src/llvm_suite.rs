//! Runs LLVM's own offload test suite (`offload/test` of the LLVM source tree, fetched by
//! `scripts/fetch-llvm-offload-tests.sh`; never copied into this repository) on the x86_64
//! host-offload target, against LLVM's runtime or ours. Two releases: LLVM 19's suite built by
//! clang-19 against LLVM 19's `libomptarget.so.19.1`, and LLVM 22's suite built by clang-22
//! against LLVM 22's `libomptarget.so.22.1`; each side by side with ours. LLVM 22's suite also
//! runs on the emulated GPUs of `dist/emu` (see [`Target`]): gfx90a and sm_90, whose kernels run
//! through an x86-64 twin of each program, and its Fortran tests (`offloading/fortran`) run
//! on the host devices, built by flang-22 with our host device runtime in each device image
//! (see [`Target::HostFortran`]), and on the emulated gfx90a with twins
//! ([`Target::AmdgcnEmuFortran`]).
//!
//! This is a small stand-in for lit, enough for these tests: it reads each file's `RUN:`,
//! `REQUIRES:`, `UNSUPPORTED:` and `XFAIL:` lines, expands the substitutions that offload's
//! `lit.cfg` defines for the x86_64 host target in lit's own order, and runs the commands with
//! bash. Programs always link against LLVM's `libomptarget.so` (ours has the same soname);
//! `LD_LIBRARY_PATH` picks the runtime they load. A test whose directives or substitutions we
//! do not understand is skipped with the reason, never guessed at.

use crate::conformance::EmulatedGpu;
use crate::workspace_root;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

pub const LLVM19_LIB_DIR: &str = "/usr/lib/llvm-19/lib";

/// The LLVM release whose test suite, compiler and runtime a run uses.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Release {
    /// LLVM 19.1.7: clang-19 and libomp-19-dev's runtime.
    Llvm19,
    /// LLVM 22.1.8: clang-22 and liboffload-22's runtime (unpacked aside).
    Llvm22,
}

/// `LIBOMPTARGET_ALL_TARGETS` of LLVM 19's offload/CMakeLists.txt, in its order: lit.cfg turns
/// the commands of every target but the current one into `echo ignored-command`.
const ALL_TARGETS_19: &[&str] = &[
    "aarch64-unknown-linux-gnu",
    "aarch64-unknown-linux-gnu-LTO",
    "amdgcn-amd-amdhsa",
    "powerpc64le-ibm-linux-gnu",
    "powerpc64le-ibm-linux-gnu-LTO",
    "powerpc64-ibm-linux-gnu",
    "powerpc64-ibm-linux-gnu-LTO",
    "x86_64-pc-linux-gnu",
    "x86_64-pc-linux-gnu-LTO",
    "nvptx64-nvidia-cuda",
    "nvptx64-nvidia-cuda-LTO",
    "nvptx64-nvidia-cuda-JIT-LTO",
    "s390x-ibm-linux-gnu",
    "s390x-ibm-linux-gnu-LTO",
];

/// The same list of LLVM 22.1.8 (the host triple became `x86_64-unknown-linux-gnu`).
const ALL_TARGETS_22: &[&str] = &[
    "aarch64-unknown-linux-gnu",
    "aarch64-unknown-linux-gnu-LTO",
    "amdgcn-amd-amdhsa",
    "powerpc64le-ibm-linux-gnu",
    "powerpc64le-ibm-linux-gnu-LTO",
    "powerpc64-ibm-linux-gnu",
    "powerpc64-ibm-linux-gnu-LTO",
    "x86_64-unknown-linux-gnu",
    "x86_64-unknown-linux-gnu-LTO",
    "nvptx64-nvidia-cuda",
    "nvptx64-nvidia-cuda-LTO",
    "nvptx64-nvidia-cuda-JIT-LTO",
    "s390x-ibm-linux-gnu",
    "s390x-ibm-linux-gnu-LTO",
    "riscv64-unknown-linux-gnu",
    "riscv64-unknown-linux-gnu-LTO",
    "loongarch64-unknown-linux-gnu",
    "loongarch64-unknown-linux-gnu-LTO",
    "spirv64-intel",
];

/// The lit features each release as Debian builds it has on x86_64: lit.cfg adds the target,
/// `host` and `unified_shared_memory`; the compiler features come from OpenMPTesting.cmake;
/// `ompt` because Debian's runtimes export `ompt_libomptarget_connect`.
const FEATURES_19: &[&str] = &[
    "x86_64-pc-linux-gnu",
    "host",
    "unified_shared_memory",
    "ompt",
    "clang",
    "clang-19",
    "clang-19.1",
    "clang-19.1.7",
];
const FEATURES_22: &[&str] = &[
    "x86_64-unknown-linux-gnu",
    "host",
    "unified_shared_memory",
    "ompt",
    "clang",
    "clang-22",
    "clang-22.1",
    "clang-22.1.8",
];

/// Features lit.cfg may set that these configurations lack: they are false, not unknown.
/// (`flang` holds on the host targets where flang-<release> is installed: [`flang_available`];
/// `libomptarget-debug`: Debian's runtimes are built without LIBOMPTARGET_DEBUG output;
/// `nvptx` and `debug`, which LLVM 22's tests name, are set by no lit.cfg of offload; `host`,
/// the GPU features and `libc` are the target's, present only where [`Target`] lists them.)
const ABSENT_FEATURES: &[&str] = &[
    "host",
    "nvptx",
    "debug",
    "gpu",
    "nvidiagpu",
    "amdgpu",
    "intelgpu",
    "apu",
    "large_allocation_memory_pool",
    "pgo",
    "flang",
    "libc",
    "libomptarget-debug",
];

/// The folders of offload/test that hold LLVM 19's tests (everything but `Inputs`).
pub const DEFAULT_DIRS: &[&str] = &[
    "api",
    "env",
    "jit",
    "libc",
    "mapping",
    "offloading",
    "ompt",
    "unified_shared_memory",
];
/// LLVM 22's: two more folders (`unit` is excluded by its lit.cfg).
const DIRS_22: &[&str] = &[
    "api",
    "env",
    "jit",
    "libc",
    "mapping",
    "offloading",
    "ompt",
    "sanitizer",
    "tools",
    "unified_shared_memory",
];

impl Release {
    pub const ALL: [Release; 2] = [Release::Llvm19, Release::Llvm22];

    pub fn parse(name: &str) -> Option<Release> {
        match name {
            "19" => Some(Release::Llvm19),
            "22" => Some(Release::Llvm22),
            _ => None,
        }
    }

    pub fn major(self) -> u32 {
        match self {
            Release::Llvm19 => 19,
            Release::Llvm22 => 22,
        }
    }

    /// The directory name inside Debian's source tarball.
    fn tarball_dir(self) -> &'static str {
        match self {
            Release::Llvm19 => "llvm-toolchain-19_19.1.7",
            Release::Llvm22 => "llvm-toolchain-22_22.1.8",
        }
    }

    /// lit's current target: the x86_64 host triple as that release's CMake spells it.
    pub fn target(self) -> &'static str {
        match self {
            Release::Llvm19 => "x86_64-pc-linux-gnu",
            Release::Llvm22 => "x86_64-unknown-linux-gnu",
        }
    }

    fn all_targets(self) -> &'static [&'static str] {
        match self {
            Release::Llvm19 => ALL_TARGETS_19,
            Release::Llvm22 => ALL_TARGETS_22,
        }
    }

    fn features(self) -> &'static [&'static str] {
        match self {
            Release::Llvm19 => FEATURES_19,
            Release::Llvm22 => FEATURES_22,
        }
    }

    /// The Fortran compiler of this release (lit.cfg's `test_fortran_compiler`).
    pub fn flang(self) -> String {
        format!("flang-{}", self.major())
    }

    /// lit.cfg's `test_flags_flang`.
    fn flags_flang(self) -> &'static str {
        match self {
            Release::Llvm19 => "",
            Release::Llvm22 => "-fopenmp-version=52",
        }
    }

    /// lit.cfg's `config.suffixes`.
    fn suffixes(self) -> &'static [&'static str] {
        match self {
            Release::Llvm19 => &[".c", ".cpp", ".cc", ".f90"],
            Release::Llvm22 => &[".c", ".cpp", ".cc", ".f90", ".cu", ".td"],
        }
    }

    /// The folders of offload/test that hold tests.
    pub fn dirs(self) -> &'static [&'static str] {
        match self {
            Release::Llvm19 => DEFAULT_DIRS,
            Release::Llvm22 => DIRS_22,
        }
    }

    /// The soname programs built by this release's clang ask for.
    pub fn soname(self) -> &'static str {
        match self {
            Release::Llvm19 => "libomptarget.so.19.1",
            Release::Llvm22 => "libomptarget.so.22.1",
        }
    }

    /// Where LLVM's own runtime of this release is.
    pub fn llvm_lib_dir(self) -> PathBuf {
        match self {
            Release::Llvm19 => PathBuf::from(LLVM19_LIB_DIR),
            Release::Llvm22 => crate::llvm22_lib_dir(),
        }
    }

    /// lit.cfg's `omp_header_directory`, where clang's own resource folder lacks `omp.h`.
    fn omp_header_dir(self) -> Option<PathBuf> {
        match self {
            Release::Llvm19 => None,
            Release::Llvm22 => Some(crate::clang22_include()),
        }
    }

    /// lit.cfg's add_libraries(): LLVM 19 adds the device runtime archive when its tree has
    /// one, after its GPU libc for a GPU target that links one; LLVM 22 adds nothing for a host
    /// target, and the device runtime for a GPU target (which the emulated targets' compiler
    /// links from its own build instead, with its `-lc`).
    /// For [`Target::HostFortran`], our host device runtime stands where a GPU target's device
    /// runtime would: `-L<dist>/lib -Xoffload-linker -lomptarget-host-device`, the user's link
    /// line (its `-L` comes after `%flags`' own, so `libomptarget.so` is still LLVM's).
    fn libraries(self, target: Target, source: &str) -> String {
        let devicertl = Path::new(LLVM19_LIB_DIR).join("libomptarget.devicertl.a");
        match self {
            _ if target == Target::HostFortran => format!(
                "{source} -L {} -Xoffload-linker -lomptarget-host-device",
                host_device_lib_dir().display()
            ),
            Release::Llvm22 if target.gpu().is_some() => {
                format!("{source} -Xoffload-linker -lompdevice")
            }
            Release::Llvm19 if target.links_gpu_libc() => {
                let gpu = target.gpu().expect("a GPU target");
                let libc = crate::llvm19_gpu_libc(gpu);
                format!("{source} {} {}", libc.display(), devicertl.display())
            }
            Release::Llvm19 if devicertl.exists() => format!("{source} {}", devicertl.display()),
            _ => source.to_string(),
        }
    }

    /// This release's lists: `tests/llvm-offload-suite/<major>/`.
    pub fn list_dir(self) -> PathBuf {
        workspace_root()
            .join("tests/llvm-offload-suite")
            .join(self.major().to_string())
    }

    /// The tests that pass against LLVM's runtime of this release here: our target.
    pub fn expected_pass_file(self) -> PathBuf {
        self.list_dir().join("expected-pass.txt")
    }

    /// Tests that say `REQUIRES: gpu` although they run on the host offload target.
    pub fn run_on_host_file(self) -> PathBuf {
        self.list_dir().join("run-on-host.txt")
    }

    /// Tests LLVM's runtime fails here that ours passes: kept passing.
    pub fn beyond_llvm_file(self) -> PathBuf {
        self.list_dir().join("beyond-llvm.txt")
    }

    /// Tests of expected-pass.txt ours does not pass yet, each with why.
    pub fn known_gaps_file(self) -> PathBuf {
        self.list_dir().join("known-gaps.txt")
    }

    fn feature(self, target: Target, name: &str) -> Result<bool, String> {
        if target.features(self).contains(&name) {
            return Ok(true);
        }
        // lit.cfg sets `flang` when the build names a Fortran compiler: here, when this
        // release's flang is installed, for the host and the Fortran targets (the emulated
        // GPUs' C targets build each program's twin with clang alone).
        if name == "flang" {
            let twins = target.gpu().is_none() || target.fortran();
            return Ok(twins && flang_available(self));
        }
        let compiler_version = ["clang-", "gcc", "icc"].iter().any(|p| name.starts_with(p));
        if ABSENT_FEATURES.contains(&name) || self.all_targets().contains(&name) || compiler_version
        {
            return Ok(false);
        }
        Err(format!("unknown feature '{name}'"))
    }
}

/// lit's current offload target: the x86_64 host, or a GPU of `dist/emu`'s emulated drivers
/// (LLVM 19's suite on the C targets gfx90a and sm_90 only). A program for an emulated GPU is
/// built twice from the same command (see `emu_compiler_script`): for the GPU alone, so that
/// no runtime numbers host devices before the GPU, and as its twin `<program>.twin`, with an
/// x86-64 image too, whose kernels (named alike, being built from the same source) the emulated
/// driver runs: it reads the twin file that `OMPTARGET_EMU_TWINS` names.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// The x86_64 host-offload target, as before emulated GPUs.
    Host,
    /// `amdgcn-amd-amdhsa`, gfx90a, on the emulated HSA runtime.
    AmdgcnEmu,
    /// `nvptx64-nvidia-cuda`, sm_90, on the emulated CUDA driver.
    NvptxEmu,
    /// LLVM 22's Fortran tests (`offloading/fortran`) on the x86_64 host devices: the host
    /// target of [`Target::Host`], with flang-22 and our host device runtime linked into each
    /// device image (see [`Release::libraries`]), as a user builds Fortran for host devices.
    /// Those tests say `REQUIRES: flang, amdgpu` (or `gpu`, or `amdgcn-amd-amdhsa`) for the GPU
    /// of LLVM's bots, the only devices LLVM runs flang's GPU-style kernels on; here the host
    /// device stands in for that GPU:
    /// - `REQUIRES`: the GPU's names ([`GPU_STAND_IN`]) hold;
    /// - `UNSUPPORTED`: the host triple does not hold: those marks (9 tests) date from LLVM's
    ///   x86_64 target having no device runtime for flang's kernels, which this target links in;
    /// - `XFAIL`: as on the host (`XFAIL: amdgpu` is a failure on the GPU), but ignored for the
    ///   tests of the target's `gpu-xfail.txt`, whose `XFAIL: *` gives a GPU's reason;
    /// - a RUN line's explicit `-fopenmp-targets=amdgcn-amd-amdhsa` (a helper object built with
    ///   clang or flang) offloads to the host triple.
    HostFortran,
    /// LLVM 22's Fortran tests (`offloading/fortran`) on gfx90a of the emulated HSA runtime,
    /// as [`Target::AmdgcnEmu`] runs the C tests: each program built by flang-22 for the GPU
    /// alone and as its x86-64 twin, with our host device runtime in the twin's image (see
    /// `emu_flang_script`). lit's own amdgcn target: its features, `REQUIRES`, `UNSUPPORTED`
    /// and `XFAIL` as LLVM's bots read them.
    AmdgcnEmuFortran,
    /// LLVM 22's tests on the emulated HSA runtime's MI300A-like APU
    /// (`OMPTARGET_EMU_PROFILE=mi300a`), built for gfx942: lit's amdgcn target on a gfx942 with
    /// `IS_APU=1`, which adds the `apu` feature. The runs set `HSA_XNACK` as each RUN line
    /// says; both runtimes run the same binaries on the same emulator.
    AmdgcnEmuApu,
    /// LLVM 22's tests on the emulated CUDA driver's Grace Hopper-like node
    /// (`OMPTARGET_EMU_PROFILE=gh200`): sm_90 whose device reaches pageable host memory.
    NvptxEmuGh200,
}

/// [`Target::HostFortran`]: the features that `REQUIRES` of the Fortran tests name for the GPU
/// of LLVM's bots, satisfied by the host device standing in for it.
pub const GPU_STAND_IN: &[&str] = &["gpu", "amdgpu", "amdgcn-amd-amdhsa"];

/// [`Target::HostFortran`]'s only folder.
const FORTRAN_DIRS: &[&str] = &["offloading/fortran"];

/// The explicit GPU offload flag of the Fortran folder's helper compiles.
const AMDGCN_OFFLOAD_FLAG: &str = "-fopenmp-targets=amdgcn-amd-amdhsa";

/// Where the host device runtime is: the install tree's `lib/` (`$OMPTARGET_DIST` or `dist/`),
/// not checked here (Config checks it).
fn host_device_lib_dir() -> PathBuf {
    std::env::var_os("OMPTARGET_DIST")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("dist"))
        .join("lib")
}

/// Whether `release`'s flang (`flang-<major>`) is in PATH: lit.cfg's `flang` feature.
pub fn flang_available(release: Release) -> bool {
    find_in_path(&release.flang()).is_some()
}

/// lit.cfg's features of an amdgcn target whose `amdgpu_test_arch` is gfx90a: unified shared
/// memory and the large allocation pool; not an APU (only gfx942 may be one).
const FEATURES_AMDGCN: &[&str] = &[
    "amdgcn-amd-amdhsa",
    "gpu",
    "amdgpu",
    "unified_shared_memory",
    "large_allocation_memory_pool",
];
/// LLVM 19's lit.cfg's features of an amdgcn target whose `amdgpu_test_arch` is gfx90a (it
/// knows no `large_allocation_memory_pool`).
const FEATURES_AMDGCN_19: &[&str] = &[
    "amdgcn-amd-amdhsa",
    "gpu",
    "amdgpu",
    "unified_shared_memory",
];
/// lit.cfg's features of an amdgcn target whose `amdgpu_test_arch` is gfx942 with `IS_APU=1`:
/// those of gfx90a and `apu`.
const FEATURES_AMDGCN_APU: &[&str] = &[
    "amdgcn-amd-amdhsa",
    "gpu",
    "amdgpu",
    "unified_shared_memory",
    "large_allocation_memory_pool",
    "apu",
];
/// lit.cfg's features of an nvptx target whose `cuda_test_arch` is sm_90 (70 or more: unified
/// shared memory).
const FEATURES_NVPTX: &[&str] = &[
    "nvptx64-nvidia-cuda",
    "gpu",
    "nvidiagpu",
    "unified_shared_memory",
];

impl Target {
    pub const ALL: [Target; 7] = [
        Target::Host,
        Target::AmdgcnEmu,
        Target::NvptxEmu,
        Target::HostFortran,
        Target::AmdgcnEmuFortran,
        Target::AmdgcnEmuApu,
        Target::NvptxEmuGh200,
    ];

    pub fn parse(name: &str) -> Option<Target> {
        Target::ALL.into_iter().find(|t| t.name() == name)
    }

    pub fn name(self) -> &'static str {
        match self {
            Target::Host => "host",
            Target::AmdgcnEmu => "amdgcn-emu",
            Target::NvptxEmu => "nvptx-emu",
            Target::HostFortran => "host-fortran",
            Target::AmdgcnEmuFortran => "amdgcn-emu-fortran",
            Target::AmdgcnEmuApu => "amdgcn-emu-apu",
            Target::NvptxEmuGh200 => "nvptx-emu-gh200",
        }
    }

    /// The emulated GPU, for a GPU target.
    pub fn gpu(self) -> Option<EmulatedGpu> {
        match self {
            Target::Host | Target::HostFortran => None,
            Target::AmdgcnEmu | Target::AmdgcnEmuFortran | Target::AmdgcnEmuApu => {
                Some(EmulatedGpu::Amdgpu)
            }
            Target::NvptxEmu | Target::NvptxEmuGh200 => Some(EmulatedGpu::Cuda),
        }
    }

    /// lit's `libomptarget_current_target`.
    pub fn triple(self, release: Release) -> &'static str {
        match self {
            Target::Host | Target::HostFortran => release.target(),
            Target::AmdgcnEmu | Target::AmdgcnEmuFortran | Target::AmdgcnEmuApu => {
                "amdgcn-amd-amdhsa"
            }
            Target::NvptxEmu | Target::NvptxEmuGh200 => "nvptx64-nvidia-cuda",
        }
    }

    /// lit.cfg's features: the target's own, then the compiler's and `ompt` as for the host
    /// (the same compiler and runtimes build and run them).
    fn features(self, release: Release) -> Vec<&'static str> {
        let own = match self {
            Target::Host | Target::HostFortran => return release.features().to_vec(),
            Target::AmdgcnEmu if release == Release::Llvm19 => FEATURES_AMDGCN_19,
            Target::AmdgcnEmu | Target::AmdgcnEmuFortran => FEATURES_AMDGCN,
            Target::AmdgcnEmuApu => FEATURES_AMDGCN_APU,
            Target::NvptxEmu | Target::NvptxEmuGh200 => FEATURES_NVPTX,
        };
        let common = release.features().iter().copied();
        let common = common.filter(|f| *f == "ompt" || f.starts_with("clang"));
        let libc = self.links_gpu_libc().then_some("libc");
        own.iter().copied().chain(common).chain(libc).collect()
    }

    /// Whether this target's GPU images link the release's GPU libc, as lit's add_libraries()
    /// links it where the build has one (lit.cfg's `libc` feature): the emulated GPUs' C
    /// targets, with the libc of scripts/build-llvm22-gpu-libc.sh (LLVM 22's `-lc`) or
    /// scripts/build-llvm19-gpu-libc.sh (LLVM 19's `libcgpu-<arch>.a`). Their twins, which the
    /// emulated drivers run, call the host's libc; the GPU images carry LLVM's RPC client,
    /// which each runtime's plugin finds and writes.
    pub fn links_gpu_libc(self) -> bool {
        self.gpu().is_some() && !self.fortran()
    }

    /// The folders of offload/test whose tests run on this target.
    pub fn dirs(self, release: Release) -> &'static [&'static str] {
        match self {
            Target::HostFortran | Target::AmdgcnEmuFortran => FORTRAN_DIRS,
            _ => release.dirs(),
        }
    }

    /// The emulator profile (`OMPTARGET_EMU_PROFILE`) every run of this target sets.
    pub fn emulator_profile(self) -> Option<&'static str> {
        match self {
            Target::AmdgcnEmuApu => Some("mi300a"),
            Target::NvptxEmuGh200 => Some("gh200"),
            _ => None,
        }
    }

    /// The GPU image's architecture, where it is not the emulated GPU's default.
    fn arch(self) -> Option<&'static str> {
        match self {
            Target::AmdgcnEmuApu => Some("gfx942"),
            _ => None,
        }
    }

    /// Whether this target builds its programs with flang (LLVM 22's Fortran tests).
    pub fn fortran(self) -> bool {
        matches!(self, Target::HostFortran | Target::AmdgcnEmuFortran)
    }

    /// Where this target's lists are: the release's folder for the host, a subfolder named
    /// after the target otherwise.
    pub fn list_dir(self, release: Release) -> PathBuf {
        match self {
            Target::Host => release.list_dir(),
            _ => release.list_dir().join(self.name()),
        }
    }

    /// lit.cfg's `%libomptarget-run-<target>`: an emulated GPU's program names its twin.
    fn run_command(self) -> &'static str {
        match self {
            Target::Host | Target::HostFortran => "%t",
            _ => "env OMPTARGET_EMU_TWINS=%t.twin %t",
        }
    }
}

/// Which runtime the programs load.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Runtime {
    /// LLVM's own of the release under test: the reference.
    Llvm,
    /// Ours, from the install tree (`$OMPTARGET_DIST`, else `dist/`).
    Ours,
}

impl Runtime {
    pub fn parse(name: &str) -> Option<Runtime> {
        match name {
            "llvm" => Some(Runtime::Llvm),
            "ours" => Some(Runtime::Ours),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Runtime::Llvm => "llvm",
            Runtime::Ours => "ours",
        }
    }

    /// The directory holding this runtime's library of `release`'s soname.
    pub fn lib_dir(self, release: Release) -> PathBuf {
        match self {
            Runtime::Llvm => release.llvm_lib_dir(),
            Runtime::Ours => crate::lib_dir(),
        }
    }
}

/// Where the fetch script extracts the suite: `$LLVM_OFFLOAD_SUITE_DIR`, else
/// `target/llvm-offload-suite/`.
pub fn cache_dir() -> PathBuf {
    std::env::var_os("LLVM_OFFLOAD_SUITE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target/llvm-offload-suite"))
}

/// `release`'s `offload/test` folder, under the cache directory.
pub fn suite_root(release: Release) -> Result<PathBuf, String> {
    let dir = cache_dir().join(release.tarball_dir()).join("offload/test");
    match dir.join("lit.cfg").is_file() {
        true => Ok(dir),
        false => Err(format!(
            "LLVM {}'s offload test suite is not at {}: run scripts/fetch-llvm-offload-tests.sh {}",
            release.major(),
            dir.display(),
            release.major()
        )),
    }
}

/// The tests (paths relative to offload/test, like `mapping/pr38704.c`) of `release`'s
/// folders, sorted.
pub fn discover(root: &Path, release: Release) -> Vec<String> {
    discover_on(root, release, Target::Host)
}

/// The tests of `target`'s folders (see [`Target::dirs`]), sorted.
pub fn discover_on(root: &Path, release: Release, target: Target) -> Vec<String> {
    let mut names = Vec::new();
    for dir in target.dirs(release) {
        collect(root, &root.join(dir), release.suffixes(), &mut names);
    }
    names.sort();
    names
}

fn collect(root: &Path, dir: &Path, suffixes: &[&str], names: &mut Vec<String>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let file_name = entry.file_name().to_string_lossy().into_owned();
        if path.is_dir() {
            // lit.cfg's `config.excludes`.
            if file_name != "Inputs" {
                collect(root, &path, suffixes, names);
            }
        } else if suffixes.iter().any(|s| file_name.ends_with(s)) {
            let rel = path.strip_prefix(root).unwrap();
            names.push(rel.to_string_lossy().into_owned());
        }
    }
}

/// The entries of a list file: its lines, trimmed, without blank lines and `#` comments.
fn list_entries(path: &Path) -> Result<Vec<String>, String> {
    let text =
        fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    Ok(text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_string)
        .collect())
}

/// Reads a list of test names: one per line; blank lines and `#` comments are ignored.
pub fn read_names(path: &Path) -> Result<Vec<String>, String> {
    list_entries(path)
}

/// Reads a list of tests with reasons: per line, a test's name, then why (the rest of the
/// line); blank lines and `#` comments are ignored.
pub fn read_listed(path: &Path) -> Result<Vec<(String, String)>, String> {
    Ok(list_entries(path)?
        .into_iter()
        .map(|l| match l.split_once(char::is_whitespace) {
            Some((name, why)) => (name.to_string(), why.trim().to_string()),
            None => (l, String::new()),
        })
        .collect())
}

/// The lit directives of one test file.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Directives {
    /// Commands, continuation lines joined, with their line numbers.
    pub run: Vec<(usize, String)>,
    pub requires: Vec<String>,
    pub unsupported: Vec<String>,
    pub xfail: Vec<String>,
}

const KEYWORDS: &[&str] = &["RUN:", "REQUIRES:", "UNSUPPORTED:", "XFAIL:", "END."];

/// The first directive keyword on a line, not as the tail of a longer word (lit's rule).
fn find_keyword(line: &str) -> Option<(&'static str, &str)> {
    KEYWORDS
        .iter()
        .filter_map(|k| {
            line.match_indices(k)
                .find(|(at, _)| {
                    let before = line[..*at].chars().next_back();
                    !before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '-')
                })
                .map(|(at, _)| (at, *k))
        })
        .min_by_key(|(at, _)| *at)
        .map(|(at, k)| (k, &line[at + k.len()..]))
}

impl Directives {
    pub fn parse(source: &str) -> Directives {
        let mut d = Directives::default();
        let mut continues = false;
        for (index, line) in source.lines().enumerate() {
            let Some((keyword, rest)) = find_keyword(line) else {
                continue;
            };
            let rest = rest.trim_end();
            match keyword {
                "RUN:" => {
                    // lit joins a line ending in `\` with the next RUN line.
                    if continues {
                        let last = &mut d.run.last_mut().unwrap().1;
                        last.pop();
                        last.push_str(rest);
                    } else {
                        d.run.push((index + 1, rest.to_string()));
                    }
                    continues = rest.ends_with('\\');
                }
                "END." => break,
                _ => {
                    let items = rest.split(',').map(|s| s.trim().to_string());
                    let list = match keyword {
                        "REQUIRES:" => &mut d.requires,
                        "UNSUPPORTED:" => &mut d.unsupported,
                        _ => &mut d.xfail,
                    };
                    list.extend(items.filter(|s| !s.is_empty()));
                }
            }
        }
        for (_, command) in &mut d.run {
            *command = command.trim().to_string();
        }
        d
    }

    /// Why lit would not run this test on `release`'s x86_64 host offloading, if it would not.
    pub fn skip_reason(&self, release: Release) -> Result<Option<String>, String> {
        self.skip_reason_on(release, Target::Host)
    }

    /// Why lit would not run this test on `release`'s `target`, if it would not.
    pub fn skip_reason_on(
        &self,
        release: Release,
        target: Target,
    ) -> Result<Option<String>, String> {
        let holds = |expr: &str| eval_features_on(release, target, expr);
        // The host device stands in for the GPU the Fortran tests require (Target::HostFortran).
        let required = |expr: &str| match target {
            Target::HostFortran => {
                eval_with(expr, &|name: &str| match GPU_STAND_IN.contains(&name) {
                    true => Ok(true),
                    false => release.feature(target, name),
                })
            }
            _ => holds(expr),
        };
        for expr in &self.requires {
            if !required(expr)? {
                return Ok(Some(format!("REQUIRES: {expr}")));
            }
        }
        // Not the host triple either: see Target::HostFortran.
        let unsupported = |expr: &str| match target {
            Target::HostFortran => {
                eval_with(expr, &|name: &str| match name == target.triple(release) {
                    true => Ok(false),
                    false => release.feature(target, name),
                })
            }
            _ => holds(expr),
        };
        for expr in &self.unsupported {
            if unsupported(expr)? {
                return Ok(Some(format!("UNSUPPORTED: {expr}")));
            }
        }
        for expr in &self.xfail {
            // An expected failure is no program LLVM passes.
            if expr == "*" || holds(expr)? {
                return Ok(Some(format!("XFAIL: {expr}")));
            }
        }
        if self.run.is_empty() {
            return Ok(Some("no RUN line".into()));
        }
        Ok(None)
    }
}

/// Evaluates a lit boolean feature expression for `release`'s x86_64 host target.
pub fn eval_features(release: Release, expr: &str) -> Result<bool, String> {
    eval_features_on(release, Target::Host, expr)
}

/// Evaluates a lit boolean feature expression: names, `!`, `&&`, `||` and parentheses.
/// Regular expressions (`{{...}}`) are not supported: the caller skips such tests.
pub fn eval_features_on(release: Release, target: Target, expr: &str) -> Result<bool, String> {
    eval_with(expr, &|name: &str| release.feature(target, name))
}

/// Evaluates a feature expression with `feature` telling whether each name holds.
fn eval_with(expr: &str, feature: &Feature) -> Result<bool, String> {
    let tokens = tokenize(expr)?;
    let mut pos = 0;
    let value = parse_or(feature, &tokens, &mut pos)?;
    if pos != tokens.len() {
        return Err(format!("cannot parse feature expression '{expr}'"));
    }
    Ok(value)
}

fn tokenize(expr: &str) -> Result<Vec<String>, String> {
    let mut tokens = Vec::new();
    let mut rest = expr.trim_start();
    while !rest.is_empty() {
        let len = if rest.starts_with("&&") || rest.starts_with("||") {
            2
        } else if rest.starts_with(['!', '(', ')']) {
            1
        } else {
            rest.find(|c: char| c.is_whitespace() || "&|!()".contains(c))
                .unwrap_or(rest.len())
        };
        if len == 0 {
            return Err(format!("cannot parse feature expression '{expr}'"));
        }
        let token = &rest[..len];
        if token.contains("{{") {
            return Err(format!("regular expression in feature expression '{expr}'"));
        }
        tokens.push(token.to_string());
        rest = rest[len..].trim_start();
    }
    Ok(tokens)
}

/// Whether a feature holds; an error for one lit.cfg never sets.
type Feature<'a> = dyn Fn(&str) -> Result<bool, String> + 'a;

fn parse_or(feature: &Feature, tokens: &[String], pos: &mut usize) -> Result<bool, String> {
    let mut value = parse_and(feature, tokens, pos)?;
    while tokens.get(*pos).is_some_and(|t| t == "||") {
        *pos += 1;
        value |= parse_and(feature, tokens, pos)?;
    }
    Ok(value)
}

fn parse_and(feature: &Feature, tokens: &[String], pos: &mut usize) -> Result<bool, String> {
    let mut value = parse_not(feature, tokens, pos)?;
    while tokens.get(*pos).is_some_and(|t| t == "&&") {
        *pos += 1;
        value &= parse_not(feature, tokens, pos)?;
    }
    Ok(value)
}

fn parse_not(feature: &Feature, tokens: &[String], pos: &mut usize) -> Result<bool, String> {
    let token = tokens
        .get(*pos)
        .ok_or("feature expression ends early")?
        .as_str();
    *pos += 1;
    match token {
        "!" => Ok(!parse_not(feature, tokens, pos)?),
        "(" => {
            let value = parse_or(feature, tokens, pos)?;
            if tokens.get(*pos).map(String::as_str) != Some(")") {
                return Err("unbalanced parentheses in feature expression".into());
            }
            *pos += 1;
            Ok(value)
        }
        "&&" | "||" | ")" => Err(format!("unexpected '{token}' in feature expression")),
        name => feature(name),
    }
}

/// The external programs lit.cfg's substitutions name.
#[derive(Clone, Debug)]
pub struct Tools {
    pub clang: String,
    pub clangxx: String,
    /// flang-N, where installed (lit.cfg's `test_fortran_compiler`; `%flang` and the `flang`
    /// feature exist only with it).
    pub flang: Option<String>,
    pub filecheck: String,
    pub not: String,
}

impl Tools {
    /// clang-N, clang++-N, and FileCheck-N and not-N from llvm-N-tools, N being the release;
    /// flang-N if installed.
    pub fn find(release: Release) -> Result<Tools, String> {
        let n = release.major();
        let get = |name: &str, package: &str| {
            find_in_path(name)
                .map(|p| p.to_string_lossy().into_owned())
                .ok_or_else(|| {
                    format!("{name} not found in PATH (install Debian package {package})")
                })
        };
        let tools = format!("llvm-{n}-tools");
        Ok(Tools {
            clang: get(&format!("clang-{n}"), &format!("clang-{n}"))?,
            clangxx: get(&format!("clang++-{n}"), &format!("clang-{n}"))?,
            flang: find_in_path(&release.flang()).map(|p| p.to_string_lossy().into_owned()),
            filecheck: get(&format!("FileCheck-{n}"), &tools)?,
            not: get(&format!("not-{n}"), &tools)?,
        })
    }
}

fn find_in_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

/// The paths lit derives for one test (`%s`, `%S`, `%t`, `%T`) and its working directory.
#[derive(Clone, Debug)]
pub struct TestPaths {
    pub source: PathBuf,
    /// lit runs commands in the test's folder of the exec tree.
    pub exec_dir: PathBuf,
    /// `%T`: `<exec dir>/Output`.
    pub tmp_dir: PathBuf,
    /// `%t`: `<exec dir>/Output/<file>.tmp`.
    pub tmp: PathBuf,
}

impl TestPaths {
    pub fn new(suite: &Path, exec_root: &Path, name: &str) -> TestPaths {
        let source = suite.join(name);
        let exec_dir = exec_root.join(Path::new(name).parent().unwrap_or(Path::new("")));
        let tmp_dir = exec_dir.join("Output");
        let file = Path::new(name).file_name().unwrap().to_string_lossy();
        let tmp = tmp_dir.join(format!("{file}.tmp"));
        TestPaths {
            source,
            exec_dir,
            tmp_dir,
            tmp,
        }
    }
}

/// lit.cfg's `echo ignored-command`, made safe to pipe into (see install_helpers).
const IGNORED: &str = "ignored-command";

/// lit.cfg's substitutions for `release`'s x86_64 host target (see [`substitutions_for`]).
pub fn substitutions(
    release: Release,
    suite: &Path,
    tools: &Tools,
    link_dir: &Path,
    paths: &TestPaths,
) -> Vec<(String, String)> {
    substitutions_for(release, Target::Host, suite, tools, link_dir, paths)
}

/// lit.cfg's substitutions for the current target, then lit's defaults, in lit's order: lit
/// applies each once, in turn, so a substitution may produce another found later in the list.
pub fn substitutions_for(
    release: Release,
    target: Target,
    suite: &Path,
    tools: &Tools,
    link_dir: &Path,
    paths: &TestPaths,
) -> Vec<(String, String)> {
    let mut subs: Vec<(String, String)> = Vec::new();
    let mut add = |from: String, to: String| subs.push((from, to));
    let fc = &tools.filecheck;
    let libs = |s: &str| release.libraries(target, s);
    for &t in release.all_targets() {
        let base = t
            .strip_suffix("-JIT-LTO")
            .or(t.strip_suffix("-LTO"))
            .unwrap_or(t);
        let lt = |n: &str| format!("%libomptarget-{n}-{t}");
        if t == target.triple(release) {
            let generic = [
                "compilexx-run-and-check",
                "compile-run-and-check",
                "compile-fortran-run-and-check",
                "compilexx-and-run",
                "compile-and-run",
                "compilexx",
                "compilexxx-force-usm",
                "compile",
                "compile-fortran",
                "compileoptxx-run-and-check",
                "compileopt-run-and-check",
                "compileoptxx-and-run",
                "compileopt-and-run",
                "compileoptxx",
                "compileopt",
                "run",
                "run-fail",
            ];
            for n in generic {
                let from = match n {
                    // The one name lit.cfg spells differently.
                    "compilexxx-force-usm" => "%libomptarget-compilexxx-generic-force-usm".into(),
                    _ => format!("%libomptarget-{n}-generic"),
                };
                add(from, lt(n));
            }
            add("%clangxx-generic".into(), format!("%clangxx-{t}"));
            add("%clang-generic".into(), format!("%clang-{t}"));
            add("%fcheck-generic".into(), format!("{fc} %s"));
            add("%fcheck-plain-generic".into(), fc.clone());

            for lang in ["compilexx", "compile", "compile-fortran"] {
                let and_run = lt(&format!("{lang}-and-run"));
                add(
                    lt(&format!("{lang}-run-and-check")),
                    format!("{and_run} | {fc} %s"),
                );
            }
            for lang in ["compilexx", "compile", "compile-fortran"] {
                add(
                    lt(&format!("{lang}-and-run")),
                    format!("{} && {}", lt(lang), lt("run")),
                );
            }
            add(
                lt("compilexx"),
                format!("%clangxx-{t}{}", libs(" %s -o %t")),
            );
            add(
                lt("compilexxx-force-usm"),
                format!("%clangxxx-force-usm-{t}{}", libs(" %s -o %t")),
            );
            add(lt("compile"), format!("%clang-{t}{}", libs(" %s -o %t")));
            add(
                lt("compile-fortran"),
                format!("%flang-{t}{}", libs(" %s -o %t")),
            );
            for lang in ["compileoptxx", "compileopt"] {
                let and_run = lt(&format!("{lang}-and-run"));
                add(
                    lt(&format!("{lang}-run-and-check")),
                    format!("{and_run} | {fc} %s"),
                );
            }
            for lang in ["compileoptxx", "compileopt"] {
                add(
                    lt(&format!("{lang}-and-run")),
                    format!("{} && {}", lt(lang), lt("run")),
                );
            }
            add(
                lt("compileoptxx"),
                format!("%clangxx-{t}{}", libs(" -O3 %s -o %t")),
            );
            add(
                lt("compileopt"),
                format!("%clang-{t}{}", libs(" -O3 %s -o %t")),
            );
            add(lt("run"), target.run_command().into());
            add(
                lt("run-fail"),
                format!("%not --crash {}", target.run_command()),
            );
            let flags = "%cuda_flags %flags %flags_clang -fopenmp-targets=";
            add(
                format!("%clangxx-{t}"),
                format!("%clangxx %openmp_flags {flags}{base}"),
            );
            add(
                format!("%clangxxx-force-usm-{t}"),
                format!("%clangxx %openmp_flags -fopenmp-force-usm  {flags}{base}"),
            );
            add(
                format!("%clang-{t}"),
                format!("%clang %openmp_flags {flags}{base}"),
            );
            add(
                format!("%flang-{t}"),
                format!("%flang %openmp_flags %flags %flags_flang -fopenmp-targets={base}"),
            );
            add(format!("%fcheck-{t}"), format!("{fc} %s"));
        } else {
            let ignored = [
                "compile-run-and-check",
                "compile-fortran-run-and-check",
                "compilexx-run-and-check",
                "compile-and-run",
                "compile-fortran-and-run",
                "compilexx-and-run",
                "compilexx",
                "compile",
                "compile-fortran",
                "compileopt-run-and-check",
                "compileoptxx-run-and-check",
                "compileopt-and-run",
                "compileoptxx-and-run",
                "compileoptxx",
                "compileopt",
                "run",
                "run-fail",
            ];
            for n in ignored {
                add(lt(n), IGNORED.into());
            }
            for tool in ["clang", "clangxx", "fcheck", "flang"] {
                add(format!("%{tool}-{t}"), IGNORED.into());
            }
        }
    }
    add("%clangxx".into(), tools.clangxx.clone());
    add("%clang".into(), tools.clang.clone());
    // lit.cfg has %flang only with a Fortran compiler; without, Fortran tests keep it and are
    // skipped (they also require the `flang` feature, false then).
    if let Some(flang) = &tools.flang {
        add("%flang".into(), flang.clone());
    }
    if release == Release::Llvm22 {
        add("%target_triple".into(), target.triple(release).into());
    }
    add("%openmp_flags".into(), "-fopenmp -pthread".into());
    // An nvptx target's `--cuda-path` and `--libomptarget-nvptx-bc-path`: the emulated
    // targets' compiler passes its own (see emu_compiler_script).
    add("%cuda_flags".into(), String::new());
    add("%flags_clang".into(), String::new());
    add("%flags_flang".into(), release.flags_flang().into());
    // lit.cfg's test_flags, minus the -rpath options: LD_LIBRARY_PATH alone must choose
    // which runtime a program loads. Linking always uses LLVM's (same soname); libomp is
    // LLVM 19's (Debian's LLVM 22 runtime uses it too).
    let headers = match release.omp_header_dir() {
        Some(dir) => format!(" -I {}", dir.display()),
        None => String::new(),
    };
    let mut link = format!(" -L {}", link_dir.display());
    if link_dir != Path::new(LLVM19_LIB_DIR) {
        link.push_str(&format!(" -L {LLVM19_LIB_DIR}"));
    }
    let nogpulib = match target {
        Target::NvptxEmu | Target::NvptxEmuGh200 => "",
        _ => " -nogpulib",
    };
    add(
        "%flags".into(),
        format!("-I {}{headers}{link}{nogpulib}", suite.display()),
    );
    add("%not".into(), tools.not.clone());
    // No %offload-device-info or %offload-tblgen (LLVM 22's liboffload tools, not packaged):
    // tests using them are skipped.

    // lit's default substitutions come after the configuration's.
    let source_dir = paths.source.parent().unwrap().display().to_string();
    let tmp_base = paths
        .tmp
        .file_stem()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    add("%{pathsep}".into(), ":".into());
    add("%basename_t".into(), tmp_base);
    add("%s".into(), paths.source.display().to_string());
    add("%S".into(), source_dir.clone());
    add("%p".into(), source_dir);
    add("%t".into(), paths.tmp.display().to_string());
    add("%T".into(), paths.tmp_dir.display().to_string());
    subs
}

/// Applies the substitutions to a command; an unknown `%name` left over is an error.
pub fn expand(command: &str, subs: &[(String, String)]) -> Result<String, String> {
    let mut out = command.to_string();
    for (from, to) in subs {
        out = out.replace(from.as_str(), to);
    }
    let leftover = out.match_indices('%').find_map(|(at, _)| {
        let rest = &out[at + 1..];
        let len = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || "-_{}".contains(c)))
            .unwrap_or(rest.len());
        rest[..len]
            .starts_with(|c: char| c.is_ascii_alphabetic() || c == '{')
            .then(|| format!("%{}", &rest[..len]))
    });
    match leftover {
        Some(name) => Err(format!("unknown substitution {name}")),
        None => Ok(out),
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    Pass,
    Fail(String),
    Skip(String),
}

#[derive(Clone, Debug)]
pub struct TestResult {
    pub name: String,
    pub outcome: Outcome,
    pub elapsed: Duration,
    /// The test's combined output, for a failure's details.
    pub log: Option<PathBuf>,
}

impl TestResult {
    /// One line for the report: `PASS name`, `FAIL name: why`, `SKIP name: why`.
    pub fn line(&self) -> String {
        let secs = self.elapsed.as_secs_f64();
        match &self.outcome {
            Outcome::Pass => format!("PASS {} ({secs:.1}s)", self.name),
            Outcome::Fail(why) => format!("FAIL {}: {why} ({secs:.1}s)", self.name),
            Outcome::Skip(why) => format!("SKIP {}: {why}", self.name),
        }
    }

    /// The last lines of the test's output.
    pub fn output_tail(&self, lines: usize) -> String {
        let Some(text) = self.log.as_ref().and_then(|p| fs::read(p).ok()) else {
            return String::new();
        };
        let text = String::from_utf8_lossy(&text);
        let all: Vec<&str> = text.lines().collect();
        let tail = &all[all.len().saturating_sub(lines)..];
        tail.iter()
            .map(|l| match l.char_indices().nth(300) {
                Some((cut, _)) => format!("{}...", &l[..cut]),
                None => l.to_string(),
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// Everything a run needs: the release, the suite, the runtime, the tools, where to build.
#[derive(Clone, Debug)]
pub struct Config {
    pub release: Release,
    pub suite: PathBuf,
    pub runtime: Runtime,
    /// lit's current target: the host, or an emulated GPU.
    pub target: Target,
    pub lib_dir: PathBuf,
    /// lit's exec root: `%t` files and logs, one tree per release, runtime and target.
    pub exec_root: PathBuf,
    /// For an emulated GPU, the compilers are `emu-clang` and `emu-clang++` of `bin_dir`.
    pub tools: Tools,
    /// Put first in PATH: `FileCheck`, `not` and `ignored-command` (see install_helpers).
    pub bin_dir: PathBuf,
    /// Where programs find LLVM's `libomptarget.so` when they are linked.
    pub link_dir: PathBuf,
    pub timeout: Duration,
    /// Tests of `run-on-host.txt`, whose `REQUIRES: gpu` is ignored.
    pub run_on_host: Vec<String>,
    /// [`Target::HostFortran`]: tests of `gpu-xfail.txt`, whose `XFAIL` is ignored.
    pub gpu_xfail: Vec<String>,
}

pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

impl Config {
    /// A run on `release`'s x86_64 host-offload target.
    pub fn new(release: Release, runtime: Runtime) -> Result<Config, String> {
        Config::with_target(release, runtime, Target::Host)
    }

    /// A run on `target`: LLVM 19's suite runs on the host and the emulated GPUs' C targets
    /// (clang-19 twin builds), LLVM 22's on every target.
    pub fn with_target(
        release: Release,
        runtime: Runtime,
        target: Target,
    ) -> Result<Config, String> {
        let llvm19_target = matches!(target, Target::Host | Target::AmdgcnEmu | Target::NvptxEmu);
        if release == Release::Llvm19 && !llvm19_target {
            return Err(format!(
                "target '{}' runs LLVM 22's suite only",
                target.name()
            ));
        }
        let suite = suite_root(release)?;
        let tools = Tools::find(release)?;
        if target.fortran() {
            if tools.flang.is_none() {
                return Err(format!(
                    "{} not found in PATH (install Debian package {})",
                    release.flang(),
                    release.flang()
                ));
            }
            let archive = host_device_lib_dir().join("libomptarget-host-device.a");
            if !archive.exists() {
                return Err(format!(
                    "no {}: run scripts/build-dist.sh",
                    archive.display()
                ));
            }
        }
        let lib_dir = runtime.lib_dir(release);
        if !lib_dir.join(release.soname()).exists() {
            return Err(format!(
                "no {} in {} (runtime '{}'; see .ci/install-deps.sh)",
                release.soname(),
                lib_dir.display(),
                runtime.name()
            ));
        }
        let work = workspace_root()
            .join("target/llvm-offload-suite-work")
            .join(release.major().to_string());
        let exec_root = work.join(match target {
            Target::Host => runtime.name().to_string(),
            _ => format!("{}-{}", runtime.name(), target.name()),
        });
        let bin_dir = exec_root.join("bin");
        install_helpers(&bin_dir, &tools)?;
        let tools = match target.gpu() {
            Some(gpu) => install_emu_compilers(&bin_dir, &tools, release, target, gpu)?,
            None => tools,
        };
        let link_dir = link_dir(release, &work)?;
        let run_on_host = match target {
            Target::Host => read_names(&release.run_on_host_file()).unwrap_or_default(),
            _ => Vec::new(),
        };
        let gpu_xfail = match target {
            Target::HostFortran => read_listed(&target.list_dir(release).join("gpu-xfail.txt"))
                .unwrap_or_default()
                .into_iter()
                .map(|(name, _)| name)
                .collect(),
            _ => Vec::new(),
        };
        Ok(Config {
            release,
            suite,
            runtime,
            target,
            lib_dir,
            exec_root,
            tools,
            bin_dir,
            link_dir,
            timeout: DEFAULT_TIMEOUT,
            run_on_host,
            gpu_xfail,
        })
    }

    /// This release's and target's lists (`tests/llvm-offload-suite/<major>/[<target>/]`).
    pub fn list_dir(&self) -> PathBuf {
        self.target.list_dir(self.release)
    }

    /// The tests that pass against LLVM's runtime here: our target.
    pub fn expected_pass_file(&self) -> PathBuf {
        self.list_dir().join("expected-pass.txt")
    }

    /// Tests of expected-pass.txt ours does not pass yet, each with why.
    pub fn known_gaps_file(&self) -> PathBuf {
        self.list_dir().join("known-gaps.txt")
    }

    /// Tests LLVM's runtime fails here that ours passes: kept passing.
    pub fn beyond_llvm_file(&self) -> PathBuf {
        self.list_dir().join("beyond-llvm.txt")
    }

    /// The Fortran targets: tests that fail there whichever runtime runs them, each with why
    /// (on host devices: expectations only a GPU meets, a flang-22 bug).
    pub fn expected_fail_file(&self) -> PathBuf {
        self.list_dir().join("expected-fail.txt")
    }

    /// The Fortran targets: tests flang-22 cannot compile there, each with its message.
    pub fn not_compilable_file(&self) -> PathBuf {
        self.list_dir().join("not-compilable.txt")
    }

    /// The tests of this target's folders.
    pub fn discover(&self) -> Vec<String> {
        discover_on(&self.suite, self.release, self.target)
    }

    /// The commands lit would run for a test, or why it is skipped.
    pub fn plan(&self, name: &str) -> Result<(TestPaths, Vec<(usize, String)>), Outcome> {
        let paths = TestPaths::new(&self.suite, &self.exec_root, name);
        let source = fs::read(&paths.source)
            .map_err(|e| Outcome::Fail(format!("cannot read {}: {e}", paths.source.display())))?;
        let mut directives = Directives::parse(&String::from_utf8_lossy(&source));
        if self.run_on_host.iter().any(|n| n == name) {
            directives.requires.retain(|r| r.trim() != "gpu");
        }
        if self.gpu_xfail.iter().any(|n| n == name) {
            directives.xfail.clear();
        }
        match directives.skip_reason_on(self.release, self.target) {
            Ok(None) => {}
            Ok(Some(why)) => return Err(Outcome::Skip(why)),
            Err(why) => return Err(Outcome::Skip(why)),
        }
        let subs = substitutions_for(
            self.release,
            self.target,
            &self.suite,
            &self.tools,
            &self.link_dir,
            &paths,
        );
        // The host device stands in for the GPU of the Fortran tests' helper compiles.
        let host_offload = format!("-fopenmp-targets={}", self.target.triple(self.release));
        let mut commands = Vec::new();
        for (line, command) in &directives.run {
            let command = match self.target {
                Target::HostFortran => command.replace(AMDGCN_OFFLOAD_FLAG, &host_offload),
                _ => command.clone(),
            };
            commands.push((*line, expand(&command, &subs).map_err(Outcome::Skip)?));
        }
        // Only other targets' commands (turned into `ignored-command`): nothing to test.
        let flang = self.tools.flang.as_deref();
        let compiles = |c: &String| {
            c.contains(&self.tools.clang)
                || c.contains(&self.tools.clangxx)
                || flang.is_some_and(|f| c.contains(f))
        };
        if !commands.iter().any(|(_, c)| compiles(c)) {
            return Err(Outcome::Skip(format!(
                "no RUN line for {}",
                self.target.triple(self.release)
            )));
        }
        Ok((paths, commands))
    }

    /// Runs one test: its commands in order, stopping at the first that fails, like lit.
    pub fn run_test(&self, name: &str) -> TestResult {
        let start = Instant::now();
        let result = |outcome, log| TestResult {
            name: name.to_string(),
            outcome,
            elapsed: start.elapsed(),
            log,
        };
        let (paths, commands) = match self.plan(name) {
            Ok(plan) => plan,
            Err(outcome) => return result(outcome, None),
        };
        if let Err(e) = prepare_tmp(&paths) {
            return result(Outcome::Fail(e), None);
        }
        let script = paths.tmp.with_extension("tmp.sh");
        let log = paths.tmp.with_extension("tmp.log");
        if let Err(e) = fs::write(&script, shell_script(&commands)) {
            return result(Outcome::Fail(format!("{}: {e}", script.display())), None);
        }
        let outcome = self.run_script(&paths, &script, &log);
        result(outcome, Some(log))
    }

    fn run_script(&self, paths: &TestPaths, script: &Path, log: &Path) -> Outcome {
        let out = match fs::File::create(log) {
            Ok(f) => f,
            Err(e) => return Outcome::Fail(format!("{}: {e}", log.display())),
        };
        let err = out.try_clone().unwrap();
        let mut cmd = Command::new("bash");
        cmd.arg(script)
            .current_dir(&paths.exec_dir)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err);
        self.set_env(&mut cmd);
        // An emulated GPU's programs find their twins where a RUN line runs `%t` bare, not
        // through `%libomptarget-run-generic` (`basic_array.c` of the Fortran folder does).
        if self.target.gpu().is_some() {
            let mut twin = paths.tmp.clone().into_os_string();
            twin.push(".twin");
            cmd.env("OMPTARGET_EMU_TWINS", twin);
        }
        // Its own process group, so a timeout kills the test program too, not only bash.
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        let mut child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) => return Outcome::Fail(format!("cannot run bash: {e}")),
        };
        let deadline = Instant::now() + self.timeout;
        loop {
            match child.try_wait() {
                Ok(Some(status)) if status.success() => return Outcome::Pass,
                Ok(Some(_)) => return Outcome::Fail(failure_summary(log)),
                Ok(None) if Instant::now() >= deadline => {
                    kill_group(child.id());
                    let _ = child.kill();
                    let _ = child.wait();
                    return Outcome::Fail(format!("timed out after {}s", self.timeout.as_secs()));
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(20)),
                Err(e) => return Outcome::Fail(format!("waiting for bash: {e}")),
            }
        }
    }

    /// A clean environment, like lit's: the caller's OMP_* or LIBOMPTARGET_* settings must
    /// not change results.
    fn set_env(&self, cmd: &mut Command) {
        cmd.env_clear();
        let path = std::env::var_os("PATH").unwrap_or_default();
        let mut dirs = vec![self.bin_dir.clone()];
        dirs.extend(std::env::split_paths(&path));
        cmd.env("PATH", std::env::join_paths(dirs).unwrap());
        for var in ["HOME", "TMPDIR"] {
            if let Some(value) = std::env::var_os(var) {
                cmd.env(var, value);
            }
        }
        // LLVM 22's lit.cfg sets IS_APU; its tests read it.
        if self.release == Release::Llvm22 {
            let apu = self.target == Target::AmdgcnEmuApu;
            cmd.env("IS_APU", if apu { "1" } else { "0" });
        }
        if let Some(profile) = self.target.emulator_profile() {
            cmd.env("OMPTARGET_EMU_PROFILE", profile);
        }
        cmd.env("LD_LIBRARY_PATH", self.library_path());
        if let (Some(gpu), Runtime::Ours) = (self.target.gpu(), self.runtime) {
            set_emulator_env(cmd, gpu);
        }
    }

    /// An emulated GPU's driver first (both runtimes load `libhsa-runtime64.so.1` or
    /// `libcuda.so.1` by that name), then the runtime's directory, then LLVM 19's, so every
    /// run loads LLVM 19's libomp (Debian's LLVM 22 runtime uses it too).
    fn library_path(&self) -> std::ffi::OsString {
        let mut libs = Vec::new();
        if self.target.gpu().is_some() {
            libs.push(crate::dist().join("emu"));
        }
        libs.push(self.lib_dir.clone());
        if self.lib_dir != Path::new(LLVM19_LIB_DIR) {
            libs.push(LLVM19_LIB_DIR.into());
        }
        std::env::join_paths(libs).unwrap()
    }

    /// Runs tests on `jobs` threads, calling `report` as each finishes; results in input order.
    pub fn run_tests(
        &self,
        names: &[String],
        jobs: usize,
        mut report: impl FnMut(&TestResult),
    ) -> Vec<TestResult> {
        let next = AtomicUsize::new(0);
        let (send, receive) = mpsc::channel();
        let mut results: Vec<Option<TestResult>> = vec![None; names.len()];
        std::thread::scope(|scope| {
            for _ in 0..jobs.max(1) {
                let send = send.clone();
                let next = &next;
                scope.spawn(move || loop {
                    let index = next.fetch_add(1, Ordering::SeqCst);
                    let Some(name) = names.get(index) else {
                        break;
                    };
                    if send.send((index, self.run_test(name))).is_err() {
                        break;
                    }
                });
            }
            drop(send);
            for (index, result) in receive {
                report(&result);
                results[index] = Some(result);
            }
        });
        results.into_iter().map(Option::unwrap).collect()
    }
}

/// Our runtime on an emulated GPU, as the emulators' own tests run it (tests::emulated::run):
/// only that GPU's plugin, and the AMDGPU plugin told where the emulated HSA runtime is (it
/// would otherwise look for ROCm's). LLVM's runtime needs neither.
fn set_emulator_env(cmd: &mut Command, gpu: EmulatedGpu) {
    cmd.env("LIBOMPTARGET_PLUGINS_TO_LOAD", gpu.plugin());
    if gpu == EmulatedGpu::Amdgpu {
        let hsa = crate::dist().join("emu/libhsa-runtime64.so.1");
        cmd.env("HSA_RUNTIME_LIB", hsa);
    }
}

/// lit's internal shell runs commands that bash cannot run as they are; these stand-ins go
/// first in PATH:
/// - `not`: a bare `not` is lit's builtin, which also counts a crash as a failure (LLVM's
///   fatal errors abort); `not --crash` is the `not` tool, as in lit.
/// - `ignored-command`: what other targets' commands become (lit.cfg says `echo
///   ignored-command`); it reads its input first, or a real program piped into it could die
///   of SIGPIPE, which pipefail would report.
/// - `FileCheck`, for RUN lines naming it bare.
fn install_helpers(bin_dir: &Path, tools: &Tools) -> Result<(), String> {
    let not = format!(
        "#!/bin/sh\n\
         if [ \"$1\" = --crash ]; then exec {} \"$@\"; fi\n\
         \"$@\" && exit 1\n\
         exit 0\n",
        tools.not
    );
    let ignored = "#!/bin/sh\ncat >/dev/null 2>&1\necho ignored-command \"$@\"\n".to_string();
    let filecheck = format!("#!/bin/sh\nexec {} \"$@\"\n", tools.filecheck);
    for (name, text) in [
        ("not", not),
        ("ignored-command", ignored),
        ("FileCheck", filecheck),
    ] {
        install_script(bin_dir, name, &text)?;
    }
    Ok(())
}

/// Writes an executable script into `bin_dir`: aside, then renamed, as another run may be
/// using the old one.
fn install_script(bin_dir: &Path, name: &str, text: &str) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    fs::create_dir_all(bin_dir).map_err(|e| format!("{}: {e}", bin_dir.display()))?;
    let path = bin_dir.join(name);
    let tmp = bin_dir.join(format!(".{name}.{}", std::process::id()));
    let io = |e: std::io::Error| format!("{}: {e}", path.display());
    fs::write(&tmp, text).map_err(io)?;
    fs::set_permissions(&tmp, fs::Permissions::from_mode(0o755)).map_err(io)?;
    fs::rename(&tmp, &path).map_err(io)
}

/// Installs `emu-clang` and `emu-clang++` for `gpu` (see emu_compiler_script) and answers the
/// tools with them as the compilers.
fn install_emu_compilers(
    bin_dir: &Path,
    tools: &Tools,
    release: Release,
    target: Target,
    gpu: EmulatedGpu,
) -> Result<Tools, String> {
    let triple = target.triple(release);
    // The twin flags of the emulators' own tests; the command names the offload targets.
    let flags = match (release, target.links_gpu_libc()) {
        (Release::Llvm19, _) => crate::clang19_twin_flags(gpu),
        (_, true) => crate::clang22_gpu_libc_flags(gpu),
        (_, false) => crate::clang22_twin_flags(gpu),
    };
    let flags: Vec<String> = flags
        .into_iter()
        .filter(|f| !f.starts_with("-fopenmp-targets="))
        .map(|f| match (f.strip_prefix("-march="), target.arch()) {
            (Some(_), Some(arch)) => format!("-march={arch}"),
            _ => f,
        })
        .collect();
    let path = match release {
        Release::Llvm19 => crate::clang19_twin_path(gpu),
        Release::Llvm22 => crate::clang22_twin_path(gpu),
    };
    // A Fortran target's twins link our host device runtime, for flang's GPU-style kernels
    // (a clang-built object's kernels run with it too).
    let twin_flags: Vec<String> = match target {
        Target::AmdgcnEmuFortran => vec![
            format!("-L{}", host_device_lib_dir().display()),
            "-Xoffload-linker-x86_64-pc-linux-gnu".into(),
            "-lomptarget-host-device".into(),
        ],
        _ => Vec::new(),
    };
    let mut emu = tools.clone();
    // The C targets have no twin-building flang: Fortran tests keep %flang and are skipped
    // (`flang` is false there).
    emu.flang = match (target, &tools.flang) {
        (Target::AmdgcnEmuFortran, Some(flang)) => {
            let script = emu_flang_script(flang, &tools.clang, &path);
            install_script(bin_dir, "emu-flang", &script)?;
            Some(bin_dir.join("emu-flang").display().to_string())
        }
        _ => None,
    };
    for (name, compiler) in [
        ("emu-clang", &mut emu.clang),
        ("emu-clang++", &mut emu.clangxx),
    ] {
        let script = emu_compiler_script(compiler, triple, &flags, &twin_flags, &path);
        install_script(bin_dir, name, &script)?;
        *compiler = bin_dir.join(name).display().to_string();
    }
    Ok(emu)
}

/// A compiler for an emulated GPU's programs, called as lit calls clang: each command that
/// offloads to `triple` and names its output (`-o X`) builds X for the GPU alone and X.twin
/// with an x86-64 image too (`-fopenmp-targets=<triple>,x86_64-pc-linux-gnu`), from the same
/// arguments plus `flags` (the GPU's architecture and LLVM 22's device runtime, which stands
/// for lit's `-Xoffload-linker -lompdevice`: Debian has no libompdevice; on the C targets also
/// LLVM 22's GPU libc, for lit's `-lc`, see [`Target::links_gpu_libc`]; LLVM 19's device
/// runtime and GPU libc come in the command, as its add_libraries() puts them). An input that
/// has a twin (an object an earlier command built) is replaced by it in the twin's build, which
/// adds `twin_flags` (a Fortran target's host device runtime). Each output is written aside and
/// renamed, so that a failed build or a parallel test never leaves half a file; other commands
/// (nothing offloaded, no output named) run once, as they are.
fn emu_compiler_script(
    compiler: &str,
    triple: &str,
    flags: &[String],
    twin_flags: &[String],
    path: &str,
) -> String {
    let flags: Vec<String> = flags.iter().map(|f| sh_quote(f)).collect();
    let twin_flags: Vec<String> = twin_flags.iter().map(|f| sh_quote(f)).collect();
    format!(
        r#"#!/bin/bash
# lit's compiler for an emulated GPU: see emu_compiler_script in tests/src/llvm_suite.rs.
export PATH={path}
compiler={compiler}
triple={triple}
gpu_flags=({flags})
twin_flags=({twin_flags})
out= offload= args=() twin_args=()
while [ $# -gt 0 ]; do
    case "$1" in
        -o) out=${{2-}}; shift; [ $# -gt 0 ] && shift; continue ;;
        -Xoffload-linker) if [ "${{2-}}" = -lompdevice ]; then shift 2; continue; fi ;;
    esac
    case "$1" in
        "-fopenmp-targets=$triple")
            offload=1; args+=("$1"); twin_args+=("$1,x86_64-pc-linux-gnu") ;;
        *)
            args+=("$1")
            if [ -f "$1.twin" ]; then twin_args+=("$1.twin"); else twin_args+=("$1"); fi ;;
    esac
    shift
done
if [ -z "$offload" ]; then exec "$compiler" "${{args[@]}}" ${{out:+-o "$out"}}; fi
if [ -z "$out" ]; then exec "$compiler" "${{args[@]}}" "${{gpu_flags[@]}}"; fi
build() {{
    final=$1; shift
    part="$final.part$$"
    if "$compiler" "$@" "${{gpu_flags[@]}}" -o "$part"; then
        mv -f "$part" "$final"
    else
        status=$?; rm -f "$part"; return $status
    fi
}}
build "$out.twin" "${{twin_args[@]}}" "${{twin_flags[@]}}" && build "$out" "${{args[@]}}"
"#,
        path = sh_quote(path),
        compiler = sh_quote(compiler),
        triple = sh_quote(triple),
        flags = flags.join(" "),
        twin_flags = twin_flags.join(" "),
    )
}

/// [`Target::AmdgcnEmuFortran`]'s compiler, called as lit calls flang: a command that offloads
/// to gfx90a (`-fopenmp-targets=amdgcn-amd-amdhsa`) and names its output X builds X for the GPU
/// alone and X.twin with an x86-64 image too, as tests/tests/fortran.rs builds its programs
/// (flang-22 has neither clang's per-target `-Xopenmp-target` nor `-foffload-lto`, so the GPU
/// image is built apart):
/// 1. the device code alone, as LLVM bitcode (`--offload-arch=gfx90a --offload-device-only
///    -emit-llvm -c`);
/// 2. packed by `llvm-offload-binary` and embedded into an object by clang-22
///    (`-fembed-offload-object`);
/// 3. linked with the program, compiled for the host with the x86-64 target (the twin, whose
///    image links our host device runtime: `-Xoffload-linker-x86_64-pc-linux-gnu
///    -lomptarget-host-device`) or no device code (`--offload-arch=gfx90a --offload-host-only`);
///    the GPU image links LLVM 22's device runtime (for lit's `-Xoffload-linker -lompdevice`).
///
/// A compile (`-c`) builds the host objects so and adds the GPU image's object to each
/// (`ld.lld -r`), for a later link to find. An input that has a twin (an object emu-clang or
/// emu-flang built) is replaced by it in the twin's build. Other commands run once, as they are.
fn emu_flang_script(flang: &str, clang: &str, path: &str) -> String {
    let device_runtime = crate::workspace_root()
        .join("target/llvm22-device-runtime/libomptarget-amdgpu.bc")
        .display()
        .to_string();
    let host_lib = host_device_lib_dir().display().to_string();
    format!(
        r#"#!/bin/bash
# lit's Fortran compiler for gfx90a: see emu_flang_script in tests/src/llvm_suite.rs.
export PATH={path}
flang={flang}
clang={clang}
pack=/usr/lib/llvm-22/bin/llvm-offload-binary
triple=amdgcn-amd-amdhsa arch=gfx90a
device_runtime={device_runtime}
host_lib={host_lib}
out= offload= compile_only= args=() twin_args=()
while [ $# -gt 0 ]; do
    case "$1" in
        -o) out=${{2-}}; shift; [ $# -gt 0 ] && shift; continue ;;
        -Xoffload-linker) if [ "${{2-}}" = -lompdevice ]; then shift 2; continue; fi ;;
        "-fopenmp-targets=$triple") offload=1; shift; continue ;;
        -c) compile_only=1 ;;
    esac
    args+=("$1")
    if [ -f "$1.twin" ]; then twin_args+=("$1.twin"); else twin_args+=("$1"); fi
    shift
done
if [ -z "$offload" ]; then exec "$flang" "${{args[@]}}" ${{out:+-o "$out"}}; fi
if [ -z "$out" ]; then exec "$flang" "${{args[@]}}" "-fopenmp-targets=$triple"; fi
work=$(mktemp -d "${{TMPDIR:-/tmp}}/emu-flang.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
export TMPDIR=$work
"$flang" "${{args[@]}}" -nogpulib "--offload-arch=$arch" --offload-device-only -emit-llvm -c -o "$work/device.bc" || exit
"$pack" "--image=file=$work/device.bc,triple=$triple,arch=$arch,kind=openmp" -o "$work/gpu-image.offload" || exit
"$clang" -c -x c /dev/null -Xclang "-fembed-offload-object=$work/gpu-image.offload" -o "$work/gpu-image.o" || exit
link=("$work/gpu-image.o" "-Xoffload-linker-$triple" "$device_runtime" "-L$host_lib")
build() {{
    final=$1; shift
    part="$final.part$$"
    if [ -n "$compile_only" ]; then
        "$flang" "$@" -o "$work/host.o" && ld.lld -r "$work/host.o" "$work/gpu-image.o" -o "$part"
    else
        "$flang" "$@" "${{link[@]}}" -o "$part"
    fi
    status=$?
    if [ $status = 0 ]; then mv -f "$part" "$final"; else rm -f "$part"; fi
    return $status
}}
build "$out.twin" "${{twin_args[@]}}" -fopenmp-targets=x86_64-pc-linux-gnu -Xoffload-linker-x86_64-pc-linux-gnu -lomptarget-host-device &&
    build "$out" "${{args[@]}}" "--offload-arch=$arch" --offload-host-only
"#,
        path = sh_quote(path),
        flang = sh_quote(flang),
        clang = sh_quote(clang),
        device_runtime = sh_quote(&device_runtime),
        host_lib = sh_quote(&host_lib),
    )
}

/// `text` as one shell word.
fn sh_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// The folder whose `libomptarget.so` programs link against: LLVM 19's own tree has one; for
/// LLVM 22, whose runtime is unpacked without its -dev link, a folder under `work` with a link
/// to its `libomptarget.so.22.1`.
fn link_dir(release: Release, work: &Path) -> Result<PathBuf, String> {
    if release == Release::Llvm19 {
        return Ok(PathBuf::from(LLVM19_LIB_DIR));
    }
    let dir = work.join("link");
    let link = dir.join("libomptarget.so");
    let io = |e: std::io::Error| format!("{}: {e}", link.display());
    fs::create_dir_all(&dir).map_err(io)?;
    let target = release.llvm_lib_dir().join(release.soname());
    if fs::read_link(&link).ok().as_deref() != Some(target.as_path()) {
        // Made aside and renamed: another run may be linking against it.
        let tmp = dir.join(format!(".libomptarget.so.{}", std::process::id()));
        let _ = fs::remove_file(&tmp);
        std::os::unix::fs::symlink(&target, &tmp).map_err(io)?;
        fs::rename(&tmp, &link).map_err(io)?;
    }
    Ok(dir)
}

/// At most 2 jobs: each test compiles, and the CI machine has 2 cores.
pub fn default_jobs() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(2)
}

/// Creates `%T` and removes this test's earlier `%t*` files, so a stale program from an
/// earlier run cannot stand in for one that failed to build.
fn prepare_tmp(paths: &TestPaths) -> Result<(), String> {
    fs::create_dir_all(&paths.tmp_dir).map_err(|e| format!("{}: {e}", paths.tmp_dir.display()))?;
    let prefix = paths
        .tmp
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    for entry in fs::read_dir(&paths.tmp_dir).into_iter().flatten().flatten() {
        if entry.file_name().to_string_lossy().starts_with(&prefix) {
            let path = entry.path();
            let _ = match path.is_dir() {
                true => fs::remove_dir_all(&path),
                false => fs::remove_file(&path),
            };
        }
    }
    Ok(())
}

/// After each command: pipefail's status, and every status of the last pipeline, so that a
/// program that crashed before FileCheck complained of empty input shows as a crash.
const CHECK_STATUS: &str = r#"st="${PIPESTATUS[*]}"; rc=0; for s in $st; do [ "$s" -ne 0 ] && rc=$s; done
if [ $rc -ne 0 ]; then echo "error: command failed with exit status: $rc (pipeline: $st)"; exit 1; fi
"#;

/// The bash script for a test's commands: pipefail like lit's shell, each command echoed
/// first (the log then reads like lit's), the first failure ends the script.
pub fn shell_script(commands: &[(usize, String)]) -> String {
    let mut script = String::from("set -o pipefail\nulimit -c 0\n");
    for (line, command) in commands {
        let shown = format!("RUN: at line {line}: {command}").replace('\'', r"'\''");
        script.push_str(&format!("echo '{shown}'\n{command}\n"));
        script.push_str(CHECK_STATUS);
    }
    script
}

fn kill_group(pgid: u32) {
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{pgid}")])
        .stderr(Stdio::null())
        .status();
}

/// A one-line reason for a failure: the failing command's status, or the first error line.
fn failure_summary(log: &Path) -> String {
    let text = fs::read(log).unwrap_or_default();
    let text = String::from_utf8_lossy(&text);
    let lines: Vec<&str> = text.lines().collect();
    let failed_run = lines
        .iter()
        .rposition(|l| l.starts_with("RUN: at line "))
        .map(|i| {
            lines[i]["RUN: at line ".len()..]
                .split(':')
                .next()
                .unwrap_or("")
        });
    let key = lines
        .iter()
        .find(|l| {
            let l = l.to_ascii_lowercase();
            (l.contains("error") || l.contains("fatal") || l.contains("undefined"))
                && !l.starts_with("error: command failed")
                && !l.starts_with("run: at line")
        })
        .or_else(|| {
            lines
                .iter()
                .rev()
                .find(|l| !l.starts_with("error: command failed"))
        })
        .map(|l| l.trim().chars().take(160).collect::<String>())
        .unwrap_or_default();
    let crash = lines
        .iter()
        .rev()
        .find_map(|l| l.strip_prefix("error: command failed with exit status: "))
        .and_then(|l| l.split_once("(pipeline: "))
        .and_then(|(_, statuses)| {
            statuses
                .trim_end_matches(')')
                .split_whitespace()
                .filter_map(|s| s.parse::<i32>().ok())
                .find_map(|s| signal_name(s - 128))
        });
    let key = match crash {
        Some(signal) => format!("a program died of {signal}; {key}"),
        None => key,
    };
    match failed_run {
        Some(line) => format!("RUN line {line} failed: {key}"),
        None => key,
    }
}

/// Signals a test program may die of (`not --crash` tests expect SIGABRT).
fn signal_name(signal: i32) -> Option<&'static str> {
    Some(match signal {
        4 => "SIGILL",
        6 => "SIGABRT",
        7 => "SIGBUS",
        8 => "SIGFPE",
        9 => "SIGKILL",
        11 => "SIGSEGV",
        _ => return None,
    })
}

/// An emulated GPU's lists of `release`'s suite hold on ours (see [`lists_pass`]). Its
/// expected-pass.txt may be empty (LLVM's runtime may pass none of the tests there), but then
/// beyond-llvm.txt must name some: a run of nothing proves nothing.
pub fn emulated_lists_pass(release: Release, target: Target) {
    let config =
        Config::with_target(release, Runtime::Ours, target).unwrap_or_else(|e| panic!("{e}"));
    let expected = read_names(&config.expected_pass_file()).unwrap();
    let beyond = read_names(&config.beyond_llvm_file()).unwrap_or_default();
    assert!(
        !expected.is_empty() || !beyond.is_empty(),
        "neither expected-pass.txt nor beyond-llvm.txt of {} lists a test",
        config.list_dir().display()
    );
    lists_pass(&config, &expected);
}

/// The tests of expected-pass.txt but known gaps, then those of beyond-llvm.txt, must pass on
/// ours; each known gap must still fail.
pub fn lists_pass(config: &Config, expected: &[String]) {
    let gaps = known_gaps(config);
    let names: Vec<String> = expected
        .iter()
        .filter(|n| !gaps.iter().any(|(g, _)| g == *n))
        .cloned()
        .collect();
    for (name, why) in &gaps {
        eprintln!("KNOWN GAP {name}: {why}");
    }
    let results = config.run_tests(&names, default_jobs(), |r| eprintln!("{}", r.line()));
    // A skip counts as a failure too: these tests all ran and passed against LLVM's runtime.
    let failures: Vec<String> = results
        .iter()
        .filter(|r| r.outcome != Outcome::Pass)
        .map(|r| {
            let tail = r.output_tail(25);
            let log = r.log.as_ref().map(|l| l.display().to_string());
            format!("{}\n  log: {}\n{tail}\n", r.line(), log.unwrap_or_default())
        })
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} LLVM {} offload tests ({}) that pass on LLVM's runtime fail on ours:\n\n{}",
        failures.len(),
        names.len(),
        config.release.major(),
        config.target.name(),
        failures.join("\n")
    );
    // Tests LLVM's runtime fails here and ours passes stay passing.
    let beyond = read_names(&config.beyond_llvm_file()).unwrap_or_default();
    let regressions: Vec<String> = config
        .run_tests(&beyond, default_jobs(), |r| {
            eprintln!("(beyond LLVM) {}", r.line())
        })
        .iter()
        .filter(|r| r.outcome != Outcome::Pass)
        .map(|r| format!("{}\n{}", r.line(), r.output_tail(25)))
        .collect();
    assert!(
        regressions.is_empty(),
        "tests of beyond-llvm.txt fail on our runtime:\n{}",
        regressions.join("\n")
    );
    // A known gap that passes now must leave the list.
    let gap_names: Vec<String> = gaps.iter().map(|(n, _)| n.clone()).collect();
    let fixed: Vec<String> = config
        .run_tests(&gap_names, default_jobs(), |_| {})
        .iter()
        .filter(|r| r.outcome == Outcome::Pass)
        .map(|r| r.line())
        .collect();
    assert!(
        fixed.is_empty(),
        "known gaps that pass now; remove them from known-gaps.txt: {fixed:?}"
    );
}

/// The run's known-gaps.txt: (test, reason) pairs.
fn known_gaps(config: &Config) -> Vec<(String, String)> {
    read_listed(&config.known_gaps_file()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directives_join_continuations() {
        let d = Directives::parse(
            "// RUN: %libomptarget-compile-generic \\\n// RUN:   -DX && %t\n\
             // REQUIRES: host, !gpu\n// UNSUPPORTED: amdgcn-amd-amdhsa\n// CHECK: x\n",
        );
        assert_eq!(
            d.run,
            vec![(1, "%libomptarget-compile-generic    -DX && %t".into())]
        );
        assert_eq!(d.requires, vec!["host", "!gpu"]);
        assert_eq!(d.skip_reason(Release::Llvm19), Ok(None));
    }

    #[test]
    fn feature_expressions() {
        let r = Release::Llvm19;
        assert_eq!(eval_features(r, "host && !(gpu || flang)"), Ok(true));
        assert_eq!(eval_features(r, "x86_64-pc-linux-gnu-LTO"), Ok(false));
        assert!(eval_features(r, "mystery").is_err());
        assert!(eval_features(r, "target={{.*}}").is_err());
        // LLVM 22 spells the host target differently; 19's name is unknown to it.
        let r = Release::Llvm22;
        assert_eq!(
            eval_features(r, "x86_64-unknown-linux-gnu && clang-22"),
            Ok(true)
        );
        assert!(eval_features(r, "x86_64-pc-linux-gnu").is_err());
    }

    #[test]
    fn generic_commands_expand_for_x86_64() {
        let tools = Tools {
            clang: "clang-19".into(),
            clangxx: "clang++-19".into(),
            flang: None,
            filecheck: "FileCheck-19".into(),
            not: "not-19".into(),
        };
        let paths = TestPaths::new(Path::new("/s"), Path::new("/x"), "mapping/a.c");
        let link = Path::new(LLVM19_LIB_DIR);
        let subs = substitutions(Release::Llvm19, Path::new("/s"), &tools, link, &paths);
        let run = expand("%libomptarget-compile-run-and-check-generic", &subs).unwrap();
        assert!(
            run.starts_with("clang-19 -fopenmp -pthread  -I /s "),
            "{run}"
        );
        assert!(run.contains("-fopenmp-targets=x86_64-pc-linux-gnu /s/mapping/a.c -o "));
        assert!(run.ends_with("&& /x/mapping/Output/a.c.tmp | FileCheck-19 /s/mapping/a.c"));
        let fail = expand("%libomptarget-run-fail-generic", &subs).unwrap();
        assert_eq!(fail, "not-19 --crash /x/mapping/Output/a.c.tmp");
        let other = expand("%libomptarget-compile-nvptx64-nvidia-cuda", &subs).unwrap();
        assert_eq!(other, IGNORED);
        assert!(expand("%flang-generic x", &subs).is_err());
    }

    #[test]
    fn generic_commands_expand_for_llvm22() {
        let tools = Tools {
            clang: "clang-22".into(),
            clangxx: "clang++-22".into(),
            flang: None,
            filecheck: "FileCheck-22".into(),
            not: "not-22".into(),
        };
        let paths = TestPaths::new(Path::new("/s"), Path::new("/x"), "mapping/a.c");
        let subs = substitutions(
            Release::Llvm22,
            Path::new("/s"),
            &tools,
            Path::new("/l"),
            &paths,
        );
        let run = expand("%libomptarget-compile-run-and-check-generic", &subs).unwrap();
        assert!(
            run.contains(" -L /l -L /usr/lib/llvm-19/lib -nogpulib"),
            "{run}"
        );
        assert!(run.contains("-fopenmp-targets=x86_64-unknown-linux-gnu /s/mapping/a.c -o "));
        assert_eq!(
            expand("%target_triple", &subs).unwrap(),
            "x86_64-unknown-linux-gnu"
        );
        let old_host = expand("%libomptarget-compile-x86_64-pc-linux-gnu", &subs);
        assert!(old_host.is_err(), "{old_host:?}");
        assert!(expand("%offload-device-info", &subs).is_err());
    }

    #[test]
    fn emulated_gpus_have_their_targets_features() {
        let (r, amd, nv) = (Release::Llvm22, Target::AmdgcnEmu, Target::NvptxEmu);
        let on = |t, e| eval_features_on(r, t, e);
        assert_eq!(
            on(amd, "gpu && amdgpu && amdgcn-amd-amdhsa && ompt"),
            Ok(true)
        );
        assert_eq!(
            on(amd, "large_allocation_memory_pool && clang-22"),
            Ok(true)
        );
        assert_eq!(on(amd, "host || apu || nvidiagpu || flang"), Ok(false));
        assert_eq!(on(amd, "x86_64-unknown-linux-gnu"), Ok(false));
        assert_eq!(
            on(nv, "gpu && nvidiagpu && unified_shared_memory"),
            Ok(true)
        );
        assert_eq!(on(nv, "large_allocation_memory_pool || amdgpu"), Ok(false));
        assert_eq!(on(Target::Host, "host && !gpu"), Ok(true));
    }

    #[test]
    fn llvm19s_emulated_gpus_have_its_features_and_device_runtime() {
        let r = Release::Llvm19;
        let on = |t, e| eval_features_on(r, t, e);
        assert_eq!(
            on(
                Target::AmdgcnEmu,
                "gpu && amdgpu && amdgcn-amd-amdhsa && clang-19"
            ),
            Ok(true)
        );
        // LLVM 19's lit.cfg has no large_allocation_memory_pool; its GPU libc is linked.
        assert_eq!(on(Target::AmdgcnEmu, "libc && !host"), Ok(true));
        assert_eq!(
            on(Target::AmdgcnEmu, "large_allocation_memory_pool || host"),
            Ok(false)
        );
        assert_eq!(
            on(
                Target::NvptxEmu,
                "gpu && nvidiagpu && unified_shared_memory"
            ),
            Ok(true)
        );
        // lit's add_libraries(): the GPU libc and the device runtime archive, where LLVM 22
        // names -lompdevice.
        let devicertl = Path::new(LLVM19_LIB_DIR).join("libomptarget.devicertl.a");
        let libc = crate::workspace_root().join("target/llvm19-gpu-libc/libcgpu-nvptx.a");
        if devicertl.exists() && libc.exists() {
            assert_eq!(
                r.libraries(Target::NvptxEmu, "%s"),
                format!("%s {} {}", libc.display(), devicertl.display())
            );
        }
        if devicertl.exists() {
            assert_eq!(
                r.libraries(Target::Host, "%s"),
                format!("%s {}", devicertl.display())
            );
        }
        assert_eq!(
            Release::Llvm22.libraries(Target::NvptxEmu, "%s"),
            "%s -Xoffload-linker -lompdevice"
        );
        assert!(Config::with_target(r, Runtime::Ours, Target::AmdgcnEmuApu).is_err());
    }

    #[test]
    fn generic_commands_expand_for_an_emulated_gpu() {
        let tools = Tools {
            clang: "/b/emu-clang".into(),
            clangxx: "/b/emu-clang++".into(),
            flang: None,
            filecheck: "FileCheck-22".into(),
            not: "not-22".into(),
        };
        let paths = TestPaths::new(Path::new("/s"), Path::new("/x"), "sanitizer/a.c");
        let subs = substitutions_for(
            Release::Llvm22,
            Target::AmdgcnEmu,
            Path::new("/s"),
            &tools,
            Path::new("/l"),
            &paths,
        );
        let compile = expand("%libomptarget-compileopt-generic -g", &subs).unwrap();
        assert!(compile.starts_with("/b/emu-clang -fopenmp"), "{compile}");
        assert!(
            compile.ends_with(
                "-nogpulib  -fopenmp-targets=amdgcn-amd-amdhsa -O3 /s/sanitizer/a.c \
                 -o /x/sanitizer/Output/a.c.tmp -Xoffload-linker -lompdevice -g"
            ),
            "{compile}"
        );
        let run = "%not --crash env -u V T=1 %libomptarget-run-generic 2>&1 | %fcheck-generic";
        assert_eq!(
            expand(run, &subs).unwrap(),
            "not-22 --crash env -u V T=1 env OMPTARGET_EMU_TWINS=/x/sanitizer/Output/a.c.tmp.twin \
             /x/sanitizer/Output/a.c.tmp 2>&1 | FileCheck-22 /s/sanitizer/a.c"
        );
        let fail = expand("%libomptarget-run-fail-generic", &subs).unwrap();
        assert!(
            fail.starts_with("not-22 --crash env OMPTARGET_EMU_TWINS="),
            "{fail}"
        );
        assert_eq!(
            expand("%target_triple", &subs).unwrap(),
            "amdgcn-amd-amdhsa"
        );
        let host = expand("%libomptarget-compile-x86_64-unknown-linux-gnu", &subs);
        assert_eq!(host.unwrap(), IGNORED);
    }

    #[test]
    fn fortran_on_host_devices_stands_in_for_the_gpu() {
        let (r, t) = (Release::Llvm22, Target::HostFortran);
        let d = Directives::parse(
            "! REQUIRES: flang, amdgpu\n! XFAIL: amdgpu\n! UNSUPPORTED: nvptx64-nvidia-cuda\n\
             ! RUN: %libomptarget-compile-fortran-run-and-check-generic\n",
        );
        let flang = flang_available(r);
        let expected = match flang {
            true => None,
            false => Some("REQUIRES: flang".to_string()),
        };
        // amdgpu holds for REQUIRES only: the XFAIL, for the GPU's bug, is not the host's.
        assert_eq!(d.skip_reason_on(r, t), Ok(expected));
        assert_eq!(
            d.skip_reason_on(r, Target::Host),
            Ok(Some("REQUIRES: amdgpu".into()))
        );
        let host = Directives::parse(
            "! REQUIRES: flang, gpu\n! UNSUPPORTED: x86_64-unknown-linux-gnu\n! RUN: %t\n",
        );
        // The host triple's UNSUPPORTED dates from before a device runtime for flang's kernels.
        if flang {
            assert_eq!(host.skip_reason_on(r, t), Ok(None));
        }
        assert_eq!(
            host.skip_reason_on(r, Target::Host),
            Ok(Some("REQUIRES: gpu".into()))
        );
        assert_eq!(eval_features_on(r, t, "amdgpu || gpu"), Ok(false));
        assert_eq!(t.dirs(r), ["offloading/fortran"]);

        let tools = Tools {
            clang: "clang-22".into(),
            clangxx: "clang++-22".into(),
            flang: Some("/usr/bin/flang-22".into()),
            filecheck: "FileCheck-22".into(),
            not: "not-22".into(),
        };
        let paths = TestPaths::new(Path::new("/s"), Path::new("/x"), "offloading/fortran/a.f90");
        let subs = substitutions_for(r, t, Path::new("/s"), &tools, Path::new("/l"), &paths);
        let run = expand("%libomptarget-compile-fortran-run-and-check-generic", &subs).unwrap();
        let lib = host_device_lib_dir();
        assert!(
            run.starts_with(&format!(
                "/usr/bin/flang-22 -fopenmp -pthread -I /s -I {} -L /l -L /usr/lib/llvm-19/lib \
                 -nogpulib -fopenmp-version=52 -fopenmp-targets=x86_64-unknown-linux-gnu \
                 /s/offloading/fortran/a.f90 -o /x/offloading/fortran/Output/a.f90.tmp \
                 -L {} -Xoffload-linker -lomptarget-host-device && ",
                crate::clang22_include().display(),
                lib.display()
            )),
            "{run}"
        );
        // C helpers of the folder link the host device runtime too.
        let c = expand("%libomptarget-compile-generic x.o", &subs).unwrap();
        assert!(
            c.ends_with("-Xoffload-linker -lomptarget-host-device x.o"),
            "{c}"
        );
    }

    #[test]
    fn fortran_on_the_emulated_gfx90a_reads_directives_as_llvms_bots() {
        let (r, t) = (Release::Llvm22, Target::AmdgcnEmuFortran);
        assert_eq!(t.dirs(r), ["offloading/fortran"]);
        assert_eq!(t.gpu(), Some(EmulatedGpu::Amdgpu));
        assert_eq!(Target::parse("amdgcn-emu-fortran"), Some(t));
        let flang = flang_available(r);
        assert_eq!(eval_features_on(r, t, "flang && amdgpu"), Ok(flang));
        // The C targets have no twin-building flang.
        assert_eq!(eval_features_on(r, Target::AmdgcnEmu, "flang"), Ok(false));
        let xfail = Directives::parse("! REQUIRES: flang, amdgpu\n! XFAIL: amdgpu\n! RUN: %t\n");
        let unsupported =
            Directives::parse("! REQUIRES: flang\n! UNSUPPORTED: amdgcn-amd-amdhsa\n! RUN: %t\n");
        if flang {
            assert_eq!(xfail.skip_reason_on(r, t), Ok(Some("XFAIL: amdgpu".into())));
            assert_eq!(
                unsupported.skip_reason_on(r, t),
                Ok(Some("UNSUPPORTED: amdgcn-amd-amdhsa".into()))
            );
        }
    }

    /// Runs the emulated targets' compiler script with a stand-in compiler that writes its
    /// arguments into its output, or fails when told to.
    fn run_emu_compiler(dir: &Path, args: &[&str], fail: bool) -> bool {
        let fake = dir.join("fake-clang");
        let body = "#!/bin/bash\nfor a; do [ \"$prev\" = -o ] && out=$a; prev=$a; done\n\
                    [ -n \"$FAIL\" ] && { echo half > \"$out\"; exit 3; }\n\
                    echo \"$*\" > \"$out\"\n";
        install_script(dir, "fake-clang", body).unwrap();
        let flags = ["-march=gfx90a".to_string()];
        let script = emu_compiler_script(
            &fake.display().to_string(),
            "amdgcn-amd-amdhsa",
            &flags,
            &[],
            "/usr/bin:/bin",
        );
        install_script(dir, "emu-clang", &script).unwrap();
        let mut cmd = Command::new(dir.join("emu-clang"));
        cmd.args(args).current_dir(dir);
        if fail {
            cmd.env("FAIL", "1");
        }
        // Just written: another test thread's fork may briefly hold it open.
        let status = crate::retry_while_busy(|| cmd.status()).unwrap();
        status.success()
    }

    #[test]
    fn emulated_compiler_builds_a_program_and_its_twin() {
        let dir = std::env::temp_dir().join(format!("llvm-suite-emu-cc-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        let read = |name: &str| fs::read_to_string(dir.join(name)).unwrap_or_default();
        let offload = "-fopenmp-targets=amdgcn-amd-amdhsa";
        let args = [
            offload,
            "a.c",
            "-c",
            "-o",
            "a.o",
            "-Xoffload-linker",
            "-lompdevice",
        ];
        assert!(run_emu_compiler(&dir, &args, false));
        // Built aside (`.part<pid>`), then renamed.
        let gpu_build = format!("{offload} a.c -c -march=gfx90a -o a.o.part");
        assert!(read("a.o").starts_with(&gpu_build), "{}", read("a.o"));
        let suffix = read("a.o.twin")
            .split_once(" a.c")
            .map(|(t, _)| t.to_string());
        assert_eq!(suffix.unwrap(), format!("{offload},x86_64-pc-linux-gnu"));
        // A later link takes the object's twin into the program's twin.
        assert!(run_emu_compiler(&dir, &[offload, "a.o", "-o", "p"], false));
        assert!(read("p").contains(" a.o -march"), "{}", read("p"));
        assert!(
            read("p.twin").contains(" a.o.twin -march"),
            "{}",
            read("p.twin")
        );
        // A failed build leaves nothing, not half a file; nothing offloaded: one build.
        assert!(!run_emu_compiler(&dir, &[offload, "b.c", "-o", "q"], true));
        assert!(run_emu_compiler(&dir, &["c.c", "-o", "r"], false));
        let left: Vec<String> = fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with('q') || n.contains(".part") || n.starts_with("r."))
            .collect();
        assert!(left.is_empty(), "{left:?}");
        assert_eq!(read("r"), "c.c -o r\n");
        let _ = fs::remove_dir_all(&dir);
    }
}
