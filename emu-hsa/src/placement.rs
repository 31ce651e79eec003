//! Where a code object lives on an agent, as ROCr's loader places it: its loadable segments in
//! one block of the agent's memory, copied from the image, then its dynamic relocations
//! applied there (a pointer initialised with the address of another variable holds that
//! variable's place). A variable the program's twin also defines lives in the twin's storage
//! instead, so that kernels, which run in the twin, and copies see one variable: addresses
//! inside it, in symbols and relocations alike, are the twin's.

use crate::agents::{AgentIndex, System};
use crate::memory::Memory;
use crate::status::{self, Result};
use hsa_sys::HSA_STATUS_ERROR_VARIABLE_UNDEFINED;
use offload_image::amdgpu_code_object::loading::{
    DynamicRelocation, R_AMDGPU_ABS32_HI, R_AMDGPU_RELATIVE64,
};
use offload_image::amdgpu_code_object::CodeObject;
use offload_image::twin::Twin;

/// A variable of the image whose storage is the twin's.
struct TwinVariable {
    image_address: u64,
    size: u64,
    address: usize,
}

/// A code object placed on an agent.
pub struct Placement {
    base: usize,
    in_twin: Vec<TwinVariable>,
}

impl Placement {
    /// Places `code` on `agent`: the block in the agent's first pool, the twin's variables
    /// granted to the agent, the relocations applied. A code object without loadable segments,
    /// or with a relocation the loader does not apply, is refused, as ROCr refuses it.
    pub fn place(
        system: &System,
        memory: &Memory,
        agent: AgentIndex,
        code: &CodeObject,
        twin: Option<&Twin>,
    ) -> Result<Placement> {
        let segments = code.segments().map_err(refuse)?;
        let size = segments
            .iter()
            .map(|s| s.address.checked_add(s.memory_size))
            .try_fold(0u64, |end, e| e.map(|e| end.max(e)))
            .ok_or_else(|| refuse("its loadable segments overflow the address space".into()))?;
        if size == 0 {
            return Err(refuse("it has no loadable segments".into()));
        }
        let size = usize::try_from(size).map_err(|_| status::INVALID_ALLOCATION)?;
        let pool = system.pools_of(agent)[0];
        let base = memory.allocate(system, pool, size)?;
        for segment in &segments {
            // Checked by `segments`: the file bytes lie in the image, and inside the block.
            let from = &code.bytes()[segment.file_offset as usize..][..segment.file_size as usize];
            // SAFETY: `base` is a fresh allocation of `size` bytes, and the segment ends within
            // them (`size` is the largest end).
            unsafe {
                std::ptr::copy_nonoverlapping(
                    from.as_ptr(),
                    (base + segment.address as usize) as *mut u8,
                    from.len(),
                )
            };
        }
        let mut in_twin = Vec::new();
        if let Some(twin) = twin {
            for symbol in code.symbols() {
                if !symbol.is_object || symbol.is_kernel_descriptor || !symbol.is_global {
                    continue;
                }
                if let Some(address) = twin.symbol(&symbol.name) {
                    memory.add_variable(agent, address, symbol.size as usize);
                    in_twin.push(TwinVariable {
                        image_address: symbol.address,
                        size: symbol.size,
                        address,
                    });
                }
            }
        }
        let placement = Placement { base, in_twin };
        let relocated = code
            .dynamic_relocations()
            .map_err(refuse)
            .and_then(|all| all.iter().try_for_each(|r| placement.apply(r, size)));
        if let Err(refused) = relocated {
            // A refused code object leaves nothing behind.
            let _ = memory.free(base);
            return Err(refused);
        }
        Ok(placement)
    }

    /// Where the image's `image_address` is on the agent.
    pub fn address(&self, image_address: u64) -> usize {
        self.in_twin
            .iter()
            .find(|v| {
                image_address >= v.image_address && image_address - v.image_address < v.size.max(1)
            })
            .map(|v| v.address + (image_address - v.image_address) as usize)
            .unwrap_or_else(|| self.base.wrapping_add(image_address as usize))
    }

    /// Writes one relocation's value into the block (`size` bytes). A place inside a variable
    /// in the twin's storage is left alone: the twin's own loader has set that variable.
    fn apply(&self, relocation: &DynamicRelocation, size: usize) -> Result<()> {
        let width = relocation.width().ok_or_else(|| {
            refuse(format!(
                "its relocation at {:#x} is of type {}, which the loader does not apply",
                relocation.offset, relocation.kind
            ))
        })?;
        let place = usize::try_from(relocation.offset)
            .ok()
            .filter(|&p| p.checked_add(width).is_some_and(|end| end <= size))
            .ok_or_else(|| {
                refuse(format!(
                    "its relocation at {:#x} lies outside its loadable segments",
                    relocation.offset
                ))
            })?;
        if self.address(relocation.offset) != self.base + place {
            return Ok(());
        }
        let target = if relocation.kind == R_AMDGPU_RELATIVE64 {
            self.address(relocation.addend as u64) as u64
        } else {
            let symbol = match &relocation.symbol {
                None => 0,
                Some(symbol) => match symbol.address {
                    Some(address) => self.address(address) as u64,
                    None if symbol.weak => 0,
                    None => {
                        eprintln!(
                            "omptarget-emu (HSA): the code object cannot be loaded: it needs {}, \
                             which nothing defines",
                            symbol.name
                        );
                        return Err(status::Error(HSA_STATUS_ERROR_VARIABLE_UNDEFINED));
                    }
                },
            };
            symbol.wrapping_add(relocation.addend as u64)
        };
        let at = (self.base + place) as *mut u8;
        // SAFETY: `place + width` bytes lie within the block of `size` bytes at `base`.
        unsafe {
            match (width, relocation.kind) {
                (8, _) => std::ptr::write_unaligned(at as *mut u64, target),
                (_, R_AMDGPU_ABS32_HI) => {
                    std::ptr::write_unaligned(at as *mut u32, (target >> 32) as u32)
                }
                // ABS32_LO and ABS32: the low half.
                _ => std::ptr::write_unaligned(at as *mut u32, target as u32),
            }
        }
        Ok(())
    }
}

/// Says why a code object is refused, and refuses it.
fn refuse(why: String) -> status::Error {
    eprintln!("omptarget-emu (HSA): the code object cannot be loaded: {why}");
    status::INVALID_CODE_OBJECT
}
