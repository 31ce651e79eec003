//! Tests against real code objects (`test_images`), checked against llvm-readelf-19's reading
//! of the same files, and against hand-made and damaged ones.

use super::msgpack::{self, Value};
use super::test_images::*;
use super::*;
use std::collections::HashMap;
use std::process::Command;

fn tid(text: &str) -> TargetId {
    TargetId::parse(text).unwrap_or_else(|| panic!("{text} does not parse"))
}

// ---------------------------------------------------------------------------------------
// Target IDs

#[test]
fn parses_target_ids_and_isa_names() {
    use FeatureSetting::*;
    let t = tid("gfx90a");
    assert_eq!(
        (t.processor.as_str(), t.xnack, t.sramecc),
        ("gfx90a", Any, Any)
    );
    let t = tid("gfx90a:xnack+");
    assert_eq!((t.xnack, t.sramecc), (On, Any));
    let t = tid("gfx90a:sramecc-:xnack+");
    assert_eq!((t.xnack, t.sramecc), (On, Off));
    let t = tid("gfx90a:xnack-:sramecc+");
    assert_eq!((t.xnack, t.sramecc), (Off, On));
    let t = tid("amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-");
    assert_eq!(
        t,
        TargetId {
            processor: "gfx90a".into(),
            xnack: Off,
            sramecc: On
        }
    );
    assert_eq!(tid("amdgcn-amd-amdhsa--gfx1100"), TargetId::new("gfx1100"));
    let t = tid("gfx1100");
    assert_eq!((t.xnack, t.sramecc), (Unsupported, Unsupported));
    let t = tid("gfx908:xnack+");
    assert_eq!((t.xnack, t.sramecc), (On, Any));
    let t = tid("gfx1010:xnack-");
    assert_eq!((t.xnack, t.sramecc), (Off, Unsupported));
    let t = tid("amdgcn-amd-amdhsa--gfx10-3-generic");
    assert_eq!(t.processor, "gfx10-3-generic");
    assert_eq!(tid("amdgcn-amd-amdhsa--gfx9-4-generic:xnack+").xnack, On);
    // A processor this runtime does not know yet: its features are taken as they come.
    let t = tid("gfx1999:xnack+");
    assert_eq!(
        (t.processor.as_str(), t.xnack, t.sramecc),
        ("gfx1999", On, Any)
    );
    assert_eq!(tid("  gfx90a:xnack+\n").xnack, On);

    for bad in [
        "",
        "gfx",
        "sm_90",
        "GFX90A",
        "gfx90a:",
        "gfx90a:xnack",
        "gfx90a:xnack*",
        "gfx90a:xnack+:xnack-",
        "gfx90a:sramecc+:sramecc+",
        "gfx90a:foo+",
        "gfx1100:xnack+",
        "gfx1030:sramecc-",
        "gfx900:sramecc+",
        "x86_64-unknown-linux-gnu--gfx90a",
        "nvptx64-nvidia-cuda--sm_90",
        "amdgcn-amd-amdhsa--",
        "amdgcn-amd-amdhsa--sm_90",
    ] {
        assert_eq!(TargetId::parse(bad), None, "{bad:?} should not parse");
    }
}

#[test]
fn displays_target_ids_canonically() {
    assert_eq!(tid("gfx90a").to_string(), "gfx90a");
    assert_eq!(tid("gfx90a:xnack+").to_string(), "gfx90a:xnack+");
    assert_eq!(
        tid("gfx90a:xnack-:sramecc+").to_string(),
        "gfx90a:sramecc+:xnack-"
    );
    assert_eq!(tid("gfx1100").to_string(), "gfx1100");
    assert_eq!(
        tid("amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-").isa_name(),
        "amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-"
    );
    for text in [
        "gfx90a",
        "gfx90a:xnack+",
        "gfx90a:sramecc-:xnack+",
        "gfx1100",
        "gfx9-generic:xnack-",
    ] {
        assert_eq!(tid(text).to_string(), text);
        assert_eq!(tid(&tid(text).to_string()), tid(text));
        assert_eq!(tid(&tid(text).isa_name()), tid(text));
    }
}

#[test]
fn reads_targets_from_elf_flags() {
    use FeatureSetting::*;
    let f = |flags, abi| TargetId::from_elf_flags(flags, abi).unwrap();
    // Code object v5 (EI_ABIVERSION 3), as clang-19 writes: any/off/on/unsupported.
    assert_eq!(
        f(0x53f, 3),
        TargetId {
            processor: "gfx90a".into(),
            xnack: Any,
            sramecc: Any
        }
    );
    assert_eq!(
        f(0xe3f, 3),
        TargetId {
            processor: "gfx90a".into(),
            xnack: Off,
            sramecc: On
        }
    );
    assert_eq!(
        f(0xb3f, 2),
        TargetId {
            processor: "gfx90a".into(),
            xnack: On,
            sramecc: Off
        }
    );
    assert_eq!(
        f(0x041, 3),
        TargetId {
            processor: "gfx1100".into(),
            xnack: Unsupported,
            sramecc: Unsupported
        }
    );
    assert_eq!(f(0x04c, 4).processor, "gfx942");
    assert_eq!(f(0x030, 3).processor, "gfx908");
    assert_eq!(f(0x036, 3).processor, "gfx1030");
    // Code object v6 generic processors keep their version in the top byte.
    assert_eq!(f(0x0100_0053, 4).processor, "gfx10-3-generic");
    assert_eq!(
        f(0x0100_015f, 4),
        TargetId {
            processor: "gfx9-4-generic".into(),
            xnack: Any,
            sramecc: Unsupported
        }
    );
    // Code object v3: a set bit is on, a clear bit off, where the processor has the feature.
    assert_eq!(
        f(0x13f, 1),
        TargetId {
            processor: "gfx90a".into(),
            xnack: On,
            sramecc: Off
        }
    );
    assert_eq!(
        f(0x23f, 1),
        TargetId {
            processor: "gfx90a".into(),
            xnack: Off,
            sramecc: On
        }
    );
    assert_eq!(
        f(0x036, 1),
        TargetId {
            processor: "gfx1030".into(),
            xnack: Unsupported,
            sramecc: Unsupported
        }
    );
    assert_eq!(
        f(0x12c, 1),
        TargetId {
            processor: "gfx900".into(),
            xnack: On,
            sramecc: Unsupported
        }
    );

    let err = |flags, abi| TargetId::from_elf_flags(flags, abi).unwrap_err();
    assert!(err(0x000, 3).contains("no processor"), "{}", err(0, 3));
    assert!(err(0x007, 3).contains("R600"), "{}", err(7, 3));
    let unknown = err(0x0fe, 3);
    assert!(
        unknown.contains("0xfe") && unknown.contains("does not know"),
        "{unknown}"
    );
    assert!(
        err(0x027, 3).contains("0x27"),
        "reserved values are unknown"
    );
    assert!(err(0x03f, 0).contains("v2"), "{}", err(0x3f, 0));
    let future = err(0x03f, 5);
    assert!(
        future.contains("v7") && future.contains("v3 to v6"),
        "{future}"
    );
}

#[test]
fn the_processor_table_is_consistent() {
    let mut seen_mach = std::collections::HashSet::new();
    let mut seen_name = std::collections::HashSet::new();
    for p in target_id::PROCESSORS {
        assert!(seen_mach.insert(p.mach), "mach {:#x} twice", p.mach);
        assert!(seen_name.insert(p.name), "{} twice", p.name);
        assert!((0x20..=0xff).contains(&p.mach));
        let t = TargetId::from_elf_flags(p.mach, 3).unwrap();
        assert_eq!(t.processor, p.name);
        assert_eq!(tid(p.name), TargetId::new(p.name));
        assert_eq!(
            TargetId::parse(&format!("{}:xnack+", p.name)).is_some(),
            p.has_xnack,
            "{}",
            p.name
        );
        assert_eq!(
            TargetId::parse(&format!("{}:sramecc+", p.name)).is_some(),
            p.has_sramecc,
            "{}",
            p.name
        );
    }
    for (mach, name) in [
        (0x3f, "gfx90a"),
        (0x30, "gfx908"),
        (0x36, "gfx1030"),
        (0x41, "gfx1100"),
        (0x4c, "gfx942"),
        (0x4f, "gfx950"),
        (0x48, "gfx1200"),
        (0x4e, "gfx1201"),
        (0x5f, "gfx9-4-generic"),
    ] {
        assert_eq!(
            target_id::processor_by_mach(mach).map(|p| p.name),
            Some(name)
        );
    }
}

