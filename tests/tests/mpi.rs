//! The MPI plugin: programs offloading to the devices of other MPI processes
//! (`mpirun -np 1 ./prog : -np N omptarget-mpi-device`), on this machine's loopback.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};
use tests::conformance::{self, EmulatedGpu, Runtime, MPI_DEVICE_PROCESSES, MPI_HOST_DEVICES_EACH};
use tests::{compile, text, Compiler};

/// `exe` as the program of an MPI job with `device_processes` device processes, each with
/// `host_devices` host devices, offloading only to them.
fn mpi_job(exe: &Path, device_processes: u32, host_devices: u32, env: &[(&str, &str)]) -> Command {
    mpi_job_with_args(&[exe.as_os_str()], device_processes, host_devices, env)
}

/// As [`mpi_job`], for a program with arguments (`program[0]` is the program).
fn mpi_job_with_args(
    program: &[&std::ffi::OsStr],
    device_processes: u32,
    host_devices: u32,
    env: &[(&str, &str)],
) -> Command {
    let mut cmd = conformance::mpirun(program, device_processes);
    cmd.env("LD_LIBRARY_PATH", tests::lib_dir())
        .env("LIBOMPTARGET_PLUGINS_TO_LOAD", "mpi")
        .env("OMP_TARGET_OFFLOAD", "mandatory")
        .env("LIBOMPTARGET_HOST_NUM_DEVICES", host_devices.to_string())
        .env_remove("LIBOMPTARGET_DEBUG")
        .env_remove("LIBOMPTARGET_PLUGIN_PATH")
        .stdin(Stdio::null());
    cmd.envs(env.iter().copied());
    cmd
}

fn output(mut cmd: Command) -> Output {
    tests::retry_while_busy(|| cmd.output())
        .expect("cannot run mpirun (.ci/install-deps.sh installs Open MPI)")
}

#[test]
fn conformance_suite_passes_on_remote_devices_over_mpi() {
    let programs = conformance::programs();
    let outcomes = conformance::check_all(
        &programs,
        &tests::COMPILERS,
        Runtime::OursOverMpi { gpu: None },
        2,
    );
    if let Some(report) = conformance::failures(&outcomes) {
        panic!("{report}");
    }
    let skipped = programs
        .iter()
        .filter(|p| {
            conformance::Spec::parse(p)
                .map(|s| s.mpi_skip.is_some())
                .unwrap_or(false)
        })
        .count();
    println!(
        "MPI plugin, {MPI_DEVICE_PROCESSES} device processes of {MPI_HOST_DEVICES_EACH} host \
         devices: {} checks passed ({} programs, {skipped} not run: NOT-ON-MPI)",
        outcomes.len(),
        programs.len()
    );
}

/// A forked child that exits runs the exit handlers it inherited: neither the runtime's nor
/// the MPI plugin's may shut the device processes down from there (they are the parent's), so
/// the parent offloads again after its child has gone. The emulated GPUs' test is in
/// `emu_hsa.rs`.
#[test]
fn a_forked_child_that_exits_leaves_the_device_processes_to_its_parent() {
    let exe = compile(Compiler::Clang19, &["emu_fork_exit.c"], &[]);
    let out = output(mpi_job(&exe, 1, 1, &[]));
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(
        out.status.success() && stdout.contains("before=2 after=21 child=0"),
        "{}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        out.status
    );
}

