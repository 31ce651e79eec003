//! Real programs through the CUDA plugins on the emulated CUDA driver (dist/emu/libcuda.so.1):
//! the conformance suite built for sm_90 with x86-64 twins through our plugin (with and without
//! a delay before each stream operation, so that a missing synchronisation reads stale data),
//! the same binaries through LLVM 19's plugin as the judge of the emulation, and a fault sweep
//! that fails each driver function a program uses.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::process::Command;
use tests::conformance::{self, EmulatedGpu};
use tests::emulated::{self, calls_at, field, TracedRuns};

const CUDA: EmulatedGpu = EmulatedGpu::Cuda;

/// Our plugin passes every program (with and without a delay before each stream operation);
/// LLVM 19's plugin on the same emulator and binaries is the judge of the emulation: what it
/// passes, ours passes, and each of its failures is explained in docs/emulated-drivers.md.
#[test]
fn conformance_suite_on_the_emulator_ours_and_llvm_19() {
    // LLVM's launch without a current context (see the docs) hits whichever program has a
    // thread whose first driver call is a launch, depending on timing.
    let llvm_context_bug = |o: &conformance::Outcome| {
        o.result.as_ref().err().is_some_and(|e| {
            e.contains("Error in cuLaunchKernel") && e.contains("invalid device context")
        })
    };
    emulated::suite_passes_and_llvm_19_judges(CUDA, "emulated CUDA driver", llvm_context_bug);
}

/// The suite built by clang-22 (team reductions and `parallel` regions included, with LLVM 22's
/// device runtime built from its sources) passes through our plugin on the emulator.
#[test]
fn conformance_suite_built_by_clang_22_on_the_emulator() {
    emulated::clang_22_suite_passes(CUDA, "emulated CUDA driver");
}

/// Runs a program on our runtime with offloading mandatory, tracing the driver calls.
fn run_traced(exe: &Path, name: &str) -> (Option<i32>, String, String, String) {
    emulated::run_traced(CUDA, exe, name, &[])
}

fn run_traced_with(
    exe: &Path,
    name: &str,
    env: &[(&str, &str)],
) -> (Option<i32>, String, String, String) {
    emulated::run_traced(CUDA, exe, name, env)
}

fn run_both_traced(exe: &Path, args: &[&str], env: &[(&str, &str)]) -> TracedRuns {
    emulated::run_both_traced(CUDA, exe, args, env)
}

/// Each driver function the program uses fails once, at its first call and at its second:
/// every run ends with the right result (the region falls back to the host where
/// OMP_TARGET_OFFLOAD allows) or with a clear error, never with a crash, a hang or a wrong
/// result reported as success.
#[test]
fn a_failing_driver_call_never_crashes_hangs_or_gives_a_wrong_result() {
    let exe = tests::compile_cuda_twin("emu_saxpy.c");
    let (_, _, _, text) = run_traced(&exe, "launches");
    assert!(text
        .lines()
        .any(|l| l.starts_with("cuLaunchKernel stream=0x")
            && l.contains("grid=")
            && l.contains("block=")));
    let functions = emulated::functions_called(CUDA, &exe, "cu");
    assert!(functions.len() >= 15, "{functions:?}");
    let (right, clear_error) = emulated::fault_sweep(CUDA, &exe, &functions);
    eprintln!(
        "fault sweep: {} runs over {} functions: {right} right results, {clear_error} clear errors",
        2 * functions.len(),
        functions.len()
    );
}

/// (kernel, grid, block) of each launch in a trace.
fn launches(trace: &str) -> Vec<(String, String, String)> {
    trace
        .lines()
        .filter(|l| l.starts_with("cuLaunchKernel "))
        .map(|l| {
            let field = |key: &str| {
                l.split_whitespace()
                    .find_map(|w| w.strip_prefix(key))
                    .unwrap_or("")
                    .to_owned()
            };
            (field("kernel="), field("grid="), field("block="))
        })
        .collect()
}

/// The same clang-19 binary launches each kernel with the grid and block LLVM 19's plugin
/// gives it (we follow LLVM's launch rules). Caught: a region without teams was launched with
/// the largest grid (the -1 teams clang passes read as a count), each block running the
/// region's serial part on a GPU.
#[test]
fn launch_geometry_matches_llvm_19() {
    let exe = tests::compile_cuda_twin("emu_saxpy.c");
    let runs = run_both_traced(&exe, &[], &[]);
    let (ours_launches, llvm_launches) = (launches(&runs.trace), launches(&runs.llvm_trace));
    assert!(ours_launches.len() >= 4, "{ours_launches:?}");
    assert_eq!(ours_launches, llvm_launches);
}

