//! The process-wide runtime: plugins, devices, registered libraries and the offload policy.
//! Created on first use (normally the program's first `__tgt_register_lib`).

use crate::abi::source_location::{self, Ident};
use crate::config::{self, OffloadPolicySetting};
use crate::device::Device;
use crate::device_list::{DeviceList, MAX_DEVICES};
use crate::error::{OffloadError, Result};
use crate::observe::logging;
use crate::plugins::loader::log_skipped;
use crate::plugins::{
    discovery, loader, open_plugins, OpenedPlugin, PluginLibrary, PluginReport, PluginStatus,
};
use crate::registry::{ProgramImage, Registry};
use crate::requires::RequiresFlags;
use once_cell::sync::OnceCell;
use plugin_api::TargetClaim;
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};

/// An opened plugin and, once a registered image may run on it, the started plugin (`None` if
/// starting failed).
pub(crate) struct PluginEntry {
    pub(crate) opened: OpenedPlugin,
    started: OnceLock<Option<Arc<PluginLibrary>>>,
    /// Which of its devices have an OpenMP device number.
    numbered: Mutex<Vec<bool>>,
    /// The plugin said devices may still appear (plugin ABI 1.5).
    may_grow: AtomicBool,
}

pub struct Runtime {
    pub(crate) search_path: Vec<String>,
    /// What became of each plugin candidate, for `omptarget-info`; a plugin's entry changes
    /// when it starts.
    pub(crate) reports: Mutex<Vec<PluginReport>>,
    /// The opened plugins, in load order.
    pub(crate) plugins: Vec<PluginEntry>,
    /// The OpenMP devices, numbered as registered images start plugins (LLVM's order: image by
    /// image, each plugin in load order, each of its devices that can run the image).
    pub(crate) devices: DeviceList,
    pub(crate) registry: RwLock<Registry>,
    pub(crate) policy: OffloadPolicySetting,
    /// `registry.generation`, readable without the lock (updated under the write lock).
    pub(crate) registry_generation: AtomicU64,
    /// The program's `requires` clauses, which its devices share.
    requirements: Arc<RequiresFlags>,
    /// Some started plugin may still find devices: see [`Runtime::find_late_devices`].
    late_devices: AtomicBool,
    /// The process is exiting: the runtime's exit handler ran (see [`Runtime::exiting`]).
    exiting: AtomicBool,
    /// The started plugins were shut down: no device is offered any more.
    shut_down: AtomicBool,
    /// The process the runtime started in: a child forked from it inherits the exit handler,
    /// but not the drivers' state or the MPI device processes to shut down.
    started_in: host_os::process::SetUpIn,
}

pub(crate) use crate::requires::REQUIRES_UNIFIED_SHARED_MEMORY;

static RUNTIME: OnceCell<Runtime> = OnceCell::new();

/// Where a construct runs.
pub(crate) enum Target<'r> {
    Host,
    Device(&'r Device),
}

