//! Code object readers, executables and their symbols: gfx code objects are checked and read
//! (AMDGPU note metadata), refused for an agent whose ISA they do not run on, and each
//! kernel is bound to the kernel of the same name in the image's x86-64 twin (with the
//! execution mode of the code object's kernel environment, for a GPU-style twin kernel's
//! league: `twin::TwinKernel`). Variables are where `placement` puts them: in the code
//! object's block of the agent's memory, relocated, or in the twin's storage.

use crate::agents::{AgentIndex, System};
use crate::memory::Memory;
use crate::placement::Placement;
use crate::status::{self, Result};
use hsa_sys::*;
use offload_image::amdgpu_code_object::{self as code_object, target_id::TargetId};
use offload_image::device_environment::KERNEL_ENVIRONMENT_SUFFIX;
use offload_image::twin::{self, Twin, TwinKernel};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use sync_util::lock;

/// A kernel as a dispatch finds it through the packet's `kernel_object`.
pub struct Kernel {
    pub name: String,
    pub agent: AgentIndex,
    pub kernarg_size: u32,
    pub kernarg_align: u32,
    pub group_size: u32,
    pub private_size: u32,
    pub dynamic_stack: bool,
    /// (offset, size) of each explicit argument in the kernarg segment.
    pub explicit_args: Vec<(u32, u32)>,
    /// Offsets of the explicit arguments that are pointers to global memory.
    pub pointer_args: Vec<u32>,
    /// The twin's kernel, if the program has a twin.
    pub entry: Option<TwinKernel>,
    /// Keeps the twin loaded while the kernel can run.
    pub _twin: Option<Arc<Twin>>,
    /// The twin's code, registered so that a fault in it is its kernel's.
    pub code: Option<Arc<omptarget_emu_support::kernel_faults::Code>>,
}

impl Kernel {
    /// The kernel's function, as messages name it: its name without the descriptor's `.kd`.
    pub fn function_name(&self) -> &str {
        self.name.strip_suffix(".kd").unwrap_or(&self.name)
    }
}

pub enum Symbol {
    Kernel(Arc<Kernel>),
    Variable {
        name: String,
        address: usize,
        size: u64,
    },
}

impl Symbol {
    pub fn name(&self) -> &str {
        match self {
            Symbol::Kernel(k) => &k.name,
            Symbol::Variable { name, .. } => name,
        }
    }
}

struct Reader {
    /// Where the caller's code object is (for finding its twin) and a copy of its bytes.
    address: usize,
    bytes: Arc<Vec<u8>>,
}

struct Executable {
    frozen: bool,
    /// Symbol handles by (ELF symbol name, agent).
    symbols: HashMap<(String, AgentIndex), u64>,
}

#[derive(Default)]
pub struct Code {
    readers: Mutex<HashMap<u64, Reader>>,
    executables: Mutex<HashMap<u64, Executable>>,
    symbols: Mutex<HashMap<u64, Arc<Symbol>>>,
    /// Kernels by kernel object (the address of their record).
    kernels: Mutex<HashMap<u64, Arc<Kernel>>>,
    next: AtomicU64,
}

const READER_TAG: u64 = 0xc0de_0000_0000;
const EXECUTABLE_TAG: u64 = 0xe8ec_0000_0000;
const SYMBOL_TAG: u64 = 0x5b01_0000_0000;

