//! Bindings to the subset of the HSA runtime API (`hsa.h`, `hsa_ext_amd.h`) that the AMDGPU
//! plugin uses, resolved at run time from `libhsa-runtime64.so.1`.
//!
//! * [`types`]: handles, status codes, attribute enumerations, the queue and AQL packet
//!   layouts, event and callback types, under their C names.
//! * [`HsaLibrary`]: the opened library with one function pointer per entry point
//!   ([`HsaFunctions`]); [`LoadError`] says which library and which symbols were missing.
//! * [`status_name`]: the C name of a status code, for messages.
//!
//! Everything here is as unsafe to call as the C API is; the plugin's `hsa` module is the safe
//! layer over it.

pub mod library;
pub mod status;
pub mod types;

pub use library::{
    library_to_open, HsaFunctions, HsaLibrary, LoadError, DEFAULT_LIBRARY, LIBRARY_ENV,
    OPTIONAL_SYMBOLS, REQUIRED_SYMBOLS,
};
pub use status::{is_error, status_name};
pub use types::*;

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsString;
    use std::mem::{offset_of, size_of};

    #[test]
    fn svm_pairs_and_the_apu_bit_are_as_hsa_ext_amd_h_has_them() {
        assert_eq!(size_of::<hsa_amd_svm_attribute_pair_t>(), 16);
        assert_eq!(offset_of!(hsa_amd_svm_attribute_pair_t, value), 8);
        // ROCr sets bit number HSA_AMD_MEMORY_PROPERTY_AGENT_IS_APU (1): the byte's 0x02.
        let apu = [0x02, 0, 0, 0, 0, 0, 0, 0];
        assert!(hsa_flag_isset64(&apu, HSA_AMD_MEMORY_PROPERTY_AGENT_IS_APU));
        assert!(!hsa_flag_isset64(&[0x01, 0, 0, 0, 0, 0, 0, 0], 1));
        assert!(!hsa_flag_isset64(&apu, 64));
    }

    #[test]
    fn kernel_dispatch_packet_layout_matches_hsa_h() {
        type P = hsa_kernel_dispatch_packet_t;
        assert_eq!(size_of::<P>(), 64);
        assert_eq!(offset_of!(P, header), 0);
        assert_eq!(offset_of!(P, setup), 2);
        assert_eq!(offset_of!(P, workgroup_size_x), 4);
        assert_eq!(offset_of!(P, workgroup_size_y), 6);
        assert_eq!(offset_of!(P, workgroup_size_z), 8);
        assert_eq!(offset_of!(P, reserved0), 10);
        assert_eq!(offset_of!(P, grid_size_x), 12);
        assert_eq!(offset_of!(P, grid_size_y), 16);
        assert_eq!(offset_of!(P, grid_size_z), 20);
        assert_eq!(offset_of!(P, private_segment_size), 24);
        assert_eq!(offset_of!(P, group_segment_size), 28);
        assert_eq!(offset_of!(P, kernel_object), 32);
        assert_eq!(offset_of!(P, kernarg_address), 40);
        assert_eq!(offset_of!(P, reserved2), 48);
        assert_eq!(offset_of!(P, completion_signal), 56);
    }

    #[test]
    fn barrier_and_packet_layout_matches_hsa_h() {
        type P = hsa_barrier_and_packet_t;
        assert_eq!(size_of::<P>(), 64);
        assert_eq!(offset_of!(P, header), 0);
        assert_eq!(offset_of!(P, reserved0), 2);
        assert_eq!(offset_of!(P, reserved1), 4);
        assert_eq!(offset_of!(P, dep_signal), 8);
        assert_eq!(size_of::<[hsa_signal_t; 5]>(), 40);
        assert_eq!(offset_of!(P, reserved2), 48);
        assert_eq!(offset_of!(P, completion_signal), 56);
    }

    #[test]
    fn queue_layout_matches_hsa_h() {
        assert_eq!(size_of::<hsa_queue_t>(), 40);
        assert_eq!(offset_of!(hsa_queue_t, type_), 0);
        assert_eq!(offset_of!(hsa_queue_t, features), 4);
        assert_eq!(offset_of!(hsa_queue_t, base_address), 8);
        assert_eq!(offset_of!(hsa_queue_t, doorbell_signal), 16);
        assert_eq!(offset_of!(hsa_queue_t, size), 24);
        assert_eq!(offset_of!(hsa_queue_t, reserved1), 28);
        assert_eq!(offset_of!(hsa_queue_t, id), 32);
    }

    #[test]
    fn handles_and_event_layouts_match_hsa_h() {
        for size in [
            size_of::<hsa_agent_t>(),
            size_of::<hsa_signal_t>(),
            size_of::<hsa_region_t>(),
            size_of::<hsa_isa_t>(),
            size_of::<hsa_amd_memory_pool_t>(),
            size_of::<hsa_executable_t>(),
            size_of::<hsa_executable_symbol_t>(),
            size_of::<hsa_code_object_reader_t>(),
        ] {
            assert_eq!(size, 8);
        }
        assert_eq!(size_of::<hsa_dim3_t>(), 12);
        type F = hsa_amd_gpu_memory_fault_info_t;
        assert_eq!(offset_of!(F, agent), 0);
        assert_eq!(offset_of!(F, virtual_address), 8);
        assert_eq!(offset_of!(F, fault_reason_mask), 16);
        assert_eq!(offset_of!(hsa_amd_event_t, event_type), 0);
        assert_eq!(offset_of!(hsa_amd_event_t, memory_fault), 8);
        for (size, start, end) in [
            (
                size_of::<hsa_amd_profiling_dispatch_time_t>(),
                offset_of!(hsa_amd_profiling_dispatch_time_t, start),
                offset_of!(hsa_amd_profiling_dispatch_time_t, end),
            ),
            (
                size_of::<hsa_amd_profiling_async_copy_time_t>(),
                offset_of!(hsa_amd_profiling_async_copy_time_t, start),
                offset_of!(hsa_amd_profiling_async_copy_time_t, end),
            ),
        ] {
            assert_eq!((size, start, end), (16, 0, 8));
        }
    }

    #[test]
    fn header_fields_do_not_overlap() {
        let type_bits = ((1u32 << HSA_PACKET_HEADER_WIDTH_TYPE) - 1) << HSA_PACKET_HEADER_TYPE;
        let barrier_bits =
            ((1u32 << HSA_PACKET_HEADER_WIDTH_BARRIER) - 1) << HSA_PACKET_HEADER_BARRIER;
        let acquire_bits = ((1u32 << HSA_PACKET_HEADER_WIDTH_SCACQUIRE_FENCE_SCOPE) - 1)
            << HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE;
        let release_bits = ((1u32 << HSA_PACKET_HEADER_WIDTH_SCRELEASE_FENCE_SCOPE) - 1)
            << HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE;
        let all = [type_bits, barrier_bits, acquire_bits, release_bits];
        for (i, a) in all.iter().enumerate() {
            for b in &all[i + 1..] {
                assert_eq!(a & b, 0);
            }
        }
        assert_eq!(all.iter().fold(0, |acc, bits| acc | bits), 0x1fff);
    }

    #[test]
    fn status_names_are_the_c_names() {
        assert_eq!(status_name(HSA_STATUS_SUCCESS), "HSA_STATUS_SUCCESS");
        assert_eq!(status_name(0x1008), "HSA_STATUS_ERROR_OUT_OF_RESOURCES");
        assert_eq!(status_name(0x100B), "HSA_STATUS_ERROR_NOT_INITIALIZED");
        assert_eq!(status_name(0x1026), "HSA_STATUS_ERROR_FATAL");
        assert_eq!(status_name(43), "HSA_STATUS_ERROR_MEMORY_FAULT");
        assert_eq!(status_name(0x4242), "HSA_STATUS_UNKNOWN");
        // Every named code in the 0x1000 block has a name, and every name says what it is.
        for code in (0x1000..=0x1026).filter(|c| !(0x101A..0x1020).contains(c)) {
            let name = status_name(code);
            assert!(name.starts_with("HSA_STATUS_ERROR"), "{code:#x}: {name}");
        }
        for code in 40..=47 {
            assert_ne!(status_name(code), "HSA_STATUS_UNKNOWN", "{code}");
        }
    }

    #[test]
    fn only_success_break_and_warnings_are_not_errors() {
        assert!(!is_error(HSA_STATUS_SUCCESS));
        assert!(!is_error(HSA_STATUS_INFO_BREAK));
        assert!(!is_error(HSA_STATUS_CU_MASK_REDUCED));
        assert!(is_error(HSA_STATUS_ERROR));
        assert!(is_error(HSA_STATUS_ERROR_OUT_OF_RESOURCES));
        assert!(is_error(HSA_STATUS_ERROR_MEMORY_FAULT));
    }

    #[test]
    fn the_environment_variable_picks_the_library() {
        assert_eq!(library_to_open(None), OsString::from(DEFAULT_LIBRARY));
        assert_eq!(
            library_to_open(Some(OsString::new())),
            OsString::from(DEFAULT_LIBRARY)
        );
        assert_eq!(
            library_to_open(Some(OsString::from("/opt/rocm/lib/libhsa-runtime64.so"))),
            OsString::from("/opt/rocm/lib/libhsa-runtime64.so")
        );
    }

    #[test]
    fn a_missing_library_is_an_error_naming_it() {
        let error = HsaLibrary::load_from("/nonexistent/libhsa-runtime64.so.1").unwrap_err();
        assert!(matches!(error, LoadError::Open { .. }), "{error:?}");
        assert_eq!(error.library(), "/nonexistent/libhsa-runtime64.so.1");
        let message = error.to_string();
        assert!(
            message.contains("/nonexistent/libhsa-runtime64.so.1"),
            "{message}"
        );
        assert!(message.contains(LIBRARY_ENV), "{message}");
    }

    #[test]
    fn a_library_without_the_entry_points_names_the_missing_ones() {
        // libc loads everywhere and exports none of HSA.
        let error = HsaLibrary::load_from("libc.so.6").unwrap_err();
        let LoadError::MissingSymbols { library, missing } = &error else {
            panic!("expected missing symbols, got {error:?}");
        };
        assert_eq!(library, "libc.so.6");
        assert_eq!(missing.len(), REQUIRED_SYMBOLS.len());
        assert!(error.to_string().contains("hsa_init"), "{error}");
    }

    /// The installed ROCm runtime exports every entry point we declare as required. Without
    /// one the test notes it and passes, except under CI (env `CI` set), where the runtime is
    /// expected to be installed.
    #[test]
    fn the_installed_runtime_resolves_every_required_symbol() {
        match HsaLibrary::load_from(DEFAULT_LIBRARY) {
            Ok(library) => {
                assert!(
                    library.path().contains("libhsa-runtime64"),
                    "{}",
                    library.path()
                );
                let _ = library.hsa_init as *const ();
            }
            Err(LoadError::Open { reason, .. }) if std::env::var_os("CI").is_none() => {
                eprintln!("note: {DEFAULT_LIBRARY} is not installed ({reason}); not checked");
            }
            Err(error) => panic!("{error}"),
        }
    }
}
