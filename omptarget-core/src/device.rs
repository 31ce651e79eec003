//! One offload device: a plugin device plus what the runtime keeps for it (loaded images, the
//! kernel table, the mapping table). Devices initialise on first use and load each registered
//! library's image then, so a program that never offloads never touches its devices.

use crate::abi::offload_entry;
use crate::abi::source_location::VarName;
use crate::error::{OffloadError, Result};
use crate::kernel_table::{Kernel, KernelTable};
use crate::mapping::{Mapping, MappingTable};
use crate::memory_pool::{self, MemoryPool};
use crate::observe::info;
use crate::observe::ompt::{self, DataOp, DataOpKind};
use crate::plugins::PluginLibrary;
use crate::record_replay::block::RecordReplay;
use crate::registry::{RegisteredLibrary, Registry};
use crate::requires::RequiresFlags;
use plugin_api::{AllocKind, DeviceTraits, ImageHandle, QueueHandle};
use std::collections::HashMap;
use std::ffi::{c_void, CStr, CString};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// What became of a registered library on this device.
enum LibraryState {
    Loaded {
        image: ImageHandle,
        kernels: Vec<usize>,
        globals: Vec<usize>,
        /// The image loaded and its globals (name, size, device address), for recording.
        image_bytes: &'static [u8],
        global_entries: Vec<LoadedGlobal>,
    },
    /// No image of the library can run here, or loading failed: why.
    Unusable(String),
}

/// A global of a loaded image: its name, size and device address.
#[derive(Clone, Debug)]
pub(crate) struct LoadedGlobal {
    pub name: String,
    pub size: u64,
    pub address: usize,
}

#[derive(Default)]
struct DeviceState {
    initialized: bool,
    libraries: HashMap<u64, LibraryState>,
}

pub(crate) struct Device {
    /// The OpenMP device number.
    pub id: i32,
    pub plugin: Arc<PluginLibrary>,
    /// The device number inside its plugin.
    pub local: i32,
    /// The program's `requires` clauses (the runtime's, which later libraries may set).
    requires: Arc<RequiresFlags>,
    state: Mutex<DeviceState>,
    /// Registry generation whose libraries are all loaded here (u64::MAX: none yet).
    synced_generation: AtomicU64,
    kernels: KernelTable,
    pub mapping: MappingTable,
    /// Reused small allocations of the default kind.
    pool: MemoryPool,
    /// A tool was told this device initialised (and must be told when it finalises).
    announced_to_tool: AtomicBool,
    /// The OpenMP 6.0 unique identifier (`omp_get_uid_from_device`), made on first request.
    uid: once_cell::sync::OnceCell<CString>,
    /// Kernel record and replay, once activated (LIBOMPTARGET_RECORD, or a replay tool).
    record_replay: once_cell::sync::OnceCell<RecordReplay>,
    /// The plugin promised that work is done when the call submitting it returns (ABI 1.4):
    /// transfers need no events. Set when the device initialises.
    queues_complete_on_submission: AtomicBool,
    /// The device's memory is this process's (the host plugin): the pool's new slabs are
    /// faulted in at once, since their blocks are written as soon as they are handed out, and
    /// a kernel's data is prefetched.
    memory_in_process: AtomicBool,
    /// The plugin times the work on this device's queues itself (plugin ABI 1.5), for
    /// `LIBOMPTARGET_PROFILE`'s device tracks. Set when the device initialises, only when
    /// profiling is on.
    work_timed: AtomicBool,
    /// The plugin asked for zero-copy maps (ABI 1.7 `ZERO_COPY_MAPS`): host data is used in
    /// place as under `requires unified_shared_memory`. Set when the device initialises.
    zero_copy_maps: AtomicBool,
}

impl Device {
    pub(crate) fn new(
        id: i32,
        plugin: Arc<PluginLibrary>,
        local: i32,
        requires: Arc<RequiresFlags>,
    ) -> Self {
        Device {
            id,
            plugin,
            local,
            requires,
            state: Mutex::new(DeviceState::default()),
            synced_generation: AtomicU64::new(u64::MAX),
            kernels: KernelTable::default(),
            mapping: MappingTable::new(),
            pool: MemoryPool::new(memory_pool::threshold_from_env()),
            announced_to_tool: AtomicBool::new(false),
            uid: once_cell::sync::OnceCell::new(),
            record_replay: once_cell::sync::OnceCell::new(),
            queues_complete_on_submission: AtomicBool::new(false),
            memory_in_process: AtomicBool::new(false),
            work_timed: AtomicBool::new(false),
            zero_copy_maps: AtomicBool::new(false),
        }
    }

