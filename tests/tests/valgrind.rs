//! A representative subset of the conformance suite under valgrind's memcheck: no invalid
//! reads or writes and no definite leaks (valgrind's error exit code turns either into a
//! failure), besides each program's own checks.

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

/// The per-construct path allocates no heap memory once warm: valgrind's count of heap
/// allocations barely differs between 50 and 550 empty target regions. (libomp's threads
/// sometimes make a few allocations more or less in a run, whatever the number of regions;
/// one allocation per region would add 500.)
#[test]
fn target_regions_allocate_nothing_per_construct() {
    let exe = tests::compile(Compiler::Clang19, &["region_loop.c"], &[]);
    let allocations = |n: &str| -> i64 {
        let out = std::process::Command::new(VALGRIND[2])
            .args(["--fair-sched=yes"])
            .arg(&exe)
            .arg(n)
            .env("KMP_BLOCKTIME", "0")
            .env("LD_LIBRARY_PATH", tests::lib_dir())
            .output()
            .expect("cannot run valgrind");
        let stderr = tests::text(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        stderr
            .lines()
            .find_map(|l| l.split("total heap usage: ").nth(1))
            .and_then(|rest| rest.split(" allocs").next())
            .and_then(|count| count.replace(',', "").parse().ok())
            .unwrap_or_else(|| panic!("no heap summary in:\n{stderr}"))
    };
    let (few, many) = (allocations("50"), allocations("550"));
    assert!(
        (many - few).abs() < 50,
        "{few} heap allocations for 50 regions, {many} for 550"
    );
}
