//! `OFFLOAD_TRACK_ALLOCATION_TRACES`: with it, a GPU plugin reports a double free, a free of an
//! address it never allocated and a free of the wrong kind with the stacks of the allocation
//! and the frees, and stops the program (SIGABRT, as LLVM 22's plugins); a memory fault on the
//! emulated HSA runtime names the freed allocation the kernel wrote into. Through our runtime
//! and plugins on both emulated drivers, with a held-out program (tests/programs/emu_bad_free.c,
//! built for sm_90 and gfx90a with x86-64 twins). LLVM 22's own sanitizer tests run in
//! llvm_suite.rs.

use tests::conformance::EmulatedGpu;
use tests::emulated;

const PROGRAM: &str = "emu_bad_free.c";
const TRACK: &str = "OFFLOAD_TRACK_ALLOCATION_TRACES";

fn build(gpu: EmulatedGpu) -> std::path::PathBuf {
    match gpu {
        EmulatedGpu::Cuda => tests::compile_cuda_twin(PROGRAM),
        EmulatedGpu::Amdgpu => tests::compile_amdgpu_twin(PROGRAM),
    }
}

/// Runs the program with `mistake`, tracked: it must abort after `start` with every part of
/// `report` on stderr, in order.
fn assert_reported(gpu: EmulatedGpu, mistake: &str, report: &[&str]) {
    let exe = build(gpu);
    let (code, stdout, stderr) = emulated::run(gpu, &exe, &[mistake], &[(TRACK, "1".into())]);
    assert_eq!(
        code, None,
        "{gpu:?} {mistake}: the program must be stopped by SIGABRT\n{stdout}{stderr}"
    );
    assert!(
        stdout.contains("start") && !stdout.contains("done"),
        "{stdout}"
    );
    let mut rest = stderr.as_str();
    for part in report {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => panic!("{gpu:?} {mistake}: '{part}' missing or out of order in:\n{stderr}"),
        }
    }
}

#[test]
fn a_double_free_names_both_frees_and_the_allocation() {
    for gpu in [EmulatedGpu::Cuda, EmulatedGpu::Amdgpu] {
        assert_reported(
            gpu,
            "double",
            &[
                "OFFLOAD ERROR: double-free of device memory: 0x",
                "    #0 dataDelete (offload plugin)\n    #1 omp_target_free\n    #2 free_twice",
                "main",
                "Last deallocation:\n    #0 dataDelete (offload plugin)\n    #1 omp_target_free\n    #2 free_twice",
                // 64 bytes: a block the runtime's pool would serve, were tracking off.
                "Last allocation of size 64 -> device pointer 0x",
                "    #0 dataAlloc (offload plugin)\n    #1 omp_target_alloc\n    #2 free_twice",
            ],
        );
    }
}

#[test]
fn a_free_of_an_address_never_allocated_is_reported() {
    for gpu in [EmulatedGpu::Cuda, EmulatedGpu::Amdgpu] {
        assert_reported(
            gpu,
            "foreign",
            &[
                "OFFLOAD ERROR: deallocation of non-allocated device memory: 0x",
                "    #0 dataDelete (offload plugin)\n    #1 omp_target_free\n    #2 free_a_host_address",
            ],
        );
    }
}

#[test]
fn a_free_of_the_wrong_kind_names_the_allocation() {
    for gpu in [EmulatedGpu::Cuda, EmulatedGpu::Amdgpu] {
        assert_reported(
            gpu,
            "kind",
            &[
                "OFFLOAD ERROR: deallocation requires device memory but allocation was pinned \
                 host memory: 0x",
                "#1 omp_target_free\n    #2 free_pinned_as_device",
                "Last allocation of size 64 -> device pointer 0x",
                "#1 llvm_omp_target_alloc_host\n    #2 free_pinned_as_device",
            ],
        );
    }
}

/// The emulated GPU faults on the freed page; the report names the allocation it was in.
#[test]
fn a_write_after_free_names_the_freed_allocation() {
    let gpu = EmulatedGpu::Amdgpu;
    assert_reported(
        gpu,
        "use-after-free",
        &[
            "OFFLOAD ERROR: memory access fault by GPU node",
            "points into prior host-issued allocation:\nLast deallocation:\n",
            "#1 omp_target_free\n    #2 write_after_free",
            "Last allocation of size 1048576 -> device pointer 0x",
            "#1 omp_target_alloc\n    #2 write_after_free",
            "'omp target in write_after_free @",
        ],
    );
    // Untracked, the report says how to track.
    let exe = build(gpu);
    let (code, _, stderr) = emulated::run(gpu, &exe, &["use-after-free"], &[]);
    assert_eq!(code, None, "{stderr}");
    assert!(
        stderr.contains("Use 'OFFLOAD_TRACK_ALLOCATION_TRACES=true' to track device allocations"),
        "{stderr}"
    );
}

/// Tracking changes nothing for a program that frees correctly.
#[test]
fn correct_frees_run_as_before_when_tracked() {
    for gpu in [EmulatedGpu::Cuda, EmulatedGpu::Amdgpu] {
        let exe = build(gpu);
        for env in [vec![], vec![(TRACK, "1".to_string())]] {
            let (code, stdout, stderr) = emulated::run(gpu, &exe, &["loop", "20"], &env);
            assert_eq!(code, Some(0), "{gpu:?} {env:?}: {stdout}{stderr}");
            assert!(stdout.contains("done"), "{stdout}");
        }
    }
}