    /// Whether work on this device's queues is complete once submitted (plugin ABI 1.4), so
    /// that no construct needs an event to wait for another's transfers.
    pub(crate) fn queues_complete_on_submission(&self) -> bool {
        self.queues_complete_on_submission.load(Ordering::Relaxed)
    }

    /// A kernel on this device is about to use the data at `device_address`: where the
    /// device's memory is this process's (the host plugin), its first line starts loading now,
    /// while the construct sets the kernel up. Among many mappings that line is a miss the
    /// kernel would otherwise wait for.
    pub(crate) fn prefetch_kernel_data(&self, device_address: usize) {
        if self.memory_in_process.load(Ordering::Relaxed) {
            crate::cache_hint::prefetch_line(device_address);
        }
    }

    /// Whether maps of host data use the host's addresses in place: the program requires
    /// unified shared memory, or the plugin chose zero-copy maps for this device.
    pub(crate) fn maps_in_place(&self) -> bool {
        self.requires.unified_shared_memory() || self.zero_copy_maps.load(Ordering::Relaxed)
    }

    /// Whether the device's kernels can use `size` host bytes at `host_ptr` in place, as the
    /// plugin answers (ABI 1.7; no for an older plugin or a failing answer).
    pub(crate) fn is_accessible(&self, host_ptr: usize, size: u64) -> bool {
        match self.plugin.is_accessible(self.local, host_ptr, size) {
            Ok(answer) => answer,
            Err(e) => {
                log::debug!("device {}: is_accessible failed: {}", self.id, e.message);
                false
            }
        }
    }

    /// `OMPX_EAGER_ZERO_COPY_MAPS`: enters a zero-copy map's host range in the device's page
    /// tables before its kernel runs. A plugin that cannot leaves the pages to fault in.
    pub(crate) fn prefault_zero_copy_map(&self, host_ptr: usize, size: u64) {
        if size == 0 || !crate::config::eager_zero_copy_maps() {
            return;
        }
        let result = self.plugin.prefault_host_memory(self.local, host_ptr, size);
        if info::enabled(info::ZERO_COPY) {
            let outcome = match &result {
                Some(Ok(())) => "entered in the device's page tables".to_string(),
                Some(Err(e)) => format!("not prefaulted: {}", e.message),
                None => "not prefaulted: the plugin is older than ABI 1.7".to_string(),
            };
            info::line(
                self.id,
                format_args!(
                    "Zero-copy map HstPtrBegin={} Size={size} {outcome}",
                    info::Ptr(host_ptr)
                ),
            );
        }
    }

    /// `LIBOMPTARGET_LOCK_MAPPED_HOST_BUFFERS`: page-locks a new mapping's host range so that
    /// its transfers need no staging. Whether it was locked; a lock the plugin refuses only
    /// costs the staging, so the mapping goes on without it.
    pub(crate) fn lock_mapped_host_buffer(&self, host: usize, size: u64) -> bool {
        if size == 0 || !crate::config::lock_mapped_host_buffers() {
            return false;
        }
        match self.plugin.pin_memory(self.local, host, size) {
            Ok(_) => true,
            Err(e) => {
                log::debug!(
                    "device {}: mapped host range {host:#x} ({size} bytes) not locked: {}",
                    self.id,
                    e.message
                );
                false
            }
        }
    }

    /// Undoes [`Device::lock_mapped_host_buffer`] when its mapping goes.
    pub(crate) fn unlock_mapped_host_buffer(&self, host: usize) {
        if let Err(e) = self.plugin.unpin_memory(self.local, host) {
            log::warn!(
                "device {}: unlocking mapped host range {host:#x} failed: {}",
                self.id,
                e.message
            );
        }
    }

    /// Whether the plugin times this device's queued work itself (plugin ABI 1.5).
    pub(crate) fn work_timed(&self) -> bool {
        self.work_timed.load(Ordering::Relaxed)
    }

    /// With profiling on, asks the plugin to time the device's queued work (a device whose
    /// queues complete on submission needs not: its submissions are the device's timing).
    fn start_work_timing(&self) {
        if !crate::observe::profile::enabled() || self.queues_complete_on_submission() {
            return;
        }
        match self.plugin.start_work_timing(self.local) {
            Some(Ok(())) => self.work_timed.store(true, Ordering::Relaxed),
            Some(Err(e)) => log::info!(
                "LIBOMPTARGET_PROFILE: device {} shows no device-side spans: {}",
                self.id,
                e.message
            ),
            None => log::info!(
                "LIBOMPTARGET_PROFILE: device {} shows no device-side spans: its plugin is \
                 built for ABI {}, which cannot time queued work",
                self.id,
                self.plugin.abi_version
            ),
        }
    }