/// A kernel with 64 KiB of dynamic shared memory runs: the plugin opts it in (the emulator,
/// as the driver, refuses the launch otherwise; LLVM 19's plugin never opts in and fails).
#[test]
fn kernels_are_opted_in_to_more_than_48_kib_of_dynamic_shared_memory() {
    let exe = tests::compile_cuda_twin("emu_dyn_shared.c");
    let (code, stdout, stderr, text) = run_traced(&exe, "dyn");
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert!(stdout.contains("dyn_shared=ok"), "{stdout}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("cuFuncSetAttribute attribute=8 value=65536 -> CUDA_SUCCESS")),
        "{text}"
    );
}

/// The indirect-call table a run gave the device runtime, from its trace: the last write of
/// `__omp_rtl_device_environment` names the table (offsets 24 and 32), whose upload holds the
/// `{host, device}` pairs.
fn indirect_call_table(trace: &str) -> Vec<(u64, u64)> {
    let environment = trace
        .lines()
        .filter(|l| l.starts_with("cuModuleGetGlobal_v2 name=__omp_rtl_device_environment "))
        .find_map(|l| field(l, "dptr="))
        .expect("the device environment was looked up");
    let uploaded = |dst: &str| {
        trace
            .lines()
            .rev()
            .filter(|l| l.starts_with("cuMemcpyHtoD") && field(l, "dst=") == Some(dst))
            .find_map(|l| field(l, "bytes="))
            .map(emulated::le_words)
    };
    let env = uploaded(environment).expect("the device environment was written");
    let (table, entries) = (env[3], env[4]);
    if entries == 0 {
        return Vec::new();
    }
    let pairs = uploaded(&format!("{table:#x}")).expect("the table was uploaded");
    assert_eq!(pairs.len() as u64, 2 * entries, "{pairs:x?}");
    pairs.chunks(2).map(|p| (p[0], p[1])).collect()
}

/// `declare target indirect` functions: the plugin hands the device runtime the table that
/// translates host function pointers, sorted by host address, as LLVM 19's plugin does (its
/// table, from the same binary, is the reference). Before the fix the table was written empty,
/// so on a GPU every such call jumped to a host address.
#[test]
fn indirect_calls_get_the_device_runtime_table_llvm_19_writes() {
    let exe = tests::compile_cuda_twin("emu_indirect_calls.c");
    let runs = run_both_traced(&exe, &[], &[]);
    assert!(!runs.stderr.contains("indirect"), "{}", runs.stderr);
    for (who, trace, stdout) in [
        ("ours", &runs.trace, &runs.stdout),
        ("LLVM 19", &runs.llvm_trace, &runs.llvm_stdout),
    ] {
        emulated::check_indirect_call_table(who, &indirect_call_table(trace), stdout);
    }
}

/// The plugin checker passes every check on our CUDA plugin through the emulator, two devices,
/// with check_program.c's sm_90 image and its twin. Among them, the allocation made while a
/// kernel runs: a non-blocking allocation and its free complete while the kernel runs, a plain
/// device allocation waits for it (as `cuMemAlloc` does); and fills on the device with each
/// pattern width through the driver's memsets. Caught on the way: the checker took a
/// cubin's `_dynamic_environment` global for the kernel, and the emulator's free could revoke
/// another thread's new allocation (SIGSEGV under concurrent use).
#[test]
fn plugin_checker_passes_on_the_emulator_and_sees_allocations_overlap_kernels() {
    let twin = tests::compile_cuda_twin("../../plugin-check/check_program.c");
    let two_gpus = [("OMPTARGET_EMU_DEVICES", "2".to_string())];
    let (passed, stdout, stderr) =
        emulated::plugin_check(EmulatedGpu::Cuda, &twin, &twin, &two_gpus);
    assert!(passed, "{stdout}{stderr}");
    // Queue and event handles the plugin never gave out are refused before the driver sees
    // them (they were cast to a CUstream and a CUevent).
    assert!(
        stdout.contains("PASS  error: bogus queue and event handles"),
        "{stdout}"
    );
    for device in 0..2 {
        let line = stdout
            .lines()
            .find(|l| l.contains(&format!("device {device}: allocation while a kernel runs")))
            .unwrap_or_else(|| panic!("no allocation check for device {device}:\n{stdout}"));
        assert!(line.starts_with("PASS"), "{line}");
        assert!(
            line.contains("a plain device allocation waited for the kernel"),
            "{line}"
        );
        // Fills through cuMemsetD8/16/32Async (plugin ABI 1.6), none answered UNSUPPORTED.
        let fill = stdout
            .lines()
            .find(|l| l.contains(&format!("device {device}: fill on the device (ABI 1.6)")))
            .unwrap_or_else(|| panic!("no fill check for device {device}:\n{stdout}"));
        assert!(fill.starts_with("PASS"), "{fill}");
        assert!(fill.contains("1, 2, 4-byte patterns filled"), "{fill}");
    }
}

