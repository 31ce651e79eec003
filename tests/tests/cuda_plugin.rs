//! The CUDA plugin without a GPU: it loads, reports zero devices with the reason when there is
//! no driver (or a driver that fails), programs with sm_90 images fall back or fail as
//! OMP_TARGET_OFFLOAD says, and real cubins built here are read correctly.

use gpu_plugin::{ExecMode, KernelEnvironment};
use omptarget_rtl_cuda::image::{self, ImageKind, SmVersion, SymbolTable};
use std::path::{Path, PathBuf};
use std::process::Command;
use tests::*;

fn sm90_program() -> PathBuf {
    compile_nvptx("nvptx_offload.c", "sm_90")
}

/// A directory holding the fake driver as `libcuda.so.1` (see tests/programs/fake_libcuda.c).
fn fake_driver(variant: &str, flags: &[&str]) -> PathBuf {
    let dir = build_dir().join(format!("fake-cuda-{variant}"));
    std::fs::create_dir_all(&dir).unwrap();
    let mut cc = Command::new("cc");
    cc.args(["-shared", "-fPIC"])
        .arg(program("fake_libcuda.c"))
        .args(flags);
    assert!(outputs::build(cc, &dir.join("libcuda.so.1"))
        .unwrap()
        .status
        .success());
    dir
}

fn with_fake(dir: &Path) -> String {
    format!("{}:{}", lib_dir().display(), dir.display())
}

/// The cuda plugin's entry in omptarget-info's listing (its line and the indented ones below).
fn cuda_note(out: &std::process::Output) -> String {
    let stdout = text(&out.stdout);
    let mut lines = stdout.lines().skip_while(|l| !l.starts_with("  cuda ["));
    let first = lines
        .next()
        .unwrap_or_else(|| panic!("no cuda plugin in:\n{stdout}"));
    let rest = lines.take_while(|l| l.starts_with("    "));
    std::iter::once(first)
        .chain(rest)
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn without_a_driver_the_plugin_loads_with_zero_devices_and_says_why() {
    let out = info(&[], &[]);
    assert!(out.status.success());
    let cuda = cuda_note(&out);
    assert!(cuda.contains("cuda [loaded]"), "{cuda}");
    assert!(cuda.contains("devices: 0"), "{cuda}");
    assert!(cuda.contains("libcuda.so.1 not found"), "{cuda}");
    assert!(cuda.contains("no NVIDIA driver is installed"), "{cuda}");
}

#[test]
fn a_failing_or_old_driver_gives_zero_devices_with_its_error() {
    let fake = fake_driver("plain", &[]);
    let path = with_fake(&fake);
    let mut cmd_env = vec![
        ("LD_LIBRARY_PATH", path.as_str()),
        ("FAKE_CUDA_INIT", "100"),
    ];
    let cuda = cuda_note(&info(&[], &cmd_env));
    assert!(cuda.contains("devices: 0"), "{cuda}");
    assert!(
        cuda.contains("cuInit failed: CUDA_ERROR_NO_DEVICE (100)")
            && cuda.contains("no NVIDIA GPU is visible"),
        "{cuda}"
    );
    cmd_env[1] = ("FAKE_CUDA_INIT", "999");
    let cuda = cuda_note(&info(&[], &cmd_env));
    assert!(
        cuda.contains("cuInit failed: CUDA_ERROR_UNKNOWN (999)"),
        "{cuda}"
    );
    assert!(cuda.contains("the driver could not start"), "{cuda}");
    cmd_env[1] = ("FAKE_CUDA_INIT", "0");
    let cuda = cuda_note(&info(&[], &cmd_env));
    assert!(cuda.contains("reports no CUDA devices"), "{cuda}");
    assert!(
        cuda.contains(&fake.join("libcuda.so.1").display().to_string()),
        "{cuda}"
    );

    let old = fake_driver("old", &["-DFAKE_CUDA_OLD_DRIVER"]);
    let path = with_fake(&old);
    let cuda = cuda_note(&info(&[], &[("LD_LIBRARY_PATH", path.as_str())]));
    assert!(cuda.contains("has no cuMemcpyPeerAsync"), "{cuda}");
    assert!(cuda.contains("the driver is too old"), "{cuda}");
}

#[test]
fn sm90_programs_fall_back_or_fail_as_the_offload_policy_says() {
    let exe = sm90_program();
    // Default policy: no device runs the image, the regions run on the host.
    let out = run(&exe, &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim(), "x=6 sum=4950");
    // LIBOMPTARGET_DEBUG says why the CUDA plugin has no devices.
    let out = run(&exe, &[("LIBOMPTARGET_DEBUG", "1")]);
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("cuda plugin: 0 devices: libcuda.so.1 not found"),
        "{stderr}"
    );
    // Mandatory: LLVM's messages, naming the image's architecture.
    for plugins in ["cuda", "cuda,host"] {
        let out = run(
            &exe,
            &[
                ("OMP_TARGET_OFFLOAD", "mandatory"),
                ("LIBOMPTARGET_PLUGINS_TO_LOAD", plugins),
            ],
        );
        assert!(!out.status.success());
        let stderr = text(&out.stderr);
        for line in [
            "omptarget error: No images found compatible with the installed hardware. Found 1 image(s): (sm_90)",
            "omptarget fatal error 1: failure of target construct while offloading is mandatory",
        ] {
            assert!(stderr.contains(line), "missing '{line}' in:\n{stderr}");
        }
    }
    // Disabled: runs on the host without touching the plugin's devices.
    let out = run(&exe, &[("OMP_TARGET_OFFLOAD", "disabled")]);
    assert!(out.status.success(), "{}", text(&out.stderr));
}