    /// The device's unique identifier: the plugin's `uid` property (LLVM 22's form: CUDA and
    /// AMDGPU from the hardware's UUID, the host `x86_64-N`), else `<plugin>-<local number>`,
    /// the form LLVM gives devices without a vendor UUID.
    pub(crate) fn uid(&self) -> &CStr {
        self.uid.get_or_init(|| {
            let from_plugin = self.plugin.device_info(self.local).ok().and_then(|info| {
                info.into_iter()
                    .find(|e| e.key.as_str() == "uid")
                    .map(|e| e.value.to_string())
            });
            let uid = from_plugin.unwrap_or_else(|| format!("{}-{}", self.plugin.name, self.local));
            CString::new(uid.replace('\0', "")).unwrap_or_default()
        })
    }

    /// Starts recording (or, for a replay tool, replaying) kernels: see `record_replay`.
    /// Returns how far pointer arguments must move (replay). Refused once active.
    pub(crate) fn activate_record_replay(
        &self,
        replaying: bool,
        save_output: bool,
        wanted: usize,
        required: u64,
    ) -> Result<u64> {
        if self.record_replay.get().is_some() {
            return Err(OffloadError::new(format!(
                "record/replay is already active on device {}",
                self.id
            )));
        }
        let (state, offset) = RecordReplay::reserve(
            &self.plugin,
            self.local,
            self.id,
            replaying,
            save_output,
            wanted,
            required,
        )?;
        if let Err(state) = self.record_replay.set(state) {
            let _ = self
                .plugin
                .free(self.local, state.block_start(), AllocKind::DEFAULT);
            return Err(OffloadError::new(
                "record/replay was activated concurrently",
            ));
        }
        Ok(offset)
    }

    pub(crate) fn record_replay(&self) -> Option<&RecordReplay> {
        self.record_replay.get()
    }

    /// The image loaded here that holds kernel `region_id`, and that image's globals (name,
    /// size, device address).
    pub(crate) fn image_of_kernel(
        &self,
        region_id: usize,
    ) -> Option<(&'static [u8], Vec<LoadedGlobal>)> {
        let state = self.state.lock().unwrap();
        state.libraries.values().find_map(|library| match library {
            LibraryState::Loaded {
                kernels,
                image_bytes,
                global_entries,
                ..
            } if kernels.contains(&region_id) => Some((*image_bytes, global_entries.clone())),
            _ => None,
        })
    }

    /// Whether every library of registry generation `generation` is loaded here already.
    pub(crate) fn is_ready_for(&self, generation: u64) -> bool {
        self.synced_generation.load(Ordering::Acquire) == generation
    }

    /// Initialises the device and loads the images of libraries registered since the last call.
    pub(crate) fn ensure_ready(&self, registry: &Registry) -> Result<()> {
        if self.synced_generation.load(Ordering::Acquire) == registry.generation {
            return Ok(());
        }
        let mut state = self.state.lock().unwrap();
        self.initialize_locked(&mut state)?;
        for library in registry.libraries() {
            state
                .libraries
                .entry(library.id)
                .or_insert_with(|| self.load_library(library));
        }
        if crate::config::dump_offload_entries() == Some(self.id) {
            self.dump_offload_entries(&state, registry);
        }
        self.synced_generation
            .store(registry.generation, Ordering::Release);
        Ok(())
    }

    /// `OMPTARGET_DUMP_OFFLOAD_ENTRIES`: the entries of the images loaded here, in LLVM's
    /// words (`Device 0 offload entries:`, then `kind: name` with the kind right-aligned).
    #[cold]
    fn dump_offload_entries(&self, state: &DeviceState, registry: &Registry) {
        use offload_entry::flags;
        crate::line_output::stderr_line(format_args!("Device {} offload entries:", self.id));
        let loaded = registry.libraries().iter().filter(|library| {
            matches!(
                state.libraries.get(&library.id),
                Some(LibraryState::Loaded { .. })
            )
        });
        for entry in loaded.flat_map(|library| &library.entries) {
            if entry.flags & flags::REGISTER_REQUIRES != 0 {
                continue;
            }
            let kind = if entry.flags & flags::CTOR != 0 {
                "constructor"
            } else if entry.flags & flags::DTOR != 0 {
                "destructor"
            } else if entry.flags & flags::LINK != 0 {
                "link"
            } else if entry.is_global() {
                "global var."
            } else {
                "kernel"
            };
            crate::line_output::stderr_line(format_args!("  {kind:>11}: {}", entry.name));
        }
    }

