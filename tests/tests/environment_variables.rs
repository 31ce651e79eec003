//! The environment variables LLVM 19's and 22's offload runtimes read, against ours:
//! `tests/llvm-environment-variables.txt` lists each, with the releases that read it and
//! whether we read it (and why not). The list is kept complete both ways: every name our
//! sources read with LLVM's prefixes is in it, and so is every variable name found in LLVM's
//! libraries.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use tests::workspace_root;

/// LLVM 19's runtime (its plugins built in), LLVM 22's, and LLVM 22's liboffload.
const LLVM_LIBRARIES: [(&str, &str); 3] = [
    ("19", "/usr/lib/llvm-19/lib/libomptarget.so.19.1"),
    (
        "22",
        "/opt/llvm22-omp/usr/lib/llvm-22/lib/libomptarget.so.22.1",
    ),
    (
        "22",
        "/opt/llvm22-omp/usr/lib/llvm-22/lib/libLLVMOffload.so.22.1",
    ),
];

/// How the names of variables start: in LLVM's libraries, and (the first two) in ours.
const PREFIXES: [&str; 6] = [
    "LIBOMPTARGET_",
    "OMPTARGET_",
    "LIBOFFLOAD_",
    "OFFLOAD_",
    "OMPX_",
    "OMP_",
];

#[derive(Debug)]
struct Listed {
    releases: Vec<String>,
    status: String,
}

fn list() -> BTreeMap<String, Listed> {
    let path = workspace_root().join("tests/llvm-environment-variables.txt");
    let mut listed = BTreeMap::new();
    for line in std::fs::read_to_string(&path).unwrap().lines() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut words = line.splitn(3, char::is_whitespace);
        let name = words.next().unwrap().to_string();
        let rest = words.collect::<Vec<_>>().join(" ");
        let (releases, status) = rest
            .trim()
            .split_once(char::is_whitespace)
            .unwrap_or_else(|| panic!("{name}: no releases and status (NAME RELEASES STATUS)"));
        let entry = Listed {
            releases: releases.split(',').map(str::to_string).collect(),
            status: status.trim().to_string(),
        };
        assert!(
            listed.insert(name.clone(), entry).is_none(),
            "{name} is listed twice"
        );
    }
    listed
}

/// The `.rs` files of the workspace, but for build outputs and the `tests` crate (the harness
/// sets variables for the programs it runs; it reads none of LLVM's).
fn sources(dir: &Path, found: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        let name = entry.file_name();
        if path.is_dir() {
            let skip = name == "target" || name == ".git" || name == "dist";
            if !skip && path != workspace_root().join("tests") {
                sources(&path, found);
            }
        } else if path.extension().is_some_and(|e| e == "rs") {
            found.push(path);
        }
    }
}

/// Every quoted string of `text` that is a variable name with one of `prefixes`: `"` then the
/// name (capitals, digits, underscores, not ending in one) then `"`.
fn quoted_names(text: &str, prefixes: &[&str]) -> BTreeSet<String> {
    let word = |b: u8| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_';
    let bytes = text.as_bytes();
    let mut names = BTreeSet::new();
    for (at, _) in text.match_indices('"') {
        let start = at + 1;
        let len = bytes[start..].iter().take_while(|&&b| word(b)).count();
        let name = &text[start..start + len];
        if bytes.get(start + len) == Some(&b'"')
            && !name.ends_with('_')
            && prefixes.iter().any(|p| name.starts_with(p))
        {
            names.insert(name.to_string());
        }
    }
    names
}

/// The variable names in a library's bytes: runs of capitals, digits and underscores that
/// start with one of the prefixes, standing alone (LLVM's Envar names are C strings).
fn names_in_library(path: &Path) -> BTreeSet<String> {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let word = |b: u8| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_';
    let mut names = BTreeSet::new();
    let mut at = 0;
    while at < bytes.len() {
        if !word(bytes[at]) {
            at += 1;
            continue;
        }
        let end = at + bytes[at..].iter().take_while(|&&b| word(b)).count();
        // A C string of its own: nothing but the NUL after it.
        let run = std::str::from_utf8(&bytes[at..end]).unwrap();
        if bytes.get(end) == Some(&0)
            && !run.ends_with('_')
            && PREFIXES
                .iter()
                .any(|p| run.starts_with(p) && run.len() > p.len())
        {
            names.insert(run.to_string());
        }
        at = end;
    }
    names
}

#[test]
fn every_llvm_variable_is_listed_and_every_supported_one_is_read() {
    let listed = list();
    let mut files = Vec::new();
    sources(&workspace_root(), &mut files);
    assert!(files.len() > 100, "only {} sources found", files.len());
    let mut read = BTreeSet::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        read.extend(quoted_names(&text, &PREFIXES));
    }
    let mut problems = Vec::new();
    for (name, entry) in &listed {
        for release in &entry.releases {
            if !["19", "22", "ours"].contains(&release.as_str()) {
                problems.push(format!("{name}: unknown release '{release}'"));
            }
        }
        let ours = entry.releases == ["ours"];
        match entry.status.split_once(':') {
            _ if entry.status == "supported" && !ours => {
                if !read.contains(name) {
                    problems.push(format!(
                        "{name} is marked supported, but no source reads \"{name}\""
                    ));
                }
            }
            Some(("not supported", why)) if !ours => {
                if why.trim().is_empty() {
                    problems.push(format!("{name} is not supported, without a reason"));
                }
            }
            Some(("ours", what)) if ours => {
                if what.trim().is_empty() {
                    problems.push(format!("{name} is ours, without saying what it is"));
                }
                if !read.contains(name) {
                    problems.push(format!("{name} is ours, but no source reads it"));
                }
            }
            _ => problems.push(format!(
                "{name}: status '{}' is not 'supported', 'not supported: why' or (for ours) \
                 'ours: what'",
                entry.status
            )),
        }
    }
    for name in read
        .iter()
        .filter(|n| n.starts_with("LIBOMPTARGET_") || n.starts_with("OMPTARGET_"))
    {
        if !listed.contains_key(name) {
            problems.push(format!(
                "our sources read {name}, which tests/llvm-environment-variables.txt does not \
                 list (mark it \"ours: what\", or with LLVM's releases)"
            ));
        }
    }
    for (release, library) in LLVM_LIBRARIES {
        for name in names_in_library(Path::new(library)) {
            match listed.get(&name) {
                Some(entry) if entry.releases.iter().any(|r| r == release) => {}
                _ => problems.push(format!(
                    "{library} reads {name}: list it with release {release}"
                )),
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn names_are_found_as_the_test_expects() {
    let names = quoted_names(
        r#"var("LIBOMPTARGET_DEBUG"); '"' "OMP_NUM_TEAMS" "lowercase_X" "LIBOMPTARGET_" "OMPX_A b""#,
        &PREFIXES,
    );
    assert_eq!(
        names.into_iter().collect::<Vec<_>>(),
        ["LIBOMPTARGET_DEBUG", "OMP_NUM_TEAMS"]
    );
}