impl Runtime {
    pub fn get() -> &'static Runtime {
        RUNTIME.get_or_init(|| {
            let runtime = Runtime::discover();
            register_exit_handler();
            runtime
        })
    }

    fn discover() -> Runtime {
        logging::init();
        crate::observe::profile::init();
        crate::observe::info::init();
        let plugin_path = config::plugin_path();
        let runtime_dir = loader::runtime_directory();
        let search_path = discovery::search_path(&plugin_path, &runtime_dir);
        let candidates = discovery::find_candidates(&plugin_path, &runtime_dir);
        let (reports, opened) = open_plugins(&candidates, &config::plugins_to_load());
        let plugins: Vec<PluginEntry> = opened
            .into_iter()
            .map(|opened| PluginEntry {
                opened,
                started: OnceLock::new(),
                numbered: Mutex::new(Vec::new()),
                may_grow: AtomicBool::new(false),
            })
            .collect();
        let policy = config::offload_policy();
        log::debug!(
            "runtime ready: {} plugins opened (started when an image may run on them), search path {:?}, policy {:?}",
            plugins.len(),
            search_path,
            policy
        );
        Runtime {
            search_path,
            reports: Mutex::new(reports),
            plugins,
            devices: DeviceList::default(),
            registry: RwLock::new(Registry::default()),
            policy,
            registry_generation: AtomicU64::new(0),
            requirements: Arc::default(),
            late_devices: AtomicBool::new(false),
            exiting: AtomicBool::new(false),
            shut_down: AtomicBool::new(false),
            started_in: host_os::process::SetUpIn::this_process(),
        }
    }

    /// Starts a plugin (once; later calls return the first outcome), recording the outcome
    /// in its report.
    pub(crate) fn start_plugin(&self, entry: &PluginEntry) -> Option<Arc<PluginLibrary>> {
        entry
            .started
            .get_or_init(|| {
                let mut span = crate::observe::profile::begin("plugin start-up");
                if let Some(span) = &mut span {
                    span.text("plugin", entry.opened.candidate.name.clone());
                }
                let outcome = entry.opened.start();
                drop(span);
                let status = match &outcome {
                    Ok(plugin) => {
                        // Drivers register exit handlers of their own as they start (the CUDA
                        // driver tears itself down in one): registered again after them, the
                        // runtime's runs first and shuts the plugin down while its driver works.
                        register_exit_handler();
                        if plugin.devices_may_appear() {
                            entry.may_grow.store(true, Ordering::Release);
                            self.late_devices.store(true, Ordering::Release);
                        }
                        PluginStatus::Loaded
                    }
                    Err(reason) => {
                        log_skipped(&entry.opened.candidate, reason);
                        PluginStatus::Skipped(reason.clone())
                    }
                };
                let mut reports = self.reports.lock().unwrap_or_else(|e| e.into_inner());
                if let Some(r) = reports
                    .iter_mut()
                    .find(|r| r.candidate == entry.opened.candidate)
                {
                    r.status = status;
                }
                outcome.ok().map(Arc::new)
            })
            .clone()
    }

    /// The plugins started so far, in load order.
    pub(crate) fn started_plugins(&self) -> Vec<Arc<PluginLibrary>> {
        self.plugins
            .iter()
            .filter_map(|e| e.started.get().cloned().flatten())
            .collect()
    }

    /// Gives device numbers for newly registered images, as LLVM's runtime does at
    /// registration: image by image, each plugin in load order that may run the image (it is
    /// started then, and only then), each of its devices that can run the image and has no
    /// number yet. The answer says, image by image, whether a device was found that can run it:
    /// where none was, either those that can were numbered already (and not asked) or none can.
    pub(crate) fn number_devices_for(&self, images: &[ProgramImage]) -> Vec<bool> {
        images
            .iter()
            .map(|image| {
                let found_one = Cell::new(false);
                for entry in &self.plugins {
                    if entry.opened.may_run_target(image.target_triple()) == TargetClaim::NO {
                        continue;
                    }
                    let Some(plugin) = self.start_plugin(entry) else {
                        continue;
                    };
                    self.number_devices(entry, &plugin, |local| {
                        let can = plugin
                            .check_image(local, image.bytes, &image.triple, &image.arch)
                            .compatible;
                        found_one.set(found_one.get() || can);
                        can
                    });
                }
                found_one.get()
            })
            .collect()
    }

    /// Starts every plugin and numbers every device that has no number yet, plugin by plugin
    /// (`__tgt_init_all_rtls`, `omptarget-info`).
    pub fn number_every_device(&self) {
        for entry in &self.plugins {
            if let Some(plugin) = self.start_plugin(entry) {
                self.number_devices(entry, &plugin, |_| true);
            }
        }
    }

    /// Numbers the devices that started plugins found after they started (the MPI plugin's
    /// appear once the program has initialised MPI), after every device numbered so far. One
    /// relaxed load unless some plugin said that devices may still appear.
    #[inline]
    pub(crate) fn find_late_devices(&self) {
        if self.late_devices.load(Ordering::Relaxed) {
            self.number_late_devices();
        }
    }

    #[cold]
    fn number_late_devices(&self) {
        let mut waiting = false;
        for entry in self.plugins.iter() {
            if !entry.may_grow.load(Ordering::Acquire) {
                continue;
            }
            let Some(Some(plugin)) = entry.started.get() else {
                continue;
            };
            // Asked first: devices that appear between the two calls are counted next time.
            let still = plugin.devices_may_appear();
            let count = plugin.num_devices() as usize;
            let known = entry
                .numbered
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .len();
            if count > known {
                let registry = self.registry.read().unwrap_or_else(|e| e.into_inner());
                let images: Vec<&ProgramImage> = registry
                    .libraries()
                    .iter()
                    .flat_map(|l| l.images.iter())
                    .collect();
                self.number_devices(entry, plugin, |local| {
                    images.iter().any(|image| {
                        plugin
                            .check_image(local, image.bytes, &image.triple, &image.arch)
                            .compatible
                    })
                });
            }
            if still {
                waiting = true;
            } else {
                entry.may_grow.store(false, Ordering::Release);
            }
        }
        if !waiting {
            self.late_devices.store(false, Ordering::Release);
        }
    }

    fn number_devices(
        &self,
        entry: &PluginEntry,
        plugin: &Arc<PluginLibrary>,
        wanted: impl Fn(i32) -> bool,
    ) {
        let mut numbered = entry.numbered.lock().unwrap_or_else(|e| e.into_inner());
        let count = plugin.num_devices();
        numbered.resize(count as usize, false);
        for local in 0..count {
            if numbered[local as usize] || !wanted(local) {
                continue;
            }
            let added = self
                .devices
                .push(|id| Device::new(id, plugin.clone(), local, self.requirements.clone()));
            match added {
                Some(device) => {
                    log::debug!("device {} is {} device {local}", device.id, plugin.name);
                    if crate::observe::profile::enabled() {
                        let name = plugin
                            .device_info(local)
                            .ok()
                            .and_then(|info| {
                                info.into_iter()
                                    .find(|e| e.key.as_str() == "name")
                                    .map(|e| e.value.to_string())
                            })
                            .unwrap_or_default();
                        crate::observe::profile::note_device(device.id, &plugin.name, &name);
                    }
                }
                None => {
                    log::warn!(
                        "{} device {local} gets no OpenMP device number: the runtime numbers at most {MAX_DEVICES} devices",
                        plugin.name
                    );
                    return;
                }
            }
            numbered[local as usize] = true;
        }
    }

    /// Records a library's `requires` flags. As in LLVM, the first library sets them and every
    /// later one must agree on the clauses that change how memory is shared; a mismatch is a
    /// fatal error, since the libraries' code would disagree about addresses.
    pub(crate) fn add_requirements(&self, flags: i64) {
        let Err(set) = self.requirements.record(flags) else {
            return;
        };
        for (bit, clause) in [
            (0x002, "reverse_offload"),
            (0x004, "unified_address"),
            (REQUIRES_UNIFIED_SHARED_MEMORY, "unified_shared_memory"),
            (0x010, "dynamic_allocators"),
        ] {
            if set & bit != flags & bit {
                fatal(
                    2,
                    &format!("'#pragma omp requires {clause}' not used consistently!"),
                );
            }
        }
    }

    /// `omp_get_num_devices`: no devices exist while offloading is disabled.
    pub(crate) fn num_devices(&self) -> i32 {
        match self.policy {
            OffloadPolicySetting::Disabled => 0,
            _ => self.devices.len() as i32,
        }
    }

    /// The host's device number (`omp_get_initial_device`), one past the last device.
    pub(crate) fn initial_device(&self) -> i32 {
        self.num_devices()
    }

    pub(crate) fn device(&self, id: i64) -> Result<&Device> {
        match self.numbered_device(id) {
            Some(device) => Ok(device),
            None => self.late_device(id),
        }
    }

    #[inline]
    fn numbered_device(&self, id: i64) -> Option<&Device> {
        usize::try_from(id)
            .ok()
            .filter(|_| self.policy != OffloadPolicySetting::Disabled)
            .filter(|_| !self.shut_down.load(Ordering::Relaxed))
            .and_then(|i| self.devices.get(i))
    }

    /// A device number that has no device (yet): a plugin may have found it since.
    #[cold]
    fn late_device(&self, id: i64) -> Result<&Device> {
        if self.shut_down.load(Ordering::Acquire) {
            return Err(OffloadError::new(format!(
                "device {id} is no longer available: the offload runtime shut its plugins down as the program exits"
            )));
        }
        self.find_late_devices();
        self.numbered_device(id).ok_or_else(|| {
            OffloadError::new(format!(
                "Device number '{id}' out of range, only {} devices available",
                self.num_devices()
            ))
        })
    }

    /// Whether a failed construct is fatal. As in LLVM: always under `mandatory`; under the
    /// default policy when the program has a device it could have run on.
    pub(crate) fn failure_is_fatal(&self) -> bool {
        match self.policy {
            OffloadPolicySetting::Mandatory => true,
            OffloadPolicySetting::Disabled => false,
            OffloadPolicySetting::Default => {
                let registry = self.registry.read().unwrap();
                self.devices.iter().any(|d| d.can_run_any(&registry))
            }
        }
    }

    /// Chooses where a construct with a `device` clause value runs, as LLVM's `checkDevice`:
    /// with no devices at all, `mandatory` is a fatal error; an invalid device number is a fatal
    /// error whatever the policy.
    pub(crate) fn target(&self, device_id: i64, loc: *const Ident) -> Target<'_> {
        if self.policy == OffloadPolicySetting::Disabled {
            return Target::Host;
        }
        if self.devices.is_empty() {
            self.find_late_devices();
        }
        if self.devices.is_empty() {
            if self.policy == OffloadPolicySetting::Mandatory {
                self.report_failure(&OffloadError::new("no offload device is available"), loc);
            }
            return Target::Host;
        }
        let id = if device_id == -1 {
            crate::host_openmp::default_device() as i64
        } else {
            device_id
        };
        if id >= self.devices.len() as i64 {
            self.find_late_devices();
        }
        if id == self.initial_device() as i64 {
            return Target::Host;
        }
        match self.device(id) {
            Ok(device) => Target::Device(device),
            Err(e) => fatal(id, &e.message),
        }
    }

    /// Changes the registry, publishing its new generation for `prepare`'s lock-free check.
    pub(crate) fn change_registry<R>(&self, change: impl FnOnce(&mut Registry) -> R) -> R {
        let mut registry = self.registry.write().unwrap();
        let result = change(&mut registry);
        self.registry_generation
            .store(registry.generation, Ordering::Release);
        result
    }

    /// Initialises a device and loads pending images onto it.
    pub(crate) fn prepare(&self, device: &Device) -> Result<()> {
        // Nothing registered since the device last loaded: no lock on the hot path.
        if device.is_ready_for(self.registry_generation.load(Ordering::Acquire)) {
            return Ok(());
        }
        let registry = self.registry.read().unwrap();
        device.ensure_ready(&registry)
    }

    /// Reports a failed construct: fatal (with LLVM's wording) when offloading is mandatory,
    /// else an error line; the caller then lets the program fall back to the host.
    // `loc` is the compiler's ident_t, passed through unchanged from a C entry point.
    #[allow(clippy::not_unsafe_ptr_arg_deref)]
    pub(crate) fn report_failure(&self, error: &OffloadError, loc: *const Ident) {
        for line in error.lines() {
            logging::failure_message(line);
        }
        if !self.failure_is_fatal() {
            return;
        }
        if crate::observe::info::enabled(crate::observe::info::DUMP_TABLE) {
            self.dump_tables(loc);
        } else {
            logging::failure_message(
                "Consult https://openmp.llvm.org/design/Runtimes.html for debugging options.",
            );
        }
        let registry = self.registry.read().unwrap();
        if !self.devices.iter().any(|d| d.can_run_any(&registry)) {
            // LLVM's wording; it lists the architectures it can read from the images.
            let archs: Vec<String> = registry
                .libraries()
                .iter()
                .flat_map(|l| l.architectures())
                .collect();
            logging::failure_message(&format!(
                "No images found compatible with the installed hardware. Found {} image(s): ({})",
                archs.len(),
                archs.join(",")
            ));
        }
        drop(registry);
        // SAFETY: `loc` comes from the compiler: null or a valid ident_t.
        match unsafe { source_location::describe(loc) } {
            Some(place) => eprint!("{place}: "),
            None => logging::failure_message(
                "Source location information not present. Compile with -g or -gline-tables-only.",
            ),
        }
        fatal(
            1,
            "failure of target construct while offloading is mandatory",
        )
    }

    /// After a successful construct: LLVM's mapping-table dump when `LIBOMPTARGET_INFO` asks.
    // `loc` is the compiler's ident_t, passed through unchanged from a C entry point.
    #[allow(clippy::not_unsafe_ptr_arg_deref)]
    pub(crate) fn construct_succeeded(&self, loc: *const Ident) {
        if crate::observe::info::enabled(crate::observe::info::DUMP_TABLE) {
            self.dump_tables(loc);
        }
    }

    // `loc` is the compiler's ident_t, passed through unchanged from a C entry point.
    #[allow(clippy::not_unsafe_ptr_arg_deref)]
    fn dump_tables(&self, loc: *const Ident) {
        // SAFETY: `loc` comes from the compiler: null or a valid ident_t.
        let at = unsafe { source_location::describe_or_unknown(loc) };
        for device in self.devices.iter() {
            let mappings = device.mapping.view_all().snapshot();
            crate::observe::info::dump_table(device.id, &at, &mappings, false);
        }
    }

    /// The program's exit handlers are running: set by the handler that [`Runtime::get`]
    /// registers when the runtime starts and [`Runtime::start_plugin`] after each plugin
    /// starts (normally inside the first `__tgt_register_lib`, so that the program's own
    /// handlers, the unregistrations among them, run before it).
    pub(crate) fn exiting(&self) -> bool {
        self.exiting.load(Ordering::SeqCst)
    }

    /// The runtime's exit handler: the plugins are shut down now if every library has been
    /// unregistered, else at the last unregistration; never in a forked child, whose plugins
    /// are copies of its parent's (shutting the MPI plugin down there would end the parent's
    /// device processes).
    fn process_exits(&self) {
        if self.in_forked_child() {
            log::debug!("a forked child exits: the plugins are its parent's to shut down");
            return;
        }
        self.exiting.store(true, Ordering::SeqCst);
        if self
            .registry
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .is_empty()
        {
            self.shut_down_plugins();
        }
    }

    /// This process was forked from the one the runtime started in: its devices' state is a
    /// copy of its parent's, which a remote device (MPI) shares, so it must not change them as
    /// it exits.
    pub(crate) fn in_forked_child(&self) -> bool {
        self.started_in.is_forked_child()
    }

    /// Shuts every started plugin down (once), as LLVM's runtime does when its last library is
    /// unregistered: drivers release their contexts, streams and page-locks, and tools see
    /// them end. Only as the process exits, not at every last unregistration (a program may
    /// `dlclose` its only offloading library and open another, and a plugin cannot start
    /// again). Devices are no longer offered afterwards.
    pub(crate) fn shut_down_plugins(&self) {
        if self.shut_down.swap(true, Ordering::AcqRel) {
            return;
        }
        for plugin in self.started_plugins() {
            match plugin.deinit() {
                Ok(()) => log::debug!("plugin {}: shut down", plugin.name),
                Err(e) => log::warn!("plugin {}: shutting down failed: {}", plugin.name, e),
            }
        }
    }

    /// Unloads everything at the last unregistration.
    pub(crate) fn shut_down_devices(&self) {
        // The runtime's own interop objects first: their queues belong to the devices.
        crate::interop::release_implicit_objects(self);
        for device in self.devices.iter() {
            device.release_mappings();
            device.finalize_for_tool();
        }
    }
}