    /// Initialises the device without loading images. Devices normally initialise on first
    /// use; with an OMPT tool attached they initialise when a library that can run on them is
    /// registered, so that the tool sees `device_initialize` first, as with LLVM's runtime.
    pub(crate) fn initialize(&self) -> Result<()> {
        let mut state = self.state.lock().unwrap();
        self.initialize_locked(&mut state)
    }

    fn initialize_locked(&self, state: &mut DeviceState) -> Result<()> {
        if !state.initialized {
            self.plugin.init_device(self.local).map_err(|e| {
                OffloadError::new(format!(
                    "device {} failed to initialise: {}",
                    self.id, e.message
                ))
            })?;
            state.initialized = true;
            let traits = self.plugin.device_traits(self.local);
            self.queues_complete_on_submission.store(
                traits.contains(DeviceTraits::QUEUES_COMPLETE_ON_SUBMISSION),
                Ordering::Relaxed,
            );
            let zero_copy = traits.contains(DeviceTraits::ZERO_COPY_MAPS);
            self.zero_copy_maps.store(zero_copy, Ordering::Relaxed);
            if zero_copy && info::enabled(info::ZERO_COPY) {
                info::line(
                    self.id,
                    format_args!(
                        "maps use host memory in place (zero-copy): the device reaches the \
                         host's memory and its plugin chose not to copy"
                    ),
                );
            }
            let memory_in_process = traits.contains(DeviceTraits::MEMORY_IN_PROCESS);
            self.memory_in_process
                .store(memory_in_process, Ordering::Relaxed);
            if memory_in_process {
                // Under memcheck, a program's overrun of a pooled mapping is reported as one
                // of its own malloc would be (the device is boxed: the pool stays put).
                self.pool.watch_under_memcheck();
            }
            self.start_work_timing();
            self.warn_if_host_memory_is_out_of_reach();
            if crate::config::record_kernels() {
                let save_output = crate::config::record_saves_output();
                if let Err(e) = self.activate_record_replay(false, save_output, 0, 0) {
                    log::warn!("kernels on device {} are not recorded: {e}", self.id);
                }
            }
            self.announce_to_tool();
            log::debug!(
                "device {} ({} device {}) initialised",
                self.id,
                self.plugin.name,
                self.local
            );
        }
        Ok(())
    }

    /// OMPT `device_initialize`, naming the device's compute unit as the plugin reports it
    /// (the `compute unit kind` info entry), else by its plugin.
    fn announce_to_tool(&self) {
        if ompt::tool().is_none() {
            return;
        }
        let kind = self
            .info_value("compute unit kind")
            .unwrap_or_else(|| self.plugin.name.clone());
        self.announced_to_tool.store(true, Ordering::Release);
        ompt::events::device_initialized(self.id, &kind, self as *const Device as *const _);
    }

    /// A program that requires unified shared memory hands its kernels host addresses; a device
    /// that cannot reach pageable host memory faults on them (CUDA_ERROR_ILLEGAL_ADDRESS), so
    /// say why up front, under `LIBOMPTARGET_INFO` bit 128: LLVM prints nothing, and programs
    /// that use only mapped data run fine (LLVM's tests check that they print nothing; the
    /// AMDGPU plugin's report of a fault gives the same hint).
    fn warn_if_host_memory_is_out_of_reach(&self) {
        if !info::enabled(info::ZERO_COPY)
            || !self.requires.unified_shared_memory()
            || self
                .info_value(plugin_api::PAGEABLE_MEMORY_ACCESS)
                .as_deref()
                != Some("0")
        {
            return;
        }
        let name = self.info_value("name").unwrap_or_default();
        crate::observe::logging::message(&format!(
            "the program requires unified_shared_memory, but device {} ({} device {}, {name}) \
             cannot access pageable host memory: a kernel that uses host memory the program did \
             not map or allocate through OpenMP will fault (NVIDIA GPUs need HMM or ATS for it; \
             AMD GPUs need XNACK, which HSA_XNACK=1 turns on where the system supports it)",
            self.id, self.plugin.name, self.local
        ));
    }

