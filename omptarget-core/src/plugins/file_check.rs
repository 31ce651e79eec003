//! A plugin library's file, checked before the system loader opens it. The loader trusts an
//! ELF file's layout (a damaged one crashes the program inside `dlopen`), and opening runs the
//! library's initialisers: a file that is not a sound shared object for this machine that
//! defines the plugin ABI symbol is skipped, unopened, with the reason.

use crate::os_memory::{mmap, munmap, MAP_FAILED, MAP_PRIVATE, PROT_READ};
use offload_image::elf_layout::{self, Addresses};
use plugin_api::ABI_VERSION_SYMBOL;

const ET_DYN: u16 = 3;
const EM_HOST: u16 = if cfg!(target_arch = "aarch64") {
    183
} else {
    62
};

/// Why a plugin file is skipped unopened.
#[derive(Debug, PartialEq, Eq)]
pub enum Refusal {
    /// No loader should open it: what is wrong.
    NotLoadable(String),
    /// A sound library that does not define the plugin ABI symbol.
    NotAPlugin,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::NotLoadable(why) => write!(f, "cannot be opened: {why}"),
            Refusal::NotAPlugin => write!(
                f,
                "not an omptarget plugin (no '{ABI_VERSION_SYMBOL}' symbol)"
            ),
        }
    }
}

/// Checks a plugin library's bytes.
pub fn check(bytes: &[u8]) -> Result<(), Refusal> {
    let damaged = |e: &dyn std::fmt::Display| Refusal::NotLoadable(format!("damaged: {e}"));
    let not_loadable = |why: String| Err(Refusal::NotLoadable(why));
    use object::read::elf::ElfFile64;
    use object::{LittleEndian, Object, ObjectSymbol};
    if bytes.len() < 64 || &bytes[..4] != b"\x7fELF" {
        return not_loadable("not an ELF file".into());
    }
    if bytes[4] != 2 || bytes[5] != 1 {
        return not_loadable("not a 64-bit little-endian ELF file".into());
    }
    let e_type = u16::from_le_bytes([bytes[16], bytes[17]]);
    let machine = u16::from_le_bytes([bytes[18], bytes[19]]);
    if machine != EM_HOST {
        return not_loadable(format!(
            "built for another machine (ELF machine {machine}, this one is {EM_HOST})"
        ));
    }
    if e_type != ET_DYN {
        return not_loadable(format!("not a shared library (ELF type {e_type})"));
    }
    elf_layout::check(bytes, Addresses::Mapped).map_err(|e| damaged(&e))?;
    let file = ElfFile64::<LittleEndian>::parse(bytes).map_err(|e| damaged(&e))?;
    // Without section headers (stripped to the bone) the symbol is looked up after opening.
    if file.elf_header().e_shoff.get(LittleEndian) == 0 {
        return Ok(());
    }
    let defined = file.dynamic_symbols().any(|s| {
        s.is_definition()
            && s.name_bytes()
                .is_ok_and(|n| n == ABI_VERSION_SYMBOL.as_bytes())
    });
    match defined {
        true => Ok(()),
        false => Err(Refusal::NotAPlugin),
    }
}

/// A file's bytes, mapped read-only for as long as this lives: only the pages the check reads
/// are read from disk.
pub(crate) struct MappedFile {
    address: *mut std::ffi::c_void,
    len: usize,
}

impl MappedFile {
    /// `None` where the file cannot be opened or mapped (the loader then says why).
    pub(crate) fn open(path: &str) -> Option<MappedFile> {
        use std::os::fd::AsRawFd;
        let file = std::fs::File::open(path).ok()?;
        let len = usize::try_from(file.metadata().ok()?.len()).ok()?;
        if len == 0 {
            return Some(MappedFile {
                address: std::ptr::null_mut(),
                len: 0,
            });
        }
        // SAFETY: a fresh private read-only mapping of an open file; the kernel chooses the
        // address. The descriptor may close afterwards; the mapping stays.
        let address = unsafe {
            mmap(
                std::ptr::null_mut(),
                len,
                PROT_READ,
                MAP_PRIVATE,
                file.as_raw_fd(),
                0,
            )
        };
        (address != MAP_FAILED).then_some(MappedFile { address, len })
    }

    pub(crate) fn bytes(&self) -> &[u8] {
        if self.len == 0 {
            return &[];
        }
        // SAFETY: `len` readable bytes are mapped at `address` until drop. (A file truncated
        // meanwhile by someone else would fault here, as it would in the loader.)
        unsafe { std::slice::from_raw_parts(self.address.cast::<u8>(), self.len) }
    }
}

impl Drop for MappedFile {
    fn drop(&mut self) {
        if self.len > 0 {
            // SAFETY: unmaps exactly the mapping `open` made, which nothing borrows any more.
            unsafe { munmap(self.address, self.len) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_what_is_not_a_plugin_for_this_machine() {
        let why = |bytes: &[u8]| check(bytes).unwrap_err().to_string();
        assert_eq!(why(b"garbage"), "cannot be opened: not an ELF file");
        let mut header = vec![0u8; 64];
        header[..4].copy_from_slice(b"\x7fELF");
        header[4] = 2;
        header[5] = 1;
        header[16] = ET_DYN as u8;
        header[18] = 40; // ARM
        assert!(why(&header).contains("another machine"));
        header[18..20].copy_from_slice(&EM_HOST.to_le_bytes());
        header[16] = 2;
        assert!(why(&header).contains("not a shared library"));
    }

    #[test]
    fn a_sound_library_without_the_abi_symbol_is_not_a_plugin() {
        // The test binary's own file: a sound position-independent executable.
        let exe = std::env::current_exe().unwrap().display().to_string();
        let mapped = MappedFile::open(&exe).unwrap();
        assert_eq!(check(mapped.bytes()), Err(Refusal::NotAPlugin));
    }
}
