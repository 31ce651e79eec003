//! Small device allocations are kept and reused instead of going back to the plugin each time
//! (LLVM's memory manager, `LIBOMPTARGET_MEMORY_MANAGER_THRESHOLD`): targets come and go with
//! every construct, and driver allocations are slow on real devices. Split in stripes, one per
//! host thread, so that threads offloading at once do not serialise on it.

use plugin_api::address_map::AddressMap;
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

/// Independently locked parts of the pool; each host thread uses one, so threads allocating at
/// once do not wait for each other.
const STRIPES: usize = 8;
/// Size classes are powers of two: at most one per bit of a size.
const CLASSES: usize = 64;

/// The stripe of the calling thread: threads take stripes in turn, on first use.
fn my_stripe() -> usize {
    use std::cell::Cell;
    use std::sync::atomic::{AtomicUsize, Ordering};
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static STRIPE: Cell<usize> = const { Cell::new(usize::MAX) };
    }
    STRIPE
        .try_with(|s| {
            if s.get() == usize::MAX {
                s.set(NEXT.fetch_add(1, Ordering::Relaxed) % STRIPES);
            }
            s.get()
        })
        .unwrap_or(0) // during thread teardown
}

fn class_index(class: u64) -> usize {
    class.trailing_zeros() as usize
}

struct StripeState {
    /// Free blocks by size class (indexed by the class's power of two).
    free: [Vec<usize>; CLASSES],
    /// Every block this stripe took from the plugin, with its class.
    blocks: AddressMap<usize, u64>,
}

impl Default for StripeState {
    fn default() -> Self {
        StripeState {
            free: std::array::from_fn(|_| Vec::new()),
            blocks: AddressMap::default(),
        }
    }
}

/// One stripe, on its own cache line.
#[repr(align(64))]
#[derive(Default)]
struct Stripe(Mutex<StripeState>);

impl Stripe {
    fn lock(&self) -> std::sync::MutexGuard<'_, StripeState> {
        crate::lock::lock(&self.0)
    }
}

pub struct MemoryPool {
    threshold: u64,
    stripes: [Stripe; STRIPES],
}

impl MemoryPool {
    pub fn new(threshold: u64) -> Self {
        MemoryPool {
            threshold,
            stripes: std::array::from_fn(|_| Stripe::default()),
        }
    }

    /// The size class a request of `size` bytes is served from, if the pool serves it.
    pub fn class_of(&self, size: u64) -> Option<u64> {
        (self.threshold > 0 && size <= self.threshold)
            .then(|| size.max(MIN_CLASS).next_power_of_two())
    }

    /// A free block of the class from this thread's stripe, if any.
    pub fn take(&self, class: u64) -> Option<usize> {
        self.stripes[my_stripe()].lock().free[class_index(class)].pop()
    }

    /// Records a block fresh from the plugin as the pool's.
    pub fn adopt(&self, block: usize, class: u64) {
        self.stripes[my_stripe()].lock().blocks.insert(block, class);
    }

    /// Takes a block back into the stripe that adopted it (this thread's, usually); false when
    /// it is not the pool's (the plugin must free it).
    pub fn give_back(&self, block: usize) -> bool {
        let mine = my_stripe();
        let order = std::iter::once(mine).chain((0..STRIPES).filter(|&s| s != mine));
        for stripe in order {
            let mut state = self.stripes[stripe].lock();
            if let Some(&class) = state.blocks.get(&block) {
                state.free[class_index(class)].push(block);
                return true;
            }
        }
        false
    }

    /// Every block the pool holds, for freeing at shutdown; the pool is empty afterwards.
    pub fn drain(&self) -> Vec<usize> {
        let mut all = Vec::new();
        for stripe in &self.stripes {
            let mut state = stripe.lock();
            state.free.iter_mut().for_each(Vec::clear);
            all.extend(state.blocks.drain().map(|(block, _)| block));
        }
        all
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
    // A block adopted by one thread is taken back from another.
    pool.adopt(0x3000, 64);
    std::thread::scope(|s| {
        s.spawn(|| assert!(pool.give_back(0x3000)));
    });
    assert_eq!(pool.drain(), vec![0x3000]);
}
