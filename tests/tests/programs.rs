//! Real OpenMP programs, compiled by clang-19 and clang-22, run against our install tree.

use tests::*;

#[test]
fn every_construct_with_both_compilers() {
    check_with_every_compiler(&["constructs.c"]);
}

#[test]
fn cpp_classes_templates_and_lambdas() {
    check_with_every_compiler(&["classes.cpp"]);
}

#[test]
fn kernels_with_arguments_on_the_stack() {
    check_with_every_compiler(&["many_args.c"]);
}

#[test]
fn struct_members_and_attached_pointers() {
    check_with_every_compiler(&["structs.c"]);
}

#[test]
fn two_translation_units() {
    check_with_every_compiler(&["tu_main.c", "tu_kernels.c"]);
}

#[test]
fn registered_but_never_launched_initialises_no_device() {
    for compiler in COMPILERS {
        let exe = compile(compiler, &["never_launched.c"], &[]);
        run_and_check(&exe, "never_launched.c", &[]);
        let debug = run(&exe, &[("LIBOMPTARGET_DEBUG", "1")]);
        let log = text(&debug.stderr);
        assert!(log.contains("registered library"), "{log}");
        assert!(
            !log.contains("initialised"),
            "a device was initialised:\n{log}"
        );
    }
}

#[test]
fn device_count_is_configurable() {
    let exe = compile(Compiler::Clang19, &["constructs.c"], &[]);
    let output = run(&exe, &[("LIBOMPTARGET_HOST_NUM_DEVICES", "2")]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(
        text(&output.stdout).contains("num_devices 2"),
        "{}",
        text(&output.stdout)
    );
}

#[test]
fn same_results_as_llvm_runtime() {
    // The same clang-19 binary against LLVM's own libomptarget.so.19.1, as a reference.
    let llvm = std::path::Path::new("/usr/lib/llvm-19/lib/libomptarget.so.19.1");
    assert!(
        llvm.exists(),
        "LLVM 19's runtime (libomp-19-dev) is needed as the reference"
    );
    let exe = compile(Compiler::Clang19, &["constructs.c"], &[]);
    let ours = run(&exe, &[]);
    let theirs = std::process::Command::new(&exe)
        .env("LD_LIBRARY_PATH", "/usr/lib/llvm-19/lib")
        .output()
        .unwrap();
    assert!(
        theirs.status.success(),
        "LLVM's runtime failed: {}",
        text(&theirs.stdout)
    );
    assert_eq!(text(&ours.stdout), text(&theirs.stdout));
}

#[test]
fn exit_reports_copies_and_removals_in_llvms_order() {
    // The construct's last argument is removed from the table at once on the host device, but
    // reported after the others, as LLVM removes them all after the construct's copies.
    let exe = compile(Compiler::Clang19, &["exit_order.c"], &["-g"]);
    // Data transfers (32) and mapping changes (8): the copies back and removals, by variable.
    let env = [("LIBOMPTARGET_INFO", "40")];
    let events = |stderr: &[u8]| -> Vec<String> {
        text(stderr)
            .lines()
            .filter_map(|line| {
                let kind = if line.contains("Copying data from device to host") {
                    "copy back"
                } else if line.contains("Removing map entry") {
                    "remove"
                } else {
                    return None;
                };
                let name = line.rsplit("Name=").next().unwrap_or("").trim();
                Some(format!("{kind} {name}"))
            })
            .collect()
    };
    let ours = run(&exe, &env);
    assert!(ours.status.success(), "{}", text(&ours.stderr));
    let mut theirs = std::process::Command::new(&exe);
    theirs.env("LD_LIBRARY_PATH", "/usr/lib/llvm-19/lib");
    for (k, v) in env {
        theirs.env(k, v);
    }
    let theirs = theirs.output().unwrap();
    assert!(theirs.status.success(), "{}", text(&theirs.stderr));
    let expected = events(&theirs.stderr);
    assert_eq!(expected.len(), 6, "LLVM's lines: {}", text(&theirs.stderr));
    assert_eq!(
        events(&ours.stderr),
        expected,
        "ours:\n{}",
        text(&ours.stderr)
    );
}
