//! Small device allocations are kept and reused instead of going back to the plugin each time
//! (LLVM's memory manager, `LIBOMPTARGET_MEMORY_MANAGER_THRESHOLD`): targets come and go with
//! every construct, and driver allocations are slow on real devices. Unlike LLVM's, the pool
//! takes slabs of [`SLAB_BYTES`] from the plugin and carves blocks of one size class from each,
//! so a new small mapping costs no driver call (and no bookkeeping per block in the plugin).
//! Split in stripes, one per host thread, so that threads offloading at once do not serialise.
//!
//! Under valgrind's memcheck, where the device's memory is this process's (the host plugin), it
//! is told about the pool ([`MemoryPool::watch_under_memcheck`]), since a block carved from a slab
//! would otherwise hide a kernel's overrun in the slab's spare room: the slabs are no-access,
//! each block handed out is a chunk of a memcheck memory pool of exactly the bytes asked for
//! (recorded with the stack that allocated it), no-access again when it comes back, and every
//! size class keeps [`RED_ZONE`] spare bytes after its blocks. The pool keeps its bookkeeping
//! out of the slabs, so nothing of its own touches no-access memory. Natively the red zone is
//! 0, and each annotation is one predictable branch on it: a few instructions per mapping (9
//! per region with one mapping, of about 3 300, under callgrind, where the pool is not watched).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use valgrind_requests as valgrind;

/// LLVM's default threshold: 8 KiB.
pub(crate) const DEFAULT_THRESHOLD: u64 = 1 << 13;
/// The smallest size class.
const MIN_CLASS: u64 = 32;
/// The size of the slabs small classes are carved from; a class this size or larger takes one
/// block per slab.
pub(crate) const SLAB_BYTES: u64 = 64 << 10;

/// Under memcheck, the no-access bytes every size class keeps after its blocks (as many as
/// valgrind's own `malloc` keeps), so that an overrun of a block that would fill its class
/// lands in no-access memory rather than in the next block.
pub(crate) const RED_ZONE: u64 = 16;

/// The bytes to take from the plugin for a new slab of `class`.
pub(crate) fn slab_bytes(class: u64) -> u64 {
    class.max(SLAB_BYTES)
}

/// The threshold from `LIBOMPTARGET_MEMORY_MANAGER_THRESHOLD`: unset means the default,
/// 0 turns the pool off. Off too while the plugins track allocations
/// (`OFFLOAD_TRACK_ALLOCATION_TRACES`): a block the pool hands out or takes back is an
/// allocation or free the plugin would never see, and a double free of one would go unnoticed.
pub(crate) fn threshold_from_env() -> u64 {
    if crate::config::track_allocation_traces() {
        return 0;
    }
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
    /// By class: the part of its newest slab not handed out yet (next block, end).
    fresh: [(usize, usize); CLASSES],
    /// Every slab this stripe took from the plugin, ordered by start: a binary search finds
    /// a block's slab (slabs are few, and added rarely).
    slabs: Vec<Slab>,
}

impl Default for StripeState {
    fn default() -> Self {
        StripeState {
            free: std::array::from_fn(|_| Vec::new()),
            fresh: [(0, 0); CLASSES],
            slabs: Vec::new(),
        }
    }
}

#[derive(Clone, Copy)]
struct Slab {
    start: usize,
    end: usize,
    class: u64,
}

