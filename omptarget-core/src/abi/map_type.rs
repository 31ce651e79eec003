//! Map-type bits of `tgt_map_type` (LLVM's `omptarget.h`).

pub(crate) const TO: i64 = 0x001;
pub(crate) const FROM: i64 = 0x002;
pub(crate) const ALWAYS: i64 = 0x004;
pub(crate) const DELETE: i64 = 0x008;
pub(crate) const PTR_AND_OBJ: i64 = 0x010;
pub(crate) const TARGET_PARAM: i64 = 0x020;
pub(crate) const RETURN_PARAM: i64 = 0x040;
pub(crate) const PRIVATE: i64 = 0x080;
pub(crate) const LITERAL: i64 = 0x100;
pub(crate) const IMPLICIT: i64 = 0x200;
pub(crate) const CLOSE: i64 = 0x400;
pub(crate) const PRESENT: i64 = 0x1000;
pub(crate) const OMPX_HOLD: i64 = 0x2000;
/// Clang 22+: attach pointer and pointee after all other maps; no reference count change.
pub(crate) const ATTACH: i64 = 0x4000;
pub(crate) const NON_CONTIG: i64 = 0x1000_0000_0000;
pub(crate) const MEMBER_OF: i64 = 0xffff_0000_0000_0000u64 as i64;

/// One map type, with named queries.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct MapType(pub i64);

impl MapType {
    pub(crate) fn has(self, bit: i64) -> bool {
        self.0 & bit != 0
    }
    /// Index of the parent argument for struct members, if any.
    pub(crate) fn member_of(self) -> Option<usize> {
        let field = ((self.0 as u64) >> 48) as usize;
        (field != 0).then(|| field - 1)
    }
    pub(crate) fn is_by_value(self) -> bool {
        self.has(LITERAL)
    }
    pub(crate) fn is_private(self) -> bool {
        self.has(PRIVATE)
    }
}