    /// One of the plugin's info entries for this device.
    fn info_value(&self, key: &str) -> Option<String> {
        let info = self.plugin.device_info(self.local).ok()?;
        info.into_iter()
            .find(|e| e.key.as_str() == key)
            .map(|e| e.value.to_string())
    }

    /// OMPT `device_finalize`, at shutdown, for a device whose initialisation a tool saw.
    pub(crate) fn finalize_for_tool(&self) {
        if self.announced_to_tool.swap(false, Ordering::AcqRel) {
            ompt::events::device_finalized(self.id);
        }
    }

    fn load_library(&self, library: &RegisteredLibrary) -> LibraryState {
        let mut reasons = Vec::new();
        let chosen = library.images.iter().find(|image| {
            let answer =
                self.plugin
                    .check_image(self.local, image.bytes, &image.triple, &image.arch);
            if !answer.compatible {
                reasons.push(answer.reason.to_string());
            }
            answer.compatible
        });
        let Some(image) = chosen else {
            let why = format!(
                "no image of the program ({}) is compatible with device {} ({}): {}",
                library.targets().join(", "),
                self.id,
                self.plugin.name,
                reasons.join("; ")
            );
            log::debug!("{why}");
            return LibraryState::Unusable(why);
        };
        let mut span = crate::observe::profile::begin("image load");
        if let Some(span) = &mut span {
            span.int("device", self.id as i64);
            span.int("bytes", image.bytes.len() as i64);
        }
        let loaded = self
            .plugin
            .load_image(self.local, image.bytes, &image.triple, &image.arch);
        drop(span);
        let handle = match loaded {
            Ok(handle) => {
                ompt::events::image_loaded(self.id, image.bytes, library.id);
                handle
            }
            Err(e) => {
                let why = format!(
                    "loading the image on device {} failed: {}",
                    self.id, e.message
                );
                log::warn!("{why}");
                return LibraryState::Unusable(why);
            }
        };
        let (mut kernels, mut globals) = (Vec::new(), Vec::new());
        let mut global_entries = Vec::new();
        let mut found_kernels = Vec::new();
        let mut indirect_calls = Vec::new();
        for entry in &library.entries {
            if entry.is_kernel() {
                match self.plugin.get_kernel(self.local, handle, &entry.name) {
                    Ok(kernel) => {
                        let release = library.release;
                        found_kernels.push((
                            entry.address,
                            Kernel {
                                handle: kernel,
                                release,
                            },
                        ));
                        kernels.push(entry.address);
                    }
                    Err(e) => log::warn!(
                        "kernel '{}' not found on device {}: {}",
                        entry.name,
                        self.id,
                        e.message
                    ),
                }
            } else if entry.is_global() && entry.flags & offload_entry::flags::INDIRECT_VTABLE != 0
            {
                // A virtual table of indirect functions (LLVM 22): its global points to the
                // device's copy, and each slot's host address translates to that slot there.
                const WORD: usize = std::mem::size_of::<usize>();
                match self
                    .plugin
                    .get_global(self.local, handle, &entry.name, WORD as u64)
                {
                    Ok(global) => {
                        let table = self.read_device_word(global.address);
                        for slot in 0..entry.size as usize / WORD {
                            indirect_calls.push(plugin_api::IndirectCall {
                                host: (entry.address + slot * WORD) as u64,
                                device: (table + slot * WORD) as u64,
                            });
                        }
                    }
                    Err(e) => log::warn!(
                        "virtual table '{}' not found on device {}: {}",
                        entry.name,
                        self.id,
                        e.message
                    ),
                }
            } else if entry.is_global() {
                // `declare target` globals are mapped for the life of the image. For `link`
                // variables the entry is the reference pointer the device code goes through;
                // mapping the variable later attaches it.
                match self
                    .plugin
                    .get_global(self.local, handle, &entry.name, entry.size)
                {
                    Ok(global) => {
                        if self.requires.unified_shared_memory() && !entry.is_indirect() {
                            // Under unified shared memory the device global is a reference
                            // to the host's: give it the host's value (as LLVM does; not for
                            // indirect functions, whose global holds a device address).
                            // SAFETY: the entry is a `declare target` variable of the
                            // program, `entry.size` bytes at `entry.address` (its offload
                            // entry); the copy is synchronous.
                            let written = unsafe {
                                self.plugin.copy_to_device(
                                    self.local,
                                    global.address,
                                    entry.address,
                                    entry.size,
                                    plugin_api::QueueHandle::SYNC,
                                )
                            };
                            if let Err(e) = written {
                                log::warn!(
                                    "writing '{}' for unified shared memory failed: {}",
                                    entry.name,
                                    e.message
                                );
                            }
                        }
                        // `declare target indirect` functions: the global holds the device
                        // function's address, which host function pointers translate to.
                        let device_address = if entry.is_indirect() {
                            let function = self.read_device_word(global.address);
                            indirect_calls.push(plugin_api::IndirectCall {
                                host: entry.address as u64,
                                device: function as u64,
                            });
                            function
                        } else {
                            global.address
                        };
                        global_entries.push(LoadedGlobal {
                            name: entry.name.clone(),
                            size: entry.size,
                            address: global.address,
                        });
                        let mut mapping =
                            Mapping::permanent(entry.address, entry.size, device_address);
                        // SAFETY: the entry's name, read as a C string in the program's
                        // memory when the library was registered (`parse_entries`); the
                        // mapping goes when the library is unregistered.
                        mapping.name =
                            unsafe { VarName::from_compiler(entry.name_address as *const c_void) };
                        let mut table = self.mapping.view(entry.address, entry.size, entry.address);
                        // Weak symbols may repeat across libraries: the first mapping stays.
                        if table.find(entry.address, entry.size).is_none() {
                            table.insert(mapping);
                            globals.push(entry.address);
                        }
                    }
                    Err(e) => log::warn!(
                        "global '{}' not found on device {}: {}",
                        entry.name,
                        self.id,
                        e.message
                    ),
                }
            }
        }
        self.kernels.change(|table| table.extend(found_kernels));
        if !indirect_calls.is_empty() {
            self.set_indirect_calls(handle, &indirect_calls);
        }
        log::debug!(
            "device {}: loaded image for library {} ({} kernels, {} globals)",
            self.id,
            library.id,
            kernels.len(),
            globals.len()
        );
        LibraryState::Loaded {
            image: handle,
            kernels,
            globals,
            image_bytes: image.bytes,
            global_entries,
        }
    }

