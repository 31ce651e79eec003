//! What the lookup structures ([`SortedMappings`](super::sorted::SortedMappings) and its
//! start hash) need of an entry: the host range it covers.

use super::Mapping;

/// The host range an entry covers, and the base of its list item (zero-length sections
/// between base and begin find the entry too). Fixed for the entry's life.
pub(super) trait Extent {
    fn base(&self) -> usize;
    fn begin(&self) -> usize;
    fn end(&self) -> usize;
}

impl Extent for Mapping {
    fn base(&self) -> usize {
        self.host_base()
    }
    fn begin(&self) -> usize {
        self.host_begin
    }
    fn end(&self) -> usize {
        self.host_end
    }
}
