//! Kernel record and replay: a clang-19 program recorded with `LIBOMPTARGET_RECORD=1` on our
//! runtime, replayed by LLVM 19's own `llvm-omp-kernel-replay` (which links
//! `libomptarget.so.19.1`, ours here) and verified against the recorded output. LLVM's
//! runtimes cannot record on the host device at all.

use std::path::Path;
use std::process::Command;
use tests::*;

const REPLAY_TOOL: &str = "/usr/lib/llvm-19/bin/llvm-omp-kernel-replay";

fn files_named(dir: &Path, suffix: &str) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(suffix))
        .collect();
    names.sort();
    names
}

#[test]
fn a_recorded_kernel_replays_and_verifies_with_llvms_tool() {
    assert!(
        Path::new(REPLAY_TOOL).exists(),
        "{REPLAY_TOOL} (llvm-19) is the replay tool under test"
    );
    let exe = compile(Compiler::Clang19, &["record_replay.c"], &[]);
    let dir = build_dir().join("record-replay");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();

    let recorded = Command::new(&exe)
        .current_dir(&dir)
        .env("LD_LIBRARY_PATH", lib_dir())
        .env("LIBOMPTARGET_RECORD", "1")
        .env("LIBOMPTARGET_RR_SAVE_OUTPUT", "1")
        .output()
        .unwrap();
    assert!(recorded.status.success(), "{}", text(&recorded.stderr));
    assert_eq!(text(&recorded.stdout).trim(), "1 127 190");
    let descriptions = files_named(&dir, ".json");
    assert_eq!(descriptions.len(), 1, "{descriptions:?}");
    let kernel = descriptions[0].trim_end_matches(".json").to_string();
    for suffix in [".image", ".globals", ".memory", ".original.output"] {
        assert!(
            dir.join(format!("{kernel}{suffix}")).exists(),
            "{kernel}{suffix} missing"
        );
    }
    let json = std::fs::read_to_string(dir.join(&descriptions[0])).unwrap();
    for key in [
        "\"Name\":",
        "\"NumArgs\":",
        "\"ArgPtrs\":",
        "\"BumpAllocVAStart\":",
        "\"DeviceMemorySize\":",
        "\"LoopTripCount\":64",
    ] {
        assert!(json.contains(key), "{key} not in {json}");
    }
    // The input: 64 ints 0..63 in the recorded block; the output: 2i+1.
    let memory = std::fs::read(dir.join(format!("{kernel}.memory"))).unwrap();
    assert_eq!(&memory[4..8], &1i32.to_ne_bytes());
    let output = std::fs::read(dir.join(format!("{kernel}.original.output"))).unwrap();
    assert_eq!(&output[4..8], &3i32.to_ne_bytes());

    let replayed = Command::new(REPLAY_TOOL)
        .current_dir(&dir)
        .env("LD_LIBRARY_PATH", lib_dir())
        .arg("--verify")
        .arg(&descriptions[0])
        .output()
        .unwrap();
    let stdout = text(&replayed.stdout);
    assert!(
        replayed.status.success(),
        "{stdout}{}",
        text(&replayed.stderr)
    );
    assert!(
        stdout.contains("Replay device memory verified!"),
        "{stdout}{}",
        text(&replayed.stderr)
    );
    let replay_output = std::fs::read(dir.join(format!("{kernel}.replay.output"))).unwrap();
    assert_eq!(replay_output, output);
}
