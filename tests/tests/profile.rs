//! `LIBOMPTARGET_PROFILE`: a real program's trace parses as Chrome trace-event JSON, its spans
//! on each thread nest, its constructs carry their kind, the program's source location and the
//! device, and its transfers carry the bytes the program maps.

use std::collections::BTreeMap;
use tests::conformance::EmulatedGpu;
use tests::json::{self, Value};
use tests::{compile, run, text, Compiler};

struct Span {
    name: String,
    tid: i64,
    start: f64,
    end: f64,
    args: Value,
}

/// Runs the profile program with `LIBOMPTARGET_PROFILE` and `env`: the file's text, its spans
/// and the whole document. `success`: whether the program must succeed.
fn profile_run(env: &[(&str, &str)], success: bool) -> (String, Vec<Span>, Value) {
    let exe = compile(
        Compiler::Clang19,
        &["profile_constructs.c"],
        &["-gline-tables-only"],
    );
    static RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let run_id = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let file = std::env::temp_dir().join(format!(
        "omptarget-profile-{}-{run_id}.json",
        std::process::id()
    ));
    let _ = std::fs::remove_file(&file);
    let path = file.display().to_string();
    let mut all = vec![("LIBOMPTARGET_PROFILE", path.as_str())];
    all.extend_from_slice(env);
    let out = run(&exe, &all);
    assert_eq!(out.status.success(), success, "{}", text(&out.stderr));
    if success {
        assert!(text(&out.stdout).contains("profile program ok"));
    }
    let written = std::fs::read_to_string(&file).expect("the profile was written");
    let _ = std::fs::remove_file(&file);
    let document = json::parse(&written).unwrap_or_else(|e| panic!("{e}:\n{written}"));
    let spans = spans_of(&document);
    (written, spans, document)
}

/// The complete spans (`ph` X) of a trace.
fn spans_of(document: &Value) -> Vec<Span> {
    document
        .get("traceEvents")
        .and_then(Value::as_list)
        .expect("traceEvents")
        .iter()
        .filter(|e| e.get("ph").and_then(Value::as_str) == Some("X"))
        .map(|e| {
            let number = |k: &str| e.get(k).and_then(Value::as_f64).unwrap();
            let (start, duration) = (number("ts"), number("dur"));
            assert!(duration >= 0.0);
            Span {
                name: e.get("name").and_then(Value::as_str).unwrap().to_owned(),
                tid: number("tid") as i64,
                start,
                end: start + duration,
                args: e.get("args").cloned().unwrap_or(Value::Null),
            }
        })
        .collect()
}

fn profile(env: &[(&str, &str)]) -> (String, Vec<Span>, Value) {
    profile_run(env, true)
}