/// A PTX image end to end: the PTX that clang-19 hands ptxas for check_program.c (kept with
/// -save-temps: clang embeds cubins, and PTX is what a driver JIT-compiles) goes through our
/// plugin's PTX path on the emulator, which reads its entries and its `.global` and `.const`
/// variables with their initial values and addresses, and runs its kernels through the twin of
/// the program built beside it.
#[test]
fn a_ptx_image_loads_and_runs_through_the_plugin() {
    let dir = tests::build_dir().join("ptx-image");
    std::fs::create_dir_all(&dir).unwrap();
    let program = dir.join("check_program");
    let output = Command::new("clang-19")
        .current_dir(&dir)
        .env("PATH", tests::path_with_ptxas())
        .args(["-O2", "-fopenmp", "-save-temps=obj"])
        .args(tests::CUDA_TWIN_FLAGS)
        .arg(format!(
            "--cuda-path={}",
            tests::nvptx_cuda_path().display()
        ))
        .arg(tests::workspace_root().join("plugin-check/check_program.c"))
        .arg("-o")
        .arg(&program)
        .output()
        .expect("clang-19");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let ptx = dir.join("check_program.nvptx64-nvidia-cuda.sm_90.s");
    let text = std::fs::read_to_string(&ptx).expect("the PTX clang-19 gave ptxas");
    assert!(
        text.contains(".target sm_90") && text.contains(".entry"),
        "{text}"
    );
    let trace = dir.join("trace.txt");
    let traced = [("OMPTARGET_EMU_TRACE", trace.display().to_string())];
    let (passed, stdout, stderr) =
        emulated::plugin_check(EmulatedGpu::Cuda, &ptx, &program, &traced);
    assert!(passed, "{stdout}{stderr}");
    assert!(
        stdout.contains("holds its initial value 42"),
        "the PTX global's initialiser: {stdout}"
    );
    let trace = std::fs::read_to_string(&trace).unwrap();
    for call in [
        "cuModuleLoadData module=",
        "cuModuleGetGlobal_v2 name=__omp_rtl_device_environment dptr=",
        "cuLaunchKernel",
    ] {
        assert!(
            trace
                .lines()
                .any(|l| l.starts_with(call) && l.ends_with("CUDA_SUCCESS")),
            "no successful {call} in the trace:\n{trace}"
        );
    }
}

/// Calls of `function` in a trace.
fn calls<'a>(trace: &'a str, function: &str) -> Vec<&'a str> {
    let prefix = format!("{function} ");
    trace.lines().filter(|l| l.starts_with(&prefix)).collect()
}

/// Defects 3 and 4 of the CUDA review: twenty team reductions allocate no more than LLVM 19's
/// plugin does for the same binary (the reduction buffers are pooled; they were allocated and
/// freed around every launch, and `cuMemFree` waits for the device), and the device heap is
/// the driver's: `LIBOMPTARGET_HEAP_SIZE` becomes `cuCtxSetLimit(MALLOC_HEAP_SIZE)`, as in LLVM,
/// with no pool of that size allocated (one was, per image, with two synchronous copies).
#[test]
fn reductions_reuse_buffers_and_the_heap_is_the_drivers_as_in_llvm_19() {
    let exe = tests::compile_cuda_twin("emu_reductions.c");
    const HEAP: &str = "33554432";
    let runs = run_both_traced(&exe, &[], &[("LIBOMPTARGET_HEAP_SIZE", HEAP)]);
    let (ours_trace, llvm_trace) = (runs.trace, runs.llvm_trace);
    assert_eq!(calls(&ours_trace, "cuLaunchKernel").len(), 20);
    for function in ["cuMemAlloc_v2", "cuMemFree_v2"] {
        let (o, l) = (calls(&ours_trace, function), calls(&llvm_trace, function));
        assert!(
            o.len() <= l.len().max(1),
            "{function}: ours {o:?}, LLVM {l:?}"
        );
    }
    let limit = format!("cuCtxSetLimit limit=2 value={HEAP} -> CUDA_SUCCESS");
    assert!(ours_trace.lines().any(|l| l == limit), "{ours_trace}");
    assert!(llvm_trace.lines().any(|l| l == limit), "{llvm_trace}");
    assert!(
        !ours_trace.contains(&format!("size={HEAP}")),
        "a heap-sized allocation or copy: {ours_trace}"
    );
}

