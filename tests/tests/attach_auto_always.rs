//! `LIBOMPTARGET_TREAT_ATTACH_AUTO_AS_ALWAYS` (LLVM 22): clang-22 marks each pointer attachment
//! of `map(p[0:n])` as an ATTACH entry, which by default attaches only when the construct newly
//! mapped the pointer or the pointee; the variable makes every one attach. The same clang-22
//! binary runs against our runtime and LLVM 22's, with and without the variable.

use tests::conformance::{self, Runtime, Spec};
use tests::{text, Compiler};

const PROGRAM: &str = "pointers/attach_auto_rule.c";

/// What the program prints when every attachment happens.
const ALWAYS: [&str; 4] = [
    "both mapped before, pointer null when mapped: x",
    "pointee new: z",
    "both mapped before, re-pointed: y",
    "pointer new: y",
];

fn spec() -> Spec {
    Spec::parse(&conformance::suite_dir().join(PROGRAM)).unwrap()
}

fn run_ours(spec: &Spec, exe: &std::path::Path) -> String {
    if let Err(e) = conformance::run(spec, exe, Runtime::Ours) {
        panic!("{PROGRAM} with {:?}: {e}", spec.env);
    }
    let mut cmd = std::process::Command::new(exe);
    cmd.env("LD_LIBRARY_PATH", tests::lib_dir())
        .env_remove("LIBOMPTARGET_TREAT_ATTACH_AUTO_AS_ALWAYS")
        .envs(spec.env.iter().map(|(k, v)| (k, v)));
    let out = tests::retry_while_busy(|| cmd.output()).unwrap();
    text(&out.stdout)
}

fn run_llvm22(exe: &std::path::Path, setting: Option<&str>) -> String {
    let mut cmd = std::process::Command::new(exe);
    cmd.env(
        "LD_LIBRARY_PATH",
        format!("{}:/usr/lib/llvm-19/lib", tests::llvm22_lib_dir().display()),
    )
    .env_remove("LIBOMPTARGET_TREAT_ATTACH_AUTO_AS_ALWAYS")
    .env_remove("OMP_TARGET_OFFLOAD");
    if let Some(value) = setting {
        cmd.env("LIBOMPTARGET_TREAT_ATTACH_AUTO_AS_ALWAYS", value);
    }
    let out = tests::retry_while_busy(|| cmd.output()).unwrap();
    assert!(out.status.success(), "LLVM 22: {}", text(&out.stderr));
    text(&out.stdout)
}

#[test]
fn auto_attaches_only_what_the_construct_newly_mapped_and_always_attaches_everything() {
    let spec = spec();
    let exe = conformance::compile(&spec, Compiler::Clang22).unwrap_or_else(|e| panic!("{e}"));
    // The default: the program's EXPECT lines are the auto rule.
    let auto = run_ours(&spec, &exe);
    let mut always = spec.clone();
    always.env.push((
        "LIBOMPTARGET_TREAT_ATTACH_AUTO_AS_ALWAYS".into(),
        "1".into(),
    ));
    always.expect = ALWAYS.iter().map(|s| s.to_string()).collect();
    let every = run_ours(&always, &exe);
    assert_ne!(auto, every, "the setting changed nothing");
    // LLVM's boolean spellings; anything else keeps the default.
    for (value, expected) in [("TRUE", &every), ("on", &every), ("0", &auto), ("x", &auto)] {
        let mut s = spec.clone();
        s.env.push((
            "LIBOMPTARGET_TREAT_ATTACH_AUTO_AS_ALWAYS".into(),
            value.into(),
        ));
        s.expect.clear();
        assert_eq!(&run_ours(&s, &exe), expected, "with the value {value:?}");
    }
    // LLVM 22's runtime, the reference, prints the same.
    let llvm22 = tests::llvm22_lib_dir().join("libomptarget.so.22.1");
    assert!(llvm22.exists(), "LLVM 22's runtime is the reference");
    assert_eq!(run_llvm22(&exe, None), auto, "auto differs from LLVM 22");
    assert_eq!(
        run_llvm22(&exe, Some("1")),
        every,
        "always differs from LLVM 22"
    );
}