/// Two remote devices of two device processes run at once, and a copy between them goes from
/// one device process to the other, not through the program.
#[test]
fn two_remote_devices_work_at_once_and_copy_directly_between_their_processes() {
    let exe = compile(Compiler::Clang19, &["mpi_two_devices.c"], &[]);
    let out = output(mpi_job(&exe, 2, 2, &[("OMPTARGET_MPI_TRACE", "1")]));
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(
        out.status.success() && stdout.contains("two remote devices: correct"),
        "{}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        out.status
    );
    let bytes = (1 << 20) * 4;
    // Program device 1 is rank 1's device 1, program device 2 is rank 2's device 0.
    for line in [
        format!("omptarget-mpi-device rank 1: SendToPeer device=1 bytes={bytes} peer=2"),
        format!("omptarget-mpi-device rank 2: ReceiveFromPeer device=0 bytes={bytes} peer=1"),
    ] {
        assert!(
            stderr.lines().any(|l| l == line),
            "no '{line}' in:\n{stderr}"
        );
    }
    // Each device process received the program's image once, though it has two devices.
    for rank in [1, 2] {
        let stored = format!("omptarget-mpi-device rank {rank}: StoreImage ");
        assert_eq!(
            stderr.lines().filter(|l| l.starts_with(&stored)).count(),
            1,
            "{stderr}"
        );
    }
    let through_program = stderr
        .lines()
        .filter(|l| l.contains(&format!("bytes={bytes}")) && l.contains("CopyFromDevice"))
        .count();
    assert_eq!(
        through_program, 0,
        "the copy went through the program:\n{stderr}"
    );
}

/// `omp_target_memset` on a remote device is one fill request carrying the pattern: the device
/// process writes the bytes, and none cross the wire. The program fills 3, 9, 1 and 1 MiB + 1
/// bytes inside buffers it copied to the device and reads back whole; the copy the runtime
/// falls back on would send each filled range to the device as well (1 MiB more).
#[test]
fn a_memset_on_a_remote_device_is_one_fill_request_without_data() {
    let exe = compile(
        Compiler::Clang19,
        &["../conformance/device_api/memset_unaligned.c"],
        &[],
    );
    let out = output(mpi_job(&exe, 1, 1, &[("OMPTARGET_MPI_TRACE", "1")]));
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(
        out.status.success() && stdout.contains("small=ok large=ok"),
        "{}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        out.status
    );
    // The device process (rank 1) traces every request it executes.
    let requests: Vec<&str> = stderr
        .lines()
        .filter_map(|l| l.strip_prefix("omptarget-mpi-device rank 1: "))
        .collect();
    let fills: Vec<&str> = requests
        .iter()
        .copied()
        .filter(|r| r.starts_with("Fill "))
        .collect();
    let filled = [3, 9, 1, (1 << 20) + 1];
    assert_eq!(
        fills,
        filled
            .iter()
            .map(|n| format!("Fill device=0 filled={n} pattern=1"))
            .collect::<Vec<_>>(),
        "{stderr}"
    );
    // Only the program's own copies of the whole buffers went to the device.
    let sent: Vec<u64> = requests
        .iter()
        .filter_map(|r| r.strip_prefix("CopyToDevice device=0 bytes="))
        .map(|n| n.parse().expect("a byte count"))
        .collect();
    assert_eq!(sent, [16, 16, 64, (1 << 20) + 16], "{stderr}");
}