impl StripeState {
    /// The class of `block` if it is a block this stripe handed out.
    fn class_of_block(&self, block: usize) -> Option<u64> {
        let after = self.slabs.partition_point(|s| s.start <= block);
        let Slab { start, end, class } = *self.slabs.get(after.checked_sub(1)?)?;
        let (next, fresh_end) = self.fresh[class_index(class)];
        let handed_out = block < end
            && ((block - start) as u64).is_multiple_of(class)
            && !(fresh_end == end && block >= next);
        handed_out.then_some(class)
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

pub(crate) struct MemoryPool {
    threshold: u64,
    /// [`RED_ZONE`] once memcheck is told about the pool's blocks
    /// ([`MemoryPool::watch_under_memcheck`]), else 0: added to every size as it is.
    red_zone: AtomicU64,
    stripes: [Stripe; STRIPES],
}

impl MemoryPool {
    pub(crate) fn new(threshold: u64) -> Self {
        MemoryPool {
            threshold,
            red_zone: AtomicU64::new(0),
            stripes: std::array::from_fn(|_| Stripe::default()),
        }
    }

    /// Under memcheck, tells it about the pool from now on (the device's memory must be this
    /// process's): see the module's documentation. The pool's address names it to valgrind,
    /// so the pool must not move afterwards; and since it changes the size classes (red
    /// zones), it does nothing once a slab was taken. Not under memcheck (natively, or under
    /// another tool such as callgrind) it does nothing, and the pool is as it always was.
    pub(crate) fn watch_under_memcheck(&self) {
        if self.watched() || !valgrind::running_on_memcheck() {
            return;
        }
        if self.stripes.iter().any(|s| !s.lock().slabs.is_empty()) {
            log::debug!("the memory pool has blocks already: valgrind is not told about it");
            return;
        }
        valgrind::create_mempool(self.anchor(), RED_ZONE as usize, false);
        self.red_zone.store(RED_ZONE, Ordering::Relaxed);
    }

    /// The bytes kept after each block: [`RED_ZONE`] under memcheck, else 0.
    #[inline]
    fn red_zone(&self) -> u64 {
        self.red_zone.load(Ordering::Relaxed)
    }

    #[inline]
    fn watched(&self) -> bool {
        self.red_zone() != 0
    }

    /// The name of the pool for valgrind.
    fn anchor(&self) -> usize {
        self as *const MemoryPool as usize
    }

    /// Tells memcheck that `block` is handed out for `size` bytes (if it watches the pool).
    #[inline]
    fn lend(&self, block: usize, size: u64) -> usize {
        if self.watched() {
            valgrind::mempool_alloc(self.anchor(), block, size as usize);
        }
        block
    }

    /// Tells memcheck that `block` came back (if it watches the pool); before the block is on
    /// a free list, where another thread may take it.
    #[inline]
    fn take_back(&self, block: usize) {
        if self.watched() {
            valgrind::mempool_free(self.anchor(), block);
        }
    }

    /// The size class a request of `size` bytes is served from, if the pool serves it.
    #[inline]
    pub(crate) fn class_of(&self, size: u64) -> Option<u64> {
        (self.threshold > 0 && size <= self.threshold)
            .then(|| (size + self.red_zone()).max(MIN_CLASS).next_power_of_two())
    }

    /// A block of the class for `size` bytes from this thread's stripe: a freed one, else the
    /// next of its newest slab; `None` when a new slab is needed ([`MemoryPool::add_slab`]).
    #[inline]
    pub(crate) fn take(&self, class: u64, size: u64) -> Option<usize> {
        let block = self.take_unwatched(class)?;
        Some(self.lend(block, size))
    }

    #[inline]
    fn take_unwatched(&self, class: u64) -> Option<usize> {
        let mut state = self.stripes[my_stripe()].lock();
        let index = class_index(class);
        if let Some(block) = state.free[index].pop() {
            return Some(block);
        }
        let (next, end) = &mut state.fresh[index];
        let block = *next;
        if block != 0 && block as u64 + class <= *end as u64 {
            *next += class as usize;
            return Some(block);
        }
        None
    }

    /// Records a slab of `bytes` fresh from the plugin as the pool's, for blocks of `class`,
    /// and hands out its first block, for `size` bytes.
    pub(crate) fn add_slab(&self, slab: usize, bytes: u64, class: u64, size: u64) -> usize {
        if self.watched() {
            // Before other threads of the stripe can take its blocks.
            valgrind::make_mem_noaccess(slab, bytes as usize);
        }
        let mut state = self.stripes[my_stripe()].lock();
        let end = slab + bytes as usize;
        let at = state.slabs.partition_point(|s| s.start < slab);
        state.slabs.insert(
            at,
            Slab {
                start: slab,
                end,
                class,
            },
        );
        state.fresh[class_index(class)] = (slab + class as usize, end);
        drop(state);
        self.lend(slab, size)
    }

    /// Takes a block back into the stripe that handed it out (this thread's, usually); false
    /// when it is not the pool's (the plugin must free it).
    pub(crate) fn give_back(&self, block: usize) -> bool {
        let mine = my_stripe();
        let order = std::iter::once(mine).chain((0..STRIPES).filter(|&s| s != mine));
        for stripe in order {
            let mut state = self.stripes[stripe].lock();
            if let Some(class) = state.class_of_block(block) {
                self.take_back(block);
                state.free[class_index(class)].push(block);
                return true;
            }
        }
        false
    }

    /// Takes back a block this pool handed out for `class` (known from the size it was asked
    /// for), into this thread's stripe: no search for its slab. A block may so move to
    /// another stripe's free list; any stripe may hand out any block of the class.
    #[inline]
    pub(crate) fn give_back_block(&self, block: usize, class: u64) {
        self.take_back(block);
        self.stripes[my_stripe()].lock().free[class_index(class)].push(block);
    }

    /// Every slab the pool holds, for freeing at shutdown; the pool is empty afterwards.
    /// For valgrind the slabs are addressable again, as the plugin handed them out.
    pub(crate) fn drain(&self) -> Vec<usize> {
        let mut all = Vec::new();
        for stripe in &self.stripes {
            let mut state = stripe.lock();
            let slabs = std::mem::take(&mut state.slabs);
            *state = StripeState::default();
            if self.watched() {
                for slab in &slabs {
                    valgrind::make_mem_undefined(slab.start, slab.end - slab.start);
                }
            }
            all.extend(slabs.into_iter().map(|s| s.start));
        }
        if self.watched() {
            // Its chunks (blocks still out) go with the slabs; the pool stays watched.
            valgrind::destroy_mempool(self.anchor());
            valgrind::create_mempool(self.anchor(), RED_ZONE as usize, false);
        }
        all
    }
}

#[test]
fn blocks_are_carved_from_slabs_and_reused_by_class() {
    let pool = MemoryPool::new(1024);
    assert_eq!(pool.class_of(1), Some(32));
    assert_eq!(pool.class_of(100), Some(128));
    assert_eq!(pool.class_of(2000), None);
    assert_eq!(MemoryPool::new(0).class_of(1), None);
    assert_eq!(slab_bytes(128), SLAB_BYTES);
    assert_eq!(pool.take(128, 100), None);
    // A slab of three blocks of 128 bytes.
    assert_eq!(pool.add_slab(0x10000, 384, 128, 100), 0x10000);
    assert_eq!(pool.take(128, 100), Some(0x10080));
    assert_eq!(pool.take(128, 100), Some(0x10100));
    assert_eq!(pool.take(128, 100), None);
    assert_eq!(pool.take(64, 64), None);
    assert!(pool.give_back(0x10080));
    assert!(!pool.give_back(0x10081), "not a block start");
    assert!(!pool.give_back(0x10180), "past the slab");
    assert!(!pool.give_back(0x2000), "not the pool's");
    assert_eq!(pool.take(128, 100), Some(0x10080));
    // Blocks of a slab not handed out yet are not the pool's to take back.
    assert_eq!(pool.add_slab(0x20000, 256, 64, 64), 0x20000);
    assert!(!pool.give_back(0x20040));
    // A block whose class is known goes back with no search, and is handed out again.
    assert_eq!(pool.take(64, 64), Some(0x20040));
    pool.give_back_block(0x20040, 64);
    assert_eq!(pool.take(64, 64), Some(0x20040));
    assert_eq!(pool.drain(), vec![0x10000, 0x20000]);
    assert_eq!(pool.take(128, 100), None);
    // A block handed out by one thread is taken back from another.
    pool.add_slab(0x30000, 64, 64, 64);
    std::thread::scope(|s| {
        s.spawn(|| assert!(pool.give_back(0x30000)));
    });
    assert_eq!(pool.drain(), vec![0x30000]);
}
