//! Offload entries: the table that names each kernel and `declare target` global.
//!
//! Two layouts exist. Clang 19 and older emit the legacy 32-byte `__tgt_offload_entry`
//! `{addr, name, size, flags: i32, reserved: i32}`. Clang 20 and newer emit a 56-byte entry
//! `{reserved: u64 = 0, version: u16 = 1, kind: u16, flags: u32, addr, name, size: u64,
//! data: u64, aux_addr}`. The legacy layout can never start with 8 zero bytes (its first field
//! is the address of a symbol), which tells the two apart. The layout also tells which LLVM
//! runtime's behaviour the program expects ([`LlvmRelease`]).

use super::c_strings::LoadedMemory;
pub(crate) use crate::llvm_release::LlvmRelease;
use std::ffi::c_void;

/// The flags LLVM defines for entries (`OpenMPOffloadingDeclareTargetFlags`).
pub(crate) mod flags {
    pub(crate) const LINK: u32 = 0x01;
    // The whole set, as LLVM lists it: the plugins run constructors, the core reads neither.
    #[allow(dead_code)]
    pub(crate) const CTOR: u32 = 0x02;
    #[allow(dead_code)]
    pub(crate) const DTOR: u32 = 0x04;
    pub(crate) const INDIRECT: u32 = 0x08;
    pub(crate) const REGISTER_REQUIRES: u32 = 0x10;
    /// A C++ virtual table of `declare target indirect` functions (LLVM 22): `size` is the
    /// table's, the device global is one pointer to the device's copy.
    pub(crate) const INDIRECT_VTABLE: u32 = 0x20;
}

/// The `kind` of a new-layout entry that belongs to OpenMP.
const KIND_OPENMP: u16 = 1;

const LEGACY_SIZE: usize = 32;
const NEW_SIZE: usize = 56;

/// A program's entry table: its entries and the release its layout tells (an empty table
/// tells nothing and says LLVM 22).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EntryTable {
    pub(crate) release: LlvmRelease,
    pub entries: Vec<OffloadEntry>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OffloadEntry {
    /// Host address: a kernel's region id or a global variable.
    pub(crate) address: usize,
    pub name: String,
    /// Address of the name's C string in the program, which LLVM uses as the variable's
    /// name in diagnostics.
    pub(crate) name_address: usize,
    /// 0 for kernels, the variable's size for globals.
    pub(crate) size: u64,
    pub(crate) flags: u32,
    /// The `data` field of new-layout entries (requires flags live there for REGISTER_REQUIRES).
    pub(crate) data: u64,
}

impl OffloadEntry {
    pub fn is_kernel(&self) -> bool {
        self.size == 0 && self.flags & (flags::REGISTER_REQUIRES | flags::LINK) == 0
    }
    pub fn is_global(&self) -> bool {
        self.size > 0 && self.flags & flags::REGISTER_REQUIRES == 0
    }
    /// A `declare target indirect` function or virtual table: the device global holds a device
    /// address that host function pointers translate to.
    pub fn is_indirect(&self) -> bool {
        self.size > 0 && self.flags & (flags::INDIRECT | flags::INDIRECT_VTABLE) != 0
    }
}

#[derive(Debug, PartialEq, Eq)]
pub enum EntryTableError {
    BadBounds,
    UnknownLayout(usize),
    UnsupportedVersion(u16),
    NullName(usize),
    UnreadableName(usize),
}

impl std::fmt::Display for EntryTableError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EntryTableError::BadBounds => write!(f, "end before begin"),
            EntryTableError::UnknownLayout(n) => {
                write!(
                    f,
                    "{n} bytes is a multiple of neither the 32-byte nor the 56-byte entry layout"
                )
            }
            EntryTableError::UnsupportedVersion(v) => {
                write!(f, "entry version {v} is not supported (only 0 and 1)")
            }
            EntryTableError::NullName(i) => write!(f, "entry {i} has no name"),
            EntryTableError::UnreadableName(i) => write!(f, "entry {i}'s name cannot be read"),
        }
    }
}

