//! The opened and initialised ROCm runtime.

use super::attributes;
use super::error::{check, hsa_error};
use crate::hsa_interface::HsaError;
use hsa_sys::*;
use std::ffi::OsStr;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The device file the runtime reaches the amdgpu kernel driver through.
const KFD_DEVICE: &str = "/dev/kfd";

/// libhsa-runtime64, loaded and initialised (`hsa_init`) once; shared by every device of the
/// plugin through an `Arc`. The runtime stays initialised until [`HsaRuntime::shut_down`]:
/// dropping the last `Arc` does not shut it down, as threads of the runtime may still be
/// running handlers into the plugin.
pub struct HsaRuntime {
    library: Arc<HsaLibrary>,
    version: Option<(u16, u16)>,
    timestamp_frequency: Option<u64>,
    shut_down: AtomicBool,
    pub(super) fault_handler_registered: AtomicBool,
}

impl HsaRuntime {
    /// Loads the runtime (`HSA_RUNTIME_LIB`, else `libhsa-runtime64.so.1`) and initialises it.
    /// `Err` says in words why there is no usable runtime: the library is missing, or
    /// `hsa_init` failed (typically: no AMD GPU, no `/dev/kfd`).
    ///
    /// Without `/dev/kfd`, and unless `HSA_RUNTIME_LIB` names a runtime, the library is not
    /// loaded at all: `hsa_init` cannot succeed without the kernel driver, and loading
    /// libhsa-runtime64 (its static initialisers and dependencies) costs 10-20 ms of the
    /// start-up of every program that links the offload runtime.
    pub fn open() -> Result<Arc<HsaRuntime>, String> {
        let named = std::env::var_os(LIBRARY_ENV).is_some_and(|v| !v.is_empty());
        if !named && !Path::new(KFD_DEVICE).exists() {
            return Err(not_started_message());
        }
        HsaRuntime::initialise(HsaLibrary::load())
    }

    /// [`HsaRuntime::open`] with the library named explicitly.
    pub fn open_from(library: impl AsRef<OsStr>) -> Result<Arc<HsaRuntime>, String> {
        HsaRuntime::initialise(HsaLibrary::load_from(library))
    }

    fn initialise(loaded: Result<HsaLibrary, LoadError>) -> Result<Arc<HsaRuntime>, String> {
        let library = loaded.map_err(|e| e.to_string())?;
        // SAFETY: hsa_init takes no arguments; it may be called from any thread and counts
        // its calls, each matched by the hsa_shut_down in `shut_down`.
        let status = unsafe { (library.hsa_init)() };
        if is_error(status) {
            return Err(init_failure_message(status, &library, kfd_state()));
        }
        let version = runtime_version(&library);
        let timestamp_frequency = attributes::system(&library, HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY)
            .ok()
            .map(|value| value.u64())
            .filter(|&hz| hz > 0);
        Ok(Arc::new(HsaRuntime {
            library: Arc::new(library),
            version,
            timestamp_frequency,
            shut_down: AtomicBool::new(false),
            fault_handler_registered: AtomicBool::new(false),
        }))
    }

    /// The entry points, for the layers that make raw calls.
    pub fn library(&self) -> &Arc<HsaLibrary> {
        &self.library
    }

    /// The file the runtime was loaded from.
    pub fn library_path(&self) -> &str {
        self.library.path()
    }

    /// The HSA specification version the runtime implements (`HSA_SYSTEM_INFO_VERSION_*`).
    pub fn version(&self) -> Option<(u16, u16)> {
        self.version
    }

    /// Whether kernels may use pageable host memory: XNACK is on (their page faults are served
    /// through HMM), or system memory is accessible by default (an APU). `None` where the
    /// runtime answers neither question.
    pub fn pageable_memory_access(&self) -> Option<bool> {
        let ask = |attribute| {
            attributes::system(&self.library, attribute)
                .ok()
                .map(|value| value.bool())
        };
        match (
            ask(HSA_AMD_SYSTEM_INFO_XNACK_ENABLED),
            ask(HSA_AMD_SYSTEM_INFO_SVM_ACCESSIBLE_BY_DEFAULT),
        ) {
            (None, None) => None,
            (xnack, by_default) => Some(xnack == Some(true) || by_default == Some(true)),
        }
    }

    /// Whether the runtime manages shared virtual memory (`HSA_AMD_SYSTEM_INFO_SVM_SUPPORTED`):
    /// host ranges can be given SVM attributes, such as being in a GPU's page tables.
    pub fn svm_supported(&self) -> bool {
        attributes::system(&self.library, HSA_AMD_SYSTEM_INFO_SVM_SUPPORTED)
            .is_ok_and(|value| value.bool())
    }

    /// Ticks per second of the system timestamp, the unit of signal wait timeouts
    /// (`HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY`).
    pub fn timestamp_frequency(&self) -> Option<u64> {
        self.timestamp_frequency
    }

    /// The HSA system clock now, in ticks of [`HsaRuntime::timestamp_frequency`]
    /// (`HSA_SYSTEM_INFO_TIMESTAMP`): the domain of the profiling timestamps.
    pub fn system_timestamp(&self) -> Result<u64, HsaError> {
        attributes::system(&self.library, HSA_SYSTEM_INFO_TIMESTAMP).map(|value| value.u64())
    }

    /// Whether [`HsaRuntime::shut_down`] has run.
    pub fn is_shut_down(&self) -> bool {
        self.shut_down.load(Ordering::Acquire)
    }

    /// `hsa_shut_down`, once; later calls do nothing. Every queue, signal, executable and
    /// allocation of the runtime is invalid afterwards.
    pub fn shut_down(&self) -> Result<(), HsaError> {
        if self.shut_down.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        // SAFETY: matches the hsa_init of `open`; the swap above makes it happen once.
        let status = unsafe { (self.library.hsa_shut_down)() };
        check("hsa_shut_down", status)
    }
}

