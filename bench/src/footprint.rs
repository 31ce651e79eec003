//! The install footprint of a runtime: its files and the shared libraries they need (`ldd`).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

pub struct Footprint {
    /// Bytes of the runtime's own files.
    pub own_bytes: u64,
    /// Every other shared library the runtime's files load (resolved paths).
    pub needed: BTreeSet<PathBuf>,
    /// Bytes of those libraries.
    pub needed_bytes: u64,
}

impl Footprint {
    pub fn total_bytes(&self) -> u64 {
        self.own_bytes + self.needed_bytes
    }
}

fn size(path: &Path) -> u64 {
    std::fs::metadata(path).map(|m| m.len()).unwrap_or(0)
}

/// Shared libraries `ldd` resolves for `file` (the vDSO and the loader itself excluded).
fn ldd(file: &Path) -> Vec<PathBuf> {
    let Ok(out) = Command::new("ldd").arg(file).output() else {
        return Vec::new();
    };
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split("=>").nth(1))
        .filter_map(|rest| rest.split_whitespace().next())
        .filter(|p| p.starts_with('/'))
        .map(|p| std::fs::canonicalize(p).unwrap_or_else(|_| PathBuf::from(p)))
        .collect()
}

/// `files`: the runtime's own files (symlinks resolved, counted once).
pub fn measure(files: &[PathBuf]) -> Footprint {
    let own: BTreeSet<PathBuf> = files
        .iter()
        .filter_map(|f| std::fs::canonicalize(f).ok())
        .collect();
    let mut needed = BTreeSet::new();
    for file in &own {
        for lib in ldd(file) {
            if !own.contains(&lib) {
                needed.insert(lib);
            }
        }
    }
    Footprint {
        own_bytes: own.iter().map(|f| size(f)).sum(),
        needed_bytes: needed.iter().map(|f| size(f)).sum(),
        needed,
    }
}

/// The files of an install tree: everything under it that is a regular file.
pub fn tree_files(root: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if path.is_file() {
                files.push(path);
            }
        }
    }
    files
}