/// Reads an entry table of either layout.
///
/// # Safety
/// `[begin, end)` must be null/empty or readable memory (names are read without trusting them).
pub(crate) unsafe fn read_entry_table(
    begin: *const c_void,
    end: *const c_void,
) -> Result<EntryTable, EntryTableError> {
    let (b, e) = (begin as usize, end as usize);
    if b == 0 || e == b {
        return Ok(EntryTable::default());
    }
    if e < b {
        return Err(EntryTableError::BadBounds);
    }
    // SAFETY: the table is valid for `e - b` bytes (caller's promise).
    let bytes = unsafe { std::slice::from_raw_parts(b as *const u8, e - b) };
    parse_entries(bytes)
}

fn word(bytes: &[u8], at: usize) -> u64 {
    u64::from_ne_bytes(bytes[at..at + 8].try_into().unwrap())
}

/// Entry versions of the new layout that are read: 1, what clang emits, and 0, what programs
/// that build entries by hand leave there (LLVM 22 reads both).
fn known_version(version: u16) -> bool {
    version <= 1
}

/// Reads an entry table whose names are in this process's memory: a name pointer that points
/// nowhere readable (a damaged program) is an error, not a fault.
pub(crate) fn parse_entries(bytes: &[u8]) -> Result<EntryTable, EntryTableError> {
    let memory = LoadedMemory::snapshot();
    parse_entry_bytes(bytes, &mut |address| memory.c_string(address as usize))
}