#[test]
fn a_programs_profile_has_its_constructs_transfers_and_nested_spans() {
    let (written, spans, document) = profile(&[("LIBOMPTARGET_PROFILE_GRANULARITY", "0")]);
    let names: Vec<&str> = spans.iter().map(|s| s.name.as_str()).collect();
    for wanted in [
        "target",
        "target data begin",
        "target data end",
        "target update",
        "H2D",
        "D2H",
        "kernel launch",
        "image load",
        "plugin start-up",
    ] {
        assert!(names.contains(&wanted), "no {wanted} span: {names:?}");
    }
    // Constructs: the program's file and line, and the device asked for.
    for span in spans.iter().filter(|s| s.name.starts_with("target")) {
        let location = span.args.get("location").and_then(Value::as_str).unwrap();
        assert!(location.contains("profile_constructs.c:"), "{location}");
        assert!(span.args.get("device").and_then(Value::as_f64).is_some());
    }
    let devices: std::collections::BTreeSet<i64> = spans
        .iter()
        .filter(|s| s.name == "target")
        .map(|s| s.args.get("device").and_then(Value::as_f64).unwrap() as i64)
        .collect();
    assert!(devices.contains(&0) && devices.contains(&1), "{devices:?}");
    // Transfers: the mapped arrays' bytes, each way, with a bandwidth.
    let bytes = |name: &str| -> Vec<i64> {
        spans
            .iter()
            .filter(|s| s.name == name)
            .map(|s| s.args.get("bytes").and_then(Value::as_f64).unwrap() as i64)
            .collect()
    };
    assert!(bytes("H2D").contains(&(4096 * 8)), "{:?}", bytes("H2D"));
    assert!(bytes("D2H").contains(&(4096 * 8)), "{:?}", bytes("D2H"));
    assert!(spans
        .iter()
        .filter(|s| s.name == "H2D")
        .all(|s| s.args.get("MB/s").is_some()));
    assert_host_spans_nest(&spans);
    // Each thread and queue track with spans is named.
    let named: Vec<i64> = document
        .get("traceEvents")
        .and_then(Value::as_list)
        .unwrap()
        .iter()
        .filter(|e| e.get("name").and_then(Value::as_str) == Some("thread_name"))
        .filter_map(|e| e.get("tid").and_then(Value::as_f64).map(|t| t as i64))
        .collect();
    assert!(spans.iter().all(|s| named.contains(&s.tid)), "{written}");
    // The host device's queues: each transfer and launch also on its queue's track (the host
    // plugin has done the work when the submission returns), inside the construct that
    // submitted it, and linked to that submission by a flow.
    let device_spans: Vec<&Span> = spans.iter().filter(|s| s.tid >= 1_000_000).collect();
    assert!(
        !device_spans.is_empty(),
        "no device queue tracks:\n{written}"
    );
    for d in &device_spans {
        let host = spans
            .iter()
            .find(|h| h.tid < 1_000_000 && h.name == d.name && h.start == d.start)
            .unwrap_or_else(|| panic!("no submission for device span {}", d.name));
        assert!(
            spans.iter().any(|c| c.tid == host.tid
                && c.name.starts_with("target")
                && c.start <= d.start
                && d.end <= c.end),
            "device span {} outside every construct",
            d.name
        );
    }
    assert_eq!(events_of_phase(&document, "s"), device_spans.len());
    assert_eq!(events_of_phase(&document, "f"), device_spans.len());
    // The README's picture is drawn by profile-svg: one box per span.
    let trace =
        std::env::temp_dir().join(format!("omptarget-profile-svg-{}.json", std::process::id()));
    let svg = trace.with_extension("svg");
    std::fs::write(&trace, &written).unwrap();
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_profile-svg"))
        .arg(&trace)
        .arg(&svg)
        .status()
        .expect("run profile-svg");
    assert!(status.success());
    let drawn = std::fs::read_to_string(&svg).unwrap();
    assert!(drawn.starts_with("<svg"), "{drawn}");
    assert_eq!(drawn.matches("<title>").count(), spans.len(), "{drawn}");
    let _ = (std::fs::remove_file(&trace), std::fs::remove_file(&svg));
}

/// LLVM's default granularity (500 us) leaves out this small program's short spans; the file is
/// still a valid trace.
#[test]
fn short_spans_are_left_out_at_the_default_granularity() {
    let (_, fine, _) = profile(&[("LIBOMPTARGET_PROFILE_GRANULARITY", "0")]);
    let (_, coarse, _) = profile(&[]);
    assert!(coarse.len() < fine.len(), "{} {}", coarse.len(), fine.len());
    assert!(coarse.iter().all(|s| s.end - s.start >= 500.0));
}

/// A program that dies of a fatal offload error (offloading mandatory, no device) still leaves
/// its trace, written before the abort.
#[test]
fn a_fatal_error_still_writes_the_profile() {
    let (written, _, document) = profile_run(
        &[
            ("OMP_TARGET_OFFLOAD", "mandatory"),
            ("LIBOMPTARGET_PLUGINS_TO_LOAD", "cuda"),
            ("LIBOMPTARGET_PROFILE_GRANULARITY", "0"),
        ],
        false,
    );
    assert!(document.get("traceEvents").is_some(), "{written}");
}

/// A program that forks after offloading: the parent writes the file, the child `FILE.<pid>`,
/// each a valid trace with its own regions only (the child starts with none of its parent's).
#[test]
fn a_forked_child_writes_a_trace_of_its_own() {
    let exe = compile(Compiler::Clang19, &["profile_fork.c"], &[]);
    let file = std::env::temp_dir().join(format!(
        "omptarget-profile-fork-{}.json",
        std::process::id()
    ));
    let path = file.display().to_string();
    let out = run(
        &exe,
        &[
            ("LIBOMPTARGET_PROFILE", path.as_str()),
            ("LIBOMPTARGET_PROFILE_GRANULARITY", "0"),
        ],
    );
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    let child: u32 = stdout
        .lines()
        .find_map(|l| {
            l.strip_prefix("child ")?
                .split_whitespace()
                .next()?
                .parse()
                .ok()
        })
        .expect("the child printed its pid");
    let targets = |path: &str| {
        let written = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let document = json::parse(&written).unwrap_or_else(|e| panic!("{path}: {e}"));
        document
            .get("traceEvents")
            .and_then(Value::as_list)
            .unwrap()
            .iter()
            .filter(|e| e.get("name").and_then(Value::as_str) == Some("target"))
            .count()
    };
    let child_path = format!("{path}.{child}");
    assert_eq!(targets(&path), 2, "the parent's two regions");
    assert_eq!(targets(&child_path), 1, "the child's one region");
    let _ = (
        std::fs::remove_file(&path),
        std::fs::remove_file(&child_path),
    );
}