/// Open MPI applies `mpirun -x VAR` to the first application context of an MPMD command only:
/// `mpirun -x LD_LIBRARY_PATH=dist/lib -np 1 ./prog : -np 2 omptarget-mpi-device` gives the
/// program the loader path and the device processes nothing. Their images still load (their
/// `libomptarget.so.19.1` / `.22.1` is met from the device process's own install tree), so the
/// program's kernels run, with either compiler. Every image failed with "the dynamic loader
/// refused the image: libomptarget.so.19.1: cannot open shared object file" before.
#[test]
fn images_load_in_device_processes_whose_environment_lacks_the_loader_path() {
    let exported = format!("LD_LIBRARY_PATH={}", tests::lib_dir().display());
    // The job as a user starts it: LD_LIBRARY_PATH only through -x, for the first context;
    // mpirun's own environment (which local processes inherit) has none.
    let job = |program: &[&std::ffi::OsStr], device: &[&std::ffi::OsStr]| {
        let mut cmd = conformance::mpirun_command();
        cmd.env("LIBOMPTARGET_PLUGINS_TO_LOAD", "mpi")
            .env("OMP_TARGET_OFFLOAD", "mandatory")
            .env("LIBOMPTARGET_HOST_NUM_DEVICES", "2")
            .env_remove("LIBOMPTARGET_DEBUG")
            .env_remove("LD_LIBRARY_PATH")
            .env_remove("LIBOMPTARGET_PLUGIN_PATH")
            .env_remove("OMPI_MCA_mca_base_env_list")
            .args(["-x", &exported, "-np", "1"])
            .args(program)
            .arg(":")
            .args(["-np", "2"])
            .args(device)
            .stdin(Stdio::null());
        cmd
    };
    // The premise: the device processes' environment has no loader path to dist/lib.
    let sh = std::ffi::OsStr::new("sh");
    let c = std::ffi::OsStr::new("-c");
    let probe = output(with_timeout(
        job(
            &[sh, c, "echo program:$LD_LIBRARY_PATH".as_ref()],
            &[sh, c, "echo device:$LD_LIBRARY_PATH".as_ref()],
        ),
        60,
    ));
    let seen = text(&probe.stdout);
    let lib = tests::lib_dir().display().to_string();
    assert!(
        probe.status.success()
            && seen.lines().any(|l| l == format!("program:{lib}"))
            && seen.lines().filter(|l| *l == "device:").count() == 2,
        "this mpirun no longer gives -x to the first context only; the test's premise is \
         gone:\n{seen}\n{}",
        text(&probe.stderr)
    );

    let device = tests::dist().join("bin/omptarget-mpi-device");
    for compiler in tests::COMPILERS {
        let exe = compile(compiler, &["mpi_two_devices.c"], &[]);
        let out = output(with_timeout(
            job(&[exe.as_os_str()], &[device.as_os_str()]),
            120,
        ));
        let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
        assert!(
            out.status.success()
                && stdout.contains("two remote devices: correct")
                && !stderr.contains("cannot open shared object file"),
            "{compiler:?}: {}\nstdout:\n{stdout}\nstderr:\n{stderr}",
            out.status
        );
    }
}

/// Processes whose parent is `parent`, with their command names.
fn children(parent: u32) -> Vec<(u32, String)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // pid (comm) state ppid ...: the name may hold spaces, so split after its ')'.
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        let ppid = stat[close + 1..].split_whitespace().nth(1);
        if ppid.and_then(|p| p.parse::<u32>().ok()) == Some(parent) {
            found.push((pid, stat[open + 1..close].to_string()));
        }
    }
    found
}

/// Where each process is (gdb's backtraces), for a report of a job that does not end.
fn stacks_of(processes: &[&(u32, String)]) -> String {
    let mut out = String::new();
    for (pid, name) in processes {
        let trace = Command::new("gdb")
            .args([
                "-p",
                &pid.to_string(),
                "-batch",
                "-ex",
                "thread apply all bt 16",
            ])
            .output();
        let text = trace.map_or_else(|e| format!("(no gdb: {e})"), |o| text(&o.stdout));
        let frames: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with('#') || l.starts_with("Thread"))
            .collect();
        out += &format!("== {pid} {name}\n{}\n", frames.join("\n"));
    }
    out
}

fn alive(pid: u32) -> bool {
    // A zombie has been reaped by nobody yet but runs nothing.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            !s.rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        })
        .unwrap_or(false)
}

/// A device process killed in the middle of a run ends the job within seconds, with a report,
/// and leaves nothing running.
#[test]
fn a_device_process_killed_mid_run_ends_the_program_within_seconds() {
    kill_a_device_process(false, "mpi_long_run.c", &[]);
}

/// Under `mpirun --enable-recovery` the launcher keeps the job: the plugin notices the dead
/// device process itself (it stops answering liveness checks), the construct fails with that
/// reason (fatal here: offloading is mandatory), and the other device process, whose program
/// is gone, exits on its own.
#[test]
fn with_recovery_the_plugin_reports_a_dead_device_process_and_nothing_is_left() {
    kill_a_device_process(true, "mpi_long_run.c", &[]);
}

