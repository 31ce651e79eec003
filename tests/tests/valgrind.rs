//! A representative subset of the conformance suite under valgrind's memcheck: no invalid
//! reads or writes and no definite leaks (valgrind's error exit code turns either into a
//! failure), besides each program's own checks.

use std::path::{Path, PathBuf};
use std::process::Output;
use tests::conformance::{self, Runtime, Spec};
use tests::Compiler;

/// One program per area of the runtime: mapping rules, pointers, structs, mappers, strided
/// updates, the device API and its tasks, many constructs in flight, threads, C++ lambdas,
/// the information output, and OMPT events (which walk the stack for the call site).
const SUBSET: &[&str] = &[
    "map_types/tofrom_default.c",
    "map_types/firstprivate_many.cpp",
    "ref_counts/nested_data.c",
    "pointers/struct_ptr_attach.c",
    "structs/nested.c",
    "mappers/nested_mapper.c",
    "non_contig/strided_2d.c",
    "device_api/memcpy_async.c",
    "device_api/associate_ptr.c",
    "async/many_in_flight.c",
    "async/depend_chain.c",
    "threads/shared_mapping.c",
    "cpp/lambda_by_ref.cpp",
    "info/all_bits.c",
    "errors/exit_unmapped.c",
    "ompt/trace_constructs.c",
];

/// libomp's idle threads spin for a while (KMP_BLOCKTIME); under valgrind, which runs one
/// thread at a time, spinning threads starve the others. Sleeping at once and fair
/// scheduling keep the runs short.
const VALGRIND: &[&str] = &[
    "env",
    "KMP_BLOCKTIME=0",
    "valgrind",
    "--fair-sched=yes",
    "-q",
    "--leak-check=full",
    "--show-leak-kinds=definite",
    "--errors-for-leak-kinds=definite",
    "--error-exitcode=99",
];

