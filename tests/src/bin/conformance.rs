//! Runs conformance programs by hand: `conformance [--llvm] [--compiler clang19|clang22] [-j N]
//! [FILE|DIR ...]`. Prints one line per program and compiler; exits 1 if any failed.
//! `--llvm` runs the clang-19 binaries against LLVM 19's runtime, the reference.
//! `--emu-cuda` (`--emu-cuda-delay`: with a 200 us delay per stream operation) runs programs
//! built for sm_90 with an x86-64 twin through our CUDA plugin on the emulated CUDA driver;
//! `--emu-cuda-llvm` runs them through LLVM 19's CUDA plugin on it. `--emu-hsa`,
//! `--emu-hsa-delay` and `--emu-hsa-llvm` do the same for gfx90a on the emulated HSA runtime.
//! `--mpi` runs them under `mpirun` on remote devices through the MPI plugin;
//! `--mpi-emu-cuda` and `--mpi-emu-hsa` with device processes whose devices are emulated GPUs.
//! `--soak N` runs each program N times instead (without paths: the soak's programs, those
//! whose failures depend on timing), each run limited to `--limit S` seconds (default 60); a
//! run past it is reported as hung with the stacks of all its threads. Prints one line per
//! program and compiler with its counts.

use tests::conformance::{self, EmulatedGpu, Runtime};
use tests::Compiler;

fn ours_on(gpu: EmulatedGpu, delay_us: u32) -> Runtime {
    Runtime::OursOnEmulator { gpu, delay_us }
}

fn main() {
    let mut runtime = Runtime::Ours;
    let mut compilers = tests::COMPILERS.to_vec();
    let mut jobs = 2;
    let mut paths = Vec::new();
    let mut soak_runs = None;
    let mut limit = 60;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--llvm" => runtime = Runtime::Llvm19,
            "--emu-cuda" => runtime = ours_on(EmulatedGpu::Cuda, 0),
            "--emu-cuda-delay" => runtime = ours_on(EmulatedGpu::Cuda, 200),
            "--emu-cuda-llvm" => {
                runtime = Runtime::Llvm19OnEmulator {
                    gpu: EmulatedGpu::Cuda,
                }
            }
            "--emu-hsa" => runtime = ours_on(EmulatedGpu::Amdgpu, 0),
            "--emu-hsa-delay" => runtime = ours_on(EmulatedGpu::Amdgpu, 200),
            "--emu-hsa-llvm" => {
                runtime = Runtime::Llvm19OnEmulator {
                    gpu: EmulatedGpu::Amdgpu,
                }
            }
            "--mpi" => runtime = Runtime::OursOverMpi { gpu: None },
            "--mpi-emu-cuda" => {
                runtime = Runtime::OursOverMpi {
                    gpu: Some(EmulatedGpu::Cuda),
                }
            }
            "--mpi-emu-hsa" => {
                runtime = Runtime::OursOverMpi {
                    gpu: Some(EmulatedGpu::Amdgpu),
                }
            }
            "--compiler" => {
                compilers = match args.next().as_deref() {
                    Some("clang19") => vec![Compiler::Clang19],
                    Some("clang22") => vec![Compiler::Clang22],
                    _ => usage(),
                }
            }
            "-j" => {
                jobs = args
                    .next()
                    .and_then(|j| j.parse().ok())
                    .unwrap_or_else(|| usage())
            }
            "--soak" => soak_runs = Some(number(args.next())),
            "--limit" => limit = number(args.next()) as u64,
            "-h" | "--help" => usage(),
            path => paths.push(std::path::PathBuf::from(path)),
        }
    }
    if runtime != Runtime::Ours && runtime != (Runtime::OursOverMpi { gpu: None }) {
        compilers = vec![Compiler::Clang19];
    }
    let mut programs = Vec::new();
    if paths.is_empty() {
        programs = match soak_runs {
            Some(_) => conformance::soak_programs(),
            None => conformance::programs(),
        };
    }
    for path in paths {
        let path = std::fs::canonicalize(&path).unwrap_or(path);
        if path.is_dir() {
            programs.extend(
                conformance::programs()
                    .into_iter()
                    .filter(|p| p.starts_with(&path)),
            );
        } else {
            programs.push(path);
        }
    }
    if let Some(runs) = soak_runs {
        soak(&programs, &compilers, runtime, runs, jobs, limit);
    }
    let outcomes = conformance::check_all(&programs, &compilers, runtime, jobs);
    for o in &outcomes {
        let verdict = if o.result.is_ok() { "PASS" } else { "FAIL" };
        println!("{verdict} {} [{}]", o.name, o.compiler.tag());
    }
    match conformance::failures(&outcomes) {
        Some(report) => {
            println!("\n{report}");
            std::process::exit(1);
        }
        None => println!("\nall {} checks passed ({runtime:?})", outcomes.len()),
    }
}

fn soak(
    programs: &[std::path::PathBuf],
    compilers: &[Compiler],
    runtime: Runtime,
    runs: usize,
    jobs: usize,
    limit: u64,
) -> ! {
    let limit = std::time::Duration::from_secs(limit);
    let mut soaked = Vec::new();
    for &compiler in compilers {
        soaked.extend(conformance::soak(
            programs, compiler, runtime, runs, jobs, limit,
        ));
    }
    for s in &soaked {
        println!(
            "{} {} [{}]: {} of {} runs passed, {} hung",
            if s.passed == s.runs && s.runs > 0 {
                "PASS"
            } else {
                "FAIL"
            },
            s.name,
            s.compiler.tag(),
            s.passed,
            s.runs,
            s.hung
        );
    }
    let (total, passed, hung) = soaked.iter().fold((0, 0, 0), |(t, p, h), s| {
        (t + s.runs, p + s.passed, h + s.hung)
    });
    println!(
        "\nsoak ({runtime:?}): {} programs, {total} runs, {passed} passed, {} failed, {hung} hung",
        soaked.len(),
        total - passed
    );
    match conformance::soak_failures(&soaked) {
        Some(report) => {
            println!("\n{report}");
            std::process::exit(1)
        }
        None => std::process::exit(0),
    }
}

fn number(arg: Option<String>) -> usize {
    arg.and_then(|n| n.parse().ok()).unwrap_or_else(|| usage())
}

fn usage() -> ! {
    eprintln!("usage: conformance [--llvm|--emu-cuda|--emu-cuda-delay|--emu-cuda-llvm|--emu-hsa|--emu-hsa-delay|--emu-hsa-llvm|--mpi|--mpi-emu-cuda|--mpi-emu-hsa] [--compiler clang19|clang22] [-j N] [--soak N [--limit S]] [FILE|DIR ...]");
    std::process::exit(2)
}
