//! Target region → kernel, read on every launch by every host thread and changed only when
//! images load or unload. Readers take no lock and write nothing shared: they read the current
//! table through one atomic pointer; a change publishes a new table. Replaced tables are kept
//! until the device goes away, since a reader may still hold one (images load a few times per
//! program, so little is kept).

use crate::abi::offload_entry::LlvmRelease;
use host_os::address_map::AddressMap;
use plugin_api::KernelHandle;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::Mutex;

/// A loaded kernel: the plugin's handle, and the LLVM release its program expects.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Kernel {
    pub handle: KernelHandle,
    pub release: LlvmRelease,
}

impl Kernel {
    /// The launch's flags word: the compiler's, with the core's mark for a program that
    /// expects LLVM 22's behaviour.
    pub(crate) fn launch_flags(self, compiler_flags: u64) -> u64 {
        match self.release {
            LlvmRelease::Llvm22 => compiler_flags | plugin_api::LaunchConfig::LLVM22_PROGRAM,
            LlvmRelease::Llvm19 => compiler_flags,
        }
    }
}

type Table = AddressMap<usize, Kernel>;

pub(crate) struct KernelTable {
    current: AtomicPtr<Table>,
    /// Every table ever published (the current one last), owned here; changes lock it. Boxed:
    /// `current` points into them, so they must not move when the vector grows.
    #[allow(clippy::vec_box)]
    published: Mutex<Vec<Box<Table>>>,
}

impl Default for KernelTable {
    fn default() -> Self {
        let mut first = Box::<Table>::default();
        KernelTable {
            current: AtomicPtr::new(&mut *first),
            published: Mutex::new(vec![first]),
        }
    }
}

impl KernelTable {
    pub(crate) fn get(&self, region_id: usize) -> Option<Kernel> {
        let table = self.current.load(Ordering::Acquire);
        // SAFETY: `current` always points at a table boxed in `published`, which never drops or
        // changes a table while `self` lives; the Acquire load pairs with the Release store
        // that published it, so its contents are visible.
        unsafe { &*table }.get(&region_id).copied()
    }

    /// Publishes a copy of the current table with `change` applied.
    pub(crate) fn change(&self, change: impl FnOnce(&mut Table)) {
        let mut published = crate::lock::lock(&self.published);
        let mut next = Box::new(published.last().map(|t| (**t).clone()).unwrap_or_default());
        change(&mut next);
        self.current.store(&mut *next, Ordering::Release);
        published.push(next);
    }
}

#[test]
fn changes_are_published_whole() {
    let table = KernelTable::default();
    let kernel = |h| Kernel {
        handle: KernelHandle(h),
        release: LlvmRelease::Llvm22,
    };
    assert_eq!(table.get(1), None);
    table.change(|t| {
        t.insert(1, kernel(10));
        t.insert(2, kernel(20));
    });
    assert_eq!(table.get(2), Some(kernel(20)));
    table.change(|t| {
        t.remove(&1);
    });
    assert_eq!(table.get(1), None);
    assert_eq!(table.get(2), Some(kernel(20)));
}