/// Reads an entry table of either layout from its bytes; `name_at` answers the string at a
/// non-null name address, or `None` where nothing can be read. The safe core of
/// [`read_entry_table`], which the fuzzer drives with names of its own.
pub fn parse_entry_bytes(
    bytes: &[u8],
    name_at: &mut dyn FnMut(u64) -> Option<String>,
) -> Result<EntryTable, EntryTableError> {
    let mut name = |address: u64, index: usize| match address {
        0 => Err(EntryTableError::NullName(index)),
        _ => name_at(address).ok_or(EntryTableError::UnreadableName(index)),
    };
    // The new layout starts with 8 zero bytes and a known version. A legacy entry may start
    // with a null address too (hand-made `requires` entries), but then a name pointer follows:
    // where both layouts fit, a new entry is also told by its kind (a name pointer whose bytes
    // 8-11 read as version 0 or 1 and kind OpenMP is not a pointer a program has).
    let fits_new = bytes.len() >= NEW_SIZE && bytes.len().is_multiple_of(NEW_SIZE);
    let fits_legacy = bytes.len().is_multiple_of(LEGACY_SIZE);
    let version = |e: &[u8]| u16::from_ne_bytes([e[8], e[9]]);
    let kind = |e: &[u8]| u16::from_ne_bytes([e[10], e[11]]);
    let new_layout = fits_new
        && word(bytes, 0) == 0
        && (!fits_legacy
            || version(bytes) == 1
            || (known_version(version(bytes)) && kind(bytes) == KIND_OPENMP));
    let (stride, layout_ok) = if new_layout {
        (NEW_SIZE, bytes.len().is_multiple_of(NEW_SIZE))
    } else {
        (LEGACY_SIZE, bytes.len().is_multiple_of(LEGACY_SIZE))
    };
    if !layout_ok {
        return Err(EntryTableError::UnknownLayout(bytes.len()));
    }
    let mut entries = Vec::with_capacity(bytes.len() / stride);
    for (i, e) in bytes.chunks_exact(stride).enumerate() {
        if new_layout {
            if !known_version(version(e)) {
                return Err(EntryTableError::UnsupportedVersion(version(e)));
            }
            if kind(e) != KIND_OPENMP {
                continue; // CUDA/HIP entries sharing the section are not ours.
            }
            entries.push(OffloadEntry {
                flags: u32::from_ne_bytes(e[12..16].try_into().unwrap()),
                address: word(e, 16) as usize,
                name: name(word(e, 24), i)?,
                name_address: word(e, 24) as usize,
                size: word(e, 32),
                data: word(e, 40),
            });
        } else {
            entries.push(OffloadEntry {
                address: word(e, 0) as usize,
                name: name(word(e, 8), i)?,
                name_address: word(e, 8) as usize,
                size: word(e, 16),
                flags: u32::from_ne_bytes(e[24..28].try_into().unwrap()),
                // The legacy `reserved` field carries the requires flags of clang 19.
                data: u64::from(u32::from_ne_bytes(e[28..32].try_into().unwrap())),
            });
        }
    }
    let release = match new_layout {
        true => LlvmRelease::Llvm22,
        false => LlvmRelease::Llvm19,
    };
    Ok(EntryTable { release, entries })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CStr;

    fn legacy(addr: u64, name: &CStr, size: u64, flags: u32) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend(addr.to_ne_bytes());
        v.extend((name.as_ptr() as u64).to_ne_bytes());
        v.extend(size.to_ne_bytes());
        v.extend(flags.to_ne_bytes());
        v.extend(0u32.to_ne_bytes());
        v
    }

    fn new(kind: u16, addr: u64, name: &CStr, size: u64, flags: u32) -> Vec<u8> {
        let mut v = vec![0u8; 8];
        v.extend(1u16.to_ne_bytes());
        v.extend(kind.to_ne_bytes());
        v.extend(flags.to_ne_bytes());
        v.extend(addr.to_ne_bytes());
        v.extend((name.as_ptr() as u64).to_ne_bytes());
        v.extend(size.to_ne_bytes());
        v.extend(0u64.to_ne_bytes());
        v.extend(0u64.to_ne_bytes());
        v
    }

    #[test]
    fn reads_both_layouts() {
        let k = c"__omp_offloading_1_main_l3";
        let g = c"g";
        let mut old = legacy(0x1000, k, 0, 0);
        old.extend(legacy(0x2000, g, 4, 0));
        let mut newer = new(1, 0x1000, k, 0, 0);
        newer.extend(new(1, 0x2000, g, 4, 0));
        newer.extend(new(2, 0x3000, g, 4, 0)); // a CUDA entry: skipped
        for (bytes, release) in [(old, LlvmRelease::Llvm19), (newer, LlvmRelease::Llvm22)] {
            let table = parse_entries(&bytes).unwrap();
            assert_eq!(table.release, release);
            let entries = table.entries;
            assert_eq!(entries.len(), 2);
            assert_eq!(entries[0].name, "__omp_offloading_1_main_l3");
            assert!(entries[0].is_kernel());
            assert_eq!((entries[1].address, entries[1].size), (0x2000, 4));
            assert!(entries[1].is_global());
        }
    }

    #[test]
    fn legacy_requires_entries_with_null_addresses() {
        let r = c"";
        let mut two = legacy(0, r, 0, flags::REGISTER_REQUIRES);
        two.extend(legacy(0, r, 0, flags::REGISTER_REQUIRES));
        let table = parse_entries(&two).unwrap();
        assert_eq!(table.release, LlvmRelease::Llvm19);
        assert_eq!(table.entries.len(), 2);
        assert!(!table.entries[0].is_kernel() && !table.entries[0].is_global());
    }

    /// What LLVM 22's `requires` test builds by hand: new-layout entries of version 0.
    #[test]
    fn version_0_entries_made_by_hand() {
        let r = c"";
        let mut one = new(1, 0, r, 0, flags::REGISTER_REQUIRES);
        one[8] = 0;
        for count in [1, 4] {
            // Four entries (224 bytes) fit the legacy layout too; the kind tells them apart.
            let bytes = one.repeat(count);
            let table = parse_entries(&bytes).unwrap();
            assert_eq!(table.release, LlvmRelease::Llvm22);
            assert_eq!(table.entries.len(), count);
            assert_eq!(table.entries[0].flags, flags::REGISTER_REQUIRES);
        }
    }

    #[test]
    fn rejects_odd_sizes_and_versions() {
        let g = c"g";
        let mut bad = legacy(0x1000, g, 0, 0);
        bad.pop();
        assert!(matches!(
            parse_entries(&bad),
            Err(EntryTableError::UnknownLayout(31))
        ));
        let mut v2 = new(1, 0x1000, g, 0, 0);
        v2[8] = 2;
        assert_eq!(
            parse_entries(&v2),
            Err(EntryTableError::UnsupportedVersion(2))
        );
    }
}
