//! Code objects loaded for an agent (`hsa_executable_t`), and their kernels and variables.

use super::attributes;
use super::error::{check, hsa_error, usage_error};
use super::runtime::HsaRuntime;
use crate::hsa_interface::{Agent, HsaError};
use hsa_sys::*;
use std::ffi::CString;
use std::sync::Arc;

/// What a kernel dispatch needs to know about a kernel.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct KernelSymbol {
    /// The address of the kernel descriptor, for the dispatch packet.
    pub kernel_object: u64,
    /// Bytes of explicit and implicit kernel arguments.
    pub kernarg_segment_size: u32,
    /// Static LDS bytes.
    pub group_segment_size: u32,
    /// Static scratch bytes per work-item.
    pub private_segment_size: u32,
}

/// A frozen executable holding one code object loaded for one agent. Destroyed by
/// [`Executable::destroy`], or when dropped (errors then only logged).
pub struct Executable {
    library: Arc<HsaLibrary>,
    executable: hsa_executable_t,
    reader: hsa_code_object_reader_t,
    /// The code object the reader reads; HSA requires the memory to outlive the reader.
    _code_object: Box<[u8]>,
    destroyed: bool,
}

impl HsaRuntime {
    /// Loads `code_object` (an AMDGPU ELF) for `agent`: reader, executable, load, freeze and
    /// validate, as LLVM's plugin does.
    pub fn load_executable(
        &self,
        agent: Agent,
        code_object: &[u8],
    ) -> Result<Executable, HsaError> {
        let library = self.library().clone();
        let code_object: Box<[u8]> = code_object.into();
        let reader = create_reader(&library, &code_object)?;
        let executable = match create_executable(&library) {
            Ok(executable) => executable,
            Err(error) => {
                destroy_reader(&library, reader);
                return Err(error);
            }
        };
        // From here on, dropping `loaded` destroys both if a later step fails.
        let loaded = Executable {
            library,
            executable,
            reader,
            _code_object: code_object,
            destroyed: false,
        };
        loaded.load_and_freeze(hsa_agent_t { handle: agent.0 })?;
        Ok(loaded)
    }
}

fn create_reader(
    library: &HsaLibrary,
    code_object: &[u8],
) -> Result<hsa_code_object_reader_t, HsaError> {
    let mut reader = hsa_code_object_reader_t::default();
    // SAFETY: the pointer and length describe `code_object`, which the Executable keeps alive
    // until after the reader is destroyed; `reader` is a valid out-parameter.
    let status = unsafe {
        (library.hsa_code_object_reader_create_from_memory)(
            code_object.as_ptr().cast(),
            code_object.len(),
            &mut reader,
        )
    };
    check("hsa_code_object_reader_create_from_memory", status)?;
    Ok(reader)
}

fn destroy_reader(library: &HsaLibrary, reader: hsa_code_object_reader_t) {
    // SAFETY: `reader` came from create_reader and is destroyed once.
    let status = unsafe { (library.hsa_code_object_reader_destroy)(reader) };
    if let Err(error) = check("hsa_code_object_reader_destroy", status) {
        log::warn!("{error}");
    }
}

fn create_executable(library: &HsaLibrary) -> Result<hsa_executable_t, HsaError> {
    let mut executable = hsa_executable_t::default();
    // SAFETY: null options are allowed; `executable` is a valid out-parameter. Full profile
    // and round-to-zero are the choices LLVM's plugin makes for the same code objects.
    let status = unsafe {
        (library.hsa_executable_create_alt)(
            HSA_PROFILE_FULL,
            HSA_DEFAULT_FLOAT_ROUNDING_MODE_ZERO,
            std::ptr::null(),
            &mut executable,
        )
    };
    check("hsa_executable_create_alt", status)?;
    Ok(executable)
}

impl Executable {
    fn load_and_freeze(&self, agent: hsa_agent_t) -> Result<(), HsaError> {
        // SAFETY: executable and reader are live handles of this runtime; null options and a
        // null loaded-code-object out-parameter are allowed.
        let status = unsafe {
            (self.library.hsa_executable_load_agent_code_object)(
                self.executable,
                agent,
                self.reader,
                std::ptr::null(),
                std::ptr::null_mut(),
            )
        };
        check("hsa_executable_load_agent_code_object", status)?;
        // SAFETY: a live, unfrozen executable; null options are allowed.
        let status =
            unsafe { (self.library.hsa_executable_freeze)(self.executable, std::ptr::null()) };
        check("hsa_executable_freeze", status)?;
        let mut result = 0u32;
        // SAFETY: a live executable; `result` is a valid out-parameter.
        let status =
            unsafe { (self.library.hsa_executable_validate)(self.executable, &mut result) };
        check("hsa_executable_validate", status)?;
        if result != 0 {
            return Err(usage_error(
                HSA_STATUS_ERROR_INVALID_EXECUTABLE,
                format!("hsa_executable_validate rejected the loaded code object ({result:#x})"),
            ));
        }
        Ok(())
    }

