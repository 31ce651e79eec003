//! The devices a device process offers: those of the plugins it loads, numbered plugin by
//! plugin as the runtime numbers them.

use omptarget_core::plugins::{discovery, loader, open_plugins, PluginLibrary, PluginStatus};
use plugin_api::{no_such_device, DeviceTraits, PluginError};
use std::sync::atomic::{AtomicU64, Ordering};

pub struct Device {
    pub plugin: usize,
    pub local: i32,
    /// What the device promises (read when it is initialised).
    traits: AtomicU64,
}

impl Device {
    pub fn traits(&self) -> DeviceTraits {
        DeviceTraits(self.traits.load(Ordering::Relaxed))
    }

    pub fn set_traits(&self, traits: DeviceTraits) {
        self.traits.store(traits.0, Ordering::Relaxed);
    }
}

pub struct Devices {
    pub plugins: Vec<PluginLibrary>,
    pub list: Vec<Device>,
    /// Per plugin asked for: loaded with N devices, or why not.
    pub notes: Vec<String>,
}

impl Devices {
    /// Opens and starts the named plugins from the runtime's search path (`dist/lib` beside
    /// `dist/bin`, or `LIBOMPTARGET_PLUGIN_PATH`).
    pub fn load(names: &[String]) -> Devices {
        let runtime_dir = loader::runtime_directory();
        let plugin_path = omptarget_core::config::plugin_path();
        let candidates = discovery::find_candidates(&plugin_path, &runtime_dir);
        let (reports, opened) = open_plugins(&candidates, &Some(names.to_vec()));
        let mut notes: Vec<String> = reports
            .iter()
            .filter_map(|r| match &r.status {
                PluginStatus::Skipped(why) if names.contains(&r.candidate.name) => {
                    Some(format!("{}: {why}", r.candidate.name))
                }
                _ => None,
            })
            .collect();
        let mut plugins = Vec::new();
        let mut list = Vec::new();
        for plugin in opened {
            match plugin.start() {
                Ok(library) => {
                    let index = plugins.len();
                    let count = library.num_devices();
                    notes.push(format!(
                        "{}: {count} devices{}",
                        library.name,
                        match library.description.note.as_str() {
                            "" => String::new(),
                            note => format!(" ({note})"),
                        }
                    ));
                    for local in 0..count {
                        list.push(Device {
                            plugin: index,
                            local,
                            traits: AtomicU64::new(DeviceTraits::NONE.0),
                        });
                    }
                    plugins.push(library);
                }
                Err(why) => notes.push(format!("{}: {why}", plugin.candidate.name)),
            }
        }
        Devices {
            plugins,
            list,
            notes,
        }
    }

    /// Where the runtime's own libraries are: the device process's `lib/` (beside its `bin/`,
    /// where it found its plugins), then the directory of each plugin it loaded.
    pub fn runtime_directories(&self) -> Vec<std::path::PathBuf> {
        let mut dirs: Vec<std::path::PathBuf> = loader::runtime_directory().into_iter().collect();
        for plugin in &self.plugins {
            let file = std::path::Path::new(&plugin.location);
            if let Some(dir) = file.parent().filter(|d| !d.as_os_str().is_empty()) {
                if !dirs.iter().any(|d| d == dir) {
                    dirs.push(dir.to_path_buf());
                }
            }
        }
        dirs
    }

    pub fn count(&self) -> usize {
        self.list.len()
    }

    pub fn summary(&self) -> String {
        self.notes.join("; ")
    }

    /// Device `index`'s plugin and local number.
    pub fn get(&self, index: u32) -> Result<(&PluginLibrary, &Device), PluginError> {
        let device = self
            .list
            .get(index as usize)
            .ok_or_else(|| no_such_device("mpi remote", index as i32, self.list.len()))?;
        Ok((&self.plugins[device.plugin], device))
    }
}
