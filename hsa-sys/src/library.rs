//! Opening the ROCm runtime library and resolving its entry points at run time.
//!
//! Nothing links against libhsa-runtime64: a plugin built here must load (and say why it has no
//! devices) on a machine without ROCm. The library opened is the file named by the environment
//! variable `HSA_RUNTIME_LIB` when set (the variable GCC's HSA offloading plugin reads), else
//! `libhsa-runtime64.so.1`, the soname ROCm and Debian install.

use crate::types::*;
use libloading::Library;
use std::ffi::{c_char, c_int, c_void, OsStr, OsString};
use std::fmt;
use std::mem::ManuallyDrop;
use std::ops::Deref;

/// The soname of the ROCm runtime.
pub const DEFAULT_LIBRARY: &str = "libhsa-runtime64.so.1";

/// The environment variable naming another runtime library to open.
pub const LIBRARY_ENV: &str = "HSA_RUNTIME_LIB";

macro_rules! hsa_functions {
    (
        required { $($field:ident : fn($($arg:ty),*) $(-> $ret:ty)?;)* }
        optional { $($ofield:ident : fn($($oarg:ty),*) $(-> $oret:ty)?;)* }
    ) => {
        /// The runtime's entry points, one field per C function of the same name. Reached only
        /// through an [`HsaLibrary`], which keeps the library loaded.
        pub struct HsaFunctions {
            $(pub $field: unsafe extern "C" fn($($arg),*) $(-> $ret)?,)*
            $(pub $ofield: Option<unsafe extern "C" fn($($oarg),*) $(-> $oret)?>,)*
        }

        /// Entry points the plugin cannot work without: every ROCm since 3.x exports them.
        pub const REQUIRED_SYMBOLS: &[&str] = &[$(stringify!($field)),*];

        /// Entry points of newer runtimes, used when present.
        pub const OPTIONAL_SYMBOLS: &[&str] = &[$(stringify!($ofield)),*];

        impl HsaFunctions {
            /// Resolves every entry point; `Err` lists the required ones `library` lacks.
            fn resolve(library: &Library) -> Result<HsaFunctions, Vec<&'static str>> {
                let mut missing = Vec::new();
                $(
                    let $field = symbol::<unsafe extern "C" fn($($arg),*) $(-> $ret)?>(
                        library,
                        concat!(stringify!($field), "\0"),
                    );
                    if $field.is_none() {
                        missing.push(stringify!($field));
                    }
                )*
                let ($(Some($field),)*) = ($($field,)*) else {
                    return Err(missing);
                };
                Ok(HsaFunctions {
                    $($field,)*
                    $($ofield: symbol::<unsafe extern "C" fn($($oarg),*) $(-> $oret)?>(
                        library,
                        concat!(stringify!($ofield), "\0"),
                    ),)*
                })
            }
        }
    };
}