    /// The kernel `symbol_name_with_kd` (the kernel's name followed by `.kd`, as code objects
    /// v3 and later name kernel descriptors) as loaded for `agent`.
    pub fn kernel(
        &self,
        agent: Agent,
        symbol_name_with_kd: &str,
    ) -> Result<KernelSymbol, HsaError> {
        let symbol = self.symbol(agent, symbol_name_with_kd, HSA_SYMBOL_KIND_KERNEL)?;
        let query = |attribute| attributes::symbol(&self.library, symbol, attribute);
        Ok(KernelSymbol {
            kernel_object: query(HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT)?.u64(),
            kernarg_segment_size: query(HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE)?
                .u32(),
            group_segment_size: query(HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE)?.u32(),
            private_segment_size: query(HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE)?
                .u32(),
        })
    }

    /// Whether the kernel's stack size is not known statically
    /// (`HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_DYNAMIC_CALLSTACK`: recursion, indirect calls).
    /// LLVM's plugin then dispatches with its configured stack size instead of
    /// [`KernelSymbol::private_segment_size`].
    pub fn kernel_has_dynamic_stack(
        &self,
        agent: Agent,
        symbol_name_with_kd: &str,
    ) -> Result<bool, HsaError> {
        let symbol = self.symbol(agent, symbol_name_with_kd, HSA_SYMBOL_KIND_KERNEL)?;
        let value = attributes::symbol(
            &self.library,
            symbol,
            HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_DYNAMIC_CALLSTACK,
        )?;
        Ok(value.bool())
    }

    /// The device address and size in bytes of the global variable `name` for `agent`.
    pub fn variable(&self, agent: Agent, name: &str) -> Result<(usize, u64), HsaError> {
        let symbol = self.symbol(agent, name, HSA_SYMBOL_KIND_VARIABLE)?;
        let query = |attribute| attributes::symbol(&self.library, symbol, attribute);
        let address = query(HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_ADDRESS)?.u64();
        let size = query(HSA_EXECUTABLE_SYMBOL_INFO_VARIABLE_SIZE)?.u32();
        let address = usize::try_from(address).map_err(|_| {
            usage_error(
                HSA_STATUS_ERROR,
                format!("variable {name} is at {address:#x}, beyond this process's addresses"),
            )
        })?;
        Ok((address, u64::from(size)))
    }

    /// Looks `name` up for `agent` and checks it is a symbol of `kind`.
    fn symbol(
        &self,
        agent: Agent,
        name: &str,
        kind: hsa_symbol_kind_t,
    ) -> Result<hsa_executable_symbol_t, HsaError> {
        let c_name = CString::new(name).map_err(|_| {
            usage_error(
                HSA_STATUS_ERROR_INVALID_SYMBOL_NAME,
                format!("symbol name {name:?} contains a NUL byte"),
            )
        })?;
        let agent = hsa_agent_t { handle: agent.0 };
        let mut symbol = hsa_executable_symbol_t::default();
        // SAFETY: a live executable; `c_name` is NUL-terminated and `agent` and `symbol` are
        // valid pointers for the duration of the call.
        let status = unsafe {
            (self.library.hsa_executable_get_symbol_by_name)(
                self.executable,
                c_name.as_ptr(),
                &agent,
                &mut symbol,
            )
        };
        if is_error(status) {
            let error = hsa_error("hsa_executable_get_symbol_by_name", status);
            return Err(HsaError::new(
                status,
                format!("{} for {name}", error.message),
            ));
        }
        let found =
            attributes::symbol(&self.library, symbol, HSA_EXECUTABLE_SYMBOL_INFO_TYPE)?.u32();
        if found != kind {
            return Err(usage_error(
                HSA_STATUS_ERROR_INVALID_SYMBOL_NAME,
                format!(
                    "{name} is a {}, not a {}",
                    symbol_kind_name(found),
                    symbol_kind_name(kind)
                ),
            ));
        }
        Ok(symbol)
    }

    /// Destroys the executable, then its code object reader.
    pub fn destroy(mut self) -> Result<(), HsaError> {
        self.destroy_once()
    }

    fn destroy_once(&mut self) -> Result<(), HsaError> {
        if std::mem::replace(&mut self.destroyed, true) {
            return Ok(());
        }
        // SAFETY: a live executable, destroyed once (the flag above); its symbols are not used
        // afterwards because they are only reachable through `self`.
        let status = unsafe { (self.library.hsa_executable_destroy)(self.executable) };
        // The reader goes after the executable that loaded from it, as HIP's runtime does.
        destroy_reader(&self.library, self.reader);
        check("hsa_executable_destroy", status)
    }
}

impl Drop for Executable {
    fn drop(&mut self) {
        if let Err(error) = self.destroy_once() {
            log::warn!("{error}");
        }
    }
}

fn symbol_kind_name(kind: hsa_symbol_kind_t) -> &'static str {
    match kind {
        HSA_SYMBOL_KIND_VARIABLE => "variable",
        HSA_SYMBOL_KIND_KERNEL => "kernel",
        HSA_SYMBOL_KIND_INDIRECT_FUNCTION => "indirect function",
        _ => "symbol of unknown kind",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symbol_kinds_have_names() {
        assert_eq!(symbol_kind_name(HSA_SYMBOL_KIND_KERNEL), "kernel");
        assert_eq!(symbol_kind_name(HSA_SYMBOL_KIND_VARIABLE), "variable");
        assert_eq!(symbol_kind_name(77), "symbol of unknown kind");
    }
}
