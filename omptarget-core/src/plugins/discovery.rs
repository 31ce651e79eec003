//! Where plugins are looked for, and which of them are wanted.
//!
//! Search order: the entries of `LIBOMPTARGET_PLUGIN_PATH` (files or directories) if it is set,
//! else the directory holding `libomptarget.so` itself; then the system loader's path for the
//! plugins this project ships that were not found yet. Relative paths are ignored, so the current
//! directory is never searched.

use std::path::{Path, PathBuf};

pub(crate) const FILE_PREFIX: &str = "libomptarget.rtl.";
pub(crate) const FILE_SUFFIX: &str = ".so";

/// Plugins this project ships, in default order: GPUs first, so device 0 is a GPU when one exists.
pub(crate) const KNOWN_PLUGINS: [&str; 4] = ["cuda", "amdgpu", "host", "mpi"];

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    PluginPathVariable,
    RuntimeDirectory,
    SystemLoader,
}

impl Origin {
    pub(crate) fn describe(&self) -> &'static str {
        match self {
            Origin::PluginPathVariable => "LIBOMPTARGET_PLUGIN_PATH",
            Origin::RuntimeDirectory => "runtime directory",
            Origin::SystemLoader => "system loader path",
        }
    }
}

/// A plugin library that may be loaded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    pub name: String,
    /// A path, or a bare file name for the system loader to resolve.
    pub location: String,
    pub origin: Origin,
}

/// `libomptarget.rtl.cuda.so` -> `cuda`.
pub fn plugin_name(file_name: &str) -> Option<&str> {
    let name = file_name
        .strip_prefix(FILE_PREFIX)?
        .strip_suffix(FILE_SUFFIX)?;
    (!name.is_empty()).then_some(name)
}

pub(crate) fn file_name(plugin: &str) -> String {
    format!("{FILE_PREFIX}{plugin}{FILE_SUFFIX}")
}

/// Names users may give in `LIBOMPTARGET_PLUGINS_TO_LOAD` for our plugins (LLVM's spellings).
pub(crate) fn canonical_name(requested: &str) -> String {
    let base = Path::new(requested)
        .file_name()
        .and_then(|f| f.to_str())
        .unwrap_or(requested);
    let base = plugin_name(base).unwrap_or(base);
    match base {
        "x86_64" | "x86_64-pc-linux-gnu" | "host" => "host".into(),
        "nvptx" | "nvptx64" | "nvptx64-nvidia-cuda" | "cuda" => "cuda".into(),
        "amdgcn" | "amdgcn-amd-amdhsa" | "amdgpu" => "amdgpu".into(),
        other => other.to_string(),
    }
}

fn scan_directory(dir: &Path, origin: Origin, out: &mut Vec<Candidate>) {
    let Ok(read) = std::fs::read_dir(dir) else {
        log::debug!("plugin search: cannot read directory {}", dir.display());
        return;
    };
    let mut found: Vec<Candidate> = read
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let file = e.file_name().into_string().ok()?;
            let name = plugin_name(&file)?.to_string();
            Some(Candidate {
                name,
                location: e.path().display().to_string(),
                origin: origin.clone(),
            })
        })
        .collect();
    found.sort_by(|a, b| a.location.cmp(&b.location));
    out.extend(found);
}

/// The search path in the order it is used, for display.
pub(crate) fn search_path(
    plugin_path: &Option<Vec<String>>,
    runtime_dir: &Option<PathBuf>,
) -> Vec<String> {
    let mut path: Vec<String> = match (plugin_path, runtime_dir) {
        (Some(entries), _) => entries.clone(),
        (None, Some(dir)) => vec![dir.display().to_string()],
        (None, None) => Vec::new(),
    };
    path.push("(system loader: LD_LIBRARY_PATH, ld.so.cache, default directories)".into());
    path
}

/// Every plugin library found, in search order; the first of each name is the one used.
pub fn find_candidates(
    plugin_path: &Option<Vec<String>>,
    runtime_dir: &Option<PathBuf>,
) -> Vec<Candidate> {
    let mut out = Vec::new();
    match plugin_path {
        Some(entries) => {
            for entry in entries {
                let path = Path::new(entry);
                if !path.is_absolute() {
                    log::warn!(
                        "LIBOMPTARGET_PLUGIN_PATH entry '{entry}' is not an absolute path; ignored"
                    );
                } else if path.is_dir() {
                    scan_directory(path, Origin::PluginPathVariable, &mut out);
                } else {
                    let file = path.file_name().and_then(|f| f.to_str()).unwrap_or(entry);
                    let name = plugin_name(file).unwrap_or(file).to_string();
                    out.push(Candidate {
                        name,
                        location: entry.clone(),
                        origin: Origin::PluginPathVariable,
                    });
                }
            }
        }
        None => {
            if let Some(dir) = runtime_dir {
                scan_directory(dir, Origin::RuntimeDirectory, &mut out);
            }
        }
    }
    for known in KNOWN_PLUGINS {
        if !out.iter().any(|c| c.name == known) {
            out.push(Candidate {
                name: known.into(),
                location: file_name(known),
                origin: Origin::SystemLoader,
            });
        }
    }
    out
}

/// Orders the wanted candidates: by `LIBOMPTARGET_PLUGINS_TO_LOAD` if given, else known plugins
/// first in their default order, then others by name.
pub(crate) fn order_key(name: &str, requested: &Option<Vec<String>>) -> Option<usize> {
    match requested {
        Some(list) => list.iter().position(|r| canonical_name(r) == name),
        None => Some(
            KNOWN_PLUGINS
                .iter()
                .position(|k| *k == name)
                .unwrap_or(KNOWN_PLUGINS.len()),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_aliases() {
        assert_eq!(plugin_name("libomptarget.rtl.host.so"), Some("host"));
        assert_eq!(plugin_name("libomptarget.rtl..so"), None);
        assert_eq!(plugin_name("libfoo.so"), None);
        assert_eq!(canonical_name("x86_64"), "host");
        assert_eq!(canonical_name("/opt/x/libomptarget.rtl.cuda.so"), "cuda");
    }

    #[test]
    fn scans_directories_and_falls_back_to_the_loader() {
        let dir = std::env::temp_dir().join(format!("omptarget-discovery-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("libomptarget.rtl.host.so"), b"").unwrap();
        std::fs::write(dir.join("unrelated.so"), b"").unwrap();
        let found = find_candidates(&None, &Some(dir.clone()));
        assert_eq!(found[0].name, "host");
        assert_eq!(found[0].origin, Origin::RuntimeDirectory);
        assert!(found
            .iter()
            .any(|c| c.name == "cuda" && c.origin == Origin::SystemLoader));
        assert!(!found
            .iter()
            .any(|c| c.name == "host" && c.origin == Origin::SystemLoader));
        let relative = find_candidates(&Some(vec!["relative/dir".into()]), &None);
        assert!(relative.iter().all(|c| c.origin == Origin::SystemLoader));
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn ordering_follows_the_request() {
        let req = Some(vec!["host".to_string(), "cuda".to_string()]);
        assert_eq!(order_key("host", &req), Some(0));
        assert_eq!(order_key("amdgpu", &req), None);
        assert!(order_key("cuda", &None) < order_key("host", &None));
    }
}