    /// Tells the plugin how the image's `declare target indirect` functions translate, so
    /// that device code can call them through host function pointers. Without it such calls
    /// fail on a GPU: say so, once per image.
    fn set_indirect_calls(
        &self,
        image: plugin_api::ImageHandle,
        calls: &[plugin_api::IndirectCall],
    ) {
        let why = match self.plugin.set_indirect_calls(self.local, image, calls) {
            Some(Ok(())) => {
                log::debug!(
                    "device {}: {} indirect-call table entries",
                    self.id,
                    calls.len()
                );
                return;
            }
            Some(Err(e)) => e.message.to_string(),
            None => format!(
                "plugin '{}' is older than ABI 1.3, which added the indirect-call table",
                self.plugin.name
            ),
        };
        log::warn!(
            "device {}: {} `declare target indirect` functions cannot be called through \
             function pointers on this device: {why}",
            self.id,
            calls.len()
        );
    }

    /// One pointer-sized value of device memory (0 if it cannot be read).
    fn read_device_word(&self, address: usize) -> usize {
        let mut value = 0usize;
        if crate::observe::info::enabled(crate::observe::info::DATA_TRANSFER) {
            let local = &value as *const usize as usize;
            crate::observe::info::copy(self.id, false, local, address, 8, VarName::UNKNOWN);
        }
        // SAFETY: `value` is a word on this stack; the copy is synchronous.
        let result = unsafe {
            self.plugin.copy_from_device(
                self.local,
                &mut value as *mut usize as usize,
                address,
                std::mem::size_of::<usize>() as u64,
                plugin_api::QueueHandle::SYNC,
            )
        };
        if let Err(e) = result {
            log::warn!(
                "device {}: reading {address:#x} failed: {}",
                self.id,
                e.message
            );
        }
        value
    }

    /// Forgets a library that the program unregistered, unloading its image.
    pub(crate) fn unload_library(&self, library: &RegisteredLibrary) {
        let removed = self.state.lock().unwrap().libraries.remove(&library.id);
        if let Some(LibraryState::Loaded {
            image,
            kernels,
            globals,
            ..
        }) = removed
        {
            self.kernels.change(|table| {
                for address in kernels {
                    table.remove(&address);
                }
            });
            {
                let mut mapping = self.mapping.view_all();
                for address in globals {
                    if let Some(m) = mapping.key_at(address).and_then(|k| mapping.remove(k)) {
                        self.discard_event(&m);
                    }
                }
            }
            if let Err(e) = self.plugin.unload_image(self.local, image) {
                log::warn!("device {}: unloading image failed: {}", self.id, e.message);
            }
            ompt::events::image_unloaded(self.id, library.id);
        }
    }