/// The sm_90 cubin embedded in a program: the `.llvm.offloading` section holds LLVM's
/// offload-binary container.
fn embedded_cubin(exe: &Path) -> Vec<u8> {
    use object::{Object, ObjectSection};
    let bytes = std::fs::read(exe).unwrap();
    let file = object::File::parse(&*bytes).unwrap();
    let section = file
        .section_by_name(".llvm.offloading")
        .expect("no .llvm.offloading section");
    let data = section.data().unwrap();
    let image = omptarget_core::offload_binary::unwrap(data).unwrap();
    assert_eq!(image.triple, "nvptx64-nvidia-cuda");
    assert_eq!(image.arch, "sm_90");
    image.bytes.to_vec()
}

#[test]
fn real_cubins_are_recognised_checked_and_read() {
    let cubin = embedded_cubin(&sm90_program());
    let kind = image::classify(&cubin).unwrap();
    assert_eq!(kind, ImageKind::Cubin { sm: SmVersion(90) });
    // A real cubin passes the layout check the plugin makes before the driver sees it.
    assert_eq!(
        offload_image::elf_layout::check(&cubin, offload_image::elf_layout::Addresses::Unused),
        Ok(())
    );
    // Same architecture, or a newer minor of the same major: runs.
    assert!(image::compatible(&kind, SmVersion(90)).is_ok());
    assert!(image::compatible(&kind, SmVersion(91)).is_ok());
    // Older device: refused, naming both.
    let why = image::compatible(&kind, SmVersion(80)).unwrap_err();
    assert!(
        why.contains("built for sm_90") && why.contains("(sm_80)"),
        "{why}"
    );
    // Another major architecture: refused.
    let why = image::compatible(&kind, SmVersion(100)).unwrap_err();
    assert!(why.contains("sm_90") && why.contains("sm_100"), "{why}");

    let symbols = SymbolTable::read(&cubin).unwrap();
    let kernels: Vec<&str> = symbols.functions().map(|f| f.name.as_str()).collect();
    let plain = kernels
        .iter()
        .find(|k| k.starts_with("__omp_offloading_") && k.ends_with("_main_l14"))
        .unwrap_or_else(|| panic!("no kernel for line 14 in {kernels:?}"));
    let combined = kernels
        .iter()
        .find(|k| k.starts_with("__omp_offloading_") && k.ends_with("_main_l16"))
        .unwrap_or_else(|| panic!("no kernel for line 16 in {kernels:?}"));
    // The declare-target global, with its initial value.
    let scale = symbols.find("scale").expect("no global 'scale'");
    assert!(!scale.is_function);
    assert_eq!(scale.size, 4);
    assert_eq!(scale.initial.as_deref(), Some(&5i32.to_le_bytes()[..]));
    // The globals the plugin writes at load have the sizes of the structures it writes.
    for (name, size) in [
        ("__omp_rtl_device_environment", 48),
        ("__omp_rtl_device_memory_pool", 16),
        ("__omp_rtl_device_memory_pool_tracker", 32),
    ] {
        let s = symbols.find(name).unwrap_or_else(|| panic!("no {name}"));
        assert_eq!(s.size, size, "{name}");
    }
    // Kernel environments: the combined construct runs SPMD and needs a reduction buffer.
    let environment = |kernel: &str| {
        let global = symbols
            .find(&format!("{kernel}_kernel_environment"))
            .unwrap_or_else(|| panic!("no kernel environment for {kernel}"));
        KernelEnvironment::parse(global.initial.as_deref().unwrap()).unwrap()
    };
    let combined_env = environment(combined);
    assert_eq!(combined_env.exec_mode, ExecMode::Spmd);
    assert!(
        combined_env.reduction_buffer_bytes() > 0,
        "{combined_env:?}"
    );
    let plain_env = environment(plain);
    assert_eq!(plain_env.reduction_buffer_bytes(), 0, "{plain_env:?}");
    // A host image is not a CUDA image.
    let host = std::fs::read(lib_dir().join("libomptarget.rtl.host.so")).unwrap();
    let why = image::classify(&host).unwrap_err();
    assert!(why.contains("not an NVIDIA cubin"), "{why}");
}

#[test]
fn ptx_from_clang_is_recognised_for_jit() {
    let ptx = build_dir().join("kernel-sm_80.ptx");
    let source = build_dir().join("kernel.c");
    outputs::write(&source, "void kernel(int *p) { *p = 1; }\n", 0o644).unwrap();
    let mut clang = Command::new("clang-19");
    clang
        .args(["-S", "--target=nvptx64-nvidia-cuda", "-march=sm_80", "-O1"])
        .arg(&source);
    assert!(outputs::build(clang, &ptx).unwrap().status.success());
    let text = std::fs::read(&ptx).unwrap();
    let kind = image::classify(&text).unwrap();
    assert_eq!(
        kind,
        ImageKind::Ptx {
            target: Some(SmVersion(80))
        }
    );
    assert!(image::compatible(&kind, SmVersion(90)).is_ok());
    assert!(image::compatible(&kind, SmVersion(75)).is_err());
}