/// The same twenty team reductions built by clang-22 (their device code needs LLVM 22's device
/// runtime, built from its sources): the result is right and the plugin allocates no more for
/// them than for the clang-19 build, whose kernel environments have LLVM 19's layout.
#[test]
fn clang_22_reductions_reuse_buffers_as_clang_19_ones_do() {
    let traced = |exe: &Path, name: &str| {
        let (code, stdout, stderr, trace) = run_traced(exe, name);
        assert!(
            code == Some(0) && stdout.contains("total=999900000"),
            "{name}: {code:?}\n{stdout}{stderr}"
        );
        trace
    };
    let clang19 = traced(
        &tests::compile_cuda_twin("emu_reductions.c"),
        "reductions19",
    );
    let clang22 = traced(
        &tests::compile_cuda_twin_clang22("emu_reductions.c"),
        "reductions22",
    );
    assert_eq!(calls(&clang22, "cuLaunchKernel").len(), 20);
    for function in ["cuMemAlloc_v2", "cuMemFree_v2"] {
        let (new, old) = (calls(&clang22, function), calls(&clang19, function));
        assert!(
            new.len() <= old.len(),
            "{function}: clang-22 build {new:?}, clang-19 build {old:?}"
        );
    }
}

/// The trace's lines, with its one `cuMemHostRegister` and its one successful
/// `cuMemHostUnregister`, and where they are.
fn registered_once(trace: &str) -> (Vec<&str>, usize, usize) {
    emulated::locked_once(
        trace,
        "cuMemHostRegister",
        "cuMemHostUnregister",
        "CUDA_SUCCESS",
    )
}

/// Defect 5 of the CUDA review: page-locking is counted. Locked twice and unlocked once, the
/// buffer stays registered through the next region's copies (the first unlock unregistered it
/// before); the second unlock unregisters it, once. The device address comes from
/// `cuMemHostGetDevicePointer`.
#[test]
fn page_locking_is_counted() {
    let exe = tests::compile_cuda_twin("emu_pinning.c");
    let (code, stdout, stderr, trace) = run_traced(&exe, "pin");
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert!(stdout.contains("locked=1 same=1 buffer0=7"), "{stdout}");
    let (lines, register, unregister) = registered_once(&trace);
    let at = |prefix: &str| calls_at(&lines, prefix);
    assert!(!at("cuMemHostGetDevicePointer").is_empty(), "{trace}");
    let last_copy_back = *at("cuMemcpyDtoH").last().expect("the region's copy back");
    assert!(
        register < last_copy_back && last_copy_back < unregister,
        "{trace}"
    );
}

/// A buffer the program leaves page-locked is unregistered by the plugin as it shuts down at
/// exit, after the region's copy back and before the context is released.
#[test]
fn memory_left_locked_is_unregistered_at_shutdown() {
    let exe = tests::compile_cuda_twin("emu_pinning.c");
    let (code, stdout, stderr, trace) =
        run_traced_with(&exe, "pin-left", &[("EMU_PIN_LEAVE_LOCKED", "1")]);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert!(stdout.contains("locked=1 same=1 buffer0=7"), "{stdout}");
    let (lines, _, unregister) = registered_once(&trace);
    let at = |prefix: &str| calls_at(&lines, prefix);
    let last_copy_back = *at("cuMemcpyDtoH").last().expect("the region's copy back");
    let released = *at("cuDevicePrimaryCtxRelease")
        .last()
        .expect("the context released");
    assert!(
        last_copy_back < unregister && unregister < released,
        "{trace}"
    );
    // The driver tears itself down in an exit handler it registers in cuInit (as the real one
    // does): the plugin shuts down before it, so no call of the shutdown finds it gone.
    assert!(!trace.contains("CUDA_ERROR_DEINITIALIZED"), "{trace}");
    assert!(!stderr.contains("shutting down failed"), "{stderr}");
}

