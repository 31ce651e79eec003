//! Loading plugin libraries: opening checks the ABI version (and finds the pre-start
//! `may_run_target` function); starting checks abi_stable's layout, then runs `init`.

use super::discovery::{self, Candidate};
use super::file_check;
use super::library::PluginLibrary;
use plugin_api::abi_stable::abi_stability::abi_checking::check_layout_compatibility;
use plugin_api::abi_stable::library::{lib_header_from_raw_library, LibHeader, RawLibrary};
use plugin_api::abi_stable::StableAbi;
use plugin_api::{
    AbiVersion, PluginModuleRef, TargetClaim, ABI_VERSION, ABI_VERSION_SYMBOL,
    MAY_RUN_TARGET_SYMBOL,
};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PluginStatus {
    Loaded,
    /// Opened and checked, not started: no registered image may run on it yet.
    NotStarted,
    /// Not loaded, and why.
    Skipped(String),
}

/// What happened to one candidate, for `omptarget-info` and debug output.
#[derive(Clone, Debug)]
pub struct PluginReport {
    pub candidate: Candidate,
    /// The file the system loader actually opened, when known.
    pub(crate) resolved_path: Option<String>,
    pub(crate) abi_version: Option<AbiVersion>,
    pub status: PluginStatus,
}

struct Opened {
    abi_version: AbiVersion,
    path: String,
    may_run_target: Option<MayRunTarget>,
}

/// The plain C function `omptarget_plugin_may_run_target` (ABI 1.4): the triple's bytes and
/// length.
type MayRunTarget = unsafe extern "C" fn(*const u8, usize) -> TargetClaim;

/// The file a loaded symbol lives in.
fn file_of_address(address: *const std::ffi::c_void) -> Option<String> {
    #[repr(C)]
    struct DlInfo {
        fname: *const std::ffi::c_char,
        fbase: *mut std::ffi::c_void,
        sname: *const std::ffi::c_char,
        saddr: *mut std::ffi::c_void,
    }
    extern "C" {
        fn dladdr(addr: *const std::ffi::c_void, info: *mut DlInfo) -> std::ffi::c_int;
    }
    let mut info = DlInfo {
        fname: std::ptr::null(),
        fbase: std::ptr::null_mut(),
        sname: std::ptr::null(),
        saddr: std::ptr::null_mut(),
    };
    // SAFETY: dladdr only writes into `info`; any address may be asked about.
    let found = unsafe { dladdr(address, &mut info) };
    if found == 0 || info.fname.is_null() {
        return None;
    }
    // SAFETY: dladdr returned a NUL-terminated file name owned by the loader.
    let name = unsafe { std::ffi::CStr::from_ptr(info.fname) };
    Some(name.to_string_lossy().into_owned())
}

/// The directory of the library (or executable) this code is linked into, where plugins are
/// installed beside `libomptarget.so`. For an executable in `bin/`, the sibling `lib/`.
pub fn runtime_directory() -> Option<PathBuf> {
    let file = PathBuf::from(file_of_address(
        runtime_directory as *const std::ffi::c_void,
    )?);
    let dir = file.parent()?.to_path_buf();
    let is_library = file
        .file_name()
        .and_then(|f| f.to_str())
        .is_some_and(|f| f.contains(".so"));
    if is_library {
        return Some(dir);
    }
    // An executable (omptarget-info, the plugin checker): the loader knows it by the name it was
    // started with, which may be relative or a symlink (/usr/bin/omptarget-info into the
    // package's tree), so ask the kernel for the real file instead.
    let exe = std::env::current_exe()
        .and_then(std::fs::canonicalize)
        .unwrap_or(file);
    let lib = exe.parent()?.parent()?.join("lib");
    lib.is_dir().then_some(lib)
}

