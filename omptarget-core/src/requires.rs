//! The program's `requires` clauses (LLVM's OMP_REQ_* bits). The runtime records them as
//! libraries register; devices and their queues read them through a shared handle, since a
//! library may register its flags after the devices exist.

use std::sync::atomic::{AtomicI64, Ordering};

/// `requires unified_shared_memory`.
pub(crate) const REQUIRES_UNIFIED_SHARED_MEMORY: i64 = 0x008;

#[derive(Default)]
pub(crate) struct RequiresFlags(AtomicI64);

impl RequiresFlags {
    /// Records a library's flags. As in LLVM, the first library sets them (a library asking
    /// only for automatic zero-copy may replace a first one that asked for nothing); the error
    /// holds the flags set, for the caller to compare with `flags`.
    pub(crate) fn record(&self, flags: i64) -> Result<(), i64> {
        const NONE: i64 = 0x001;
        const AUTO_ZERO_COPY: i64 = 0x020;
        self.0
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |set| {
                (set == 0 || (set == NONE && flags == AUTO_ZERO_COPY)).then_some(flags)
            })
            .map(|_| ())
    }

    pub(crate) fn unified_shared_memory(&self) -> bool {
        self.0.load(Ordering::Relaxed) & REQUIRES_UNIFIED_SHARED_MEMORY != 0
    }
}