hsa_functions! {
    required {
        // Initialisation and status.
        hsa_init: fn() -> hsa_status_t;
        hsa_shut_down: fn() -> hsa_status_t;
        hsa_status_string: fn(hsa_status_t, *mut *const c_char) -> hsa_status_t;
        hsa_system_get_info: fn(hsa_system_info_t, *mut c_void) -> hsa_status_t;
        // Agents, ISAs, memory pools.
        hsa_iterate_agents: fn(hsa_agent_callback_t, *mut c_void) -> hsa_status_t;
        hsa_agent_get_info: fn(hsa_agent_t, hsa_agent_info_t, *mut c_void) -> hsa_status_t;
        hsa_agent_iterate_isas: fn(hsa_agent_t, hsa_isa_callback_t, *mut c_void) -> hsa_status_t;
        hsa_isa_get_info_alt: fn(hsa_isa_t, hsa_isa_info_t, *mut c_void) -> hsa_status_t;
        hsa_amd_agent_iterate_memory_pools: fn(
            hsa_agent_t, hsa_amd_memory_pool_callback_t, *mut c_void
        ) -> hsa_status_t;
        hsa_amd_memory_pool_get_info: fn(
            hsa_amd_memory_pool_t, hsa_amd_memory_pool_info_t, *mut c_void
        ) -> hsa_status_t;
        hsa_amd_agent_memory_pool_get_info: fn(
            hsa_agent_t, hsa_amd_memory_pool_t, hsa_amd_agent_memory_pool_info_t, *mut c_void
        ) -> hsa_status_t;
        // Signals.
        hsa_signal_create: fn(
            hsa_signal_value_t, u32, *const hsa_agent_t, *mut hsa_signal_t
        ) -> hsa_status_t;
        hsa_amd_signal_create: fn(
            hsa_signal_value_t, u32, *const hsa_agent_t, hsa_amd_signal_attribute_t,
            *mut hsa_signal_t
        ) -> hsa_status_t;
        hsa_signal_destroy: fn(hsa_signal_t) -> hsa_status_t;
        hsa_signal_load_scacquire: fn(hsa_signal_t) -> hsa_signal_value_t;
        hsa_signal_store_relaxed: fn(hsa_signal_t, hsa_signal_value_t);
        hsa_signal_store_screlease: fn(hsa_signal_t, hsa_signal_value_t);
        hsa_signal_subtract_screlease: fn(hsa_signal_t, hsa_signal_value_t);
        hsa_signal_wait_scacquire: fn(
            hsa_signal_t, hsa_signal_condition_t, hsa_signal_value_t, u64, hsa_wait_state_t
        ) -> hsa_signal_value_t;
        hsa_amd_signal_async_handler: fn(
            hsa_signal_t, hsa_signal_condition_t, hsa_signal_value_t, hsa_amd_signal_handler,
            *mut c_void
        ) -> hsa_status_t;
        // Queues.
        hsa_queue_create: fn(
            hsa_agent_t, u32, hsa_queue_type32_t, hsa_queue_error_callback_t, *mut c_void, u32,
            u32, *mut *mut hsa_queue_t
        ) -> hsa_status_t;
        hsa_queue_destroy: fn(*mut hsa_queue_t) -> hsa_status_t;
        hsa_queue_load_read_index_scacquire: fn(*const hsa_queue_t) -> u64;
        hsa_queue_add_write_index_relaxed: fn(*const hsa_queue_t, u64) -> u64;
        // Memory.
        hsa_amd_memory_pool_allocate: fn(
            hsa_amd_memory_pool_t, usize, u32, *mut *mut c_void
        ) -> hsa_status_t;
        hsa_amd_memory_pool_free: fn(*mut c_void) -> hsa_status_t;
        hsa_amd_agents_allow_access: fn(
            u32, *const hsa_agent_t, *const u32, *const c_void
        ) -> hsa_status_t;
        hsa_amd_memory_lock: fn(
            *mut c_void, usize, *mut hsa_agent_t, c_int, *mut *mut c_void
        ) -> hsa_status_t;
        hsa_amd_memory_unlock: fn(*mut c_void) -> hsa_status_t;
        hsa_amd_memory_async_copy: fn(
            *mut c_void, hsa_agent_t, *const c_void, hsa_agent_t, usize, u32,
            *const hsa_signal_t, hsa_signal_t
        ) -> hsa_status_t;
        hsa_amd_memory_fill: fn(*mut c_void, u32, usize) -> hsa_status_t;
        hsa_memory_copy: fn(*mut c_void, *const c_void, usize) -> hsa_status_t;
        // System events (memory faults).
        hsa_amd_register_system_event_handler: fn(
            hsa_amd_system_event_callback_t, *mut c_void
        ) -> hsa_status_t;
        // Code objects and executables.
        hsa_code_object_reader_create_from_memory: fn(
            *const c_void, usize, *mut hsa_code_object_reader_t
        ) -> hsa_status_t;
        hsa_code_object_reader_destroy: fn(hsa_code_object_reader_t) -> hsa_status_t;
        hsa_executable_create_alt: fn(
            hsa_profile_t, hsa_default_float_rounding_mode_t, *const c_char,
            *mut hsa_executable_t
        ) -> hsa_status_t;
        hsa_executable_load_agent_code_object: fn(
            hsa_executable_t, hsa_agent_t, hsa_code_object_reader_t, *const c_char,
            *mut hsa_loaded_code_object_t
        ) -> hsa_status_t;
        hsa_executable_freeze: fn(hsa_executable_t, *const c_char) -> hsa_status_t;
        hsa_executable_validate: fn(hsa_executable_t, *mut u32) -> hsa_status_t;
        hsa_executable_destroy: fn(hsa_executable_t) -> hsa_status_t;
        hsa_executable_get_symbol_by_name: fn(
            hsa_executable_t, *const c_char, *const hsa_agent_t, *mut hsa_executable_symbol_t
        ) -> hsa_status_t;
        hsa_executable_symbol_get_info: fn(
            hsa_executable_symbol_t, hsa_executable_symbol_info_t, *mut c_void
        ) -> hsa_status_t;
    }
    optional {
        // ROCm 5.7 and later: a copy on a chosen SDMA engine (the last two arguments are an
        // `hsa_amd_sdma_engine_id_t` bit and whether to refuse a blit-kernel fallback).
        hsa_amd_memory_async_copy_on_engine: fn(
            *mut c_void, hsa_agent_t, *const c_void, hsa_agent_t, usize, u32,
            *const hsa_signal_t, hsa_signal_t, u32, bool
        ) -> hsa_status_t;
        // The same ROCm: the engines (`hsa_amd_sdma_engine_id_t` bits) that may run a copy
        // from the second agent to the first and are free.
        hsa_amd_memory_copy_engine_status: fn(hsa_agent_t, hsa_agent_t, *mut u32) -> hsa_status_t;
        // Profiling (every ROCm has them; the plugin times its queued work with them for
        // LIBOMPTARGET_PROFILE and says it cannot without them).
        hsa_amd_profiling_set_profiler_enabled: fn(*mut hsa_queue_t, c_int) -> hsa_status_t;
        hsa_amd_profiling_async_copy_enable: fn(bool) -> hsa_status_t;
        hsa_amd_profiling_get_dispatch_time: fn(
            hsa_agent_t, hsa_signal_t, *mut hsa_amd_profiling_dispatch_time_t
        ) -> hsa_status_t;
        hsa_amd_profiling_get_async_copy_time: fn(
            hsa_signal_t, *mut hsa_amd_profiling_async_copy_time_t
        ) -> hsa_status_t;
        // Shared virtual memory (ROCm 5.x with a KFD that has SVM): attributes of host address
        // ranges, such as coarse-grained coherence or an agent's access on an APU.
        hsa_amd_svm_attributes_set: fn(
            *mut c_void, usize, *mut hsa_amd_svm_attribute_pair_t, usize
        ) -> hsa_status_t;
        hsa_amd_svm_attributes_get: fn(
            *mut c_void, usize, *mut hsa_amd_svm_attribute_pair_t, usize
        ) -> hsa_status_t;
    }
}

