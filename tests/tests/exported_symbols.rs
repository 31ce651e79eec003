//! Every symbol LLVM 19's and LLVM 22's `libomptarget` export, ours exports too, with the same
//! version (`nm -D --defined-only`): a program linked against either must find all it needs.
//! Deliberate exceptions are listed, each with its reason, in
//! `tests/llvm-exports-not-provided.txt`.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;
use tests::*;

const LLVM_RUNTIMES: [&str; 2] = [
    "/usr/lib/llvm-19/lib/libomptarget.so.19.1",
    "/opt/llvm22-omp/usr/lib/llvm-22/lib/libomptarget.so.22.1",
];

/// The dynamic symbols a library defines, as `nm` prints them: `name@@VERS1.0` (the default
/// version), `name@VERS1.0`, or a bare name.
fn defined_symbols(library: &Path) -> BTreeSet<String> {
    let output = Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(library)
        .output()
        .expect("cannot run nm (binutils)");
    assert!(
        output.status.success(),
        "nm {}: {}",
        library.display(),
        text(&output.stderr)
    );
    text(&output.stdout)
        .lines()
        .filter_map(|line| line.split_whitespace().nth(2).map(str::to_string))
        .collect()
}

/// The listed exceptions: the first word of each line that is not a comment.
fn not_provided() -> BTreeSet<String> {
    let list = workspace_root().join("tests/llvm-exports-not-provided.txt");
    std::fs::read_to_string(&list)
        .unwrap()
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let (symbol, reason) = l.split_once(char::is_whitespace).unwrap_or((l, ""));
            assert!(!reason.trim().is_empty(), "no reason given for {symbol}");
            symbol.to_string()
        })
        .collect()
}

#[test]
fn we_export_every_symbol_of_llvm_19_and_22() {
    let ours = defined_symbols(&lib_dir().join("libomptarget.so.22.1"));
    assert!(ours.contains("__tgt_register_lib@@VERS1.0"), "{ours:?}");
    let excused = not_provided();
    let mut missing = Vec::new();
    let mut theirs_all = BTreeSet::new();
    for runtime in LLVM_RUNTIMES {
        let path = Path::new(runtime);
        assert!(
            path.exists(),
            "{runtime} is the reference (.ci/install-deps.sh installs it)"
        );
        for symbol in defined_symbols(path) {
            if !ours.contains(&symbol) && !excused.contains(&symbol) {
                missing.push(format!("{symbol} (from {runtime})"));
            }
            theirs_all.insert(symbol);
        }
    }
    assert!(
        missing.is_empty(),
        "symbols LLVM exports and we do not (export them, or list them with the reason in \
         tests/llvm-exports-not-provided.txt):\n  {}",
        missing.join("\n  ")
    );
    let stale: Vec<&String> = excused
        .iter()
        .filter(|s| ours.contains(*s) || !theirs_all.contains(*s))
        .collect();
    assert!(
        stale.is_empty(),
        "listed in tests/llvm-exports-not-provided.txt but exported by us, or by neither \
         LLVM runtime: {stale:?}"
    );
}