/// A driver that tore itself down before the plugin's shutdown (its exit handler registered
/// after the runtime's, here at the first launch) leaves the plugin nothing to release: the
/// program exits cleanly and quietly, and the shutdown made one call, which found it gone.
#[test]
fn a_driver_torn_down_before_the_shutdown_is_no_failure() {
    let exe = tests::compile_cuda_twin("emu_pinning.c");
    let (code, stdout, stderr, trace) = run_traced_with(
        &exe,
        "pin-late-teardown",
        &[
            ("EMU_PIN_LEAVE_LOCKED", "1"),
            ("OMPTARGET_EMU_LATE_TEARDOWN", "1"),
        ],
    );
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert!(stdout.contains("locked=1 same=1 buffer0=7"), "{stdout}");
    assert!(!stderr.contains("shutting down failed"), "{stderr}");
    let gone: Vec<&str> = trace
        .lines()
        .filter(|l| l.ends_with("CUDA_ERROR_DEINITIALIZED"))
        .collect();
    assert!(
        gone.iter().any(|l| l.starts_with("cuCtxSetCurrent")),
        "{trace}"
    );
    assert!(
        !trace
            .lines()
            .any(|l| l.starts_with("cuDevicePrimaryCtxRelease")),
        "{trace}"
    );
}

/// A clang-22 program through our CUDA plugin on the emulator: the kernel-language launch
/// path (`llvmLaunchKernel` with the kernel's own parameter block, README "Not done yet") and
/// a clang-22 image's kernel environment read by the plugin (issue 17, defect 9). The driver
/// refuses a parameter block of the wrong size, as the program expects.
#[test]
fn a_clang_22_program_launches_kernels_through_the_kernel_language_path() {
    let exe = tests::compile_cuda_twin_clang22("kernel_language.c");
    let (code, stdout, stderr, trace) = run_traced(&exe, "kernel-language");
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    for line in ["configuration ok", "launch ok", "errors ok"] {
        assert!(stdout.contains(line), "{stdout}{stderr}");
    }
    let launches: Vec<&str> = trace
        .lines()
        .filter(|l| l.starts_with("cuLaunchKernel") && l.contains("fill_kernel"))
        .collect();
    assert_eq!(launches.len(), 2, "{trace}");
    assert!(launches[0].ends_with("CUDA_SUCCESS"), "{trace}");
    assert!(launches[1].ends_with("CUDA_ERROR_INVALID_VALUE"), "{trace}");
}

/// Issue 17, defect 9: clang-22's three-dimensional `ompx_bare` launch reaches the driver with
/// the grid and block the program asked for (`num_teams(3, 2, 1) thread_limit(4, 2, 2)`).
#[test]
fn a_three_dimensional_bare_launch_keeps_its_geometry() {
    let exe = tests::compile_cuda_twin_clang22("emu_bare_3d.c");
    let (code, stdout, stderr, trace) = run_traced(&exe, "bare-3d");
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    let launch = trace
        .lines()
        .find(|l| l.starts_with("cuLaunchKernel"))
        .unwrap_or_else(|| panic!("no launch:\n{trace}"));
    assert!(
        launch.contains("grid=3x2x1 block=4x2x2") && launch.ends_with("CUDA_SUCCESS"),
        "{launch}"
    );
}

/// Issue 17, LLVM 22's virtual tables of `declare target indirect` classes: the table the
/// plugin hands the device runtime translates each slot of both classes' virtual tables (the
/// objects' table pointers among them) to the device's copy, besides the two functions. (The
/// calls themselves run in the x86-64 twin, where host tables are valid, so the output alone
/// would not show a missing translation.)
#[test]
fn virtual_tables_of_indirect_classes_are_in_the_indirect_call_table() {
    let exe = tests::compile_cuda_twin_clang22("../conformance/cpp/virtual_call_indirect.cpp");
    let (code, stdout, stderr, trace) = run_traced(&exe, "vtables");
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert!(stdout.contains("derived=42 base=21"), "{stdout}");
    let table = indirect_call_table(&trace);
    for object in ["derived", "base"] {
        let vptr = emulated::printed_address(&stdout, object);
        let slot = table.iter().find(|(host, _)| *host == vptr);
        assert!(
            slot.is_some_and(|(host, device)| *device != 0 && device != host),
            "{object}'s table pointer {vptr:#x} is not translated: {table:x?}"
        );
    }
    // Each table's slots map to consecutive device slots.
    let translated = |host: u64| table.iter().find(|(h, _)| *h == host).map(|(_, d)| *d);
    for object in ["derived", "base"] {
        let vptr = emulated::printed_address(&stdout, object);
        let (before, at) = (translated(vptr - 8), translated(vptr));
        assert_eq!(before.zip(at).map(|(b, a)| a - b), Some(8), "{table:x?}");
    }
}

