//! Map-type bits of `tgt_map_type` (LLVM's `omptarget.h`).

pub const TO: i64 = 0x001;
pub const FROM: i64 = 0x002;
pub const ALWAYS: i64 = 0x004;
pub const DELETE: i64 = 0x008;
pub const PTR_AND_OBJ: i64 = 0x010;
pub const TARGET_PARAM: i64 = 0x020;
pub const RETURN_PARAM: i64 = 0x040;
pub const PRIVATE: i64 = 0x080;
pub const LITERAL: i64 = 0x100;
pub const IMPLICIT: i64 = 0x200;
pub const CLOSE: i64 = 0x400;
pub const PRESENT: i64 = 0x1000;
pub const OMPX_HOLD: i64 = 0x2000;
/// Clang 22+: attach pointer and pointee after all other maps; no reference count change.
pub const ATTACH: i64 = 0x4000;
pub const NON_CONTIG: i64 = 0x1000_0000_0000;
pub const MEMBER_OF: i64 = 0xffff_0000_0000_0000u64 as i64;

/// One map type, with named queries.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct MapType(pub i64);

impl MapType {
    pub fn has(self, bit: i64) -> bool {
        self.0 & bit != 0
    }
    /// Index of the parent argument for struct members, if any.
    pub fn member_of(self) -> Option<usize> {
        let field = ((self.0 as u64) >> 48) as usize;
        (field != 0).then(|| field - 1)
    }
    pub fn is_by_value(self) -> bool {
        self.has(LITERAL)
    }
    pub fn is_private(self) -> bool {
        self.has(PRIVATE)
    }
}