impl crate::interop::Devices for Runtime {
    fn device(&self, id: i64) -> Result<&Device> {
        Runtime::device(self, id)
    }
}

/// `omptarget fatal error N: ...` then abort, LLVM's FATAL_MESSAGE.
pub(crate) fn fatal(code: i64, text: &str) -> ! {
    // The profile of a program that dies here is what its user wants most.
    crate::observe::profile::flush();
    logging::stderr_line(format_args!("omptarget fatal error {code}: {text}"));
    std::process::abort()
}

/// Registered with `atexit` when the runtime starts and again after each plugin starts: see
/// [`Runtime::exiting`]. Whichever registration runs first does the work; the rest find it done.
extern "C" fn runtime_exit_handler() {
    crate::panic_boundary::guard("the runtime's exit handler", (), || {
        if let Some(runtime) = RUNTIME.get() {
            runtime.process_exits();
        }
    })
}

fn register_exit_handler() {
    extern "C" {
        fn atexit(handler: extern "C" fn()) -> std::ffi::c_int;
    }
    // SAFETY: registers a function without arguments that catches its own panics; libomptarget
    // is never unloaded before the handler runs (it runs at `exit` or at our own `dlclose`).
    if unsafe { atexit(runtime_exit_handler) } != 0 {
        log::warn!("no exit handler registered: plugins will not be shut down at exit");
    }
}
