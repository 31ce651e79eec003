//! Every saved input of every fuzz target, run as an ordinary test: the corpora (the seeds from
//! real clang-19 and clang-22 programs in `fuzz/corpus/<target>`, and what libFuzzer found and
//! kept, packed in `fuzz/corpus/<target>.found.tar.xz`) and the reproducers of crashes and hangs
//! found and fixed (`fuzz/crashes/<target>`).

use std::path::{Path, PathBuf};

fn inputs(dir: &Path) -> Vec<PathBuf> {
    omptarget_fuzz::saved_files(dir)
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

/// What the fuzzer found and kept for `target` (`corpus/<target>.found.tar.xz`), unpacked.
fn found(target: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("found")
        .join(target);
    omptarget_fuzz::unpack_found(target, &dir)
}

#[test]
fn every_saved_input_is_refused_or_read_without_a_panic_or_a_hang() {
    let mut failures = Vec::new();
    let mut total = 0;
    for target in omptarget_fuzz::TARGETS {
        let saved = [
            inputs(&root().join("corpus").join(target.name)),
            found(target.name),
            inputs(&root().join("crashes").join(target.name)),
        ];
        for files in saved {
            for file in files {
                let data = std::fs::read(&file).unwrap();
                total += 1;
                let run = target.run;
                let start = std::time::Instant::now();
                let outcome = std::panic::catch_unwind(move || run(&data));
                // libFuzzer's limit is 10 s; a saved input far slower than the rest is a hang.
                if start.elapsed() > std::time::Duration::from_secs(2) {
                    failures.push(format!("{}: took {:?}", file.display(), start.elapsed()));
                }
                if let Err(panic) = outcome {
                    let why = panic
                        .downcast_ref::<String>()
                        .cloned()
                        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                        .unwrap_or_default();
                    failures.push(format!("{}: {why}", file.display()));
                }
            }
        }
    }
    eprintln!("replayed {total} saved inputs");
    assert!(failures.is_empty(), "panics:\n{}", failures.join("\n"));
}

/// Each corpus starts from real inputs: images of both compilers, `printf` requests as both
/// kinds of GPU lay them out. The fuzzer's mutations begin from what clang and devices emit.
#[test]
fn every_corpus_holds_seeds_of_each_compiler_or_device_it_reads() {
    for target in omptarget_fuzz::TARGETS {
        let names: Vec<String> = inputs(&root().join("corpus").join(target.name))
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        for label in target.seeded_by {
            assert!(
                names
                    .iter()
                    .any(|n| n.starts_with(&format!("seed-{label}-"))),
                "fuzz/corpus/{} has no seed from {label} (scripts/fuzz.sh seeds makes them)",
                target.name
            );
        }
    }
}

/// The seeds are what the real code accepts (else fuzzing would start from refusals): each image
/// passes its plugin's checks, and each entry table reads with its names.
#[test]
fn every_seed_is_accepted_by_the_code_it_seeds() {
    use offload_image::cuda_image::SmVersion;
    use plugin_api::abi_stable::std_types::{RSlice, RStr};
    let seeds = |target: &str| {
        inputs(&root().join("corpus").join(target))
            .into_iter()
            .filter(|p| {
                p.file_name()
                    .unwrap()
                    .to_string_lossy()
                    .starts_with("seed-")
            })
            .map(|p| (p.display().to_string(), std::fs::read(&p).unwrap()))
    };
    for (path, data) in seeds("host_image") {
        let answer = omptarget_rtl_host::elf_check::check(&plugin_api::ImageRef {
            bytes: RSlice::from_slice(&data),
            triple: RStr::from_str("x86_64-pc-linux-gnu"),
            arch: RStr::from_str(""),
        });
        assert!(answer.compatible, "{path}: {}", answer.reason);
    }
    for (path, data) in seeds("cuda_image") {
        // PTX's symbols are the driver's to find; a cubin's are read here.
        let image = omptarget_rtl_cuda::image::check(&data, SmVersion(90));
        let is_ptx = data.starts_with(b"//");
        assert!(
            image.is_ok_and(|i| is_ptx || !i.symbols.is_empty()),
            "{path}"
        );
    }
    for (path, data) in seeds("emu_cuda_image") {
        let image = omptarget_emu_cuda::image::read_module(&data, SmVersion(90));
        assert!(image.is_ok_and(|i| !i.kernels.is_empty()), "{path}");
    }
    for (path, data) in seeds("amdgpu_code_object") {
        let code = omptarget_rtl_amdgpu::code_object::check(&data);
        assert!(code.is_ok_and(|c| !c.kernels().is_empty()), "{path}");
    }
    for (path, data) in seeds("amdgpu_metadata") {
        let metadata = omptarget_rtl_amdgpu::code_object::metadata::parse(&data);
        assert!(metadata.is_ok(), "{path}: {metadata:?}");
    }
    for (path, data) in seeds("plugin_library") {
        let answer = omptarget_core::plugins::file_check::check(&data);
        assert!(answer.is_ok(), "{path}: {answer:?}");
    }
    for (path, data) in seeds("offload_binary") {
        let containers = offload_image::offload_binary::containers(&data);
        assert!(!containers.is_empty(), "{path}");
        for container in containers {
            let image = offload_image::offload_binary::unwrap(container).unwrap();
            assert!(
                !image.triple.is_empty() && !image.bytes.is_empty(),
                "{path}"
            );
        }
    }
    for (path, data) in seeds("rpc_printf") {
        use gpu_plugin::rpc::printf;
        let input = omptarget_fuzz::printf_input(&data).unwrap();
        assert!(
            input.args.len() as u64 >= printf::argument_bytes(input.format, input.packed),
            "{path}: the argument area is shorter than the format reads"
        );
        let strings =
            omptarget_fuzz::fetched_strings(&data, input.format, input.args, input.packed);
        let text = printf::format(input.format, input.args, input.packed, &strings);
        assert!(
            text.as_ref().is_ok_and(|t| t.ends_with(b"\n")),
            "{path}: {text:?}"
        );
    }
    for (path, data) in seeds("offload_entries") {
        let (table, _) = omptarget_fuzz::entry_input(&data).unwrap();
        let mut names = |address: u64| omptarget_fuzz::name_in_input(&data, address);
        let entries =
            omptarget_core::abi::offload_entry::parse_entry_bytes(table, &mut names).unwrap();
        assert!(
            entries
                .entries
                .iter()
                .any(|e| e.name.starts_with("__omp_offloading_")),
            "{path}: {entries:?}"
        );
    }
}

/// One input, timed: `FUZZ_TARGET=host_image FUZZ_INPUT=path cargo test --release -p
/// omptarget-fuzz --test replay -- --ignored time_one_input --nocapture`.
#[test]
#[ignore]
fn time_one_input() {
    let path = std::env::var("FUZZ_INPUT").unwrap();
    let target = omptarget_fuzz::target(&std::env::var("FUZZ_TARGET").unwrap()).unwrap();
    let data = std::fs::read(path).unwrap();
    let start = std::time::Instant::now();
    (target.run)(&data);
    eprintln!("took {:?}", start.elapsed());
}
