//! The plugin-wide calls: opens the HSA runtime, finds the GPU agents and the host's pools.
//! The per-device calls are [`AmdgpuDevice`]'s ([`Device`]), reached through plugin-api's
//! [`DevicePlugin`] forwarding.

use crate::code_object::{self, TargetId};
use crate::device::{AmdgpuDevice, HostMemory};
use crate::hsa::{AgentInfo, HsaRuntime};
use crate::hsa_real::RealHsa;
use crate::kernarg_pool::KernargPool;
use crate::settings::AmdgpuSettings;
use gpu_plugin::device_slots::{DeviceSlot, DeviceSlots, StartedDevice};
use gpu_plugin::Settings;
use plugin_api::*;
use std::sync::Arc;

type Result<T> = std::result::Result<T, PluginError>;

/// What is known of a GPU agent before its device starts (enough to check images).
struct Identity {
    agent: AgentInfo,
    /// The agent's ISA names as target IDs, read once.
    targets: Vec<TargetId>,
}

impl StartedDevice for AmdgpuDevice {
    fn deinit(&self) -> Result<()> {
        AmdgpuDevice::deinit(self)
    }
}

/// What exists once the runtime opened and has GPUs.
struct Runtime {
    hsa_runtime: Arc<HsaRuntime>,
    hsa: Arc<RealHsa>,
    host: Arc<HostMemory>,
}

pub struct AmdgpuPlugin {
    runtime: Option<Runtime>,
    devices: DeviceSlots<Identity, AmdgpuDevice>,
    /// Why there are no devices, or the runtime's version and location.
    note: String,
    settings: Settings,
    amd_settings: AmdgpuSettings,
}

impl AmdgpuPlugin {
    /// A plugin without devices, saying why (no runtime, no GPU, a failing `hsa_init`).
    fn without_devices(why: String) -> AmdgpuPlugin {
        log::debug!("amdgpu plugin: 0 devices: {why}");
        AmdgpuPlugin {
            runtime: None,
            devices: DeviceSlots::new("amdgpu", Vec::new()),
            note: why,
            settings: Settings::from_env(),
            amd_settings: AmdgpuSettings::from_env(),
        }
    }

    fn slot(&self, device: i32) -> Result<&DeviceSlot<Identity, AmdgpuDevice>> {
        self.devices.slot(device)
    }

    /// The host agent's pools every GPU uses: fine-grained memory for staging buffers and
    /// host allocations, and the kernarg pool.
    fn host_memory(
        hsa: &Arc<RealHsa>,
        agents: &[AgentInfo],
        gpus: &[AgentInfo],
    ) -> std::result::Result<HostMemory, String> {
        let cpu = agents
            .iter()
            .find(|a| !a.is_gpu && a.pools.iter().any(|p| p.kernarg && p.alloc_allowed))
            .ok_or("the HSA runtime lists no CPU agent with a kernel-argument memory pool")?;
        let fine = cpu
            .pools
            .iter()
            .find(|p| p.is_global() && p.fine_grained && p.alloc_allowed && !p.kernarg)
            .or_else(|| {
                cpu.pools
                    .iter()
                    .find(|p| p.is_global() && p.fine_grained && p.alloc_allowed)
            })
            .ok_or("the CPU agent has no fine-grained memory pool")?;
        let kernarg = cpu
            .pools
            .iter()
            .find(|p| p.kernarg && p.alloc_allowed)
            .ok_or("the CPU agent has no kernel-argument memory pool")?;
        let gpu_agents: Vec<_> = gpus.iter().map(|a| a.agent).collect();
        Ok(HostMemory {
            allocations: Default::default(),
            agent: cpu.agent,
            fine_pool: fine.pool,
            kernargs: KernargPool::new(hsa.clone(), kernarg.pool, gpu_agents.clone()),
            gpu_agents,
        })
    }
}

impl DevicePlugin for AmdgpuPlugin {
    type Device = AmdgpuDevice;

    fn may_run_target(triple: &str) -> TargetClaim {
        TargetClaim::for_architectures(triple, &["amdgcn"])
    }

    fn init() -> Result<Self> {
        let runtime = match HsaRuntime::open() {
            Ok(r) => r,
            Err(why) => return Ok(AmdgpuPlugin::without_devices(why)),
        };
        let agents = match runtime.agents() {
            Ok(a) => a,
            Err(e) => {
                return Ok(AmdgpuPlugin::without_devices(format!(
                    "listing the HSA agents failed: {e}"
                )))
            }
        };
        let location = match runtime.version() {
            Some((major, minor)) => {
                format!("HSA runtime {major}.{minor} at {}", runtime.library_path())
            }
            None => format!("HSA runtime at {}", runtime.library_path()),
        };
        let gpus: Vec<AgentInfo> = agents.iter().filter(|a| a.is_gpu).cloned().collect();
        if gpus.is_empty() {
            let _ = runtime.shut_down();
            return Ok(AmdgpuPlugin::without_devices(format!(
                "the {location} reports no GPU agents"
            )));
        }
        let hsa = Arc::new(RealHsa::new(runtime.clone()));
        let host = match Self::host_memory(&hsa, &agents, &gpus) {
            Ok(h) => Arc::new(h),
            Err(why) => return Ok(AmdgpuPlugin::without_devices(format!("{location}: {why}"))),
        };
        if let Err(e) = runtime.register_memory_fault_handler() {
            log::warn!("amdgpu: memory faults will not be reported by name: {e}");
        }
        let note = format!("{location}, {} GPU agents", gpus.len());
        log::debug!("amdgpu plugin: {note}");
        Ok(AmdgpuPlugin {
            runtime: Some(Runtime {
                hsa_runtime: runtime,
                hsa,
                host,
            }),
            devices: DeviceSlots::new(
                "amdgpu",
                gpus.into_iter()
                    .map(|agent| Identity {
                        targets: agent
                            .isa_names
                            .iter()
                            .filter_map(|isa| TargetId::parse(isa))
                            .collect(),
                        agent,
                    })
                    .collect(),
            ),
            note,
            settings: Settings::from_env(),
            amd_settings: AmdgpuSettings::from_env(),
        })
    }