impl Code {
    fn handle(&self, tag: u64) -> u64 {
        tag + self.next.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// `hsa_code_object_reader_create_from_memory` (and `hsa_code_object_deserialize`).
    pub fn add_reader(&self, address: usize, len: usize) -> Result<u64> {
        if address == 0 || len == 0 {
            return Err(status::INVALID_ARGUMENT);
        }
        // SAFETY: the caller's contract: `len` readable bytes at `address`, unchanged while
        // the reader lives (a copy is kept anyway).
        let bytes = unsafe { std::slice::from_raw_parts(address as *const u8, len) }.to_vec();
        let handle = self.handle(READER_TAG);
        lock(&self.readers).insert(
            handle,
            Reader {
                address,
                bytes: Arc::new(bytes),
            },
        );
        Ok(handle)
    }

    pub fn remove_reader(&self, handle: u64) -> Result<()> {
        lock(&self.readers)
            .remove(&handle)
            .map(drop)
            .ok_or(status::INVALID_CODE_OBJECT_READER)
    }

    pub fn create_executable(&self) -> u64 {
        let handle = self.handle(EXECUTABLE_TAG);
        lock(&self.executables).insert(
            handle,
            Executable {
                frozen: false,
                symbols: HashMap::new(),
            },
        );
        handle
    }

    pub fn destroy_executable(&self, handle: u64) -> Result<()> {
        let executable = lock(&self.executables)
            .remove(&handle)
            .ok_or(status::INVALID_EXECUTABLE)?;
        let mut symbols = lock(&self.symbols);
        let mut kernels = lock(&self.kernels);
        for symbol in executable.symbols.values() {
            if let Some(symbol) = symbols.remove(symbol) {
                if let Symbol::Kernel(k) = &*symbol {
                    kernels.remove(&(Arc::as_ptr(k) as u64));
                }
            }
        }
        Ok(())
    }

    pub fn freeze(&self, handle: u64) -> Result<()> {
        let mut executables = lock(&self.executables);
        let executable = executables
            .get_mut(&handle)
            .ok_or(status::INVALID_EXECUTABLE)?;
        if executable.frozen {
            return Err(status::FROZEN_EXECUTABLE);
        }
        executable.frozen = true;
        Ok(())
    }

    pub fn validate(&self, handle: u64) -> Result<u32> {
        lock(&self.executables)
            .get(&handle)
            .map(|_| 0)
            .ok_or(status::INVALID_EXECUTABLE)
    }

    /// `hsa_executable_load_agent_code_object`: checks the code object and its ISA, places its
    /// variables and binds its kernels to the twin.
    pub fn load(
        &self,
        system: &System,
        memory: &Memory,
        executable: u64,
        agent: AgentIndex,
        reader: u64,
    ) -> Result<()> {
        {
            let executables = lock(&self.executables);
            let found = executables
                .get(&executable)
                .ok_or(status::INVALID_EXECUTABLE)?;
            if found.frozen {
                return Err(status::FROZEN_EXECUTABLE);
            }
        }
        if !system.is_gpu(agent) {
            return Err(status::INVALID_AGENT);
        }
        let (address, bytes) = {
            let readers = lock(&self.readers);
            let reader = readers
                .get(&reader)
                .ok_or(status::INVALID_CODE_OBJECT_READER)?;
            (reader.address, reader.bytes.clone())
        };
        let code = code_object::check(&bytes).map_err(|why| {
            eprintln!("omptarget-emu (HSA): the code object is invalid: {why}");
            status::INVALID_CODE_OBJECT
        })?;
        // As ROCr's loader: the image's processor must be the agent's, and an image built for
        // XNACK or SRAM ECC on (or off) runs only where the device has it so.
        let isa_name = system.isa_name();
        let isa = TargetId::parse(isa_name.rsplit("--").next().unwrap()).expect("our ISA");
        if !code.target().runs_on(&isa) {
            eprintln!(
                "omptarget-emu (HSA): a code object for {} does not run on agent {agent} \
                 ({isa_name})",
                code.target().isa_name()
            );
            return Err(status::Error(HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS));
        }
        let kernels: Vec<&str> = code.kernels().iter().map(|k| k.name.as_str()).collect();
        let twins = crate::config::get().twins.as_deref();
        let twin = match twin::load_for(address, bytes.len(), &kernels, twins) {
            Ok(twin) => twin.map(Arc::new),
            Err(why) => {
                eprintln!("omptarget-emu (HSA): {why}");
                None
            }
        };
        let fault_code = twin
            .as_ref()
            .and_then(|t| crate::fault_owner::register(t, kernels.iter().copied()))
            .map(Arc::new);
        let placement = Placement::place(system, memory, agent, &code, twin.as_deref())?;
        let mut placed = Vec::new();
        for kernel in code.kernels() {
            let environment =
                code.symbol_bytes(&format!("{}{KERNEL_ENVIRONMENT_SUFFIX}", kernel.name));
            let entry = twin
                .as_ref()
                .and_then(|t| t.kernel(&kernel.name, environment));
            let record = Arc::new(Kernel {
                name: kernel.symbol.clone(),
                agent,
                kernarg_size: kernel.kernarg_segment_size,
                kernarg_align: kernel.kernarg_segment_align.max(16),
                group_size: kernel.group_segment_fixed_size,
                private_size: kernel.private_segment_fixed_size,
                dynamic_stack: kernel.uses_dynamic_stack,
                explicit_args: kernel
                    .args
                    .iter()
                    .filter(|a| !a.is_hidden())
                    .map(|a| (a.offset, a.size))
                    .collect(),
                pointer_args: kernel
                    .args
                    .iter()
                    .filter(|a| a.value_kind == "global_buffer" && a.size == 8)
                    .map(|a| a.offset)
                    .collect(),
                entry,
                _twin: twin.clone(),
                code: fault_code.clone(),
            });
            lock(&self.kernels).insert(Arc::as_ptr(&record) as u64, record.clone());
            placed.push(Symbol::Kernel(record));
        }
        for symbol in code.symbols() {
            if !symbol.is_object || symbol.is_kernel_descriptor || !symbol.is_global {
                continue;
            }
            placed.push(Symbol::Variable {
                name: symbol.name.clone(),
                address: placement.address(symbol.address),
                size: symbol.size,
            });
        }
        let mut executables = lock(&self.executables);
        let executable = executables
            .get_mut(&executable)
            .ok_or(status::INVALID_EXECUTABLE)?;
        let mut symbols = lock(&self.symbols);
        for symbol in placed {
            let handle = self.handle(SYMBOL_TAG);
            executable
                .symbols
                .insert((symbol.name().to_owned(), agent), handle);
            symbols.insert(handle, Arc::new(symbol));
        }
        Ok(())
    }

    /// `hsa_executable_get_symbol_by_name`: the symbol of `agent` (any agent's when `None`).
    pub fn symbol_by_name(
        &self,
        executable: u64,
        name: &str,
        agent: Option<AgentIndex>,
    ) -> Result<u64> {
        let executables = lock(&self.executables);
        let executable = executables
            .get(&executable)
            .ok_or(status::INVALID_EXECUTABLE)?;
        let found = match agent {
            Some(agent) => executable.symbols.get(&(name.to_owned(), agent)).copied(),
            None => executable
                .symbols
                .iter()
                .find(|((n, _), _)| n == name)
                .map(|(_, &h)| h),
        };
        found.ok_or(status::INVALID_SYMBOL_NAME)
    }

    /// The symbols of an executable, for `hsa_executable_iterate_symbols`.
    pub fn symbols_of(&self, executable: u64) -> Result<Vec<u64>> {
        let executables = lock(&self.executables);
        let executable = executables
            .get(&executable)
            .ok_or(status::INVALID_EXECUTABLE)?;
        let mut handles: Vec<u64> = executable.symbols.values().copied().collect();
        handles.sort_unstable();
        Ok(handles)
    }

    pub fn symbol(&self, handle: u64) -> Result<Arc<Symbol>> {
        lock(&self.symbols)
            .get(&handle)
            .cloned()
            .ok_or(status::INVALID_EXECUTABLE_SYMBOL)
    }

    /// The kernel a dispatch packet names.
    pub fn kernel(&self, kernel_object: u64) -> Option<Arc<Kernel>> {
        lock(&self.kernels).get(&kernel_object).cloned()
    }
}