/// Issue 17's pinning across devices: one buffer locked through two devices is registered
/// once and unregistered only after the second unlock, after the region on the second device
/// (with a pin table per device, the first unlock unregistered it while the second device
/// still used it).
#[test]
fn page_locking_is_counted_across_devices() {
    let exe = tests::compile_cuda_twin("emu_pinning_two_devices.c");
    let (code, stdout, stderr, text) =
        run_traced_with(&exe, "pin2", &[("OMPTARGET_EMU_DEVICES", "2")]);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert!(stdout.contains("locked=1 same=1 buffer0=7"), "{stdout}");
    let (lines, _, unregister) = registered_once(&text);
    let last_copy_back = *calls_at(&lines, "cuMemcpyDtoH")
        .last()
        .expect("the region's copy back");
    assert!(
        last_copy_back < unregister,
        "unregistered before the region:\n{text}"
    );
}

fn calls_per_construct(exe: &Path, kind: &str) -> [HashMap<String, f64>; 2] {
    emulated::calls_per_construct(CUDA, exe, kind, 11).map(|c| c.calls)
}

/// What a construct costs at the driver, beside LLVM 19's plugin on the same binary
/// (scripts/emu-driver-calls.sh prints the whole table): a construct that queues nothing
/// synchronises nothing, no queue is asked whether it is done, an event is waited for only on
/// another queue than the one it was recorded on, and the context is made current only for
/// calls that need it. Together at most one call more than LLVM's per construct: the
/// `cuCtxSetCurrent` before a launch, which LLVM's plugin leaves out (and then fails on a
/// thread whose first call is a launch).
#[test]
fn constructs_cost_at_most_llvm_19s_driver_calls_and_a_context_for_the_launch() {
    let exe = tests::compile_cuda_twin("../../bench/gpu/per_construct.c");
    let count = |c: &HashMap<String, f64>, f: &str| c.get(f).copied().unwrap_or(0.0);
    let total = |c: &HashMap<String, f64>| c.values().sum::<f64>();
    for kind in ["empty", "map_to", "map_tofrom", "enter_exit", "update"] {
        let [ours, llvm] = calls_per_construct(&exe, kind);
        let launches = count(&ours, "cuLaunchKernel");
        let report = format!("{kind}: ours {ours:?}\nLLVM 19 {llvm:?}");
        assert_eq!(count(&ours, "cuStreamQuery"), 0.0, "{report}");
        assert!(
            count(&ours, "cuStreamSynchronize") <= count(&llvm, "cuStreamSynchronize"),
            "{report}"
        );
        assert!(
            count(&ours, "cuEventRecord") + count(&ours, "cuStreamWaitEvent")
                <= count(&llvm, "cuEventRecord") + count(&llvm, "cuStreamWaitEvent"),
            "{report}"
        );
        assert!(
            count(&ours, "cuCtxSetCurrent") <= count(&llvm, "cuCtxSetCurrent") + launches,
            "{report}"
        );
        assert!(total(&ours) <= total(&llvm) + launches, "{report}");
    }
}

