//! The device and plugin inventory shown by `omptarget-info`, as text or JSON.

use crate::json::json_string;
use crate::plugins::PluginStatus;
use crate::runtime::Runtime;
use std::fmt::Write;

pub(crate) struct PluginRow {
    pub(crate) name: String,
    pub(crate) file: String,
    pub(crate) origin: String,
    pub(crate) abi_version: Option<String>,
    pub(crate) status: String,
    pub(crate) reason: Option<String>,
    pub(crate) num_devices: Option<i32>,
    /// The OpenMP device numbers its devices got (first, last), if it has any.
    pub(crate) device_numbers: Option<(i32, i32)>,
    pub(crate) note: Option<String>,
}

pub(crate) struct DeviceRow {
    pub(crate) id: i32,
    pub(crate) plugin: String,
    pub(crate) local: i32,
    pub(crate) properties: Vec<(String, String)>,
}

pub struct Inventory {
    pub(crate) runtime_version: String,
    pub(crate) plugin_abi: String,
    pub(crate) offload_policy: String,
    pub(crate) search_path: Vec<String>,
    pub(crate) plugins: Vec<PluginRow>,
    pub(crate) devices: Vec<DeviceRow>,
}

impl Inventory {
    pub fn collect(runtime: &Runtime) -> Inventory {
        let started = runtime.started_plugins();
        let reports = runtime
            .reports
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let plugins = reports
            .iter()
            .map(|r| {
                let loaded = started
                    .iter()
                    .find(|p| p.name == r.candidate.name && r.status == PluginStatus::Loaded);
                let (status, reason) = match &r.status {
                    PluginStatus::Loaded => ("loaded".to_string(), None),
                    PluginStatus::NotStarted => (
                        "not started".to_string(),
                        Some("no registered image may run on it".to_string()),
                    ),
                    PluginStatus::Skipped(why) => ("skipped".to_string(), Some(why.clone())),
                };
                PluginRow {
                    name: r.candidate.name.clone(),
                    file: r
                        .resolved_path
                        .clone()
                        .unwrap_or_else(|| r.candidate.location.clone()),
                    origin: r.candidate.origin.describe().to_string(),
                    abi_version: r.abi_version.map(|v| v.to_string()),
                    status,
                    reason,
                    num_devices: loaded.map(|p| p.num_devices()),
                    device_numbers: loaded.and_then(|p| {
                        let mine = || runtime.devices.iter().filter(|d| d.plugin.name == p.name);
                        Some((mine().next()?.id, mine().last()?.id))
                    }),
                    note: loaded
                        .map(|p| p.description.note.to_string())
                        .filter(|n| !n.is_empty()),
                }
            })
            .collect();
        let devices = runtime
            .devices
            .iter()
            .map(|d| {
                let mut properties: Vec<(String, String)> = match d.plugin.device_info(d.local) {
                    Ok(info) => info
                        .into_iter()
                        .map(|e| (e.key.to_string(), e.value.to_string()))
                        .collect(),
                    Err(e) => vec![("error".to_string(), e.message.to_string())],
                };
                // ABI 1.1; plugins built for 1.0 (None) or without the figure say nothing.
                if let Some(Ok(memory)) = d.plugin.memory_info(d.local) {
                    properties.push((
                        "memory free".into(),
                        format!("{} of {} bytes", memory.free, memory.total),
                    ));
                }
                DeviceRow {
                    id: d.id,
                    plugin: d.plugin.name.clone(),
                    local: d.local,
                    properties,
                }
            })
            .collect();
        Inventory {
            runtime_version: env!("CARGO_PKG_VERSION").to_string(),
            plugin_abi: plugin_api::ABI_VERSION.to_string(),
            offload_policy: format!("{:?}", runtime.policy).to_lowercase(),
            search_path: runtime.search_path.clone(),
            plugins,
            devices,
        }
    }

    pub fn to_text(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "omptarget-rs {} (plugin ABI {})",
            self.runtime_version, self.plugin_abi
        );
        let _ = writeln!(s, "Offload policy: {}", self.offload_policy);
        let _ = writeln!(s, "\nPlugin search path:");
        for (i, p) in self.search_path.iter().enumerate() {
            let _ = writeln!(s, "  {}. {}", i + 1, p);
        }
        let _ = writeln!(
            s,
            "\nPlugins (in load order, which is the order of device numbers):"
        );
        for p in &self.plugins {
            let _ = writeln!(s, "  {} [{}]", p.name, p.status);
            let _ = writeln!(s, "      file:    {} ({})", p.file, p.origin);
            if let Some(v) = &p.abi_version {
                let _ = writeln!(s, "      ABI:     {v}");
            }
            if let Some(r) = &p.reason {
                let _ = writeln!(s, "      reason:  {r}");
            }
            match (p.num_devices, p.device_numbers) {
                (Some(n), Some((first, last))) if first == last => {
                    let _ = writeln!(s, "      devices: {n} (device number {first})");
                }
                (Some(n), Some((first, last))) => {
                    let _ = writeln!(s, "      devices: {n} (device numbers {first} to {last})");
                }
                (Some(n), None) => {
                    let _ = writeln!(s, "      devices: {n}");
                }
                _ => {}
            }
            if let Some(n) = &p.note {
                let _ = writeln!(s, "      note:    {n}");
            }
        }
        let _ = writeln!(s, "\nDevices: {}", self.devices.len());
        for d in &self.devices {
            let _ = writeln!(
                s,
                "  Device {} ({} plugin, device {})",
                d.id, d.plugin, d.local
            );
            for (k, v) in &d.properties {
                let _ = writeln!(s, "      {:<16} {}", format!("{k}:"), v);
            }
        }
        s
    }

    pub fn to_json(&self) -> String {
        let opt = |v: &Option<String>| v.as_deref().map_or("null".to_string(), json_string);
        let plugins: Vec<String> = self
            .plugins
            .iter()
            .map(|p| {
                format!(
                    "{{\"name\":{},\"file\":{},\"origin\":{},\"abi_version\":{},\"status\":{},\"reason\":{},\"num_devices\":{},\"note\":{}}}",
                    json_string(&p.name),
                    json_string(&p.file),
                    json_string(&p.origin),
                    opt(&p.abi_version),
                    json_string(&p.status),
                    opt(&p.reason),
                    p.num_devices.map_or("null".to_string(), |n| n.to_string()),
                    opt(&p.note)
                )
            })
            .collect();
        let devices: Vec<String> = self
            .devices
            .iter()
            .map(|d| {
                let props: Vec<String> = d
                    .properties
                    .iter()
                    .map(|(k, v)| format!("{}:{}", json_string(k), json_string(v)))
                    .collect();
                format!(
                    "{{\"id\":{},\"plugin\":{},\"plugin_device\":{},\"properties\":{{{}}}}}",
                    d.id,
                    json_string(&d.plugin),
                    d.local,
                    props.join(",")
                )
            })
            .collect();
        let path: Vec<String> = self.search_path.iter().map(|p| json_string(p)).collect();
        format!(
            "{{\"runtime_version\":{},\"plugin_abi\":{},\"offload_policy\":{},\"search_path\":[{}],\"plugins\":[{}],\"devices\":[{}]}}\n",
            json_string(&self.runtime_version),
            json_string(&self.plugin_abi),
            json_string(&self.offload_policy),
            path.join(","),
            plugins.join(","),
            devices.join(",")
        )
    }
}
