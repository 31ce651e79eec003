//! Small device allocations are kept and reused instead of going back to the plugin each time
//! (LLVM's memory manager, `LIBOMPTARGET_MEMORY_MANAGER_THRESHOLD`): targets come and go with
//! every construct, and driver allocations are slow on real devices.

use crate::address_map::AddressMap;
use std::sync::Mutex;

/// LLVM's default threshold: 8 KiB.
pub const DEFAULT_THRESHOLD: u64 = 1 << 13;
/// The smallest size class.
const MIN_CLASS: u64 = 32;

/// The threshold from `LIBOMPTARGET_MEMORY_MANAGER_THRESHOLD`: unset means the default,
/// 0 turns the pool off.
pub fn threshold_from_env() -> u64 {
    match std::env::var("LIBOMPTARGET_MEMORY_MANAGER_THRESHOLD")
        .ok()
        .and_then(|v| crate::config::parse_number(&v))
    {
        None => DEFAULT_THRESHOLD,
        Some(v) => v.max(0) as u64,
    }
}

#[derive(Default)]
struct PoolState {
    /// Free blocks by size class (a power of two).
    free: AddressMap<u64, Vec<usize>>,
    /// Every block the pool handed out or holds, with its class.
    blocks: AddressMap<usize, u64>,
}

pub struct MemoryPool {
    threshold: u64,
    state: Mutex<PoolState>,
}

impl MemoryPool {
    pub fn new(threshold: u64) -> Self {
        MemoryPool {
            threshold,
            state: Mutex::new(PoolState::default()),
        }
    }

    /// The size class a request of `size` bytes is served from, if the pool serves it.
    pub fn class_of(&self, size: u64) -> Option<u64> {
        (self.threshold > 0 && size <= self.threshold)
            .then(|| size.max(MIN_CLASS).next_power_of_two())
    }

    /// A free block of the class, if any.
    pub fn take(&self, class: u64) -> Option<usize> {
        self.state
            .lock()
            .unwrap()
            .free
            .get_mut(&class)
            .and_then(Vec::pop)
    }

    /// Records a block fresh from the plugin as the pool's.
    pub fn adopt(&self, block: usize, class: u64) {
        self.state.lock().unwrap().blocks.insert(block, class);
    }

    /// Takes a block back; false when it is not the pool's (the plugin must free it).
    pub fn give_back(&self, block: usize) -> bool {
        let mut state = self.state.lock().unwrap();
        let Some(&class) = state.blocks.get(&block) else {
            return false;
        };
        state.free.entry(class).or_default().push(block);
        true
    }

    /// Every block the pool holds, for freeing at shutdown; the pool is empty afterwards.
    pub fn drain(&self) -> Vec<usize> {
        let mut state = self.state.lock().unwrap();
        state.free.clear();
        state.blocks.drain().map(|(block, _)| block).collect()
    }
}

#[test]
fn blocks_are_reused_by_class() {
    let pool = MemoryPool::new(1024);
    assert_eq!(pool.class_of(1), Some(32));
    assert_eq!(pool.class_of(100), Some(128));
    assert_eq!(pool.class_of(2000), None);
    assert_eq!(MemoryPool::new(0).class_of(1), None);
    assert_eq!(pool.take(128), None);
    pool.adopt(0x1000, 128);
    assert!(pool.give_back(0x1000));
    assert!(!pool.give_back(0x2000));
    assert_eq!(pool.take(64), None);
    assert_eq!(pool.take(128), Some(0x1000));
    assert_eq!(pool.drain(), vec![0x1000]);
}
