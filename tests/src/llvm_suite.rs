//! Runs LLVM 19's own offload test suite (`offload/test` of the LLVM source tree, fetched by
//! `scripts/fetch-llvm-offload-tests.sh`; never copied into this repository) on the x86_64
//! host-offload target, against LLVM 19's `libomptarget.so.19.1` or ours.
//!
//! This is a small stand-in for lit, enough for these tests: it reads each file's `RUN:`,
//! `REQUIRES:`, `UNSUPPORTED:` and `XFAIL:` lines, expands the substitutions that offload's
//! `lit.cfg` defines for `x86_64-pc-linux-gnu` in lit's own order, and runs the commands with
//! bash. Programs always link against LLVM's `libomptarget.so` (ours has the same soname);
//! `LD_LIBRARY_PATH` picks the runtime they load. A test whose directives or substitutions we
//! do not understand is skipped with the reason, never guessed at.

use crate::workspace_root;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The offload target these tests are configured for.
pub const TARGET: &str = "x86_64-pc-linux-gnu";
pub const LLVM19_LIB_DIR: &str = "/usr/lib/llvm-19/lib";
/// The folders of offload/test that hold tests (everything but `Inputs`).
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
/// lit.cfg's `config.suffixes`.
const SUFFIXES: &[&str] = &[".c", ".cpp", ".cc", ".f90"];
/// The directory name inside the Debian source tarball.
const TARBALL_DIR: &str = "llvm-toolchain-19_19.1.7";

