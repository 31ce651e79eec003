//! LLVM IR (bitcode) device images, as clang builds them with `-fopenmp-target-jit`: LLVM's
//! runtime compiles them when it loads them (tuned by the `LIBOMPTARGET_JIT_*` variables); ours
//! links no LLVM, so it refuses them, saying so once, and the program goes on with its other
//! images (here its own host image, which runs its region).

use std::path::PathBuf;
use std::process::Command;
use tests::{build_dir, compile, lib_dir, retry_while_busy, text, Compiler};

const SAID_ONCE: &str = "JIT compilation of LLVM IR images is not supported";
const PER_PLUGIN: &str = "an LLVM IR (bitcode) image, which needs JIT compilation: not supported";

/// Real bitcode of a small x86-64 module, and bytes that only start with bitcode's magic.
fn images() -> (PathBuf, PathBuf) {
    let dir = build_dir().join("llvm-ir-images");
    std::fs::create_dir_all(&dir).unwrap();
    let source = dir.join("kernel.c");
    std::fs::write(&source, "int kernel(int x) { return x + 1; }\n").unwrap();
    let bitcode = dir.join("kernel.bc");
    let out = Command::new("clang-19")
        .args(["-c", "-emit-llvm", "-O1", "--target=x86_64-pc-linux-gnu"])
        .arg(&source)
        .arg("-o")
        .arg(&bitcode)
        .output()
        .expect("clang-19");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let magic = dir.join("magic.bc");
    std::fs::write(&magic, b"BC\xC0\xDE\x35\x14\x00\x00\x05\x00\x00\x00").unwrap();
    (bitcode, magic)
}

#[test]
fn bitcode_images_are_refused_with_a_message_saying_jit_is_not_supported() {
    let exe = compile(Compiler::Clang19, &["bitcode_image.c"], &[]);
    let (bitcode, magic) = images();
    for (image, triple) in [
        (&bitcode, "x86_64-pc-linux-gnu"),
        (&bitcode, "bare"),
        (&magic, "amdgcn-amd-amdhsa"),
        (&magic, "nvptx64-nvidia-cuda"),
    ] {
        let mut cmd = Command::new(&exe);
        cmd.arg(image)
            .arg(triple)
            .env("LD_LIBRARY_PATH", lib_dir())
            .env_remove("OMP_TARGET_OFFLOAD")
            .env_remove("LIBOMPTARGET_DEBUG")
            .env_remove("LIBOMPTARGET_PLUGINS_TO_LOAD");
        let out = retry_while_busy(|| cmd.output()).unwrap();
        let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
        let what = format!("{} as {triple}:\n{stdout}{stderr}", image.display());
        assert!(out.status.success(), "{what}");
        assert!(
            stdout.contains("devices=4 region ran on a device"),
            "{what}"
        );
        assert_eq!(stderr.matches(SAID_ONCE).count(), 1, "{what}");
        assert!(stderr.contains(PER_PLUGIN), "{what}");
        assert!(stderr.contains("-fopenmp-target-jit"), "{what}");
    }
}