#[test]
fn representative_programs_are_clean_under_memcheck() {
    let probe = std::process::Command::new(VALGRIND[2])
        .arg("--version")
        .output();
    assert!(
        probe.is_ok_and(|o| o.status.success()),
        "valgrind is needed (.ci/install-deps.sh installs it)"
    );
    let mut failures = Vec::new();
    for name in SUBSET {
        let path = conformance::suite_dir().join(name);
        let spec = Spec::parse(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
        for compiler in [Compiler::Clang19, Compiler::Clang22] {
            if !spec.runs_with(compiler) {
                continue;
            }
            let outcome = conformance::compile(&spec, compiler)
                .and_then(|exe| conformance::run_under(&spec, &exe, Runtime::Ours, VALGRIND));
            if let Err(e) = outcome {
                failures.push(format!("{name} [{}]: {e}", compiler.tag()));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// The per-construct path allocates no heap memory once warm: valgrind's count of the C
/// allocator's allocations barely differs between 50 and 550 empty target regions. (libomp's
/// threads sometimes make a few allocations more or less in a run, whatever the number of
/// regions; one allocation per region would add 500.) They are counted from valgrind's trace
/// of the allocator's calls: its heap summary also counts the memory pool's blocks, which the
/// runtime tells memcheck about (one per mapped region here), and which cost no allocation.
#[test]
fn target_regions_allocate_nothing_per_construct() {
    let exe = tests::compile(Compiler::Clang19, &["region_loop.c"], &[]);
    let allocations = |n: &str| -> usize {
        let out = std::process::Command::new(VALGRIND[2])
            .args(["--fair-sched=yes", "--trace-malloc=yes"])
            .arg(&exe)
            .arg(n)
            .env("KMP_BLOCKTIME", "0")
            .env("LD_LIBRARY_PATH", tests::lib_dir())
            .output()
            .expect("cannot run valgrind");
        let stderr = tests::text(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        assert!(
            stderr.contains("total heap usage: "),
            "no heap summary in:\n{stderr}"
        );
        // `--PID-- malloc(40) = 0x...`, `realloc(0x...,80) = 0x...`, `free(0x...)`: each
        // allocation's trace ends with its result.
        stderr
            .lines()
            .filter(|l| l.starts_with("--"))
            .map(|l| l.matches(") = ").count())
            .sum()
    };
    let (few, many) = (allocations("50"), allocations("550"));
    assert!(
        few > 0 && many.abs_diff(few) < 50,
        "{few} heap allocations for 50 regions, {many} for 550"
    );
}

/// memcheck with the suite's leak settings, exiting 9 on any error, with `lib_dir` first on
/// the loader's path.
fn memcheck(exe: &Path, args: &[&str], lib_dir: &Path) -> Output {
    std::process::Command::new("valgrind")
        .args([
            "--fair-sched=yes",
            "-q",
            "--leak-check=full",
            "--show-leak-kinds=definite",
            "--errors-for-leak-kinds=definite",
            "--error-exitcode=9",
            // Deep enough for the allocating stack to reach the program's `main`.
            "--num-callers=40",
        ])
        .arg(exe)
        .args(args)
        .env("KMP_BLOCKTIME", "0")
        .env("LD_LIBRARY_PATH", lib_dir)
        .output()
        .expect("cannot run valgrind (.ci/install-deps.sh installs it)")
}

/// LLVM's own runtime of the release whose clang built a program.
fn llvm_lib_dir(compiler: Compiler) -> PathBuf {
    let (dir, soname) = match compiler {
        Compiler::Clang19 => (
            PathBuf::from(conformance::LLVM19_LIB_DIR),
            "libomptarget.so.19.1",
        ),
        Compiler::Clang22 => (tests::llvm22_lib_dir(), "libomptarget.so.22.1"),
    };
    assert!(
        dir.join(soname).exists(),
        "LLVM's runtime is not at {} (.ci/install-deps.sh installs it)",
        dir.display()
    );
    dir
}

/// The stack memcheck gives for the block an invalid address of `stderr` lies just past:
/// the frames under its `Address ... 0 bytes after a block of size <size> ...` line.
fn allocation_stack(stderr: &str, size: u64) -> Vec<&str> {
    let block = format!(" is 0 bytes after a block of size {size} ");
    stderr
        .lines()
        .skip_while(|l| !l.contains(&block))
        .skip(1)
        .take_while(|l| l.contains(" at 0x") || l.contains(" by 0x"))
        .collect()
}

/// A kernel that writes one element past a mapped array of 10 ints (as three Fortran tests of
/// LLVM 22's suite do) is an error under memcheck, as with LLVM's runtime, whose host plugin
/// gives each mapping its own malloc: our runtime carves small mappings from pooled slabs,
/// and tells memcheck about the pool's blocks (memory_pool.rs), so that the write is reported
/// just past the 40-byte block, with the stack that mapped the array, instead of landing
/// silently in the slab's spare room. LLVM's runtime of the same release judges the program.
#[test]
fn a_kernel_writing_past_a_pooled_mapping_is_reported() {
    let mut failures = Vec::new();
    for compiler in tests::COMPILERS {
        let exe = tests::compile(compiler, &["kernel_overrun.c"], &[]);
        let tag = compiler.tag();
        for (runtime, lib_dir, block) in [
            ("LLVM's runtime", llvm_lib_dir(compiler), "alloc'd"),
            ("ours", tests::lib_dir(), "client-defined"),
        ] {
            let out = memcheck(&exe, &[], &lib_dir);
            let stderr = tests::text(&out.stderr);
            let stack = allocation_stack(&stderr, 40);
            let reported = out.status.code() == Some(9)
                && stderr.contains("Invalid write of size 4")
                && stderr.contains(&format!("0 bytes after a block of size 40 {block}"))
                && stack.iter().any(|f| f.contains("libomptarget.so"))
                && stack.iter().any(|f| f.contains("main"));
            if !reported {
                failures.push(format!(
                    "[{tag}] {runtime}: {:?}, no invalid write past the mapping with its \
                     allocation stack:\n{stderr}",
                    out.status
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// Without the overrun the same program is clean under memcheck, and so is a loop of target
/// regions that maps and unmaps a scalar each time (pool blocks given back and handed out
/// again): the pool's annotations raise no error of their own (its bookkeeping lives outside
/// the slabs, which memcheck sees as no-access between blocks).
#[test]
fn pooled_mappings_raise_no_error_of_their_own() {
    let mut failures = Vec::new();
    for compiler in tests::COMPILERS {
        for (source, args) in [("kernel_overrun.c", "ok"), ("region_loop.c", "200")] {
            let exe = tests::compile(compiler, &[source], &[]);
            let out = memcheck(&exe, &[args], &tests::lib_dir());
            let stderr = tests::text(&out.stderr);
            if !out.status.success() || stderr.contains("==") {
                failures.push(format!(
                    "{source} {args} [{}]: {:?}\n{stderr}",
                    compiler.tag(),
                    out.status
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