/// `LIBOMPTARGET_ALL_TARGETS` of LLVM 19's offload/CMakeLists.txt, in its order: lit.cfg turns
/// the commands of every target but the current one into `echo ignored-command`.
const ALL_TARGETS: &[&str] = &[
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

/// The lit features LLVM 19 as Debian builds it has on x86_64: lit.cfg adds the target,
/// `host` and `unified_shared_memory`; the compiler features come from OpenMPTesting.cmake;
/// `ompt` because Debian's libomptarget.so.19.1 exports `ompt_libomptarget_connect`.
const FEATURES: &[&str] = &[
    "x86_64-pc-linux-gnu",
    "host",
    "unified_shared_memory",
    "ompt",
    "clang",
    "clang-19",
    "clang-19.1",
    "clang-19.1.7",
];

/// Features lit.cfg may set that this configuration lacks: they are false, not unknown.
/// (`libomptarget-debug`: Debian's runtime is built without LIBOMPTARGET_DEBUG output.)
const ABSENT_FEATURES: &[&str] = &[
    "gpu",
    "nvidiagpu",
    "amdgpu",
    "apu",
    "flang",
    "libc",
    "libomptarget-debug",
];

/// Which runtime the programs load.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Runtime {
    /// LLVM 19's own, from libomp-19-dev: the reference.
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

    /// The directory holding this runtime's `libomptarget.so.19.1`.
    pub fn lib_dir(self) -> PathBuf {
        match self {
            Runtime::Llvm => PathBuf::from(LLVM19_LIB_DIR),
            Runtime::Ours => std::env::var_os("OMPTARGET_DIST")
                .map(PathBuf::from)
                .unwrap_or_else(|| workspace_root().join("dist"))
                .join("lib"),
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

/// The `offload/test` folder: the cache directory itself may be one, else the tarball's tree
/// under it.
pub fn suite_root() -> Result<PathBuf, String> {
    let dir = cache_dir();
    let mut candidates = vec![dir.clone(), dir.join(TARBALL_DIR).join("offload/test")];
    if let Ok(entries) = fs::read_dir(&dir) {
        candidates.extend(entries.flatten().map(|e| e.path().join("offload/test")));
    }
    candidates
        .into_iter()
        .find(|c| c.join("lit.cfg").is_file())
        .ok_or_else(|| {
            format!(
                "LLVM's offload test suite is not under {}: run scripts/fetch-llvm-offload-tests.sh",
                dir.display()
            )
        })
}

/// The tests (paths relative to offload/test, like `mapping/pr38704.c`) under `dirs`, sorted.
pub fn discover(root: &Path, dirs: &[&str]) -> Vec<String> {
    let mut names = Vec::new();
    for dir in dirs {
        collect(root, &root.join(dir), &mut names);
    }
    names.sort();
    names
}

fn collect(root: &Path, dir: &Path, names: &mut Vec<String>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let file_name = entry.file_name().to_string_lossy().into_owned();
        if path.is_dir() {
            // lit.cfg's `config.excludes`.
            if file_name != "Inputs" {
                collect(root, &path, names);
            }
        } else if SUFFIXES.iter().any(|s| file_name.ends_with(s)) {
            let rel = path.strip_prefix(root).unwrap();
            names.push(rel.to_string_lossy().into_owned());
        }
    }
}

/// Reads a list of test names: one per line; blank lines and `#` comments are ignored.
pub fn read_names(path: &Path) -> Result<Vec<String>, String> {
    let text =
        fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    Ok(text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_string)
        .collect())
}

/// The list of tests that pass against LLVM 19's runtime here: our target.
pub fn expected_pass_file() -> PathBuf {
    workspace_root().join("tests/llvm-offload-suite/expected-pass.txt")
}

/// Tests that say `REQUIRES: gpu` although they run on the host offload target: run anyway.
pub fn run_on_host_file() -> PathBuf {
    workspace_root().join("tests/llvm-offload-suite/run-on-host.txt")
}

/// Tests LLVM 19's runtime fails here that ours passes: kept passing.
pub fn beyond_llvm_file() -> PathBuf {
    workspace_root().join("tests/llvm-offload-suite/beyond-llvm.txt")
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

    /// Why lit would not run this test on x86_64 host offloading, if it would not.
    pub fn skip_reason(&self) -> Result<Option<String>, String> {
        for expr in &self.requires {
            if !eval_features(expr)? {
                return Ok(Some(format!("REQUIRES: {expr}")));
            }
        }
        for expr in &self.unsupported {
            if eval_features(expr)? {
                return Ok(Some(format!("UNSUPPORTED: {expr}")));
            }
        }
        for expr in &self.xfail {
            // An expected failure is no program LLVM passes.
            if expr == "*" || eval_features(expr)? {
                return Ok(Some(format!("XFAIL: {expr}")));
            }
        }
        if self.run.is_empty() {
            return Ok(Some("no RUN line".into()));
        }
        Ok(None)
    }
}

fn feature(name: &str) -> Result<bool, String> {
    if FEATURES.contains(&name) {
        return Ok(true);
    }
    let compiler_version = ["clang-", "gcc", "icc"].iter().any(|p| name.starts_with(p));
    if ABSENT_FEATURES.contains(&name) || ALL_TARGETS.contains(&name) || compiler_version {
        return Ok(false);
    }
    Err(format!("unknown feature '{name}'"))
}

/// Evaluates a lit boolean feature expression: names, `!`, `&&`, `||` and parentheses.
/// Regular expressions (`{{...}}`) are not supported: the caller skips such tests.
pub fn eval_features(expr: &str) -> Result<bool, String> {
    let tokens = tokenize(expr)?;
    let mut pos = 0;
    let value = parse_or(&tokens, &mut pos)?;
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

fn parse_or(tokens: &[String], pos: &mut usize) -> Result<bool, String> {
    let mut value = parse_and(tokens, pos)?;
    while tokens.get(*pos).is_some_and(|t| t == "||") {
        *pos += 1;
        value |= parse_and(tokens, pos)?;
    }
    Ok(value)
}

fn parse_and(tokens: &[String], pos: &mut usize) -> Result<bool, String> {
    let mut value = parse_not(tokens, pos)?;
    while tokens.get(*pos).is_some_and(|t| t == "&&") {
        *pos += 1;
        value &= parse_not(tokens, pos)?;
    }
    Ok(value)
}

fn parse_not(tokens: &[String], pos: &mut usize) -> Result<bool, String> {
    let token = tokens
        .get(*pos)
        .ok_or("feature expression ends early")?
        .as_str();
    *pos += 1;
    match token {
        "!" => Ok(!parse_not(tokens, pos)?),
        "(" => {
            let value = parse_or(tokens, pos)?;
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
    pub filecheck: String,
    pub not: String,
}

impl Tools {
    /// clang-19, clang++-19, and FileCheck-19 and not-19 from llvm-19-tools.
    pub fn find() -> Result<Tools, String> {
        let get = |name: &str, package: &str| {
            find_in_path(name)
                .map(|p| p.to_string_lossy().into_owned())
                .ok_or_else(|| {
                    format!("{name} not found in PATH (install Debian package {package})")
                })
        };
        Ok(Tools {
            clang: get("clang-19", "clang-19")?,
            clangxx: get("clang++-19", "clang-19")?,
            filecheck: get("FileCheck-19", "llvm-19-tools")?,
            not: get("not-19", "llvm-19-tools")?,
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

/// lit.cfg's substitutions for the current target, then lit's defaults, in lit's order: lit
/// applies each once, in turn, so a substitution may produce another found later in the list.
pub fn substitutions(suite: &Path, tools: &Tools, paths: &TestPaths) -> Vec<(String, String)> {
    let mut subs: Vec<(String, String)> = Vec::new();
    let mut add = |from: String, to: String| subs.push((from, to));
    let fc = &tools.filecheck;
    // lit.cfg's add_libraries(): the device runtime archive, when LLVM's tree has one.
    let devicertl = Path::new(LLVM19_LIB_DIR).join("libomptarget.devicertl.a");
    let libs = |s: &str| match devicertl.exists() {
        true => format!("{s} {}", devicertl.display()),
        false => s.to_string(),
    };
    for &t in ALL_TARGETS {
        let base = t
            .strip_suffix("-JIT-LTO")
            .or(t.strip_suffix("-LTO"))
            .unwrap_or(t);
        let lt = |n: &str| format!("%libomptarget-{n}-{t}");
        if t == TARGET {
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
            add(lt("run"), "%t".into());
            add(lt("run-fail"), "%not --crash %t".into());
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
    // No %flang: there is no Fortran compiler, so Fortran tests keep it and are skipped.
    add("%openmp_flags".into(), "-fopenmp -pthread".into());
    add("%cuda_flags".into(), String::new());
    add("%flags_clang".into(), String::new());
    add("%flags_flang".into(), String::new());
    // lit.cfg's test_flags, minus the -rpath options: LD_LIBRARY_PATH alone must choose
    // which libomptarget.so.19.1 a program loads. Linking always uses LLVM's (same soname).
    add(
        "%flags".into(),
        format!("-I {} -L {LLVM19_LIB_DIR} -nogpulib", suite.display()),
    );
    add("%not".into(), tools.not.clone());

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

/// Everything a run needs: the suite, the runtime, the tools, where to build.
#[derive(Clone, Debug)]
pub struct Config {
    pub suite: PathBuf,
    pub runtime: Runtime,
    pub lib_dir: PathBuf,
    /// lit's exec root: `%t` files and logs, one tree per runtime.
    pub exec_root: PathBuf,
    pub tools: Tools,
    /// Put first in PATH: `FileCheck`, `not` and `ignored-command` (see install_helpers).
    pub bin_dir: PathBuf,
    pub timeout: Duration,
    /// Tests of `run-on-host.txt`, whose `REQUIRES: gpu` is ignored.
    pub run_on_host: Vec<String>,
}

pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

impl Config {
    pub fn new(runtime: Runtime) -> Result<Config, String> {
        let suite = suite_root()?;
        let tools = Tools::find()?;
        let lib_dir = runtime.lib_dir();
        if !lib_dir.join("libomptarget.so.19.1").exists() {
            return Err(format!(
                "no libomptarget.so.19.1 in {} (runtime '{}')",
                lib_dir.display(),
                runtime.name()
            ));
        }
        let exec_root = workspace_root()
            .join("target/llvm-offload-suite-work")
            .join(runtime.name());
        let bin_dir = exec_root.join("bin");
        install_helpers(&bin_dir, &tools)?;
        Ok(Config {
            suite,
            runtime,
            lib_dir,
            exec_root,
            tools,
            bin_dir,
            timeout: DEFAULT_TIMEOUT,
            run_on_host: read_names(&run_on_host_file()).unwrap_or_default(),
        })
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
        match directives.skip_reason() {
            Ok(None) => {}
            Ok(Some(why)) => return Err(Outcome::Skip(why)),
            Err(why) => return Err(Outcome::Skip(why)),
        }
        let subs = substitutions(&self.suite, &self.tools, &paths);
        let mut commands = Vec::new();
        for (line, command) in &directives.run {
            commands.push((*line, expand(command, &subs).map_err(Outcome::Skip)?));
        }
        // Only other targets' commands (turned into `ignored-command`): nothing to test.
        let compiles =
            |c: &String| c.contains(&self.tools.clang) || c.contains(&self.tools.clangxx);
        if !commands.iter().any(|(_, c)| compiles(c)) {
            return Err(Outcome::Skip(format!("no RUN line for {TARGET}")));
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
        // The runtime's directory first; LLVM's after it, so both runs load LLVM 19's libomp.
        let mut libs = vec![self.lib_dir.clone()];
        if self.lib_dir != Path::new(LLVM19_LIB_DIR) {
            libs.push(LLVM19_LIB_DIR.into());
        }
        cmd.env("LD_LIBRARY_PATH", std::env::join_paths(libs).unwrap());
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

/// lit's internal shell runs commands that bash cannot run as they are; these stand-ins go
/// first in PATH:
/// - `not`: a bare `not` is lit's builtin, which also counts a crash as a failure (LLVM's
///   fatal errors abort); `not --crash` is the `not` tool, as in lit.
/// - `ignored-command`: what other targets' commands become (lit.cfg says `echo
///   ignored-command`); it reads its input first, or a real program piped into it could die
///   of SIGPIPE, which pipefail would report.
/// - `FileCheck`, for RUN lines naming it bare.
fn install_helpers(bin_dir: &Path, tools: &Tools) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    let not = format!(
        "#!/bin/sh\n\
         if [ \"$1\" = --crash ]; then exec {} \"$@\"; fi\n\
         \"$@\" && exit 1\n\
         exit 0\n",
        tools.not
    );
    let ignored = "#!/bin/sh\ncat >/dev/null 2>&1\necho ignored-command \"$@\"\n".to_string();
    let filecheck = format!("#!/bin/sh\nexec {} \"$@\"\n", tools.filecheck);
    fs::create_dir_all(bin_dir).map_err(|e| format!("{}: {e}", bin_dir.display()))?;
    for (name, text) in [
        ("not", not),
        ("ignored-command", ignored),
        ("FileCheck", filecheck),
    ] {
        let path = bin_dir.join(name);
        // Written aside and renamed: another run may be using the old one.
        let tmp = bin_dir.join(format!(".{name}.{}", std::process::id()));
        let io = |e: std::io::Error| format!("{}: {e}", path.display());
        fs::write(&tmp, text).map_err(io)?;
        fs::set_permissions(&tmp, fs::Permissions::from_mode(0o755)).map_err(io)?;
        fs::rename(&tmp, &path).map_err(io)?;
    }
    Ok(())
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
        assert_eq!(d.skip_reason(), Ok(None));
    }

    #[test]
    fn feature_expressions() {
        assert_eq!(eval_features("host && !(gpu || flang)"), Ok(true));
        assert_eq!(eval_features("x86_64-pc-linux-gnu-LTO"), Ok(false));
        assert!(eval_features("mystery").is_err());
        assert!(eval_features("target={{.*}}").is_err());
    }

    #[test]
    fn generic_commands_expand_for_x86_64() {
        let tools = Tools {
            clang: "clang-19".into(),
            clangxx: "clang++-19".into(),
            filecheck: "FileCheck-19".into(),
            not: "not-19".into(),
        };
        let paths = TestPaths::new(Path::new("/s"), Path::new("/x"), "mapping/a.c");
        let subs = substitutions(Path::new("/s"), &tools, &paths);
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
}
