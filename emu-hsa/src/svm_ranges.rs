//! The attributes of shared virtual memory ranges, as KFD keeps them: per range, split where a
//! later setting covers part of one; a range never set has KFD's defaults (see `svm` for the
//! calls that set and read them).

use crate::agents::AgentIndex;
use std::collections::BTreeMap;

// KFD's SVM flag bits (`KFD_IOCTL_SVM_FLAG_*`); ROCr answers a boolean attribute with its bit.
pub(crate) const HOST_ACCESS: u32 = 0x1;
pub(crate) const COHERENT: u32 = 0x2;
pub(crate) const HIVE_LOCAL: u32 = 0x4;
pub(crate) const GPU_RO: u32 = 0x8;
pub(crate) const GPU_EXEC: u32 = 0x10;
pub(crate) const GPU_READ_MOSTLY: u32 = 0x20;
pub(crate) const DEFAULT_GRANULARITY: u64 = 9;
pub(crate) const MAX_GRANULARITY: u64 = 18;
pub(crate) const PAGE: usize = 4096;

/// A GPU's access to a range.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Access {
    Accessible,
    InPlace,
    None,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Attributes {
    pub(crate) flags: u32,
    pub(crate) granularity: u64,
    pub(crate) preferred: Option<AgentIndex>,
    /// GPUs whose access was set; the others have the default.
    pub(crate) access: BTreeMap<AgentIndex, Access>,
}

impl Default for Attributes {
    fn default() -> Attributes {
        Attributes {
            flags: HOST_ACCESS | COHERENT,
            granularity: DEFAULT_GRANULARITY,
            preferred: None,
            access: BTreeMap::new(),
        }
    }
}

/// The ranges given attributes: start → (end, attributes), not overlapping.
#[derive(Default)]
pub struct Ranges {
    ranges: BTreeMap<usize, (usize, Attributes)>,
}

impl Ranges {
    /// The access `agent` was given to the page of `address`, if any was.
    pub fn access(&self, agent: AgentIndex, address: usize) -> Option<Access> {
        let (_, (end, attributes)) = self.ranges.range(..=address).next_back()?;
        if address >= *end {
            return None;
        }
        attributes.access.get(&agent).copied()
    }

    /// Applies `change` to `[start, end)`, splitting ranges it covers in part and creating
    /// default ones where none was.
    pub(crate) fn set(&mut self, start: usize, end: usize, change: impl Fn(&mut Attributes)) {
        let covered: Vec<(usize, usize, Attributes)> = self
            .ranges
            .range(..end)
            .filter(|(_, (e, _))| *e > start)
            .map(|(&s, (e, a))| (s, *e, a.clone()))
            .collect();
        let mut pieces = Vec::new();
        let mut at = start;
        for (s, e, attributes) in covered {
            self.ranges.remove(&s);
            if s < start {
                self.ranges.insert(s, (start, attributes.clone()));
            }
            if e > end {
                self.ranges.insert(end, (e, attributes.clone()));
            }
            let (from, to) = (s.max(start), e.min(end));
            if from > at {
                pieces.push((at, from, Attributes::default()));
            }
            pieces.push((from, to, attributes));
            at = to;
        }
        if at < end {
            pieces.push((at, end, Attributes::default()));
        }
        for (s, e, mut attributes) in pieces {
            change(&mut attributes);
            self.ranges.insert(s, (e, attributes));
        }
    }

    /// The attributes of the ranges inside `[start, end)`; KFD's defaults when there is none.
    pub(crate) fn within(&self, start: usize, end: usize) -> Vec<Attributes> {
        let found: Vec<Attributes> = self
            .ranges
            .range(..end)
            .filter(|(_, (e, _))| *e > start)
            .map(|(_, (_, a))| a.clone())
            .collect();
        if found.is_empty() {
            vec![Attributes::default()]
        } else {
            found
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_split_where_a_later_setting_covers_part_of_one() {
        let mut ranges = Ranges::default();
        ranges.set(0x10000, 0x20000, |a| a.flags &= !COHERENT);
        ranges.set(0x18000, 0x30000, |a| {
            a.access.insert(1, Access::InPlace);
        });
        let coarse = |a: &Attributes| a.flags & COHERENT == 0;
        assert!(ranges.within(0x10000, 0x18000).iter().all(coarse));
        let mixed = ranges.within(0x10000, 0x30000);
        assert_eq!(mixed.len(), 3);
        assert!(!mixed.iter().all(coarse) && mixed.iter().any(coarse));
        assert_eq!(ranges.access(1, 0x17fff), None);
        assert_eq!(ranges.access(1, 0x18000), Some(Access::InPlace));
        assert_eq!(ranges.access(1, 0x2ffff), Some(Access::InPlace));
        assert_eq!(ranges.access(1, 0x30000), None);
        assert_eq!(ranges.within(0x40000, 0x41000), vec![Attributes::default()]);
    }
}