fn open(
    candidate: &Candidate,
    resolved: &mut Option<String>,
    abi: &mut Option<AbiVersion>,
) -> Result<Opened, String> {
    // A file found by path is checked before the loader trusts it (a bare name is the system
    // loader's to find: the loader reports what it finds).
    if candidate.location.contains('/') {
        if let Some(file) = file_check::MappedFile::open(&candidate.location) {
            file_check::check(file.bytes()).map_err(|refusal| refusal.to_string())?;
        }
    }
    // SAFETY: opening a plugin runs its initialisers; plugins are trusted code found in the
    // configured plugin directories, as with LLVM's runtime.
    let library =
        unsafe { libloading::Library::new(&candidate.location) }.map_err(|e| match e {
            libloading::Error::DlOpen { desc } => format!(
                "cannot be opened: {}",
                format!("{desc:?}").trim_matches('"')
            ),
            other => format!("cannot be opened: {other}"),
        })?;
    // SAFETY: the symbol, when present, is a static AbiVersion (a plain #[repr(C)] pair of u32).
    let symbol = unsafe { library.get::<*const AbiVersion>(ABI_VERSION_SYMBOL.as_bytes()) }
        .map_err(|_| format!("not an omptarget plugin (no '{ABI_VERSION_SYMBOL}' symbol)"))?;
    let version_ptr: *const AbiVersion = *symbol;
    let path = file_of_address(version_ptr.cast()).unwrap_or_else(|| candidate.location.clone());
    *resolved = Some(path.clone());
    // SAFETY: the symbol is the plugin's static version record, valid while the library is
    // loaded (forever: plugins are never unloaded).
    let version = unsafe { std::ptr::read(version_ptr) };
    *abi = Some(version);
    if !ABI_VERSION.accepts(version) {
        return Err(format!(
            "plugin ABI version {version} is incompatible with this runtime's ABI version {ABI_VERSION} \
             (major versions differ); install a plugin built for ABI {}.x",
            ABI_VERSION.major
        ));
    }
    // SAFETY: when present (ABI 1.4 and later), the symbol is the plain C function
    // `export_plugin!` defines with this signature.
    let may_run_target = unsafe { library.get::<MayRunTarget>(MAY_RUN_TARGET_SYMBOL.as_bytes()) }
        .ok()
        .map(|f| *f);
    // Plugins stay loaded for the life of the process, as with abi_stable.
    std::mem::forget(library);
    Ok(Opened {
        abi_version: version,
        path,
        may_run_target,
    })
}

/// Checks the plugin's function table (abi_stable's layout check, which costs about a million
/// instructions: done when the plugin starts, not for every plugin found) and returns it.
fn check_module(path: &str, version: AbiVersion) -> Result<PluginModuleRef, String> {
    // Headers are loaded per file: abi_stable's RootModule::load_from_file would cache one
    // module for all plugins, since they share the module type.
    let header = load_header(Path::new(path))?;
    init_module(header, version).map_err(|full| {
        log::debug!("layout check of {path} failed:\n{full}");
        format!(
            "plugin interface layout does not match this runtime: {} \
             (rebuild the plugin against plugin-api {}.x; LIBOMPTARGET_DEBUG=1 shows the full comparison)",
            summarize_layout_error(&full),
            ABI_VERSION.major
        )
    })
}

/// Checks the plugin's function table against ours and returns it.
///
/// abi_stable accepts a library whose prefix type has at least the loader's fields, i.e. a
/// plugin of the same or a newer minor version. A plugin of an older minor version lacks the
/// newer fields, which the table's accessors then report as `None`: for it the check runs the
/// other way round (its table against ours must be a prefix of ours), and the module is taken
/// without abi_stable's own check, which would refuse it.
fn init_module(header: &LibHeader, plugin: AbiVersion) -> Result<PluginModuleRef, String> {
    if plugin.minor >= ABI_VERSION.minor {
        return header
            .init_root_module::<PluginModuleRef>()
            .map_err(|e| e.to_string());
    }
    let layout = header
        .layout()
        .ok_or("the plugin's root module carries no layout to check")?;
    check_layout_compatibility(layout, <PluginModuleRef as StableAbi>::LAYOUT)
        .map_err(|e| e.to_string())?;
    // SAFETY: the plugin's layout was just checked to be a prefix of ours; the fields it lacks
    // are only read through the prefix type's `Option` accessors, which consult the plugin's
    // own field count.
    unsafe { header.init_root_module_with_unchecked_layout::<PluginModuleRef>() }
        .map_err(|e| e.to_string())
}