    pub(crate) fn kernel(&self, region_id: usize) -> Option<Kernel> {
        self.kernels.get(region_id)
    }

    /// Why no kernel exists here for the region, for the error message.
    pub(crate) fn missing_kernel_reason(&self, registry: &Registry, region_id: usize) -> String {
        let name = registry.kernel_name(region_id);
        let state = self.state.lock().unwrap();
        let unusable: Vec<&str> = state
            .libraries
            .values()
            .filter_map(|s| match s {
                LibraryState::Unusable(why) => Some(why.as_str()),
                _ => None,
            })
            .collect();
        match name {
            None => format!("{region_id:#x} is not a target region registered with the runtime"),
            Some(name) if !unusable.is_empty() => {
                format!("kernel '{name}' unavailable: {}", unusable.join("; "))
            }
            Some(name) => format!(
                "kernel '{name}' not found in the image loaded on device {}",
                self.id
            ),
        }
    }

    /// Whether any registered library has an image this device can run (asks the plugin).
    pub(crate) fn can_run_any(&self, registry: &Registry) -> bool {
        registry.libraries().iter().any(|lib| self.can_run(lib))
    }

    /// Whether the library has an image this device can run (asks the plugin).
    pub(crate) fn can_run(&self, library: &RegisteredLibrary) -> bool {
        library.images.iter().any(|i| {
            self.plugin
                .check_image(self.local, i.bytes, &i.triple, &i.arch)
                .compatible
        })
    }

    /// Allocates device memory (reported to a tool as LLVM reports `allocData`).
    pub(crate) fn alloc(&self, size: u64, host_ptr: usize, kind: AllocKind) -> Result<usize> {
        let mut op = DataOp::alloc(self.id, host_ptr, size);
        let block = self.alloc_quietly(size, host_ptr, kind)?;
        op.allocated(block);
        Ok(block)
    }

    fn alloc_quietly(&self, size: u64, host_ptr: usize, kind: AllocKind) -> Result<usize> {
        if let Some(recording) = self.record_replay.get() {
            return recording.alloc(size);
        }
        let failed = |e: plugin_api::PluginError| {
            OffloadError::new(format!(
                "allocation of {size} bytes on device {} failed: {}",
                self.id, e.message
            ))
        };
        let class = (kind == AllocKind::DEFAULT)
            .then(|| self.pool.class_of(size))
            .flatten();
        let Some(class) = class else {
            return self
                .plugin
                .alloc(self.local, size, host_ptr, kind)
                .map_err(failed);
        };
        if let Some(block) = self.pool.take(class, size) {
            return Ok(block);
        }
        // A new slab; where the device has no room for one, a slab of just this block.
        let slab = memory_pool::slab_bytes(class);
        match self.plugin.alloc(self.local, slab, host_ptr, kind) {
            Ok(start) => {
                if self.memory_in_process.load(Ordering::Relaxed) {
                    // SAFETY: the plugin promised its allocations are this process's memory.
                    unsafe { crate::os_memory::populate_for_writing(start, slab as usize) };
                }
                Ok(self.pool.add_slab(start, slab, class, size))
            }
            Err(_) if slab > class => {
                let start = self
                    .plugin
                    .alloc(self.local, class, host_ptr, kind)
                    .map_err(failed)?;
                Ok(self.pool.add_slab(start, class, class, size))
            }
            Err(e) => Err(failed(e)),
        }
    }

    /// Frees device memory (reported to a tool as LLVM reports `deleteData`).
    pub(crate) fn free(&self, ptr: usize, kind: AllocKind) -> Result<()> {
        let _op = DataOp::delete(self.id, ptr);
        self.free_quietly(ptr, kind, None)
    }

    /// Frees what [`Device::alloc`] returned for `size` bytes of the default kind: the size
    /// names the pool class of a pool block, so it goes back with no search.
    #[inline]
    pub(crate) fn free_allocation(&self, ptr: usize, size: u64) -> Result<()> {
        let _op = DataOp::delete(self.id, ptr);
        self.free_quietly(ptr, AllocKind::DEFAULT, Some(size))
    }

