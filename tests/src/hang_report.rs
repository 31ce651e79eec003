//! What a hung program was doing: the stack of every thread of every process in its tree,
//! taken before the program is killed, so that a hang report says where each thread waits.
//!
//! `eu-stack` (elfutils) reads the stacks; `gdb` is the fallback. Either is given a time limit:
//! a report must not hang in turn.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// `root` and every process below it (an MPI job: mpirun, the program and its device
/// processes), parents first.
pub fn process_tree(root: u32) -> Vec<u32> {
    let mut children: Vec<(u32, u32)> = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        if let Some(parent) = parent_of(pid) {
            children.push((parent, pid));
        }
    }
    let mut tree = vec![root];
    let mut i = 0;
    while i < tree.len() {
        let parent = tree[i];
        tree.extend(
            children
                .iter()
                .filter(|(p, _)| *p == parent)
                .map(|(_, c)| *c),
        );
        i += 1;
    }
    tree
}

/// The parent of `pid`, from `/proc/<pid>/stat` (the field after the parenthesised name).
fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after_name = &stat[stat.rfind(')')? + 1..];
    after_name.split_whitespace().nth(1)?.parse().ok()
}

/// The CPU time, in clock ticks, that `root`'s tree has used so far (user and system, from
/// `/proc/<pid>/stat`): a run that still uses CPU is working, however slowly; a hung one
/// sleeps.
pub fn cpu_ticks(root: u32) -> u64 {
    process_tree(root)
        .into_iter()
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let fields: Vec<&str> = stat[stat.rfind(')')? + 1..].split_whitespace().collect();
            // utime and stime: the 14th and 15th fields, the 12th and 13th after the name.
            let ticks = |i: usize| fields.get(i)?.parse::<u64>().ok();
            Some(ticks(11)? + ticks(12)?)
        })
        .sum()
}

fn name_of(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/cmdline"))
        .map(|c| c.replace('\0', " ").trim().to_string())
        .unwrap_or_default()
}

/// The stacks of every thread of every process in `root`'s tree, one block per process.
pub fn stacks(root: u32) -> String {
    let mut report = String::new();
    for pid in process_tree(root) {
        report.push_str(&format!("=== process {pid}: {}\n", name_of(pid)));
        report.push_str(&stacks_of(pid));
        report.push('\n');
    }
    report
}

fn stacks_of(pid: u32) -> String {
    let pid_text = pid.to_string();
    let tools: [(&str, Vec<&str>); 2] = [
        ("eu-stack", vec!["-p", &pid_text]),
        (
            "gdb",
            vec![
                "-nx",
                "-batch",
                "-iex",
                "set debuginfod enabled off",
                "-ex",
                "thread apply all bt 30",
                "-p",
                &pid_text,
            ],
        ),
    ];
    let mut tried = Vec::new();
    for (tool, args) in tools {
        match run_limited(tool, &args, Duration::from_secs(60)) {
            Ok(text) if !text.trim().is_empty() => return text,
            Ok(_) => tried.push(format!("{tool}: no output")),
            Err(e) => tried.push(format!("{tool}: {e}")),
        }
    }
    format!(
        "(no stacks: {}; install elfutils for eu-stack)\n",
        tried.join("; ")
    )
}

/// Runs `tool` with `args`, killed after `limit`; its stdout and stderr together.
fn run_limited(tool: &str, args: &[&str], limit: Duration) -> Result<String, String> {
    let dir = std::env::temp_dir();
    let out = dir
        .join(format!(
            "omptarget-hang-report-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ))
        .with_extension(tool);
    let file = std::fs::File::create(&out).map_err(|e| e.to_string())?;
    let mut child = Command::new(tool)
        .args(args)
        .stdin(Stdio::null())
        .stdout(file.try_clone().map_err(|e| e.to_string())?)
        .stderr(file)
        .spawn()
        .map_err(|e| format!("cannot run: {e}"))?;
    let start = Instant::now();
    let finished = loop {
        match child.try_wait() {
            Ok(Some(_)) => break true,
            Ok(None) if start.elapsed() > limit => {
                let _ = child.kill();
                let _ = child.wait();
                break false;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(e.to_string()),
        }
    };
    let text = read_and_remove(&out);
    if finished {
        Ok(text)
    } else {
        Err(format!("gave no answer in {limit:?}"))
    }
}

fn read_and_remove(path: &Path) -> String {
    let text = String::from_utf8_lossy(&std::fs::read(path).unwrap_or_default()).into_owned();
    let _ = std::fs::remove_file(path);
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sleeping_tree_is_reported_process_by_process() {
        let mut child = Command::new("sh")
            .args(["-c", "sleep 30 & sleep 30; wait"])
            .spawn()
            .unwrap();
        // Let the shell start its two sleeps.
        let start = Instant::now();
        while process_tree(child.id()).len() < 3 && start.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(10));
        }
        let report = stacks(child.id());
        for pid in process_tree(child.id()) {
            let _ = Command::new("kill").arg(pid.to_string()).status();
        }
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(report.matches("=== process").count(), 3, "{report}");
        assert!(report.contains("sleep 30"), "{report}");
        // Each process's stack names where it waits (a libc call), unless no tool exists here.
        if !report.contains("(no stacks:") {
            assert!(report.contains("#0"), "{report}");
        }
    }
}