/// The trace's device list agrees with `omptarget-info --json`: the same OpenMP numbers,
/// plugins and names.
#[test]
fn the_traces_devices_are_omptarget_infos() {
    let (written, _, document) = profile(&[("LIBOMPTARGET_PROFILE_GRANULARITY", "0")]);
    let traced = document
        .get("devices")
        .and_then(Value::as_list)
        .unwrap_or_else(|| panic!("no devices list:\n{written}"));
    assert!(traced.len() >= 2, "{written}");
    let info = std::process::Command::new(tests::dist().join("bin/omptarget-info"))
        .arg("--json")
        .env("LD_LIBRARY_PATH", tests::lib_dir())
        .output()
        .expect("omptarget-info");
    let info = json::parse(&text(&info.stdout)).expect("omptarget-info's JSON");
    let listed = info.get("devices").and_then(Value::as_list).unwrap();
    for device in traced {
        let id = device.get("id").and_then(Value::as_f64).unwrap();
        let row = listed
            .iter()
            .find(|d| d.get("id").and_then(Value::as_f64) == Some(id))
            .unwrap_or_else(|| panic!("device {id} is not in omptarget-info's list"));
        assert_eq!(device.get("plugin"), row.get("plugin"), "device {id}");
        let name = row.get("properties").and_then(|p| p.get("name"));
        assert_eq!(device.get("name"), name, "device {id}");
    }
}

/// On each host thread, two spans are disjoint or one holds the other; the spans by thread.
fn assert_host_spans_nest(spans: &[Span]) -> BTreeMap<i64, Vec<&Span>> {
    let mut by_thread: BTreeMap<i64, Vec<&Span>> = BTreeMap::new();
    for span in spans.iter().filter(|s| s.tid < 1_000_000) {
        by_thread.entry(span.tid).or_default().push(span);
    }
    for (tid, list) in &by_thread {
        for a in list {
            for b in list {
                let disjoint = a.end <= b.start || b.end <= a.start;
                let nested = (a.start <= b.start && b.end <= a.end)
                    || (b.start <= a.start && a.end <= b.end);
                assert!(
                    disjoint || nested,
                    "thread {tid}: {} and {} overlap without nesting",
                    a.name,
                    b.name
                );
            }
        }
    }
    by_thread
}

/// How many of a trace's events have phase `phase` (`s`, `f`: the two ends of flows).
fn events_of_phase(document: &Value, phase: &str) -> usize {
    document
        .get("traceEvents")
        .and_then(Value::as_list)
        .unwrap()
        .iter()
        .filter(|e| e.get("ph").and_then(Value::as_str) == Some(phase))
        .count()
}

fn int_arg(span: &Span, key: &str) -> Option<i64> {
    span.args.get(key).and_then(Value::as_f64).map(|v| v as i64)
}