/// Defect 7 of the review (leaks on error paths): when creating the event pool fails while a
/// device starts, the streams already created are destroyed and the primary context retained
/// for the device is released again, as the driver trace shows handle by handle.
#[test]
fn a_device_whose_start_fails_gives_back_its_streams_and_context() {
    let exe = tests::compile_cuda_twin("emu_saxpy.c");
    for streams in ["1", "3"] {
        let (code, stdout, stderr, text) = run_traced_with(
            &exe,
            &format!("start-{streams}"),
            &[
                ("OMPTARGET_EMU_FAIL", "cuEventCreate:1"),
                ("LIBOMPTARGET_NUM_INITIAL_STREAMS", streams),
            ],
        );
        assert!(
            stderr.contains("creating the event pool"),
            "{code:?}\n{stdout}\n{stderr}"
        );
        let handles = |function: &str| -> BTreeSet<String> {
            text.lines()
                .filter(|l| l.starts_with(&format!("{function} ")) && l.ends_with("CUDA_SUCCESS"))
                .filter_map(|l| l.split_whitespace().find(|w| w.starts_with("stream=")))
                .map(str::to_owned)
                .collect()
        };
        let created = handles("cuStreamCreate");
        assert_eq!(created.len(), streams.parse::<usize>().unwrap(), "{text}");
        assert_eq!(created, handles("cuStreamDestroy_v2"), "{text}");
        let calls = |function: &str| text.lines().filter(|l| l.starts_with(function)).count();
        assert_eq!(calls("cuDevicePrimaryCtxRetain"), 1, "{text}");
        assert_eq!(calls("cuDevicePrimaryCtxRelease"), 1, "{text}");
    }
}

/// Some `cuStreamQuery` of the trace answered `CUDA_ERROR_NOT_READY`.
fn assert_a_query_found_work_running(trace: &str) {
    assert!(
        trace
            .lines()
            .any(|l| l.starts_with("cuStreamQuery ") && l.ends_with("CUDA_ERROR_NOT_READY")),
        "{trace}"
    );
}

/// A `nowait` region whose work is still running when its task ends is left in libomp's
/// handle slot and finished by the task's `__tgt_target_nowait_query` polls (`cuStreamQuery`
/// answering `CUDA_ERROR_NOT_READY`, then success), as in LLVM's runtime.
#[test]
fn nowait_regions_still_running_are_finished_by_the_task_s_queries() {
    let exe = tests::compile_cuda_twin("emu_nowait_overlap.c");
    let (_, trace) = emulated::nowait_constructs_left_to_their_tasks(CUDA, &exe, "regions=6 ok");
    assert_a_query_found_work_running(&trace);
}

/// A clang-19 program with no offload entries and only a cubin (no x86-64 twin, whose
/// `.comment` names clang): the runtime name it links tells its release, so `use_device_ptr` of
/// unmapped data gives LLVM 19's NULL-based address. The first H100 run found it given LLVM
/// 22's behaviour (the host address kept).
#[test]
fn a_clang_19_program_with_only_a_cubin_and_no_entries_follows_llvm_19() {
    let exe = tests::compile_nvptx(
        "../conformance/device_addresses/use_device_ptr_unmapped_llvm19.c",
        "sm_90",
    );
    let env = [("OMP_TARGET_OFFLOAD", "mandatory".to_string())];
    let (code, out, err) = emulated::run(CUDA, &exe, &[], &env);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(
        out.contains("ptr=null addr=null section=near-null"),
        "{out}"
    );
}

/// A program that requires unified_shared_memory is told when its device starts that the device
/// cannot reach pageable host memory. The emulated H100 reports no pageable memory access, as the
/// H100 lent to this project did, where such programs' kernels stopped with
/// CUDA_ERROR_ILLEGAL_ADDRESS under LLVM 19's runtime and ours alike.
#[test]
fn unified_shared_memory_on_a_device_without_pageable_access_is_announced() {
    let exe = tests::compile_cuda_twin("../conformance/usm/malloc_without_map.c");
    emulated::unified_shared_memory_is_announced(CUDA, &exe);
}

/// `nowait` data constructs (enter, update, exit) whose copies are still running when their
/// tasks end are left to the tasks' queries as `nowait` regions are, instead of holding a
/// helper thread in a wait (LLVM's runtime does the same since its `TaskAsyncInfoWrapperTy`).
/// Every value the program reads back is checked; LLVM 19's plugin on the same binary agrees.
#[test]
fn nowait_data_constructs_still_running_are_finished_by_the_task_s_queries() {
    let exe = tests::compile_cuda_twin("emu_data_nowait.c");
    let (_, trace) = emulated::nowait_constructs_left_to_their_tasks(CUDA, &exe, "arrays=4 ok");
    assert_a_query_found_work_running(&trace);
    emulated::assert_llvm_19_prints(&exe, "arrays=4 ok", &[("OMPTARGET_EMU_DELAY_US", "3000")]);
}
