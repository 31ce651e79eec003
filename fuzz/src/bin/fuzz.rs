//! One libFuzzer binary for every target; `FUZZ_TARGET` names the one to run
//! (`scripts/fuzz.sh` sets it).
#![no_main]

use std::sync::OnceLock;

fn chosen() -> fn(&[u8]) {
    static RUN: OnceLock<fn(&[u8])> = OnceLock::new();
    *RUN.get_or_init(|| {
        let name = std::env::var("FUZZ_TARGET").unwrap_or_default();
        match omptarget_fuzz::target(&name) {
            Some(target) => target.run,
            None => {
                let names: Vec<_> = omptarget_fuzz::TARGETS.iter().map(|t| t.name).collect();
                eprintln!(
                    "FUZZ_TARGET='{name}' names no target; one of: {}",
                    names.join(", ")
                );
                std::process::exit(2);
            }
        }
    })
}

libfuzzer_sys::fuzz_target!(|data: &[u8]| chosen()(data));
