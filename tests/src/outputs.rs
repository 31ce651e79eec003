//! Files the tests build or write where other tests may read them: always under a temporary
//! name beside the final one, renamed into place once whole.
//!
//! Test threads of one binary, and test binaries run side by side (nextest, two cargo
//! invocations), build the same programs to the same paths. A linker creates its output first
//! and sets the execute bits last, so a file built in place can be found half-written (or not
//! yet executable: EACCES) by a test that checks for it or runs it. A rename is atomic: a
//! reader sees the old file or the new one, and a program already running keeps its own.

use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU64, Ordering};

/// A name beside `path` that no other thread or process uses: `.<file>.<pid>.<n>.part`.
pub fn temporary_beside(path: &Path) -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let file = path
        .file_name()
        .and_then(|f| f.to_str())
        .unwrap_or("output");
    path.with_file_name(format!(
        ".{file}.{}.{}.part",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ))
}

/// Runs the compiler or linker `cmd` with `-o <temporary>` added, then renames the temporary
/// to `out` when the command succeeded (and removes it when it failed). The caller judges the
/// returned output.
pub fn build(mut cmd: Command, out: &Path) -> io::Result<Output> {
    let part = temporary_beside(out);
    let output = cmd.arg("-o").arg(&part).output();
    match &output {
        Ok(o) if o.status.success() => std::fs::rename(&part, out).inspect_err(|_| {
            let _ = std::fs::remove_file(&part);
        })?,
        _ => {
            let _ = std::fs::remove_file(&part);
        }
    }
    output
}

/// Writes `bytes` to `path` with permission bits `mode`, atomically as [`build`] does.
pub fn write(path: &Path, bytes: impl AsRef<[u8]>, mode: u32) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let part = temporary_beside(path);
    let written = std::fs::write(&part, bytes)
        .and_then(|()| std::fs::set_permissions(&part, std::fs::Permissions::from_mode(mode)))
        .and_then(|()| std::fs::rename(&part, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&part);
    }
    written
}

/// Copies `from` to `to`, atomically as [`build`] does: a library copied over one that a
/// running program has loaded would otherwise change under it.
pub fn copy(from: &Path, to: &Path) -> io::Result<()> {
    let part = temporary_beside(to);
    let copied = std::fs::copy(from, &part).and_then(|_| std::fs::rename(&part, to));
    if copied.is_err() {
        let _ = std::fs::remove_file(&part);
    }
    copied
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reader_never_sees_a_partial_file() {
        let dir = std::env::temp_dir().join(format!("outputs-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("data");
        let (small, large) = (vec![1u8; 10], vec![2u8; 1 << 20]);
        std::thread::scope(|s| {
            for round in 0..4 {
                let (path, small, large) = (&path, &small, &large);
                s.spawn(move || {
                    for i in 0..20 {
                        let bytes = if (i + round) % 2 == 0 { small } else { large };
                        write(path, bytes, 0o644).unwrap();
                    }
                });
            }
            s.spawn(|| {
                for _ in 0..200 {
                    if let Ok(read) = std::fs::read(&path) {
                        assert!(read == small || read == large, "read {} bytes", read.len());
                    }
                }
            });
        });
        // No temporary is left behind.
        let names: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["data"]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_failed_build_leaves_nothing() {
        let dir = std::env::temp_dir().join(format!("outputs-fail-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let out = dir.join("never");
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "touch \"$2\"; exit 1", "sh"]);
        let output = build(cmd, &out).unwrap();
        assert!(!output.status.success());
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