    fn deinit(&self) -> Result<()> {
        let mut first_error = self.devices.deinit_all();
        if let Some(runtime) = &self.runtime {
            runtime.host.kernargs.release_idle();
            if let Err(e) = runtime.hsa_runtime.shut_down() {
                if first_error.is_ok() {
                    first_error = Err(crate::device::failed("shutting down HSA", e));
                }
            }
        }
        first_error
    }

    fn describe(&self) -> PluginDescription {
        PluginDescription {
            name: "amdgpu".into(),
            num_devices: self.devices.len() as i32,
            note: self.note.clone().into(),
        }
    }

    fn num_devices(&self) -> i32 {
        self.devices.len() as i32
    }

    fn check_image(&self, device: Option<i32>, image: ImageRef<'_>) -> ImageCompatibility {
        let target = match code_object::identify(image.bytes.as_slice()) {
            Ok(t) => t,
            Err(why) => return ImageCompatibility::no(format!("amdgpu: {why}")),
        };
        let Some(d) = device else {
            return ImageCompatibility::yes();
        };
        // Everything loading checks before HSA's loader, so that a damaged code object is
        // refused here, where the runtime can still run the region elsewhere.
        if let Err(why) = code_object::check(image.bytes.as_slice()) {
            return ImageCompatibility::no(format!("amdgpu: {why}"));
        }
        match self.slot(d) {
            Err(e) => ImageCompatibility::no(e.message.to_string()),
            Ok(slot) => match code_object::check_compatibility(&target, &slot.identity.targets) {
                Ok(()) => ImageCompatibility::yes(),
                Err(why) => ImageCompatibility::no(format!(
                    "amdgpu device {d} ({}): {why}",
                    slot.identity.agent.product_name
                )),
            },
        }
    }

    fn init_device(&self, device: i32) -> Result<()> {
        self.devices.init(device, |identity| {
            let runtime = self.runtime.as_ref().ok_or_else(|| {
                PluginError::new(ErrorCode::NOT_INITIALIZED, "the HSA runtime is not loaded")
            })?;
            AmdgpuDevice::initialize(
                runtime.hsa_runtime.clone(),
                runtime.hsa.clone(),
                device,
                identity.agent.clone(),
                identity.targets.clone(),
                runtime.host.clone(),
                self.devices.len() as u32,
                self.settings.clone(),
                &self.amd_settings,
            )
        })
    }

    fn deinit_device(&self, device: i32) -> Result<()> {
        self.device(device)?.deinit()
    }

    fn device_info(&self, device: i32) -> Result<Vec<InfoEntry>> {
        let slot = self.slot(device)?;
        let a = &slot.identity.agent;
        let mut info = vec![
            InfoEntry::new("name", &a.product_name),
            InfoEntry::new("kind", "gpu"),
            InfoEntry::new("compute unit kind", &a.name),
            InfoEntry::new("vendor", &a.vendor),
            InfoEntry::new("ISAs", a.isa_names.join(", ")),
            InfoEntry::new("image format", format!("HSA code object for {}", a.name)),
            InfoEntry::new("compute units", a.compute_units),
            InfoEntry::new("wavefront size", a.wavefront_size),
            InfoEntry::new("max work-group size", a.workgroup_max_size),
            InfoEntry::new("max grid size", a.grid_max_size),
            InfoEntry::new("max clock MHz", a.max_clock_mhz),
            InfoEntry::new("HSA queues max", a.queues_max),
            InfoEntry::new("HSA queue max packets", a.queue_max_size),
        ];
        let memory: u64 = a
            .pools
            .iter()
            .filter(|p| p.is_global() && p.coarse_grained)
            .map(|p| p.size)
            .max()
            .unwrap_or(0);
        info.push(InfoEntry::new("memory bytes", memory));
        // The device's OpenMP UID as LLVM 22 forms it, from the agent's UUID when it has one.
        if !a.uuid.is_empty() && !a.uuid.ends_with("-XX") {
            info.push(InfoEntry::new("uid", format!("AMDGPU-{}", a.uuid)));
        }
        if let Some(runtime) = &self.runtime {
            if let Some((major, minor)) = runtime.hsa_runtime.version() {
                info.push(InfoEntry::new(
                    "HSA runtime version",
                    format!("{major}.{minor}"),
                ));
            }
            if let Some(reach) = runtime.hsa_runtime.pageable_memory_access() {
                info.push(InfoEntry::new(
                    plugin_api::PAGEABLE_MEMORY_ACCESS,
                    u8::from(reach),
                ));
            }
            info.push(InfoEntry::new("APU", u8::from(a.is_apu())));
            info.push(InfoEntry::new("XNACK", u8::from(a.xnack_enabled())));
            let maps = crate::device::zero_copy_choice(a, &runtime.hsa_runtime);
            info.push(InfoEntry::new("maps", maps.reason));
        }
        if let Some(device) = slot.device() {
            info.extend(device.info());
        }
        Ok(info)
    }

    fn device(&self, device: i32) -> Result<&AmdgpuDevice> {
        self.devices.device(device)
    }
}