fn runtime_version(library: &HsaLibrary) -> Option<(u16, u16)> {
    let major = attributes::system(library, HSA_SYSTEM_INFO_VERSION_MAJOR).ok()?;
    let minor = attributes::system(library, HSA_SYSTEM_INFO_VERSION_MINOR).ok()?;
    Some((major.u16(), minor.u16()))
}

/// What the kernel driver's device file looks like to this process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum KfdState {
    Missing,
    /// Present, but opening it for reading and writing failed (the reason).
    NotAccessible(String),
    Accessible,
}

fn kfd_state() -> KfdState {
    if !Path::new(KFD_DEVICE).exists() {
        return KfdState::Missing;
    }
    match std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(KFD_DEVICE)
    {
        Ok(_) => KfdState::Accessible,
        Err(e) => KfdState::NotAccessible(e.to_string()),
    }
}

/// Why the runtime was not started on a machine without the kernel driver.
fn not_started_message() -> String {
    format!(
        "no {KFD_DEVICE}: there is no AMD GPU, or the amdgpu kernel driver is not loaded; \
         the HSA runtime ({DEFAULT_LIBRARY}) is not started without it (set {LIBRARY_ENV} to \
         its path to start it anyway)"
    )
}

/// Why `hsa_init` failed, in words: the status, the likely cause, and which runtime said so.
pub(crate) fn init_failure_message(
    status: hsa_status_t,
    library: &HsaLibrary,
    kfd: KfdState,
) -> String {
    let cause = match kfd {
        KfdState::Missing => format!(
            "no {KFD_DEVICE}: there is no AMD GPU, or the amdgpu kernel driver is not loaded"
        ),
        KfdState::NotAccessible(reason) => format!(
            "{KFD_DEVICE} is not accessible ({reason}): add the user to the groups that own \
             it and /dev/dri/renderD* (usually 'render' and 'video')"
        ),
        KfdState::Accessible => format!(
            "{KFD_DEVICE} is accessible, so the runtime rejected this system for another \
             reason (an unsupported GPU, or a driver too old for this runtime)"
        ),
    };
    format!(
        "{} — {cause}; runtime {}",
        hsa_error("hsa_init", status),
        describe_library(library.path())
    )
}

/// `path`, followed by the file it links to when that differs: the versioned file name says
/// which ROCm release it is (`libhsa-runtime64.so.1.5.0`).
fn describe_library(path: &str) -> String {
    match std::fs::canonicalize(path) {
        Ok(file) if file != Path::new(path) => format!("{path} ({})", file.display()),
        _ => path.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether tests that need the installed runtime must fail, not skip, without it.
    fn required() -> bool {
        std::env::var_os("CI").is_some()
    }

    #[test]
    fn without_the_library_open_names_it() {
        let error = HsaRuntime::open_from("/nonexistent/libhsa-runtime64.so.1")
            .err()
            .expect("a missing library cannot open");
        assert!(
            error.contains("/nonexistent/libhsa-runtime64.so.1"),
            "{error}"
        );
        assert!(error.contains("not found"), "{error}");
    }

    /// On a machine without an AMD GPU (every machine this is developed on), the real runtime
    /// loads and `hsa_init` fails with HSA_STATUS_ERROR_OUT_OF_RESOURCES; the message says so
    /// and names the library. With a GPU, `open` succeeds and reports a version instead.
    #[test]
    fn the_installed_runtime_opens_or_says_why_not() {
        if HsaLibrary::load_from(DEFAULT_LIBRARY).is_err() && !required() {
            eprintln!("note: {DEFAULT_LIBRARY} is not installed; open() not checked");
            return;
        }
        match HsaRuntime::open_from(DEFAULT_LIBRARY) {
            Ok(runtime) => {
                assert!(runtime.version().is_some());
                assert!(runtime.library_path().contains("libhsa-runtime64"));
                assert_eq!(runtime.shut_down(), Ok(()));
                assert_eq!(runtime.shut_down(), Ok(()));
            }
            Err(message) => {
                assert!(message.starts_with("hsa_init failed: "), "{message}");
                assert!(message.contains("libhsa-runtime64"), "{message}");
                if !Path::new(KFD_DEVICE).exists() {
                    assert!(
                        message.contains("HSA_STATUS_ERROR_OUT_OF_RESOURCES (0x1008)"),
                        "{message}"
                    );
                    assert!(message.contains("no /dev/kfd"), "{message}");
                }
            }
        }
    }

    #[test]
    fn the_init_failure_message_names_the_likely_cause() {
        let Ok(library) = HsaLibrary::load_from(DEFAULT_LIBRARY) else {
            assert!(!required(), "{DEFAULT_LIBRARY} is not installed");
            return;
        };
        let missing = init_failure_message(0x1008, &library, KfdState::Missing);
        assert!(
            missing.starts_with(
                "hsa_init failed: HSA_STATUS_ERROR_OUT_OF_RESOURCES (0x1008) — no /dev/kfd"
            ),
            "{missing}"
        );
        assert!(missing.contains(library.path()), "{missing}");
        let denied = init_failure_message(
            0x1000,
            &library,
            KfdState::NotAccessible("Permission denied".into()),
        );
        assert!(denied.contains("HSA_STATUS_ERROR (0x1000)"), "{denied}");
        assert!(denied.contains("Permission denied"), "{denied}");
        assert!(denied.contains("render"), "{denied}");
        let other = init_failure_message(0x1008, &library, KfdState::Accessible);
        assert!(other.contains("another reason"), "{other}");
    }
}