/// As above, with 4 MiB copied to and from the device by every region, so that the process
/// may die while the data of a copy is moving: after replying to a copy back, say, and before
/// its data has all arrived. The program's wait for that data must end with the reason too
/// (it waited in MPI_Wait for ever, about one run in ten: gdb showed the program in
/// `PMPI_Wait` after Open MPI's "Read -1, expected 4194304").
#[test]
fn with_recovery_large_copies_with_a_dead_device_process_end_with_the_reason() {
    kill_a_device_process(true, "mpi_long_run.c", &["4194304"]);
}

/// As above, with regions of 600 arguments, whose launch requests are over MPI's eager limit:
/// a send completes only when the device process receives it. Killed after its last reply,
/// the process left the program in `MPI_Send` for ever (7 of 10 runs, gdb: `PMPI_Send`).
#[test]
fn with_recovery_a_request_too_large_to_buffer_for_a_dead_device_process_fails() {
    kill_a_device_process(true, "mpi_wide_run.c", &[]);
}

/// Runs `program` (with `args`) on two device processes, kills the first once it runs, and
/// checks that the job ends with the reason and leaves nothing running.
fn kill_a_device_process(recovery: bool, program: &str, args: &[&str]) {
    let exe = compile(Compiler::Clang19, &[program], &[]);
    // Named per variant: the tests run at once.
    let dir = std::env::temp_dir().join(format!(
        "omptarget-mpi-kill-{}-{recovery}-{program}-{}",
        std::process::id(),
        args.join("-")
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let (out_path, err_path) = (dir.join("stdout"), dir.join("stderr"));
    let env: &[(&str, &str)] = if recovery {
        &[("OMPI_MCA_orte_enable_recovery", "1")]
    } else {
        &[]
    };
    let mut command = vec![exe.as_os_str()];
    command.extend(args.iter().map(std::ffi::OsStr::new));
    let mut cmd = mpi_job_with_args(&command, 2, 1, env);
    cmd.stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap());
    let mut job = tests::retry_while_busy(|| cmd.spawn()).expect("cannot start mpirun");
    let started = Instant::now();
    while !std::fs::read_to_string(&out_path)
        .unwrap_or_default()
        .contains("running on")
    {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the program did not start: {}",
            std::fs::read_to_string(&err_path).unwrap_or_default()
        );
        assert!(job.try_wait().unwrap().is_none(), "the job ended early");
        std::thread::sleep(Duration::from_millis(50));
    }
    let processes = children(job.id());
    let devices: Vec<u32> = processes
        .iter()
        .filter(|(_, name)| name.starts_with("omptarget-mpi-d"))
        .map(|(pid, _)| *pid)
        .collect();
    assert_eq!(
        devices.len(),
        2,
        "device processes of the job: {processes:?}"
    );
    std::thread::sleep(Duration::from_millis(300));
    let killed_at = Instant::now();
    let status = Command::new("kill")
        .args(["-KILL", &devices[0].to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let ended = loop {
        if let Some(status) = job.try_wait().unwrap() {
            break status;
        }
        if killed_at.elapsed() > Duration::from_secs(40) {
            let left: Vec<_> = processes.iter().filter(|(pid, _)| alive(*pid)).collect();
            let stacks = stacks_of(&left);
            let _ = job.kill();
            panic!(
                "the job still runs 40 s after a device process was killed; still running: \
                 {left:?}\n{stacks}\n{}",
                std::fs::read_to_string(&err_path).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let took = killed_at.elapsed();
    let stdout = std::fs::read_to_string(&out_path).unwrap_or_default();
    let stderr = std::fs::read_to_string(&err_path).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&dir);
    // With recovery, mpirun's own status does not say that a process died.
    assert!(
        recovery || !ended.success(),
        "the job reported success:\n{stdout}\n{stderr}"
    );
    assert!(
        !stdout.contains("finished after"),
        "the program ran to its end:\n{stdout}"
    );
    if recovery {
        assert!(
            stderr.contains("MPI device process (rank 1) is gone")
                || stderr.contains("MPI device process (rank 2) is gone"),
            "no report of the dead device process:\n{stderr}"
        );
        // 3 s for the program to notice, 10 s for the other device process.
        assert!(
            took < Duration::from_secs(25),
            "the job took {took:?} to end"
        );
    } else {
        assert!(
            stderr.contains("exited on signal 9") || stderr.contains("killed"),
            "no report of the dead device process:\n{stderr}"
        );
        assert!(
            took < Duration::from_secs(10),
            "the job took {took:?} to end"
        );
    }
    std::thread::sleep(Duration::from_millis(500));
    let left: Vec<_> = processes.iter().filter(|(pid, _)| alive(*pid)).collect();
    assert!(left.is_empty(), "still running after the job: {left:?}");
    println!("a killed device process ended the job in {took:?}");
}

/// Under `mpirun --enable-recovery`, a copy between two device processes one of which died
/// ends with the reason within seconds, both ways: the survivor's half waits on the dead peer
/// only until the program, having found the process dead, tells it so. The survivor then
/// finishes normally, and nothing is left running.
#[test]
fn with_recovery_a_copy_with_a_dead_device_process_ends_with_the_reason() {
    let exe = compile(Compiler::Clang19, &["mpi_peer_kill.c"], &[]);
    let env = [
        ("OMPI_MCA_orte_enable_recovery", "1"),
        ("OMP_TARGET_OFFLOAD", "default"),
    ];
    let started = Instant::now();
    let out = output(with_timeout(mpi_job(&exe, 2, 1, &env), 60));
    let took = started.elapsed();
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    for expected in [
        "copy between the device processes: correct",
        "copy to the dead device process: -1",
        "copy from the dead device process: -1",
        "done",
    ] {
        assert!(stdout.contains(expected), "{expected}:\n{stdout}\n{stderr}");
    }
    assert!(
        stderr.contains("the other device process of the copy (rank 2) is gone"),
        "{stderr}"
    );
    assert!(
        took < Duration::from_secs(30),
        "the job took {took:?}:\n{stdout}\n{stderr}"
    );
    let pids: Vec<u32> = stdout
        .lines()
        .find_map(|l| l.strip_prefix("device processes "))
        .expect("the device processes' pids")
        .split_whitespace()
        .map(|p| p.parse().unwrap())
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        !pids.iter().any(|&pid| alive(pid)),
        "still running after the job: {pids:?}"
    );
}

/// Outside an MPI job, and in a job without device processes, the plugin has no devices and
/// says why; nothing hangs, and a program falls back to the host.
#[test]
fn without_device_processes_the_plugin_has_no_devices_and_says_why() {
    let info = tests::info(&[], &[("LD_LIBRARY_PATH", "")]);
    let listing = text(&info.stdout);
    assert!(
        listing.contains("mpi [loaded]")
            && listing.contains("not started by an MPI launcher (remote devices need: mpirun -np 1 ./prog : -np N omptarget-mpi-device)"),
        "{listing}"
    );

    let mut alone = conformance::mpirun_command();
    alone
        .args(["-np", "1"])
        .arg(tests::dist().join("bin/omptarget-info"))
        .env_remove("LIBOMPTARGET_PLUGINS_TO_LOAD");
    let listing = text(&output(alone).stdout);
    assert!(
        listing.contains("the MPI job runs one application, so it has no device processes"),
        "{listing}"
    );

    let exe = compile(Compiler::Clang19, &["mpi_long_run.c"], &[]);
    let started = Instant::now();
    let out = tests::run(
        &exe,
        &[
            ("LIBOMPTARGET_PLUGINS_TO_LOAD", "mpi"),
            ("OMP_TARGET_OFFLOAD", "mandatory"),
        ],
    );
    assert!(
        !out.status.success(),
        "mandatory offload without devices must fail"
    );
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "took {:?}",
        started.elapsed()
    );
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("not started by an MPI launcher"),
        "{stderr}"
    );

    let device = Command::new(tests::dist().join("bin/omptarget-mpi-device"))
        .output()
        .unwrap();
    assert!(!device.status.success());
    assert!(
        text(&device.stderr).contains("not started by an MPI launcher"),
        "{}",
        text(&device.stderr)
    );
}

/// Device processes with GPU plugins: the conformance suite on remote GPUs, on the emulated
/// CUDA driver and the emulated HSA runtime in the device processes (the programs built with
/// x86-64 twins, whose file the emulators read since the device process is not the program).
#[test]
fn conformance_suite_passes_on_remote_emulated_gpus_over_mpi() {
    let programs = conformance::programs();
    for gpu in [EmulatedGpu::Cuda, EmulatedGpu::Amdgpu] {
        let outcomes = conformance::check_all(
            &programs,
            &[Compiler::Clang19],
            Runtime::OursOverMpi { gpu: Some(gpu) },
            2,
        );
        if let Some(report) = conformance::failures(&outcomes) {
            panic!("{gpu:?}:\n{report}");
        }
        assert!(
            outcomes.len() >= 150,
            "only {} programs ran",
            outcomes.len()
        );
        println!(
            "MPI plugin, device processes with emulated {} GPUs: {} programs passed",
            gpu.arch(),
            outcomes.len()
        );
    }
}

/// A program that uses MPI itself and opens its offloading part after MPI_Init: the plugin
/// shares the program's MPI at MPI_THREAD_MULTIPLE, refuses a lower level with the reason,
/// and in both cases the program's MPI_Finalize returns (the device processes are told to
/// finish when it starts).
#[test]
fn a_program_that_initialised_mpi_itself_shares_it_or_hears_why() {
    let part = compile(
        Compiler::Clang19,
        &["mpi_shared_part.c"],
        &["-fPIC", "-shared"],
    );
    // The program itself has no offloading (no image registers before its main).
    let main = tests::build_dir().join("mpi_shared_main");
    let built = Command::new("clang-19")
        .arg("-O1")
        .arg(tests::program("mpi_shared_main.c"))
        .args(["-ldl", "-l:libmpi.so.40", "-o"])
        .arg(&main)
        .output()
        .expect("clang-19");
    assert!(built.status.success(), "{}", text(&built.stderr));
    for (level, devices) in [("3", 4), ("1", 0)] {
        let with_part = mpi_job_with_args(
            &[main.as_os_str(), part.as_os_str()],
            2,
            2,
            &[("TEST_MPI_THREAD_LEVEL", level)],
        );
        let started = Instant::now();
        let out = output(with_part);
        let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
        assert!(
            out.status.success() && stdout.contains("finalized"),
            "level {level}: {}\n{stdout}\n{stderr}",
            out.status
        );
        assert!(
            stdout.contains(&format!("shared MPI at level {level}: {devices} devices")),
            "level {level}:\n{stdout}\n{stderr}"
        );
        if devices == 0 {
            assert!(stderr.contains("needs MPI_THREAD_MULTIPLE (3)"), "{stderr}");
        }
        assert!(started.elapsed() < Duration::from_secs(60));
    }
}

/// The usual MPI program: offload code in the program itself (its image registers, and the
/// runtime starts, before `main`), `MPI_Init_thread` in `main`. The plugin joins the job inside
/// MPI_Init (an Open MPI hook component): at MPI_THREAD_MULTIPLE its devices appear; at a lower
/// level it hears why there are none; and a program that never calls the runtime after MPI_Init,
/// and finalises at once, still ends, at either level. Without the hook component (a copy of the
/// install tree without `openmpi-components`) a thread of the plugin watches for MPI_Init
/// instead. In every case the job ends on its own.
#[test]
fn a_program_that_initialises_mpi_in_main_gets_the_remote_devices_once_it_has() {
    let exe = compile(
        Compiler::Clang19,
        &["mpi_late_init.c"],
        &["-l:libmpi.so.40"],
    );
    let without_hook = tests::build_dir().join("lib-without-openmpi-components");
    let _ = std::fs::remove_dir_all(&without_hook);
    std::fs::create_dir_all(&without_hook).unwrap();
    for entry in std::fs::read_dir(tests::lib_dir()).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() {
            std::fs::copy(&path, without_hook.join(path.file_name().unwrap())).unwrap();
        }
    }
    let without_hook = without_hook.to_str().unwrap().to_string();
    let hooked = "joins at the bottom of the program's MPI_Init";
    let watched = "a thread watches for MPI_Init";
    /// The environment, what stdout must say, and how the plugin joined.
    type Case<'a> = (&'a [(&'a str, &'a str)], &'a str, &'a str);
    let cases: [Case; 6] = [
        (
            &[("TEST_MPI_THREAD_LEVEL", "3")],
            "late MPI at level 3: 4 devices, 4 ran in another process",
            hooked,
        ),
        (
            &[
                ("TEST_MPI_THREAD_LEVEL", "1"),
                ("OMP_TARGET_OFFLOAD", "default"),
            ],
            "late MPI at level 1: 0 devices, 0 ran in another process",
            hooked,
        ),
        (
            &[("TEST_MPI_THREAD_LEVEL", "3"), ("TEST_NO_OFFLOAD", "1")],
            "finalized",
            hooked,
        ),
        // These two hung before the plugin joined inside MPI_Init.
        (
            &[
                ("TEST_MPI_THREAD_LEVEL", "3"),
                ("TEST_NO_OFFLOAD", "1"),
                ("TEST_FINALIZE_AT_ONCE", "1"),
            ],
            "finalized",
            hooked,
        ),
        (
            &[
                ("TEST_MPI_THREAD_LEVEL", "1"),
                ("TEST_NO_OFFLOAD", "1"),
                ("TEST_FINALIZE_AT_ONCE", "1"),
            ],
            "finalized",
            hooked,
        ),
        (
            &[
                ("TEST_MPI_THREAD_LEVEL", "3"),
                ("TEST_NO_OFFLOAD", "1"),
                ("LD_LIBRARY_PATH", &without_hook),
            ],
            "finalized",
            watched,
        ),
    ];
    for (env, expected, how) in cases {
        let mut env = env.to_vec();
        env.push(("LIBOMPTARGET_DEBUG", "1"));
        let started = Instant::now();
        let out = output(with_timeout(mpi_job(&exe, 2, 2, &env), 60));
        let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
        assert!(
            out.status.success() && stdout.contains("finalized"),
            "{env:?}: {}\n{stdout}\n{stderr}",
            out.status
        );
        assert!(stdout.contains(expected), "{env:?}:\n{stdout}\n{stderr}");
        assert!(stderr.contains(how), "{env:?}:\n{stderr}");
        if env.contains(&("TEST_MPI_THREAD_LEVEL", "1")) {
            assert!(stderr.contains("needs MPI_THREAD_MULTIPLE (3)"), "{stderr}");
        }
        assert!(started.elapsed() < Duration::from_secs(60));
    }
}

/// `cmd` under `timeout SECONDS`, so that a hang fails the test instead of the test run.
fn with_timeout(cmd: Command, seconds: u32) -> Command {
    let mut wrapped = Command::new("timeout");
    wrapped
        .arg(seconds.to_string())
        .arg(cmd.get_program())
        .args(cmd.get_args());
    for (key, value) in cmd.get_envs() {
        match value {
            Some(v) => wrapped.env(key, v),
            None => wrapped.env_remove(key),
        };
    }
    wrapped.stdin(Stdio::null());
    wrapped
}