/// The gist of abi_stable's layout report, which runs to thousands of lines: each distinct
/// error with its expected and found values.
fn summarize_layout_error(report: &str) -> String {
    let lines: Vec<&str> = report.lines().map(str::trim).collect();
    let mut errors: Vec<String> = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let Some(kind) = line.strip_prefix("Error:") else {
            continue;
        };
        let value_after = |label: &str| {
            lines[i + 1..]
                .iter()
                .take(6)
                .position(|l| *l == label)
                .and_then(|at| lines.get(i + 2 + at))
                .map(|v| v.to_string())
        };
        let mut text = kind.trim().to_string();
        if let (Some(expected), Some(found)) = (value_after("Expected:"), value_after("Found:")) {
            text.push_str(&format!(" (runtime: {expected}, plugin: {found})"));
        }
        if !errors.contains(&text) {
            errors.push(text);
        }
    }
    if errors.is_empty() {
        return report
            .lines()
            .next()
            .unwrap_or("unknown difference")
            .to_string();
    }
    errors.join("; ")
}

/// Plugins stay loaded for the life of the process. Their handles are kept in a static, not
/// just forgotten, so leak checkers see them as reachable.
static LOADED_LIBRARIES: Mutex<Vec<&'static RawLibrary>> = Mutex::new(Vec::new());

fn load_header(path: &Path) -> Result<&'static plugin_api::abi_stable::library::LibHeader, String> {
    let raw = RawLibrary::load_at(path).map_err(|e| format!("not a valid plugin library: {e}"))?;
    let raw: &'static RawLibrary = Box::leak(Box::new(raw));
    LOADED_LIBRARIES
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(raw);
    // SAFETY: the library stays loaded (never dropped), as the header requires.
    unsafe { lib_header_from_raw_library(raw) }
        .map_err(|e| format!("not a valid plugin library: {e}"))
}

/// A plugin library that was opened and whose ABI version is accepted, not started yet:
/// starting checks its function table and runs its `init`, which loads its driver. The runtime
/// starts a plugin only when a registered image may run on it, as LLVM's runtime does.
pub struct OpenedPlugin {
    pub candidate: Candidate,
    pub(crate) path: String,
    pub(crate) abi_version: AbiVersion,
    may_run_target: Option<MayRunTarget>,
}

impl OpenedPlugin {
    /// Whether images built for `triple` may run on the plugin, asked before it starts; plugins
    /// older than ABI 1.4 cannot tell.
    pub(crate) fn may_run_target(&self, triple: &str) -> TargetClaim {
        match self.may_run_target {
            // SAFETY: the plugin's C function reads `len` bytes at the pointer, which `triple`
            // holds for the call.
            Some(call) => unsafe { call(triple.as_ptr(), triple.len()) },
            None => TargetClaim::UNKNOWN,
        }
    }

    /// Checks the plugin's function table and runs its `init`; the error says why the plugin
    /// is skipped.
    pub fn start(&self) -> Result<PluginLibrary, String> {
        let module = check_module(&self.path, self.abi_version)?;
        let services = crate::observe::logging::host_services();
        let description = (module.init())(&services)
            .into_result()
            .map_err(|e| format!("initialisation failed: {e}"))?;
        let library = PluginLibrary::new(
            self.candidate.name.clone(),
            self.path.clone(),
            self.abi_version,
            description,
            module,
        );
        log::debug!(
            "started plugin '{}' from {} (ABI {}, {} devices)",
            library.name,
            library.location,
            library.abi_version,
            library.description.num_devices
        );
        Ok(library)
    }
}

/// Logs why a plugin is skipped: quietly for a bundled plugin that is simply not installed.
pub(crate) fn log_skipped(candidate: &Candidate, reason: &str) {
    if candidate.origin == discovery::Origin::SystemLoader && reason.starts_with("cannot be opened")
    {
        log::debug!("plugin '{}' not installed: {reason}", candidate.name);
    } else {
        log::warn!(
            "skipping plugin '{}' ({}): {reason}",
            candidate.name,
            candidate.location
        );
    }
}

