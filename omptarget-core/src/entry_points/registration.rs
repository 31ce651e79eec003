//! Registration of the program's offload libraries and runtime start-up.

use super::guard;
use crate::abi::descriptors::{read_descriptor, TgtBinDesc};
use crate::llvm_release::LlvmRelease;
use crate::observe::logging;
use crate::offload_binary;
use crate::registry::ProgramImage;
use crate::runtime::Runtime;

/// Called from the program's global constructors, once per executable or shared library with
/// offload code.
#[no_mangle]
pub extern "C" fn __tgt_register_lib(desc: *const TgtBinDesc) {
    guard("__tgt_register_lib", (), || {
        let runtime = Runtime::get();
        crate::observe::ompt::connect(host_device);
        // SAFETY: clang passes its static descriptor, valid until __tgt_unregister_lib.
        let description = match unsafe { read_descriptor(desc) } {
            Ok(d) => d,
            Err(e) => {
                return logging::failure_message(&format!("cannot register offload library: {e}"))
            }
        };
        let mut images = Vec::new();
        for (i, raw) in description.images.iter().enumerate() {
            if raw.bytes.is_empty() {
                log::debug!("device image {i} is empty; nothing to load");
                continue;
            }
            match offload_binary::unwrap(raw.bytes) {
                Ok(u) => images.push(ProgramImage {
                    bytes: u.bytes,
                    triple: u.triple,
                    arch: u.arch,
                }),
                Err(e) => logging::failure_message(&format!("device image {i} ignored: {e}")),
            }
        }
        // Devices are numbered (and plugins started) for the images before any construct.
        let runnable = runtime.number_devices_for(&images);
        warn_about_unusable_images(runtime, &images, &runnable);
        // Clang 19 and later pass `requires` clauses as flagged entries.
        for entry in description
            .host_entries
            .entries
            .iter()
            .filter(|e| e.flags & crate::abi::offload_entry::flags::REGISTER_REQUIRES != 0)
        {
            runtime.add_requirements(entry.data as i64);
        }
        let mut table = description.host_entries;
        if table.entries.is_empty() {
            // No entry tells the program's release: its images' compiler does, or else the
            // runtime name it was linked against.
            let built_by = images.iter().find_map(|i| LlvmRelease::of_image(i.bytes));
            let release = built_by.or_else(LlvmRelease::of_loaded_names);
            table.release = release.unwrap_or(table.release);
        }
        let library = runtime.change_registry(|r| r.add(desc as usize, images, table));
        if crate::observe::ompt::tool().is_some() {
            for device in runtime.devices.iter().filter(|d| d.can_run(&library)) {
                if let Err(e) = device.initialize() {
                    log::warn!("{e}");
                }
            }
        }
        log::debug!(
            "registered library {} with {} image(s) ({}) and {} entries",
            library.id,
            library.images.len(),
            library.targets().join(", "),
            library.entries.len()
        );
    })
}

/// Says, once at registration, why no plugin can run any image of the program: otherwise the
/// program would silently run on the host. `runnable` holds the numbering's answers (an image
/// a device was found for needs no second look).
fn warn_about_unusable_images(runtime: &Runtime, images: &[ProgramImage], runnable: &[bool]) {
    if runtime.plugins.is_empty() || runnable.iter().any(|&r| r) {
        return;
    }
    // A program built for several targets (a GPU image with its x86-64 twin, or images for two
    // vendors) is fine as long as one image can run; only when none can is it worth a word.
    let mut refusals = Vec::new();
    for (i, image) in images.iter().enumerate() {
        let mut reasons = Vec::new();
        for entry in &runtime.plugins {
            let name = &entry.opened.candidate.name;
            if entry.opened.may_run_target(image.target_triple()) == plugin_api::TargetClaim::NO {
                reasons.push(format!(
                    "{name}: does not run {} images",
                    image.target_triple()
                ));
                continue;
            }
            // Started already by the numbering, unless starting failed (its report says why).
            let Some(plugin) = runtime.start_plugin(entry) else {
                reasons.push(format!("{name}: the plugin failed to start"));
                continue;
            };
            let answer = plugin.check_image(-1, image.bytes, &image.triple, &image.arch);
            if answer.compatible {
                return;
            }
            reasons.push(format!("{name}: {}", answer.reason));
        }
        refusals.push(format!(
            "device image {i} of the program can be run by no plugin ({})",
            reasons.join("; ")
        ));
    }
    for refusal in refusals {
        log::warn!("{refusal}");
    }
}

/// Called from the program's global destructors.
#[no_mangle]
pub extern "C" fn __tgt_unregister_lib(desc: *const TgtBinDesc) {
    guard("__tgt_unregister_lib", (), || {
        // Target tasks the program left queued or running finish before its kernels and
        // mappings go.
        crate::host_openmp::wait_for_child_tasks();
        let runtime = Runtime::get();
        let (removed, now_empty) =
            runtime.change_registry(|r| (r.remove(desc as usize), r.is_empty()));
        if runtime.in_forked_child() {
            // Its parent still uses the devices (a remote device process is the same one).
            return;
        }
        if let Some(library) = removed {
            for device in runtime.devices.iter() {
                device.unload_library(&library);
            }
            log::debug!("unregistered library {}", library.id);
        }
        if now_empty {
            runtime.shut_down_devices();
            if runtime.exiting() {
                runtime.shut_down_plugins();
            }
        }
    })
}

#[no_mangle]
pub extern "C" fn __tgt_init_all_rtls() {
    guard("__tgt_init_all_rtls", (), || {
        // LLVM 19 starts every plugin here but numbers no device (so its llvm-omp-device-info
        // lists none); we number them all, which is what the call is for.
        Runtime::get().number_every_device();
        crate::observe::ompt::connect(host_device);
    })
}

#[no_mangle]
pub extern "C" fn __tgt_rtl_init() {
    guard("__tgt_rtl_init", (), || {
        Runtime::get();
        crate::observe::ompt::connect(host_device);
    })
}

#[no_mangle]
pub extern "C" fn __tgt_rtl_deinit() {}

/// `requires` clauses, as older compilers pass them.
#[no_mangle]
pub extern "C" fn __tgt_register_requires(flags: i64) {
    guard("__tgt_register_requires", (), || {
        Runtime::get().add_requirements(flags);
        log::debug!("requires flags {flags:#x} registered");
    })
}

/// The host's device number for OMPT events (`omp_get_initial_device`).
fn host_device() -> i32 {
    Runtime::get().initial_device()
}