    /// `size`: the bytes the block was allocated for, when known; an address of unknown origin
    /// is searched for in the pool.
    #[inline]
    fn free_quietly(&self, ptr: usize, kind: AllocKind, size: Option<u64>) -> Result<()> {
        if self.record_replay.get().is_some_and(|r| r.contains(ptr)) {
            return Ok(()); // the block is reused by nothing: recorded memory stays as it is
        }
        if kind == AllocKind::DEFAULT {
            let pooled = match size {
                Some(size) => self
                    .pool
                    .class_of(size)
                    .map(|class| self.pool.give_back_block(ptr, class))
                    .is_some(),
                None => self.pool.give_back(ptr),
            };
            if pooled {
                return Ok(());
            }
        }
        self.plugin.free(self.local, ptr, kind).map_err(|e| {
            OffloadError::new(format!(
                "freeing {ptr:#x} on device {} failed: {}",
                self.id, e.message
            ))
        })
    }

    /// Copies host memory to the device on `queue`, reported to a tool as a transfer.
    ///
    /// # Safety
    /// As [`PluginLibrary::copy_to_device`].
    pub(crate) unsafe fn copy_to_device(
        &self,
        device_dst: usize,
        host_src: usize,
        size: u64,
        queue: QueueHandle,
    ) -> Result<()> {
        let _op = DataOp::begin(
            DataOpKind::TransferToDevice,
            (host_src, ompt::events::HOST),
            (device_dst, self.id),
            size,
        );
        // SAFETY: the caller's promise.
        unsafe {
            self.plugin
                .copy_to_device(self.local, device_dst, host_src, size, queue)
        }
        .map_err(|e| self.plugin_error("copy to device", e))
    }

    /// Fills `size` bytes of device memory with `byte` on the device (plugin ABI 1.6). Not a
    /// data operation for a tool: it moves no data, and OMPT 5.2 has no kind for it. `None`
    /// where the plugin cannot (a plugin older than 1.6, or one that answers `UNSUPPORTED`):
    /// the caller then copies a buffer of the pattern, which a tool sees as a transfer.
    pub(crate) fn fill(
        &self,
        device_dst: usize,
        byte: u8,
        size: u64,
        queue: QueueHandle,
    ) -> Option<Result<()>> {
        match self
            .plugin
            .fill_memory(self.local, device_dst, &[byte], size, queue)?
        {
            Err(e) if e.code == plugin_api::ErrorCode::UNSUPPORTED => None,
            result => Some(result.map_err(|e| self.plugin_error("fill on device", e))),
        }
    }

    /// Copies device memory to the host on `queue`, reported to a tool as a transfer.
    ///
    /// # Safety
    /// As [`PluginLibrary::copy_from_device`].
    pub(crate) unsafe fn copy_from_device(
        &self,
        host_dst: usize,
        device_src: usize,
        size: u64,
        queue: QueueHandle,
    ) -> Result<()> {
        let _op = DataOp::begin(
            DataOpKind::TransferFromDevice,
            (device_src, self.id),
            (host_dst, ompt::events::HOST),
            size,
        );
        // SAFETY: the caller's promise.
        unsafe {
            self.plugin
                .copy_from_device(self.local, host_dst, device_src, size, queue)
        }
        .map_err(|e| self.plugin_error("copy from device", e))
    }

    /// A plugin call's failure, naming the operation and this device.
    pub(crate) fn plugin_error(&self, what: &str, e: plugin_api::PluginError) -> OffloadError {
        OffloadError::new(format!(
            "{what} on device {} failed: {}",
            self.id, e.message
        ))
    }

    /// Destroys the events of a mapping that was removed.
    #[inline]
    pub(crate) fn discard_event(&self, m: &Mapping) {
        let Some(events) = m.events() else {
            return;
        };
        for event in [events.transfer, events.released].into_iter().flatten() {
            if let Err(e) = self.plugin.destroy_event(self.local, event.handle) {
                log::warn!(
                    "device {}: destroying an event failed: {}",
                    self.id,
                    e.message
                );
            }
        }
    }

    /// Frees every mapping the runtime allocated (at shutdown).
    pub(crate) fn release_mappings(&self) {
        let drained = self.mapping.view_all().drain();
        drained.iter().for_each(|m| self.discard_event(m));
        for m in &drained {
            if m.host_locked {
                self.unlock_mapped_host_buffer(m.host_begin);
            }
        }
        for m in drained.into_iter().filter(|m| m.owns_device_memory) {
            let _ = self.free_quietly(m.device_alloc(), AllocKind::DEFAULT, Some(m.device_bytes()));
        }
        for block in self.pool.drain() {
            let _ = self.plugin.free(self.local, block, AllocKind::DEFAULT);
        }
    }
}