/// On an emulated GPU, whose plugin times its queued work on the device (plugin ABI 1.5: CUDA
/// events, HSA profiling signals): each copy and launch the program's constructs submit appears
/// once on its queue's track with the device's timing, the bytes the host span says, linked to
/// the submission by a flow, inside its construct (from the construct's start to its end, or
/// to its deferred completion for a `nowait` region whose work outlived its task), within the
/// clock mapping's stated uncertainty; the spans of one queue do not overlap. With a delay per
/// device operation, the `nowait` regions' work outlives their tasks.
fn device_spans_are_the_devices_timing(gpu: EmulatedGpu) {
    let exe = match gpu {
        EmulatedGpu::Cuda => tests::compile_cuda_twin("profile_constructs.c"),
        EmulatedGpu::Amdgpu => tests::compile_amdgpu_twin("profile_constructs.c"),
    };
    let file = std::env::temp_dir().join(format!(
        "omptarget-profile-{}-{}.json",
        gpu.plugin(),
        std::process::id()
    ));
    let _ = std::fs::remove_file(&file);
    let env: Vec<(&str, String)> = vec![
        ("LIBOMPTARGET_PROFILE", file.display().to_string()),
        ("LIBOMPTARGET_PROFILE_GRANULARITY", "0".into()),
        ("OMP_TARGET_OFFLOAD", "mandatory".into()),
        ("OMPTARGET_EMU_DEVICES", "2".into()),
        ("OMPTARGET_EMU_DELAY_US", "200".into()),
        ("LIBOMPTARGET_DEBUG", "1".into()),
    ];
    let (code, stdout, stderr) = tests::emulated::run(gpu, &exe, &[], &env);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert!(stdout.contains("profile program ok"), "{stdout}");
    assert!(
        !stderr.contains("device spans are left out") && !stderr.contains("did not give"),
        "{stderr}"
    );
    let written = std::fs::read_to_string(&file).expect("the profile was written");
    let _ = std::fs::remove_file(&file);
    let document = json::parse(&written).unwrap_or_else(|e| panic!("{e}:\n{written}"));
    let spans = spans_of(&document);
    assert_host_spans_nest(&spans);
    let is_work = |s: &&Span| matches!(s.name.as_str(), "H2D" | "D2H" | "kernel launch");
    let host: Vec<&Span> = spans
        .iter()
        .filter(|s| s.tid < 1_000_000)
        .filter(is_work)
        .collect();
    let device: Vec<&Span> = spans.iter().filter(|s| s.tid >= 1_000_000).collect();
    // One device span per submission, of the same kind and size.
    let kinds = |list: &[&Span]| -> Vec<(String, Option<i64>)> {
        let mut kinds: Vec<_> = list
            .iter()
            .map(|s| (s.name.clone(), int_arg(s, "bytes")))
            .collect();
        kinds.sort();
        kinds
    };
    assert!(host.len() >= 9, "{written}");
    assert_eq!(kinds(&host), kinds(&device), "{written}");
    assert_eq!(
        (
            events_of_phase(&document, "s"),
            events_of_phase(&document, "f")
        ),
        (device.len(), device.len())
    );
    // Inside the construct, within the clock's uncertainty (microseconds in the trace).
    let constructs = |name: &dyn Fn(&str) -> bool, id: i64| {
        spans
            .iter()
            .filter(|c| c.tid < 1_000_000 && name(&c.name) && int_arg(c, "construct") == Some(id))
            .map(|c| (c.start, c.end))
            .next()
    };
    let mut completed_later = 0;
    for d in &device {
        let id = int_arg(d, "construct").expect("a device span names its construct");
        let slack = int_arg(d, "clock uncertainty ns").unwrap_or(0) as f64 / 1000.0 + 0.01;
        let (start, mut end) = constructs(&|n: &str| n.starts_with("target"), id)
            .unwrap_or_else(|| panic!("device span {} of no construct {id}:\n{written}", d.name));
        if let Some((_, done)) = constructs(&|n: &str| n == "nowait completion", id) {
            end = end.max(done);
            completed_later += 1;
        }
        assert!(
            start - slack <= d.start && d.end <= end + slack,
            "{} at {}..{} outside construct {id} at {start}..{end} (± {slack} us)",
            d.name,
            d.start,
            d.end
        );
    }
    assert!(
        completed_later > 0,
        "no nowait region outlived its task:\n{written}"
    );
    // A queue runs its work in order: its spans do not overlap (1 us for rounding).
    let mut by_queue: BTreeMap<i64, Vec<&&Span>> = BTreeMap::new();
    for d in &device {
        by_queue.entry(d.tid).or_default().push(d);
    }
    for list in by_queue.values_mut() {
        list.sort_by(|a, b| a.start.total_cmp(&b.start));
        for pair in list.windows(2) {
            assert!(
                pair[1].start >= pair[0].end - 1.0,
                "{} and {} overlap on one queue",
                pair[0].name,
                pair[1].name
            );
        }
    }
}

#[test]
fn cuda_device_spans_are_the_devices_timing() {
    device_spans_are_the_devices_timing(EmulatedGpu::Cuda);
}

#[test]
fn amdgpu_device_spans_are_the_devices_timing() {
    device_spans_are_the_devices_timing(EmulatedGpu::Amdgpu);
}