/// A bare ELF64 header (no sections, no segments).
fn elf_header(machine: u16, osabi: u8, abi_version: u8, e_type: u16, flags: u32) -> Vec<u8> {
    let mut h = vec![0u8; 64];
    h[..4].copy_from_slice(b"\x7fELF");
    h[4] = 2; // ELFCLASS64
    h[5] = 1; // little endian
    h[6] = 1; // EV_CURRENT
    h[7] = osabi;
    h[8] = abi_version;
    h[16..18].copy_from_slice(&e_type.to_le_bytes());
    h[18..20].copy_from_slice(&machine.to_le_bytes());
    h[20..24].copy_from_slice(&1u32.to_le_bytes());
    h[48..52].copy_from_slice(&flags.to_le_bytes());
    h[52..54].copy_from_slice(&64u16.to_le_bytes()); // e_ehsize
    h[54..56].copy_from_slice(&56u16.to_le_bytes()); // e_phentsize
    h[58..60].copy_from_slice(&64u16.to_le_bytes()); // e_shentsize
    h
}

/// Our processor names agree with LLVM 19's llvm-readelf for every mach value it names.
#[test]
fn the_processor_table_matches_llvm_readelf() {
    images(); // the toolchain is there
    let dir =
        std::env::temp_dir().join(format!("omptarget-code-object-mach-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut paths = Vec::new();
    for mach in 0x20u32..=0xff {
        let path = dir.join(format!("mach_{mach:02x}"));
        std::fs::write(
            &path,
            elf_header(EM_AMDGPU, ELFOSABI_AMDGPU_HSA, 3, 3, mach),
        )
        .unwrap();
        paths.push(path);
    }
    let out = Command::new("llvm-readelf-19")
        .arg("-h")
        .args(&paths)
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let text = String::from_utf8_lossy(&out.stdout);
    let mut llvm_names = 0;
    for line in text
        .lines()
        .filter(|l| l.trim_start().starts_with("Flags:"))
    {
        let fields: Vec<&str> = line
            .split(':')
            .nth(1)
            .unwrap()
            .split(',')
            .map(str::trim)
            .collect();
        let flags = u32::from_str_radix(fields[0].trim_start_matches("0x"), 16).unwrap();
        let ours = target_id::processor_by_mach(flags).map(|p| p.name);
        // LLVM 19 does not name the newer ones (gfx950, gfx1250, ...).
        if let Some(name) = fields.get(1) {
            llvm_names += 1;
            assert_eq!(ours, Some(*name), "mach {flags:#x}");
        }
    }
    assert_eq!(
        text.lines()
            .filter(|l| l.trim_start().starts_with("Flags:"))
            .count(),
        paths.len()
    );
    assert!(
        llvm_names >= 49,
        "llvm-readelf named only {llvm_names} processors:\n{text}"
    );
}

// ---------------------------------------------------------------------------------------
// Compatibility

#[test]
fn decides_compatibility_like_llvm() {
    let device_xnack_off = tid("amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-");
    let device_xnack_on = tid("amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack+");
    let device_sramecc_off = tid("amdgcn-amd-amdhsa--gfx90a:sramecc-:xnack-");
    let gfx908 = tid("amdgcn-amd-amdhsa--gfx908:sramecc+:xnack-");
    let gfx1100 = tid("amdgcn-amd-amdhsa--gfx1100");

    // "any" runs with either setting.
    for device in [&device_xnack_off, &device_xnack_on, &device_sramecc_off] {
        assert!(tid("gfx90a").runs_on(device), "{device}");
    }
    // A pinned setting runs only where the device has the same.
    assert!(tid("gfx90a:xnack+").runs_on(&device_xnack_on));
    assert!(!tid("gfx90a:xnack+").runs_on(&device_xnack_off));
    assert!(tid("gfx90a:xnack-").runs_on(&device_xnack_off));
    assert!(!tid("gfx90a:xnack-").runs_on(&device_xnack_on));
    assert!(tid("gfx90a:sramecc+").runs_on(&device_xnack_on));
    assert!(!tid("gfx90a:sramecc+").runs_on(&device_sramecc_off));
    assert!(tid("gfx90a:sramecc-:xnack-").runs_on(&device_sramecc_off));
    assert!(!tid("gfx90a:sramecc-:xnack+").runs_on(&device_sramecc_off));
    // Processors match exactly: no running gfx908 code on gfx90a or the other way round.
    assert!(!tid("gfx908").runs_on(&device_xnack_off));
    assert!(!tid("gfx90a").runs_on(&gfx908));
    assert!(tid("gfx908").runs_on(&gfx908));
    assert!(tid("gfx1100").runs_on(&gfx1100));
    assert!(!tid("gfx1101").runs_on(&gfx1100));
    assert!(!tid("gfx11-generic").runs_on(&gfx1100));
    // A pinned image on a device whose ISA leaves the feature open does not run (as LLVM).
    assert!(!tid("gfx90a:xnack+").runs_on(&tid("gfx90a")));

    // Against lists of ISAs (an agent may list a generic ISA as well).
    let agent = [
        tid("amdgcn-amd-amdhsa--gfx1030"),
        tid("amdgcn-amd-amdhsa--gfx10-3-generic"),
    ];
    assert_eq!(check_compatibility(&tid("gfx1030"), &agent), Ok(()));
    assert_eq!(check_compatibility(&tid("gfx10-3-generic"), &agent), Ok(()));
    assert!(check_compatibility(&tid("gfx1100"), &agent).is_err());
}

#[test]
fn incompatibility_messages_name_both_targets() {
    let device = [tid("amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-")];
    let err = check_compatibility(&tid("gfx90a:xnack+"), &device).unwrap_err();
    assert!(
        err.starts_with(
            "the image is built for gfx90a:xnack+, the device is gfx90a:xnack- \
             (amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-)"
        ),
        "{err}"
    );
    assert!(err.contains("--offload-arch=gfx90a "), "{err}");
    assert!(err.contains("HSA_XNACK=1"), "{err}");

    let err = check_compatibility(&tid("gfx908"), &device).unwrap_err();
    assert!(
        err.starts_with("the image is built for gfx908, the device is gfx90a (amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-)"),
        "{err}"
    );
    assert!(err.contains("--offload-arch=gfx90a"), "{err}");

    let err = check_compatibility(&tid("gfx90a:sramecc-"), &device).unwrap_err();
    assert!(
        err.starts_with("the image is built for gfx90a:sramecc-, the device is gfx90a:sramecc+ ("),
        "{err}"
    );

    let two = [
        tid("amdgcn-amd-amdhsa--gfx1030"),
        tid("amdgcn-amd-amdhsa--gfx10-3-generic"),
    ];
    let err = check_compatibility(&tid("gfx1100"), &two).unwrap_err();
    assert!(
        err.starts_with(
            "the image is built for gfx1100, the device is gfx1030 (amdgcn-amd-amdhsa--gfx1030, \
             amdgcn-amd-amdhsa--gfx10-3-generic)"
        ),
        "{err}"
    );

    let err = check_compatibility(&tid("gfx90a"), &[]).unwrap_err();
    assert!(err.contains("gfx90a") && err.contains("no ISA"), "{err}");
}

// ---------------------------------------------------------------------------------------
// Real images

#[test]
fn real_images_have_their_targets_and_versions() {
    use FeatureSetting::*;
    let imgs = images();
    let expect = [
        ("gfx90a", "gfx90a", Any, Any, 5),
        ("gfx908", "gfx908", Any, Any, 5),
        ("gfx1030", "gfx1030", Unsupported, Unsupported, 5),
        ("gfx90a:xnack+", "gfx90a", On, Any, 5),
        ("gfx942", "gfx942", Any, Any, 5),
        ("gfx1100", "gfx1100", Unsupported, Unsupported, 5),
        ("v4:gfx90a:sramecc+:xnack-", "gfx90a", Off, On, 4),
        (
            "ocl:gfx10-3-generic",
            "gfx10-3-generic",
            Unsupported,
            Unsupported,
            6,
        ),
    ];
    for (label, processor, xnack, sramecc, version) in expect {
        let co = imgs.code_object(label);
        let want = TargetId {
            processor: processor.into(),
            xnack,
            sramecc,
        };
        assert_eq!(co.target(), &want, "{label}");
        assert_eq!(identify(imgs.get(label)), Ok(want.clone()), "{label}");
        assert_eq!(co.code_object_version(), version, "{label}");
        assert_eq!(co.bytes(), imgs.get(label));
        // The metadata's target says the same as the ELF flags.
        let meta = co
            .metadata_target()
            .unwrap_or_else(|| panic!("{label}: no amdhsa.target"));
        assert_eq!(tid(meta), want, "{label}: amdhsa.target {meta}");
        assert_eq!(
            co.metadata_version(),
            Some((1, if version == 4 { 1 } else { 2 })),
            "{label}"
        );
        assert_eq!(
            co.generic_version(),
            if version == 6 { Some(1) } else { None },
            "{label}"
        );
    }
    // The target IDs print as clang takes them.
    assert_eq!(
        imgs.code_object("gfx90a:xnack+").target().to_string(),
        "gfx90a:xnack+"
    );
    assert_eq!(
        imgs.code_object("v4:gfx90a:sramecc+:xnack-")
            .target()
            .to_string(),
        "gfx90a:sramecc+:xnack-"
    );
}

#[test]
fn real_images_against_device_isas() {
    let imgs = images();
    let mi210_xnack_off = [tid("amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-")];
    let mi210_xnack_on = [tid("amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack+")];
    let mi300 = [
        tid("amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-"),
        tid("amdgcn-amd-amdhsa--gfx9-4-generic:sramecc+:xnack-"),
    ];
    let rx7900 = [
        tid("amdgcn-amd-amdhsa--gfx1100"),
        tid("amdgcn-amd-amdhsa--gfx11-generic"),
    ];
    let rx6800 = [
        tid("amdgcn-amd-amdhsa--gfx1030"),
        tid("amdgcn-amd-amdhsa--gfx10-3-generic"),
    ];
    let mi100 = [tid("amdgcn-amd-amdhsa--gfx908:sramecc+:xnack-")];
    let devices: [(&str, &[TargetId]); 6] = [
        ("mi210 xnack-", &mi210_xnack_off),
        ("mi210 xnack+", &mi210_xnack_on),
        ("mi300", &mi300),
        ("rx7900", &rx7900),
        ("rx6800", &rx6800),
        ("mi100", &mi100),
    ];
    let runs = |label: &str, device: &str| {
        let isas = devices.iter().find(|d| d.0 == device).unwrap().1;
        check_compatibility(imgs.code_object(label).target(), isas).is_ok()
    };
    let table: [(&str, &[&str]); 8] = [
        ("gfx90a", &["mi210 xnack-", "mi210 xnack+"]),
        ("gfx90a:xnack+", &["mi210 xnack+"]),
        ("v4:gfx90a:sramecc+:xnack-", &["mi210 xnack-"]),
        ("gfx908", &["mi100"]),
        ("gfx942", &["mi300"]),
        ("gfx1100", &["rx7900"]),
        ("gfx1030", &["rx6800"]),
        ("ocl:gfx10-3-generic", &["rx6800"]),
    ];
    for (label, on) in table {
        for (device, _) in devices {
            assert_eq!(
                runs(label, device),
                on.contains(&device),
                "{label} on {device}"
            );
        }
    }
    let err = check_compatibility(imgs.code_object("gfx90a:xnack+").target(), &mi210_xnack_off)
        .unwrap_err();
    assert!(
        err.starts_with("the image is built for gfx90a:xnack+, the device is gfx90a:xnack- (amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-)"),
        "{err}"
    );
}

const SAXPY_KINDS: [&str; 7] = [
    "global_buffer",
    "by_value",
    "global_buffer",
    "by_value",
    "global_buffer",
    "by_value",
    "by_value",
];

#[test]
fn real_kernel_metadata() {
    let imgs = images();
    for label in OPENMP_LABELS {
        let co = imgs.code_object(label);
        assert_eq!(co.kernels().len(), 2, "{label}");
        let v5 = co.code_object_version() >= 5;
        let wave = if label.contains("gfx10") || label.contains("gfx11") {
            32
        } else {
            64
        };

        let saxpy = kernel_named(&co, "_saxpy_l");
        assert!(
            saxpy.name.starts_with("__omp_offloading_"),
            "{}",
            saxpy.name
        );
        assert_eq!(saxpy.symbol, format!("{}.kd", saxpy.name));
        let explicit: Vec<&KernelArgument> = saxpy.args.iter().filter(|a| !a.is_hidden()).collect();
        let kinds: Vec<&str> = explicit.iter().map(|a| a.value_kind.as_str()).collect();
        assert_eq!(kinds, SAXPY_KINDS, "{label}");
        let offsets: Vec<u32> = explicit.iter().map(|a| a.offset).collect();
        assert_eq!(offsets, [0, 8, 16, 24, 32, 40, 48], "{label}");
        assert!(
            explicit.iter().all(|a| a.size == 8 && a.name.is_none()),
            "{label}"
        );
        assert_eq!(saxpy.explicit_args_size(), 56, "{label}");
        assert_eq!(saxpy.implicit_args_offset(), Some(56), "{label}");
        // Code object v5 has 256 bytes of implicit arguments, v4 56.
        assert_eq!(
            saxpy.kernarg_segment_size,
            if v5 { 56 + 256 } else { 56 + 56 },
            "{label}"
        );
        assert_eq!(saxpy.kernarg_segment_align, 8);
        assert_eq!(saxpy.wavefront_size, wave, "{label}");
        assert_eq!(saxpy.max_flat_workgroup_size, 256, "{label}");
        assert!(saxpy.sgpr_count > 0 && saxpy.vgpr_count > 0, "{label}");
        assert!(
            saxpy.group_segment_fixed_size > 0,
            "{label}: the OpenMP runtime's shared state"
        );
        // clang-19 writes .uses_dynamic_stack for v5 only (the OpenMP runtime recurses).
        assert_eq!(saxpy.uses_dynamic_stack, v5, "{label}");
        if v5 {
            let arg = |kind: &str| {
                saxpy
                    .arg(kind)
                    .unwrap_or_else(|| panic!("{label}: no {kind}"))
            };
            assert_eq!(
                (
                    arg("hidden_block_count_x").offset,
                    arg("hidden_block_count_x").size
                ),
                (56, 4)
            );
            assert_eq!(arg("hidden_block_count_y").offset, 60);
            assert_eq!(
                (
                    arg("hidden_group_size_x").offset,
                    arg("hidden_group_size_x").size
                ),
                (68, 2)
            );
            assert_eq!(arg("hidden_grid_dims").offset, 56 + 64);
        } else {
            assert_eq!(saxpy.arg("hidden_block_count_x"), None);
            assert_eq!(
                saxpy.arg("hidden_global_offset_x").map(|a| a.offset),
                Some(56)
            );
        }
        assert_eq!(saxpy.arg("no_such_kind"), None);

        let main = kernel_named(&co, "_main_l");
        assert_eq!(
            main.args.iter().filter(|a| !a.is_hidden()).count(),
            1,
            "{label}: dyn_ptr only"
        );
        assert_eq!(main.explicit_args_size(), 8);
        assert_eq!(main.implicit_args_offset(), Some(8));
        assert_eq!(
            main.kernarg_segment_size,
            if v5 { 8 + 256 } else { 8 + 56 },
            "{label}"
        );
        assert_eq!(main.wavefront_size, wave);
    }
    // gfx90a has accumulation registers.
    assert!(kernel_named(&imgs.code_object("gfx90a"), "_saxpy_l").agpr_count > 0);
    assert_eq!(
        kernel_named(&imgs.code_object("gfx1030"), "_saxpy_l").agpr_count,
        0
    );

    // OpenCL: named arguments, no hidden ones.
    let co = imgs.code_object("ocl:gfx10-3-generic");
    let scale = co.kernel("scale").expect("the OpenCL kernel");
    let names: Vec<Option<&str>> = scale.args.iter().map(|a| a.name.as_deref()).collect();
    assert_eq!(names, [Some("out"), Some("in"), Some("factor"), Some("n")]);
    let layout: Vec<(u32, u32, &str)> = scale
        .args
        .iter()
        .map(|a| (a.offset, a.size, a.value_kind.as_str()))
        .collect();
    assert_eq!(
        layout,
        [
            (0, 8, "global_buffer"),
            (8, 8, "global_buffer"),
            (16, 4, "by_value"),
            (20, 4, "by_value")
        ]
    );
    assert_eq!(scale.explicit_args_size(), 24);
    assert_eq!(scale.implicit_args_offset(), None);
    assert_eq!(scale.kernarg_segment_size, 24);
    assert_eq!(scale.wavefront_size, 32);
    assert!(!scale.uses_dynamic_stack);
}

#[test]
fn finds_kernels_through_their_descriptors() {
    let imgs = images();
    for label in OPENMP_LABELS.iter().copied().chain(["ocl:gfx10-3-generic"]) {
        let co = imgs.code_object(label);
        for k in co.kernels() {
            assert_eq!(co.kernel(&k.name), Some(k), "{label}");
            let kd = co.kernel_descriptor(&k.name).unwrap();
            assert!(
                kd.is_kernel_descriptor && kd.is_object && !kd.is_function,
                "{label}: {kd:?}"
            );
            assert_eq!(kd.size, 64, "{label}");
            assert_eq!(kd.section.as_deref(), Some(".rodata"), "{label}");
            assert!(kd.is_global);
            assert_eq!(co.symbol_bytes(&k.symbol).map(<[u8]>::len), Some(64));
            // The kernel's code has the bare name.
            let code = co.symbol(&k.name).unwrap();
            assert!(
                code.is_function && !code.is_kernel_descriptor,
                "{label}: {code:?}"
            );
            assert_eq!(code.section.as_deref(), Some(".text"));
            // Lookups are by the bare name only.
            assert_eq!(co.kernel(&k.symbol), None, "{label}");
        }
        assert_eq!(co.kernel("no_such_kernel"), None);
        assert_eq!(co.symbol("no_such_symbol"), None);
        assert_eq!(co.kernel(""), None);
    }

    // Without its .kd symbol, a kernel the metadata describes is not found.
    let co = imgs.code_object("gfx90a");
    let name = kernel_named(&co, "_saxpy_l").name.clone();
    let mut bytes = imgs.get("gfx90a").to_vec();
    let needle = format!("{name}.kd\0");
    let mut renamed = 0;
    while let Some(at) = find(&bytes, needle.as_bytes()) {
        bytes[at + name.len() + 2] = b'x'; // "<name>.kx": string tables only (NUL-ended)
        renamed += 1;
    }
    assert!(renamed >= 1);
    let co = CodeObject::parse(&bytes).unwrap();
    assert!(
        co.kernels().iter().any(|k| k.name == name),
        "the metadata still has it"
    );
    assert_eq!(co.kernel(&name), None);
    assert_eq!(co.kernel_descriptor(&name), None);
    assert!(co.kernel(&kernel_named(&co, "_main_l").name).is_some());
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[test]
fn finds_globals() {
    let imgs = images();
    for label in OPENMP_LABELS {
        let co = imgs.code_object(label);
        let counter = co
            .symbol("counter")
            .unwrap_or_else(|| panic!("{label}: no counter"));
        assert_eq!(counter.size, 4, "{label}");
        assert!(counter.is_object && !counter.is_function && !counter.is_kernel_descriptor);
        assert!(counter.is_global && !counter.zero_initialized);
        assert_eq!(counter.section.as_deref(), Some(".data"));
        assert_eq!(
            co.symbol_bytes("counter"),
            Some(&7i32.to_le_bytes()[..]),
            "{label}"
        );
        assert_ne!(counter.address, 0);

        let table = co.symbol("table").unwrap();
        assert_eq!(table.size, 100 * 8, "{label}");
        assert!(
            table.zero_initialized && table.is_object,
            "{label}: {table:?}"
        );
        assert_eq!(table.section.as_deref(), Some(".bss"));
        assert_eq!(co.symbol_bytes("table"), None);
        assert_ne!(table.address, counter.address);

        let env = co.symbol("__omp_rtl_device_environment").unwrap();
        assert!(
            env.is_object && env.is_global && env.size > 0,
            "{label}: {env:?}"
        );
        // Kernel environments have initial contents (read by the runtime at launch).
        let saxpy = kernel_named(&co, "_saxpy_l").name.clone();
        let kenv = format!("{saxpy}_kernel_environment");
        let kenv_symbol = co.symbol(&kenv).unwrap();
        assert_eq!(
            co.symbol_bytes(&kenv).map(<[u8]>::len),
            Some(kenv_symbol.size as usize)
        );
        // Local symbols come from .symtab and are marked so.
        if let Some(local) = co.symbol("__kmpc_target_init") {
            assert!(local.is_function && !local.is_global);
        }
    }
    let co = imgs.code_object("ocl:gfx10-3-generic");
    assert!(co
        .symbols()
        .any(|s| s.is_kernel_descriptor && s.name == "scale.kd"));
}

/// Every `.dynsym` entry llvm-readelf-19 lists is found with the same address, size and
/// kind.
#[test]
fn symbols_match_llvm_readelf() {
    let imgs = images();
    for (label, text) in &imgs.readelf {
        let co = imgs.code_object(label);
        let mut checked = 0;
        let mut in_dynsym = false;
        for line in text.lines() {
            if line.starts_with("Symbol table '.dynsym'") {
                in_dynsym = true;
                continue;
            }
            if in_dynsym && line.trim().is_empty() {
                break;
            }
            if !in_dynsym {
                continue;
            }
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.len() < 8 || f[0] == "Num:" || !f[0].ends_with(':') || f[6] == "UND" {
                continue;
            }
            let name = f[7];
            let address = u64::from_str_radix(f[1], 16).unwrap();
            let size = match f[2].strip_prefix("0x") {
                Some(hex) => u64::from_str_radix(hex, 16).unwrap(),
                None => f[2].parse().unwrap(),
            };
            let s = co
                .symbol(name)
                .unwrap_or_else(|| panic!("{label}: no symbol {name}"));
            assert_eq!((s.address, s.size), (address, size), "{label}: {name}");
            assert_eq!(s.is_function, f[3] == "FUNC", "{label}: {name}");
            assert_eq!(s.is_object, f[3] == "OBJECT", "{label}: {name}");
            assert_eq!(
                s.is_global,
                f[4] == "GLOBAL" || f[4] == "WEAK",
                "{label}: {name}"
            );
            checked += 1;
        }
        assert!(
            checked >= 2,
            "{label}: only {checked} symbols compared:\n{text}"
        );
    }
}

/// The kernel metadata agrees with llvm-readelf-19's YAML rendering of the note.
#[test]
fn metadata_matches_llvm_readelf() {
    let imgs = images();
    for (label, text) in &imgs.readelf {
        let co = imgs.code_object(label);
        let kernels = readelf_kernels(text);
        assert_eq!(kernels.len(), co.kernels().len(), "{label}");
        for (ours, (theirs, args)) in co.kernels().iter().zip(&kernels) {
            let num = |key: &str| theirs.get(key).map(|v| v.parse::<u32>().unwrap());
            let pairs = [
                (".kernarg_segment_size", ours.kernarg_segment_size),
                (".kernarg_segment_align", ours.kernarg_segment_align),
                (".group_segment_fixed_size", ours.group_segment_fixed_size),
                (
                    ".private_segment_fixed_size",
                    ours.private_segment_fixed_size,
                ),
                (".max_flat_workgroup_size", ours.max_flat_workgroup_size),
                (".wavefront_size", ours.wavefront_size),
                (".sgpr_count", ours.sgpr_count),
                (".vgpr_count", ours.vgpr_count),
                (".sgpr_spill_count", ours.sgpr_spill_count),
                (".vgpr_spill_count", ours.vgpr_spill_count),
            ];
            for (key, value) in pairs {
                assert_eq!(num(key), Some(value), "{label} {} {key}", ours.name);
            }
            assert_eq!(num(".agpr_count").unwrap_or(0), ours.agpr_count);
            assert_eq!(
                theirs.get(".name").map(String::as_str),
                Some(ours.name.as_str())
            );
            assert_eq!(
                theirs.get(".symbol").map(String::as_str),
                Some(ours.symbol.as_str())
            );
            assert_eq!(
                theirs
                    .get(".uses_dynamic_stack")
                    .map_or("false", String::as_str),
                if ours.uses_dynamic_stack {
                    "true"
                } else {
                    "false"
                }
            );
            assert_eq!(args.len(), ours.args.len(), "{label} {}", ours.name);
            for (a, b) in ours.args.iter().zip(args) {
                assert_eq!(Some(a.offset.to_string()).as_ref(), b.get(".offset"));
                assert_eq!(Some(a.size.to_string()).as_ref(), b.get(".size"));
                assert_eq!(Some(&a.value_kind), b.get(".value_kind"));
                assert_eq!(a.name.as_ref(), b.get(".name"));
            }
        }
        let target = text
            .lines()
            .find_map(|l| l.strip_prefix("amdhsa.target:"))
            .map(|v| unquote(v.trim()));
        assert_eq!(target.as_deref(), co.metadata_target(), "{label}");
    }
}

type YamlMap = HashMap<String, String>;

/// The kernels of llvm-readelf's YAML rendering of the metadata: each kernel's scalar keys
/// and its arguments' keys.
fn readelf_kernels(text: &str) -> Vec<(YamlMap, Vec<YamlMap>)> {
    let mut kernels: Vec<(YamlMap, Vec<YamlMap>)> = Vec::new();
    let mut in_kernels = false;
    for line in text.lines() {
        if line.starts_with("amdhsa.kernels:") {
            in_kernels = true;
            continue;
        }
        if !in_kernels {
            continue;
        }
        if !line.starts_with(' ') {
            break; // the next top-level key
        }
        let (kernel_key, arg_key) = if let Some(rest) = line.strip_prefix("  - ") {
            kernels.push((YamlMap::new(), Vec::new()));
            (Some(rest), None)
        } else if let Some(rest) = line.strip_prefix("      - ").filter(|r| r.starts_with('.')) {
            if let Some(k) = kernels.last_mut() {
                k.1.push(YamlMap::new());
            }
            (None, Some(rest))
        } else if let Some(rest) = line.strip_prefix("        ").filter(|r| r.starts_with('.')) {
            (None, Some(rest))
        } else if let Some(rest) = line.strip_prefix("    ").filter(|r| r.starts_with('.')) {
            (Some(rest), None)
        } else {
            (None, None)
        };
        let split = |entry: &str| {
            let (key, value) = entry.split_once(':').unwrap();
            (key.trim().to_owned(), unquote(value.trim()))
        };
        if let (Some(entry), Some(k)) = (kernel_key, kernels.last_mut()) {
            let (key, value) = split(entry);
            k.0.insert(key, value);
        }
        if let (Some(entry), Some(arg)) = (arg_key, kernels.last_mut().and_then(|k| k.1.last_mut()))
        {
            let (key, value) = split(entry);
            arg.insert(key, value);
        }
    }
    kernels
}

fn unquote(value: &str) -> String {
    let value = value.strip_prefix("!str ").unwrap_or(value);
    value
        .strip_prefix('\'')
        .and_then(|v| v.strip_suffix('\''))
        .unwrap_or(value)
        .to_owned()
}

// ---------------------------------------------------------------------------------------
// What is not a usable code object

#[test]
fn rejects_other_files_with_reasons() {
    let imgs = images();
    let host = identify(imgs.get("host")).unwrap_err();
    assert_eq!(
        host,
        "an ELF file for x86-64 (e_machine 62, EM_X86_64), not an AMDGPU code object \
         (EM_AMDGPU, 224)"
    );
    assert_eq!(CodeObject::parse(imgs.get("host")).unwrap_err(), host);

    let cubin = elf_header(190, 0x33, 7, 2, 0x5a055a);
    let err = identify(&cubin).unwrap_err();
    assert!(
        err.starts_with("an ELF file for NVIDIA CUDA (e_machine 190, EM_CUDA), not an AMDGPU"),
        "{err}"
    );
    assert!(CodeObject::parse(&cubin).unwrap_err().contains("EM_CUDA"));

    let err = identify(&elf_header(0x1234, 0, 0, 2, 0)).unwrap_err();
    assert!(err.contains("an unknown machine (e_machine 4660)"), "{err}");

    let rel = CodeObject::parse(imgs.get("rel")).unwrap_err();
    assert!(
        rel.contains("ET_REL") && rel.contains("gfx10-3-generic"),
        "{rel}"
    );

    let pal = identify(&elf_header(EM_AMDGPU, 65, 0, 3, 0x3f)).unwrap_err();
    assert!(
        pal.contains("PAL") && pal.contains("not an HSA code object"),
        "{pal}"
    );
    let v2 = identify(&elf_header(EM_AMDGPU, ELFOSABI_AMDGPU_HSA, 0, 3, 0x3f)).unwrap_err();
    assert!(v2.contains("v2"), "{v2}");
    let unknown = identify(&elf_header(EM_AMDGPU, ELFOSABI_AMDGPU_HSA, 3, 3, 0xfd)).unwrap_err();
    assert!(unknown.contains("0xfd"), "{unknown}");
    assert_eq!(
        identify(&elf_header(EM_AMDGPU, ELFOSABI_AMDGPU_HSA, 3, 3, 0x53f)),
        Ok(tid("gfx90a"))
    );

    let mut be = elf_header(EM_AMDGPU, ELFOSABI_AMDGPU_HSA, 3, 3, 0x3f);
    be[5] = 2;
    assert!(identify(&be).unwrap_err().contains("big-endian"));
    let mut elf32 = elf_header(3, 0, 0, 2, 0);
    elf32[4] = 1;
    assert!(identify(&elf32).unwrap_err().contains("32-bit"));

    assert!(identify(b"").unwrap_err().contains("not an ELF file"));
    assert!(identify(b"\x7fEL").unwrap_err().contains("not an ELF file"));
    assert!(identify(b"garbage, not an image")
        .unwrap_err()
        .contains("not an ELF file"));
    assert!(identify(b"\x10\xff\x10\xad\x01\x00\x00\x00")
        .unwrap_err()
        .contains("offload binary"));
    assert!(identify(b"__CLANG_OFFLOAD_BUNDLE__\x02")
        .unwrap_err()
        .contains("bundle"));
}

#[test]
fn truncated_images_are_errors() {
    let imgs = images();
    let image = imgs.get("gfx90a");
    let len = image.len();
    let mut cuts: Vec<usize> = (0..80).collect();
    cuts.extend([128, 512, 4096, len / 2, len - 1000, len - 64, len - 1]);
    for cut in cuts {
        let err = CodeObject::parse(&image[..cut]).unwrap_err();
        if cut < 4 {
            assert!(err.contains("not an ELF file"), "{cut}: {err}");
        } else {
            assert!(err.contains("truncated"), "{cut}: {err}");
        }
        if cut >= 64 {
            // The header alone is fine.
            assert_eq!(identify(&image[..cut]), Ok(tid("gfx90a")));
        }
    }
}

#[test]
fn metadata_note_problems_are_errors() {
    let imgs = images();
    let image = imgs.get("gfx90a");
    // The note: n_namesz 7, n_descsz, n_type 32, "AMDGPU\0" padded to 8, then the map.
    let at = find(image, b"\x20\x00\x00\x00AMDGPU\0").expect("the metadata note") - 8;
    let desc = at + 12 + 8;
    assert_eq!(image[desc] & 0xf0, 0x80, "the note holds a fixmap");

    let mut corrupt = image.to_vec();
    corrupt[desc] = 0xc1;
    let err = CodeObject::parse(&corrupt).unwrap_err();
    assert!(
        err.contains("AMDGPU metadata note is invalid") && err.contains("0xc1"),
        "{err}"
    );

    let size = u32::from_le_bytes(image[at + 4..at + 8].try_into().unwrap()) as usize;
    let mut not_map = image.to_vec();
    not_map[desc..desc + size].fill(0);
    not_map[desc] = 0x01;
    let err = CodeObject::parse(&not_map).unwrap_err();
    assert!(err.contains("not a map"), "{err}");

    let mut other_type = image.to_vec();
    other_type[at + 8] = 33;
    let err = CodeObject::parse(&other_type).unwrap_err();
    assert!(err.contains("no AMDGPU metadata note"), "{err}");

    let mut other_owner = image.to_vec();
    other_owner[at + 12] = b'X';
    assert!(CodeObject::parse(&other_owner)
        .unwrap_err()
        .contains("no AMDGPU metadata note"));

    let mut huge_desc = image.to_vec();
    huge_desc[at + 4..at + 8].copy_from_slice(&0x7fff_fff0u32.to_le_bytes());
    let err = CodeObject::parse(&huge_desc).unwrap_err();
    assert!(err.contains("note"), "{err}");
    // The header still identifies it.
    assert_eq!(identify(&huge_desc), Ok(tid("gfx90a")));
}

/// A small deterministic generator for the fuzz-like tests.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

#[test]
fn random_bytes_and_mutated_images_do_not_panic() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for _ in 0..2000 {
        let n = rng.below(300);
        let bytes = rng.bytes(n);
        assert!(identify(&bytes).is_err());
        assert!(CodeObject::parse(&bytes).is_err());
    }
    let imgs = images();
    let image = imgs.get("gfx90a");
    // A valid header followed by noise.
    for _ in 0..300 {
        let mut bytes = image[..64].to_vec();
        let n = rng.below(4096);
        bytes.extend(rng.bytes(n));
        let _ = CodeObject::parse(&bytes);
    }
    // Real images with a few bytes changed, anywhere or in the note: an error or a code
    // object, never a panic.
    let note = find(image, b"AMDGPU\0").unwrap();
    let mut parsed = 0;
    for round in 0..1500 {
        let mut bytes = image.to_vec();
        for _ in 0..1 + rng.below(8) {
            let at = if round % 2 == 0 {
                rng.below(bytes.len())
            } else {
                note + rng.below(3200)
            };
            bytes[at] = rng.next() as u8;
        }
        if let Ok(co) = CodeObject::parse(&bytes) {
            parsed += 1;
            for k in co.kernels() {
                let _ = (
                    k.explicit_args_size(),
                    k.implicit_args_offset(),
                    co.kernel(&k.name),
                );
            }
            for s in co.symbols() {
                let _ = co.symbol_bytes(&s.name);
            }
        }
    }
    assert!(parsed > 0, "some mutations leave the image readable");
}

// ---------------------------------------------------------------------------------------
// MessagePack

/// Encodes a value in the smallest format (the test's own encoder).
fn encode(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Nil => out.push(0xc0),
        Value::Bool(b) => out.push(if *b { 0xc3 } else { 0xc2 }),
        Value::UInt(v) if *v < 0x80 => out.push(*v as u8),
        Value::UInt(v) if *v <= 0xff => out.extend([0xcc, *v as u8]),
        Value::UInt(v) if *v <= 0xffff => {
            out.push(0xcd);
            out.extend((*v as u16).to_be_bytes());
        }
        Value::UInt(v) if *v <= 0xffff_ffff => {
            out.push(0xce);
            out.extend((*v as u32).to_be_bytes());
        }
        Value::UInt(v) => {
            out.push(0xcf);
            out.extend(v.to_be_bytes());
        }
        Value::Int(v) if *v >= -32 => out.push(*v as i8 as u8),
        Value::Int(v) => {
            out.push(0xd3);
            out.extend(v.to_be_bytes());
        }
        Value::Float(f) => {
            out.push(0xcb);
            out.extend(f.to_bits().to_be_bytes());
        }
        Value::Str(s) if s.len() < 32 => {
            out.push(0xa0 | s.len() as u8);
            out.extend(s.as_bytes());
        }
        Value::Str(s) => {
            out.push(0xdb);
            out.extend((s.len() as u32).to_be_bytes());
            out.extend(s.as_bytes());
        }
        Value::Bin(b) => {
            out.push(0xc6);
            out.extend((b.len() as u32).to_be_bytes());
            out.extend(b);
        }
        Value::Array(items) => {
            if items.len() < 16 {
                out.push(0x90 | items.len() as u8);
            } else {
                out.push(0xdd);
                out.extend((items.len() as u32).to_be_bytes());
            }
            items.iter().for_each(|v| encode(v, out));
        }
        Value::Map(entries) => {
            if entries.len() < 16 {
                out.push(0x80 | entries.len() as u8);
            } else {
                out.push(0xdf);
                out.extend((entries.len() as u32).to_be_bytes());
            }
            for (k, v) in entries {
                encode(k, out);
                encode(v, out);
            }
        }
        Value::Ext(kind, data) => {
            out.push(0xc9);
            out.extend((data.len() as u32).to_be_bytes());
            out.push(*kind as u8);
            out.extend(data);
        }
    }
}

fn enc(value: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    encode(value, &mut out);
    out
}

fn s(text: &str) -> Value {
    Value::Str(text.into())
}

fn map(entries: Vec<(&str, Value)>) -> Value {
    Value::Map(entries.into_iter().map(|(k, v)| (s(k), v)).collect())
}

#[test]
fn msgpack_decodes_every_format() {
    let d = |bytes: &[u8]| msgpack::decode(bytes).unwrap_or_else(|e| panic!("{bytes:02x?}: {e}"));
    assert_eq!(d(&[0x00]), Value::UInt(0));
    assert_eq!(d(&[0x7f]), Value::UInt(127));
    assert_eq!(d(&[0xff]), Value::Int(-1));
    assert_eq!(d(&[0xe0]), Value::Int(-32));
    assert_eq!(d(&[0xc0]), Value::Nil);
    assert_eq!(d(&[0xc2]), Value::Bool(false));
    assert_eq!(d(&[0xc3]), Value::Bool(true));
    assert_eq!(d(&[0xcc, 0xff]), Value::UInt(255));
    assert_eq!(d(&[0xcd, 0x12, 0x34]), Value::UInt(0x1234));
    assert_eq!(d(&[0xce, 0x12, 0x34, 0x56, 0x78]), Value::UInt(0x1234_5678));
    assert_eq!(
        d(&[0xcf, 1, 2, 3, 4, 5, 6, 7, 8]),
        Value::UInt(0x0102_0304_0506_0708)
    );
    assert_eq!(d(&[0xd0, 0x80]), Value::Int(-128));
    assert_eq!(d(&[0xd0, 0x05]), Value::UInt(5));
    assert_eq!(d(&[0xd1, 0xff, 0x00]), Value::Int(-256));
    assert_eq!(d(&[0xd2, 0xff, 0xff, 0xff, 0xfe]), Value::Int(-2));
    assert_eq!(d(&[0xd3, 0x80, 0, 0, 0, 0, 0, 0, 0]), Value::Int(i64::MIN));
    assert_eq!(d(&[0xca, 0x3f, 0xc0, 0x00, 0x00]), Value::Float(1.5));
    assert_eq!(
        d(&[0xcb, 0x40, 0x09, 0x21, 0xfb, 0x54, 0x44, 0x2d, 0x18]),
        Value::Float(std::f64::consts::PI)
    );
    assert_eq!(d(&[0xa3, b'a', b'b', b'c']), s("abc"));
    assert_eq!(d(&[0xa0]), s(""));
    assert_eq!(d(&[0xd9, 2, b'h', b'i']), s("hi"));
    assert_eq!(d(&[0xda, 0, 2, b'h', b'i']), s("hi"));
    assert_eq!(d(&[0xdb, 0, 0, 0, 2, b'h', b'i']), s("hi"));
    assert_eq!(d(&[0xa2, 0xff, b'x']), s("\u{fffd}x"));
    assert_eq!(d(&[0xc4, 2, 9, 8]), Value::Bin(vec![9, 8]));
    assert_eq!(d(&[0xc5, 0, 1, 7]), Value::Bin(vec![7]));
    assert_eq!(d(&[0xc6, 0, 0, 0, 0]), Value::Bin(vec![]));
    assert_eq!(
        d(&[0x92, 0x01, 0xc0]),
        Value::Array(vec![Value::UInt(1), Value::Nil])
    );
    assert_eq!(d(&[0xdc, 0, 1, 0x05]), Value::Array(vec![Value::UInt(5)]));
    assert_eq!(
        d(&[0xdd, 0, 0, 0, 1, 0x05]),
        Value::Array(vec![Value::UInt(5)])
    );
    let kv = Value::Map(vec![(s("a"), Value::UInt(1))]);
    assert_eq!(d(&[0x81, 0xa1, b'a', 0x01]), kv);
    assert_eq!(d(&[0xde, 0, 1, 0xa1, b'a', 0x01]), kv);
    assert_eq!(d(&[0xdf, 0, 0, 0, 1, 0xa1, b'a', 0x01]), kv);
    assert_eq!(d(&[0xd4, 1, 0xaa]), Value::Ext(1, vec![0xaa]));
    assert_eq!(d(&[0xd5, 0xff, 1, 2]), Value::Ext(-1, vec![1, 2]));
    assert_eq!(d(&[0xd6, 2, 1, 2, 3, 4]), Value::Ext(2, vec![1, 2, 3, 4]));
    assert_eq!(
        d(&[0xd7, 2, 0, 0, 0, 0, 0, 0, 0, 0]),
        Value::Ext(2, vec![0; 8])
    );
    assert_eq!(
        d(&[&[0xd8, 3][..], &[0; 16]].concat()),
        Value::Ext(3, vec![0; 16])
    );
    assert_eq!(d(&[0xc7, 1, 4, 9]), Value::Ext(4, vec![9]));
    assert_eq!(d(&[0xc8, 0, 1, 4, 9]), Value::Ext(4, vec![9]));
    assert_eq!(d(&[0xc9, 0, 0, 0, 1, 4, 9]), Value::Ext(4, vec![9]));
    // Trailing zeros (padding) are fine; other trailing bytes are not.
    assert_eq!(d(&[0x01, 0, 0, 0]), Value::UInt(1));
    assert!(msgpack::decode(&[0x01, 0x02])
        .unwrap_err()
        .contains("after the value"));
    assert_eq!(
        msgpack::decode_prefix(&[0x01, 0x02]),
        Ok((Value::UInt(1), 1))
    );
    // Our encoder and the decoder agree, on large containers too.
    let big = Value::Map(
        (0..40)
            .map(|i| {
                (
                    s(&format!("key{i}")),
                    Value::Array(vec![
                        Value::UInt(i * 1000),
                        Value::Int(-(i as i64) - 100),
                        s(&"x".repeat(i as usize)),
                    ]),
                )
            })
            .collect(),
    );
    assert_eq!(d(&enc(&big)), big);
}

#[test]
fn msgpack_rejects_bad_input_without_panicking() {
    let e = |bytes: &[u8]| msgpack::decode(bytes).unwrap_err();
    assert!(e(&[]).contains("truncated"));
    assert!(e(&[0xc1]).contains("0xc1"));
    assert!(e(&[0xcd, 0x12]).contains("truncated"));
    assert!(e(&[0xa5, b'a']).contains("truncated"));
    assert!(e(&[0x92, 0x01]).contains("truncated"));
    assert!(e(&[0x81, 0xa1, b'a']).contains("truncated"));
    // Lengths far beyond the input are errors, not allocations.
    assert!(e(&[0xdd, 0xff, 0xff, 0xff, 0xff, 0x01]).contains("truncated"));
    assert!(e(&[0xdf, 0xff, 0xff, 0xff, 0xff]).contains("truncated"));
    assert!(e(&[0xdb, 0xff, 0xff, 0xff, 0xff, b'a']).contains("truncated"));
    assert!(e(&[0xc6, 0xff, 0xff, 0xff, 0xff]).contains("truncated"));
    assert!(e(&[0xc9, 0xff, 0xff, 0xff, 0xff, 1]).contains("truncated"));
    // Deep nesting is refused before the stack runs out.
    assert!(e(&vec![0x91; 100_000]).contains("nested deeper"));
    let mut ok_depth = vec![0x91; msgpack::MAX_DEPTH];
    ok_depth.push(0xc0);
    assert!(msgpack::decode(&ok_depth).is_ok());

    // Every proper prefix of a real metadata note is an error.
    let imgs = images();
    let image = imgs.get("gfx90a");
    let at = find(image, b"\x20\x00\x00\x00AMDGPU\0").unwrap() - 8;
    let size = u32::from_le_bytes(image[at + 4..at + 8].try_into().unwrap()) as usize;
    let desc = &image[at + 20..at + 20 + size];
    assert!(msgpack::decode(desc).is_ok());
    for cut in 0..desc.len() {
        assert!(
            msgpack::decode(&desc[..cut]).is_err(),
            "prefix of {cut} bytes"
        );
        assert!(metadata::parse(&desc[..cut]).is_err());
    }
    // Random bytes and random changes: errors or values, never panics.
    let mut rng = Rng(12345);
    for _ in 0..5000 {
        let n = rng.below(64);
        let _ = msgpack::decode(&rng.bytes(n));
    }
    for _ in 0..3000 {
        let mut bytes = desc.to_vec();
        for _ in 0..1 + rng.below(4) {
            let at = rng.below(bytes.len());
            bytes[at] = rng.next() as u8;
        }
        let _ = metadata::parse(&bytes);
    }
}

// ---------------------------------------------------------------------------------------
// Metadata documents

fn kernel_doc(extra: Vec<(&str, Value)>) -> Value {
    let mut entries = vec![
        (".name", s("k")),
        (".symbol", s("k.kd")),
        (".kernarg_segment_size", Value::UInt(272)),
        (".kernarg_segment_align", Value::UInt(8)),
        (".group_segment_fixed_size", Value::UInt(0)),
        (".private_segment_fixed_size", Value::UInt(0x10000)),
        (".max_flat_workgroup_size", Value::UInt(1024)),
        (".wavefront_size", Value::UInt(64)),
        (".sgpr_count", Value::UInt(12)),
        (".vgpr_count", Value::UInt(300)),
        (
            ".args",
            Value::Array(vec![
                map(vec![
                    (".offset", Value::UInt(0)),
                    (".size", Value::UInt(8)),
                    (".value_kind", s("global_buffer")),
                    (".name", s("p")),
                    (".address_space", s("global")),
                ]),
                map(vec![
                    (".offset", Value::UInt(8)),
                    (".size", Value::UInt(4)),
                    (".value_kind", s("by_value")),
                ]),
                map(vec![
                    (".offset", Value::UInt(16)),
                    (".size", Value::UInt(4)),
                    (".value_kind", s("hidden_block_count_x")),
                ]),
            ]),
        ),
    ];
    for (key, value) in extra {
        entries.retain(|(k, _)| *k != key);
        entries.push((key, value));
    }
    map(entries)
}

fn doc(kernels: Vec<Value>) -> Vec<u8> {
    enc(&map(vec![
        (
            "amdhsa.version",
            Value::Array(vec![Value::UInt(1), Value::UInt(2)]),
        ),
        ("amdhsa.target", s("amdgcn-amd-amdhsa--gfx90a:xnack+")),
        ("amdhsa.kernels", Value::Array(kernels)),
        ("amdhsa.printf", Value::Array(vec![s("1:1:4:%d\\n")])),
        (
            "a.future.key",
            Value::Map(vec![(Value::UInt(1), Value::Nil)]),
        ),
    ]))
}

#[test]
fn reads_metadata_documents() {
    let m = metadata::parse(&doc(vec![kernel_doc(vec![
        (".agpr_count", Value::UInt(4)),
        (".uses_dynamic_stack", Value::Bool(true)),
        (
            ".reqd_workgroup_size",
            Value::Array(vec![Value::UInt(64), Value::UInt(1), Value::UInt(1)]),
        ),
        (".unknown_key", Value::Float(2.5)),
        (
            ".language_version",
            Value::Array(vec![Value::UInt(2), Value::UInt(0)]),
        ),
    ])]))
    .unwrap();
    assert_eq!(m.version, Some((1, 2)));
    assert_eq!(
        m.target.as_deref(),
        Some("amdgcn-amd-amdhsa--gfx90a:xnack+")
    );
    let k = &m.kernels[0];
    assert_eq!((k.name.as_str(), k.symbol.as_str()), ("k", "k.kd"));
    assert_eq!(k.kernarg_segment_size, 272);
    assert_eq!(k.private_segment_fixed_size, 0x10000);
    assert_eq!(k.vgpr_count, 300);
    assert_eq!(k.agpr_count, 4);
    assert!(k.uses_dynamic_stack);
    assert_eq!(k.reqd_workgroup_size, Some([64, 1, 1]));
    assert_eq!(k.workgroup_size_hint, None);
    assert_eq!(k.args[0].name.as_deref(), Some("p"));
    assert_eq!(k.args[1].name, None);
    assert_eq!(k.explicit_args_size(), 12);
    assert_eq!(k.implicit_args_offset(), Some(16));
    assert_eq!(k.arg("by_value").map(|a| a.offset), Some(8));

    // Optional values absent: zeros and false.
    let k = &metadata::parse(&doc(vec![kernel_doc(vec![])]))
        .unwrap()
        .kernels[0];
    assert_eq!(
        (k.agpr_count, k.sgpr_spill_count, k.uses_dynamic_stack),
        (0, 0, false)
    );
    // No kernels at all.
    assert!(metadata::parse(&enc(&map(vec![])))
        .unwrap()
        .kernels
        .is_empty());
}

#[test]
fn metadata_errors_say_what_is_wrong() {
    let err = |kernel: Value| metadata::parse(&doc(vec![kernel])).unwrap_err();
    let without = |key: &str| {
        let Value::Map(entries) = kernel_doc(vec![]) else {
            unreachable!()
        };
        Value::Map(
            entries
                .into_iter()
                .filter(|(k, _)| k.as_str() != Some(key))
                .collect(),
        )
    };
    let e = err(without(".kernarg_segment_size"));
    assert!(
        e.contains("kernel #0") && e.contains("k: no .kernarg_segment_size"),
        "{e}"
    );
    assert!(err(without(".name")).contains("no .name"));
    assert!(err(without(".symbol")).contains("k: no .symbol"));
    assert!(err(without(".wavefront_size")).contains("no .wavefront_size"));
    let e = err(kernel_doc(vec![(".sgpr_count", s("many"))]));
    assert!(e.contains(".sgpr_count is a string"), "{e}");
    let Value::Map(mut entries) = kernel_doc(vec![]) else {
        unreachable!()
    };
    entries.retain(|(k, _)| k.as_str() != Some(".vgpr_count"));
    entries.push((s(".vgpr_count"), Value::UInt(1 << 40)));
    assert!(err(Value::Map(entries)).contains("more than 32 bits"));
    let e = err(kernel_doc(vec![(
        ".args",
        Value::Array(vec![map(vec![
            (".offset", Value::UInt(0)),
            (".size", Value::UInt(8)),
        ])]),
    )]));
    assert!(
        e.contains("argument #0") && e.contains("no .value_kind"),
        "{e}"
    );
    let e = err(kernel_doc(vec![(
        ".args",
        Value::Array(vec![map(vec![
            (".offset", Value::Int(-8)),
            (".size", Value::UInt(8)),
            (".value_kind", s("by_value")),
        ])]),
    )]));
    assert!(e.contains(".offset"), "{e}");
    assert!(
        err(kernel_doc(vec![(".uses_dynamic_stack", s("yes"))])).contains(".uses_dynamic_stack")
    );
    assert!(err(kernel_doc(vec![(
        ".reqd_workgroup_size",
        Value::Array(vec![Value::UInt(1)])
    )]))
    .contains(".reqd_workgroup_size"));
    assert!(err(Value::UInt(3)).contains("not a map"));
    let e = metadata::parse(&enc(&map(vec![("amdhsa.kernels", Value::UInt(1))]))).unwrap_err();
    assert!(
        e.contains("amdhsa.kernels is an integer, not an array"),
        "{e}"
    );
    let e = metadata::parse(&enc(&Value::Array(vec![]))).unwrap_err();
    assert!(e.contains("not a map"), "{e}");
    let e = metadata::parse(&enc(&map(vec![(
        "amdhsa.version",
        Value::Array(vec![Value::UInt(1)]),
    )])))
    .unwrap_err();
    assert!(e.contains("amdhsa.version"), "{e}");
}

/// Every code object clang builds passes the layout check the plugin makes before HSA's loader
/// sees it.
#[test]
fn real_code_objects_pass_the_layout_check() {
    let images = images();
    for label in OPENMP_LABELS.iter().chain(&["ocl:gfx10-3-generic"]) {
        let bytes = images.get(label);
        assert_eq!(
            crate::elf_layout::check(bytes, crate::elf_layout::Addresses::Mapped),
            Ok(()),
            "image {label}"
        );
    }
}

/// What a loader places and patches of a real OpenMP image: the segments hold every symbol, and
/// each kernel's environment points at the kernel's dynamic environment through a relative
/// relocation (its last field), which only the loader can resolve.
#[test]
fn real_code_objects_have_the_segments_and_relocations_a_loader_applies() {
    use loading::R_AMDGPU_RELATIVE64;
    let images = images();
    for label in OPENMP_LABELS {
        let code = images.code_object(label);
        let segments = code.segments().unwrap();
        let end = segments
            .iter()
            .map(|s| s.address + s.memory_size)
            .max()
            .unwrap_or(0);
        for symbol in code.symbols().filter(|s| s.section.is_some()) {
            assert!(
                symbol.address + symbol.size <= end,
                "{label}: {}",
                symbol.name
            );
        }
        let relocations = code.dynamic_relocations().unwrap();
        for kernel in code.kernels() {
            let environment = code
                .symbol(&format!("{}_kernel_environment", kernel.name))
                .unwrap_or_else(|| panic!("{label}: {} has no environment", kernel.name));
            let dynamic = code
                .symbol(&format!("{}_dynamic_environment", kernel.name))
                .unwrap_or_else(|| panic!("{label}: {} has no dynamic environment", kernel.name));
            let pointer = environment.address + environment.size - 8;
            assert!(
                relocations.iter().any(|r| r.offset == pointer
                    && r.kind == R_AMDGPU_RELATIVE64
                    && r.symbol.is_none()
                    && r.addend as u64 == dynamic.address
                    && r.width() == Some(8)),
                "{label}: {}: {relocations:?}",
                kernel.name
            );
        }
    }
}