fn open_one(candidate: &Candidate) -> (PluginReport, Option<OpenedPlugin>) {
    let mut resolved = None;
    let mut abi = None;
    let outcome = open(candidate, &mut resolved, &mut abi);
    let (status, opened) = match outcome {
        Ok(opened) => (
            PluginStatus::NotStarted,
            Some(OpenedPlugin {
                candidate: candidate.clone(),
                path: opened.path,
                abi_version: opened.abi_version,
                may_run_target: opened.may_run_target,
            }),
        ),
        Err(reason) => {
            log_skipped(candidate, &reason);
            (PluginStatus::Skipped(reason), None)
        }
    };
    let report = PluginReport {
        candidate: candidate.clone(),
        resolved_path: resolved,
        abi_version: abi,
        status,
    };
    (report, opened)
}

/// Opens the wanted plugins among `candidates`, in the wanted order, without starting them.
/// Every candidate gets a report (in the same order as the opened plugins, then those not
/// tried); only plugins that passed the checks are returned.
pub fn open_plugins(
    candidates: &[Candidate],
    requested: &Option<Vec<String>>,
) -> (Vec<PluginReport>, Vec<OpenedPlugin>) {
    // Reports of plugins not tried go last, so the list reads in load (= device number) order.
    let mut not_tried = Vec::new();
    let mut wanted: Vec<(usize, &Candidate)> = Vec::new();
    for candidate in candidates {
        if let Some(first) = candidates.iter().find(|c| c.name == candidate.name) {
            if !std::ptr::eq(first, candidate) {
                not_tried.push(PluginReport {
                    candidate: candidate.clone(),
                    resolved_path: None,
                    abi_version: None,
                    status: PluginStatus::Skipped(format!("shadowed by {}", first.location)),
                });
                continue;
            }
        }
        match discovery::order_key(&candidate.name, requested) {
            Some(key) => wanted.push((key, candidate)),
            None => not_tried.push(PluginReport {
                candidate: candidate.clone(),
                resolved_path: None,
                abi_version: None,
                status: PluginStatus::Skipped("not listed in LIBOMPTARGET_PLUGINS_TO_LOAD".into()),
            }),
        }
    }
    wanted.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.name.cmp(&b.1.name)));
    let mut reports = Vec::new();
    let mut opened = Vec::new();
    for (_, candidate) in wanted {
        let (report, plugin) = open_one(candidate);
        reports.push(report);
        opened.extend(plugin);
    }
    reports.extend(not_tried);
    (reports, opened)
}

/// Opens and starts the wanted plugins among `candidates` (the plugin checker's way: it tests
/// one plugin whatever the images). Every candidate gets a report; only started plugins are
/// returned.
pub fn load_plugins(
    candidates: &[Candidate],
    requested: &Option<Vec<String>>,
) -> (Vec<PluginReport>, Vec<PluginLibrary>) {
    let (mut reports, opened) = open_plugins(candidates, requested);
    let mut libraries = Vec::new();
    for plugin in opened {
        let report = reports
            .iter_mut()
            .find(|r| r.candidate == plugin.candidate && r.status == PluginStatus::NotStarted);
        match plugin.start() {
            Ok(library) => {
                if let Some(r) = report {
                    r.status = PluginStatus::Loaded;
                }
                libraries.push(library);
            }
            Err(reason) => {
                log_skipped(&plugin.candidate, &reason);
                if let Some(r) = report {
                    r.status = PluginStatus::Skipped(reason);
                }
            }
        }
    }
    (reports, libraries)
}

#[cfg(test)]
mod tests {
    use super::summarize_layout_error;

    #[test]
    fn layout_reports_are_summarised() {
        let report = "Compared <this>:\n  type:X\n\nError:incompatible package versions\nExpected:\n    1.0.0\nFound:\n    0.1.0\nmore\nError:incompatible package versions\nExpected:\n    1.0.0\nFound:\n    0.1.0\nError:field count differs\n";
        assert_eq!(
            summarize_layout_error(report),
            "incompatible package versions (runtime: 1.0.0, plugin: 0.1.0); field count differs"
        );
        assert_eq!(summarize_layout_error("odd text\nsecond"), "odd text");
    }
}
