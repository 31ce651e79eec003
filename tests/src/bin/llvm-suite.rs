//! Runs LLVM's offload test suite on the x86_64 host target or an emulated GPU:
//! `llvm-suite [--llvm 19|22] [--target host|amdgcn-emu|nvptx-emu|host-fortran|amdgcn-emu-fortran]
//! [--runtime llvm|ours] [--list-out FILE] [--only FILE] [-j N] [--timeout SECS] [-v]
//! [TEST|DIR/ ...]`. `--llvm` picks the release (suite, clang and LLVM's runtime; default
//! 19); `--target` lit's current target (default host; the emulated GPUs of dist/emu, gfx90a
//! and sm_90; `host-fortran`, the Fortran tests built by flang-22 for the host devices with our
//! host device runtime in their images; and `amdgcn-emu-fortran`, those tests built by flang-22
//! for the emulated gfx90a with twins; all but host with `--llvm 22` only).
//! Prints one PASS/FAIL/SKIP line per test and a summary; exits 1 if any
//! test failed. `--list-out` writes the names of the passing tests (how
//! tests/llvm-offload-suite/<release>/[<target>/]expected-pass.txt is made, with
//! `--runtime llvm`). Tests
//! are named relative to offload/test (`mapping/pr38704.c`); a name ending in `/` selects a
//! folder.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;
use tests::llvm_suite::{self, Config, Outcome, Release, Runtime, Target};

fn usage() -> ! {
    eprintln!(
        "usage: llvm-suite [--llvm 19|22] [--target host|amdgcn-emu|nvptx-emu|host-fortran|amdgcn-emu-fortran] \
         [--runtime llvm|ours] \
         [--list-out FILE] [--only FILE] [-j N] [--timeout SECS] [-v] [TEST|DIR/ ...]"
    );
    std::process::exit(2)
}

fn main() {
    let mut runtime = Runtime::Ours;
    let mut release = Release::Llvm19;
    let mut target = Target::Host;
    let mut list_out: Option<PathBuf> = None;
    let mut only: Option<PathBuf> = None;
    let mut jobs = llvm_suite::default_jobs();
    let mut timeout = None;
    let mut verbose = false;
    let mut selected = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| usage());
        match arg.as_str() {
            "--llvm" => release = Release::parse(&value()).unwrap_or_else(|| usage()),
            "--runtime" => runtime = Runtime::parse(&value()).unwrap_or_else(|| usage()),
            "--target" => target = Target::parse(&value()).unwrap_or_else(|| usage()),
            "--list-out" => list_out = Some(value().into()),
            "--only" => only = Some(value().into()),
            "-j" | "--jobs" => jobs = value().parse().unwrap_or_else(|_| usage()),
            "--timeout" => timeout = Some(value().parse().unwrap_or_else(|_| usage())),
            "-v" | "--verbose" => verbose = true,
            "-h" | "--help" => usage(),
            name if name.starts_with('-') => usage(),
            name => selected.push(name.to_string()),
        }
    }
    let mut config = Config::with_target(release, runtime, target).unwrap_or_else(|e| {
        eprintln!("llvm-suite: {e}");
        std::process::exit(2)
    });
    if let Some(secs) = timeout {
        config.timeout = Duration::from_secs(secs);
    }
    let names = select(&config, only, &selected);
    eprintln!(
        "running {} tests of LLVM {}'s {} on {} against {} ({})",
        names.len(),
        release.major(),
        config.suite.display(),
        config.target.triple(release),
        runtime.name(),
        config.lib_dir.display()
    );

    let results = config.run_tests(&names, jobs, |r| {
        println!("{}", r.line());
        if verbose && matches!(r.outcome, Outcome::Fail(_)) {
            println!("{}", indent(&r.output_tail(30)));
        }
        let _ = std::io::stdout().flush();
    });

    let count = |f: fn(&Outcome) -> bool| results.iter().filter(|r| f(&r.outcome)).count();
    let passed = count(|o| *o == Outcome::Pass);
    let failed = count(|o| matches!(o, Outcome::Fail(_)));
    let skipped = count(|o| matches!(o, Outcome::Skip(_)));
    println!(
        "\nsummary (LLVM {}, {}, {}): {passed} passed, {failed} failed, {skipped} skipped",
        release.major(),
        target.name(),
        runtime.name()
    );
    for r in results
        .iter()
        .filter(|r| matches!(r.outcome, Outcome::Fail(_)))
    {
        let log = r
            .log
            .as_ref()
            .map(|l| l.display().to_string())
            .unwrap_or_default();
        println!("  failed: {} (log: {log})", r.name);
    }
    if let Some(path) = list_out {
        let mut text = String::new();
        for r in results.iter().filter(|r| r.outcome == Outcome::Pass) {
            text.push_str(&r.name);
            text.push('\n');
        }
        std::fs::write(&path, text).unwrap_or_else(|e| {
            eprintln!("llvm-suite: cannot write {}: {e}", path.display());
            std::process::exit(2)
        });
    }
    std::process::exit(if failed == 0 { 0 } else { 1 });
}

/// The tests to run: every test of the target's folders, narrowed by `--only`'s list and by
/// the names or folders on the command line.
fn select(config: &Config, only: Option<PathBuf>, selected: &[String]) -> Vec<String> {
    let mut names = config.discover();
    if let Some(path) = only {
        let wanted = llvm_suite::read_names(&path).unwrap_or_else(|e| {
            eprintln!("llvm-suite: {e}");
            std::process::exit(2)
        });
        // Listed names keep their list's order and stay even when missing: they then fail.
        names = wanted;
    }
    if !selected.is_empty() {
        names.retain(|n| {
            selected
                .iter()
                .any(|s| n == s || n.starts_with(&format!("{}/", s.trim_end_matches('/'))))
        });
    }
    names
}

fn indent(text: &str) -> String {
    text.lines()
        .map(|l| format!("    | {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}
