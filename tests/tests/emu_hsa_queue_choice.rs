//! `LIBOMPTARGET_AMDGPU_HSA_QUEUE_BUSY_TRACKING` and `LIBOMPTARGET_AMDGPU_USE_MULTIPLE_SDMA_ENGINES`
//! through a real program on the emulated HSA runtime, seen in its trace: which HSA queues the
//! AMDGPU plugin creates, and which SDMA engines its copies name.

use tests::conformance::EmulatedGpu;
use tests::emulated;

const AMDGPU: EmulatedGpu = EmulatedGpu::Amdgpu;

/// emu_saxpy.c (five target regions one after the other, one of them `nowait`) on one GPU:
/// stdout and the trace's lines; the program's results checked.
fn run(name: &str, env: &[(&str, &str)]) -> (String, Vec<String>) {
    let exe = tests::compile_amdgpu_twin("emu_saxpy.c");
    let mut all = vec![("OMPTARGET_EMU_DEVICES", "1")];
    all.extend_from_slice(env);
    let (code, stdout, stderr, trace) = emulated::run_traced(AMDGPU, &exe, name, &all);
    assert_eq!(code, Some(0), "{env:?}: {stdout}{stderr}");
    assert!(stdout.contains(" ok"), "{env:?}: {stdout}");
    (stdout, trace.lines().map(str::to_string).collect())
}

fn calls<'t>(trace: &'t [String], function: &str) -> Vec<&'t String> {
    let prefix = format!("{function} ");
    trace.iter().filter(|l| l.starts_with(&prefix)).collect()
}

#[test]
fn busy_tracking_keeps_one_construct_at_a_time_on_one_queue_and_round_robin_spreads_them() {
    // LLVM's default: the first queue is idle each time a construct needs one.
    let (tracked, trace) = run("busy-tracking", &[]);
    assert_eq!(calls(&trace, "hsa_queue_create").len(), 1, "{trace:#?}");
    // Round-robin: each construct's work goes to the next queue, until all four exist.
    let (round, trace) = run(
        "round-robin",
        &[("LIBOMPTARGET_AMDGPU_HSA_QUEUE_BUSY_TRACKING", "false")],
    );
    assert_eq!(calls(&trace, "hsa_queue_create").len(), 4, "{trace:#?}");
    assert_eq!(tracked, round);
    // Fewer queues allowed: round-robin stays within them.
    let (_, trace) = run(
        "round-robin-two",
        &[
            ("LIBOMPTARGET_AMDGPU_HSA_QUEUE_BUSY_TRACKING", "0"),
            ("LIBOMPTARGET_AMDGPU_NUM_HSA_QUEUES", "2"),
        ],
    );
    assert_eq!(calls(&trace, "hsa_queue_create").len(), 2);
}

#[test]
fn multiple_sdma_engines_name_both_engines_where_the_runtime_allows() {
    // By default the runtime chooses: no engine is named.
    let (plain, trace) = run("one-engine", &[]);
    assert!(calls(&trace, "hsa_amd_memory_async_copy_on_engine").is_empty());
    assert!(!calls(&trace, "hsa_amd_memory_async_copy").is_empty());

    let (engines, trace) = run(
        "two-engines",
        &[("LIBOMPTARGET_AMDGPU_USE_MULTIPLE_SDMA_ENGINES", "1")],
    );
    assert_eq!(plain, engines);
    let on_engine = calls(&trace, "hsa_amd_memory_async_copy_on_engine");
    assert!(!calls(&trace, "hsa_amd_memory_copy_engine_status").is_empty());
    // Every engine named is one the runtime accepts for that copy: none refused (on an MI210
    // engine 0 copies only from the host; the emulator refuses it otherwise, as ROCr does).
    assert!(
        on_engine
            .iter()
            .all(|l| l.ends_with("-> HSA_STATUS_SUCCESS")),
        "{on_engine:#?}"
    );
    let named = |id: &str| {
        on_engine
            .iter()
            .filter(|l| l.contains(&format!("engine={id} ")))
            .count()
    };
    assert!(named("0x1") > 0 && named("0x2") > 0, "{on_engine:#?}");
    // Copies towards the host were offered engine 1 only.
    let towards_host: Vec<_> = calls(&trace, "hsa_amd_memory_copy_engine_status")
        .into_iter()
        .filter(|l| l.contains(" dst=0 "))
        .collect();
    assert!(!towards_host.is_empty());
    assert!(
        towards_host
            .iter()
            .all(|l| !l.contains("mask=0x1") && !l.contains("mask=0x3")),
        "{towards_host:#?}"
    );
    // Both engines ran copies.
    for engine in ["1", "2"] {
        assert!(
            trace
                .iter()
                .any(|l| l.starts_with("copy-done ") && l.contains(&format!(" sdma={engine}"))),
            "no copy ran on engine {engine}"
        );
    }
}