/// Looks up `name` (NUL-terminated) in `library` as a `T`.
fn symbol<T: Copy>(library: &Library, name: &'static str) -> Option<T> {
    // SAFETY: every `T` this is called with (from the table above) is the C signature of
    // `name` as hsa.h / hsa_ext_amd.h declare it, checked by hand against ROCm's headers; enum
    // parameters are passed as `u32`, the size and ABI of C enums on the targets ROCm supports.
    unsafe { library.get::<T>(name.as_bytes()) }
        .ok()
        .map(|found| *found)
}

/// Why the runtime library could not be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LoadError {
    /// The library was not found or could not be loaded.
    Open { library: String, reason: String },
    /// The library lacks entry points the plugin needs: not a ROCm runtime, or too old a one.
    MissingSymbols {
        library: String,
        missing: Vec<&'static str>,
    },
}

impl LoadError {
    /// The library that was asked for.
    pub fn library(&self) -> &str {
        match self {
            LoadError::Open { library, .. } | LoadError::MissingSymbols { library, .. } => library,
        }
    }
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoadError::Open { library, reason } => write!(
                f,
                "{library} not found or not loadable ({reason}); install ROCm's \
                 libhsa-runtime64 or set {LIBRARY_ENV} to its path"
            ),
            LoadError::MissingSymbols { library, missing } => write!(
                f,
                "{library} lacks required HSA entry points: {}; it is not a ROCm runtime or \
                 too old a one",
                missing.join(", ")
            ),
        }
    }
}

impl std::error::Error for LoadError {}

/// The opened runtime library and its entry points (dereferences to [`HsaFunctions`]).
///
/// The library is never unloaded, not even when this is dropped: the runtime starts threads
/// that outlive any point where unloading would be safe. Loading it again is cheap (the
/// loader counts references).
pub struct HsaLibrary {
    path: String,
    functions: HsaFunctions,
    _library: ManuallyDrop<Library>,
}

impl HsaLibrary {
    /// Opens the library named by `HSA_RUNTIME_LIB`, else `libhsa-runtime64.so.1`.
    pub fn load() -> Result<HsaLibrary, LoadError> {
        HsaLibrary::load_from(library_to_open(std::env::var_os(LIBRARY_ENV)))
    }

    /// Opens `library`: a file path, or a bare name the dynamic loader searches for.
    pub fn load_from(library: impl AsRef<OsStr>) -> Result<HsaLibrary, LoadError> {
        let library = library.as_ref();
        let name = library.to_string_lossy().into_owned();
        // SAFETY: opening the library runs its initialisers, ROCm's own (or those of whatever
        // the user named in HSA_RUNTIME_LIB, which is theirs to vouch for), as every HSA
        // program does.
        let opened = unsafe { Library::new(library) }.map_err(|e| LoadError::Open {
            library: name.clone(),
            reason: e.to_string(),
        })?;
        let functions =
            HsaFunctions::resolve(&opened).map_err(|missing| LoadError::MissingSymbols {
                library: name.clone(),
                missing,
            })?;
        let path = host_os::loaded_file(functions.hsa_init as usize)
            .map(|file| file.to_string_lossy().into_owned())
            .unwrap_or(name);
        Ok(HsaLibrary {
            path,
            functions,
            _library: ManuallyDrop::new(opened),
        })
    }

    /// The file the runtime was loaded from (as the dynamic loader found it), for messages.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The entry points.
    pub fn functions(&self) -> &HsaFunctions {
        &self.functions
    }
}

impl Deref for HsaLibrary {
    type Target = HsaFunctions;

    fn deref(&self) -> &HsaFunctions {
        &self.functions
    }
}

impl fmt::Debug for HsaLibrary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HsaLibrary")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

/// The library [`HsaLibrary::load`] opens, given the value of `HSA_RUNTIME_LIB`: that value
/// when set and not empty, else [`DEFAULT_LIBRARY`].
pub fn library_to_open(env_value: Option<OsString>) -> OsString {
    match env_value {
        Some(value) if !value.is_empty() => value,
        _ => OsString::from(DEFAULT_LIBRARY),
    }
}
