//! The programs' registered offload libraries (one per `__tgt_register_lib` call).

use crate::abi::offload_entry::{EntryTable, LlvmRelease, OffloadEntry};
use std::collections::HashMap;
use std::sync::Arc;

/// One device image of a registered library, unwrapped from its container.
pub(crate) struct ProgramImage {
    pub bytes: &'static [u8],
    pub triple: String,
    pub arch: String,
}

pub(crate) struct RegisteredLibrary {
    pub id: u64,
    /// Address of the program's `__tgt_bin_desc`, which identifies it at unregistration.
    pub descriptor: usize,
    pub images: Vec<ProgramImage>,
    pub entries: Vec<OffloadEntry>,
    /// The LLVM release whose behaviour the program expects.
    pub release: LlvmRelease,
}

impl RegisteredLibrary {
    /// Short text naming the images' targets, for diagnostics.
    pub(crate) fn targets(&self) -> Vec<String> {
        self.images
            .iter()
            .map(|i| {
                let arch = i.architecture();
                match (i.triple.as_str(), arch.as_deref()) {
                    ("", None) => "unknown".to_string(),
                    ("", Some(a)) => a.to_string(),
                    (t, None) => t.to_string(),
                    (t, Some(a)) => format!("{t} {a}"),
                }
            })
            .collect()
    }

    /// The images' GPU architectures, as LLVM lists them when no device can run the program.
    pub(crate) fn architectures(&self) -> Vec<String> {
        self.images
            .iter()
            .filter_map(|i| i.architecture())
            .collect()
    }
}

impl ProgramImage {
    /// The architecture from the container, else from a GPU image's ELF header (clang
    /// registers bare images, without the container's strings).
    pub(crate) fn architecture(&self) -> Option<String> {
        if !self.arch.is_empty() {
            return Some(self.arch.clone());
        }
        elf_architecture(self.bytes)
    }
}

impl ProgramImage {
    /// The target triple from the container, else the one an ELF image's machine implies (LLVM
    /// 19's programs register bare ELF images): what plugins are asked about before they start.
    /// Empty when neither tells.
    pub(crate) fn target_triple(&self) -> &str {
        if !self.triple.is_empty() {
            return &self.triple;
        }
        const EM_PPC64: u16 = 21;
        const EM_X86_64: u16 = 62;
        const EM_AARCH64: u16 = 183;
        const EM_CUDA: u16 = 190;
        const EM_AMDGPU: u16 = 224;
        let b = self.bytes;
        if b.len() < 20 || b[..4] != *b"\x7fELF" || b[5] != 1 {
            return "";
        }
        match u16::from_le_bytes([b[18], b[19]]) {
            EM_X86_64 => "x86_64-pc-linux-gnu",
            EM_AARCH64 => "aarch64-unknown-linux-gnu",
            EM_PPC64 => "powerpc64le-unknown-linux-gnu",
            EM_CUDA => "nvptx64-nvidia-cuda",
            EM_AMDGPU => "amdgcn-amd-amdhsa",
            _ => "",
        }
    }
}

/// The processor a GPU image is built for, from its ELF header as LLVM's `tryGetCPUName`
/// reads it: `sm_NN` of a cubin (`EF_CUDA_SM`; bits 8-15 from ELF ABI version 8), `gfxNNN` of
/// an AMDGPU code object (`EF_AMDGPU_MACH`).
fn elf_architecture(bytes: &[u8]) -> Option<String> {
    const EM_CUDA: u16 = 190;
    const EM_AMDGPU: u16 = 224;
    if bytes.len() < 64 || bytes[..4] != *b"\x7fELF" || bytes[4] != 2 || bytes[5] != 1 {
        return None;
    }
    let machine = u16::from_le_bytes([bytes[18], bytes[19]]);
    let flags = u32::from_le_bytes(bytes[48..52].try_into().ok()?);
    match machine {
        EM_CUDA => {
            let sm = if bytes[8] >= 8 {
                (flags >> 8) & 0xff
            } else {
                flags & 0xff
            };
            Some(format!("sm_{sm}"))
        }
        EM_AMDGPU => {
            let processor = offload_image::amdgpu_processors::processor_by_mach(flags & 0xff);
            Some(processor.map_or("unknown", |p| p.name).to_string())
        }
        _ => None,
    }
}

#[derive(Default)]
pub(crate) struct Registry {
    libraries: Vec<Arc<RegisteredLibrary>>,
    /// Kernel region ids (host addresses) to the entry name, over all libraries.
    kernel_names: HashMap<usize, (u64, String)>,
    next_id: u64,
    /// Bumped on every change, so devices can tell cheaply whether they are up to date.
    pub generation: u64,
}

impl Registry {
    /// The LLVM release the program's data constructs follow (they name no library): LLVM 19
    /// when every registered library is a clang-19 one, else LLVM 22.
    pub(crate) fn release(&self) -> LlvmRelease {
        let all_19 = !self.libraries.is_empty()
            && self
                .libraries
                .iter()
                .all(|l| l.release == LlvmRelease::Llvm19);
        match all_19 {
            true => LlvmRelease::Llvm19,
            false => LlvmRelease::Llvm22,
        }
    }

    pub(crate) fn add(
        &mut self,
        descriptor: usize,
        images: Vec<ProgramImage>,
        table: EntryTable,
    ) -> Arc<RegisteredLibrary> {
        self.next_id += 1;
        let library = Arc::new(RegisteredLibrary {
            id: self.next_id,
            descriptor,
            images,
            entries: table.entries,
            release: table.release,
        });
        for entry in library.entries.iter().filter(|e| e.is_kernel()) {
            self.kernel_names
                .insert(entry.address, (library.id, entry.name.clone()));
        }
        self.libraries.push(library.clone());
        self.generation += 1;
        library
    }

    pub(crate) fn remove(&mut self, descriptor: usize) -> Option<Arc<RegisteredLibrary>> {
        let index = self
            .libraries
            .iter()
            .position(|l| l.descriptor == descriptor)?;
        let library = self.libraries.remove(index);
        self.kernel_names.retain(|_, (id, _)| *id != library.id);
        self.generation += 1;
        Some(library)
    }

    pub(crate) fn libraries(&self) -> &[Arc<RegisteredLibrary>] {
        &self.libraries
    }

    pub(crate) fn kernel_name(&self, region_id: usize) -> Option<&str> {
        self.kernel_names
            .get(&region_id)
            .map(|(_, name)| name.as_str())
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.libraries.is_empty()
    }
}
