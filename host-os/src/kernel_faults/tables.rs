//! What the signal handler reads to attribute a fault: the registered twins' code ranges and
//! the threads running kernels now. Fixed-size tables of atomics, so that the handler neither
//! allocates nor locks; each slot is claimed with a compare-and-swap of its key and published
//! with a release store of it, and a reader re-reads the key to skip a slot changed under it.

use super::objects;
use super::Owner;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};

const CODE_SLOTS: usize = 256;
const RUN_SLOTS: usize = 256;
/// A key value meaning "being written".
const BUSY: u64 = u64::MAX;

struct CodeSlot {
    /// The registration's id; 0: free.
    id: AtomicU64,
    owner: AtomicU8,
    start: AtomicUsize,
    end: AtomicUsize,
    /// Every fault in the range is its owner's, whether or not a thread is marked as running
    /// one of its kernels (kernel 0).
    always: AtomicBool,
}

struct RunSlot {
    /// The running thread (`pthread_self`); 0: free.
    thread: AtomicUsize,
    owner: AtomicU8,
    kernel: AtomicU64,
    /// The id of the kernel's code registration; 0: none.
    code: AtomicU64,
}

static CODE: [CodeSlot; CODE_SLOTS] = [const {
    CodeSlot {
        id: AtomicU64::new(0),
        owner: AtomicU8::new(0),
        start: AtomicUsize::new(0),
        end: AtomicUsize::new(0),
        always: AtomicBool::new(false),
    }
}; CODE_SLOTS];

static RUNNING: [RunSlot; RUN_SLOTS] = [const {
    RunSlot {
        thread: AtomicUsize::new(0),
        owner: AtomicU8::new(0),
        kernel: AtomicU64::new(0),
        code: AtomicU64::new(0),
    }
}; RUN_SLOTS];

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// A twin's code, registered for fault attribution while this lives.
#[derive(Debug)]
pub struct Code {
    id: u64,
}

impl Code {
    /// Registers the executable segments of the loaded object (a twin) that holds `address`
    /// (one of its kernels). `None` when no loaded object holds it or the table is full.
    pub fn register(owner: Owner, address: usize) -> Option<Code> {
        Self::register_object(owner, address, false)
    }

    /// As [`Code::register`], but every fault in the object's code is `owner`'s (kernel 0),
    /// also where no thread is marked as running one of its kernels: for an owner that marks
    /// no threads, because its launches must cost nothing more (the host plugin).
    pub fn register_always(owner: Owner, address: usize) -> Option<Code> {
        Self::register_object(owner, address, true)
    }

    fn register_object(owner: Owner, address: usize, always: bool) -> Option<Code> {
        let ranges = objects::executable_ranges(address);
        if ranges.is_empty() {
            return None;
        }
        let code = Code {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
        };
        for range in ranges {
            if !code.add(owner, range.start, range.end, always) {
                eprintln!(
                    "omptarget: more than {CODE_SLOTS} kernel code ranges; faults in the \
                     others are caught only on the threads that run their kernels"
                );
                break;
            }
        }
        Some(code)
    }

    /// Registers `start..end` as kernel code of `owner` (tests give code of their own);
    /// `always` as [`Code::register_always`].
    #[cfg(test)]
    pub(super) fn range(owner: Owner, start: usize, end: usize, always: bool) -> Code {
        let code = Code {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
        };
        assert!(code.add(owner, start, end, always));
        code
    }

    fn add(&self, owner: Owner, start: usize, end: usize, always: bool) -> bool {
        for slot in &CODE {
            if slot
                .id
                .compare_exchange(0, BUSY, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
            {
                slot.owner.store(owner.0, Ordering::Relaxed);
                slot.start.store(start, Ordering::Relaxed);
                slot.end.store(end, Ordering::Relaxed);
                slot.always.store(always, Ordering::Relaxed);
                slot.id.store(self.id, Ordering::Release);
                return true;
            }
        }
        false
    }

    /// The registration's id, which [`Running::start`] takes.
    pub fn id(&self) -> u64 {
        self.id
    }
}

impl Drop for Code {
    fn drop(&mut self) {
        for slot in &CODE {
            let _ = slot
                .id
                .compare_exchange(self.id, 0, Ordering::AcqRel, Ordering::Relaxed);
        }
    }
}

/// Marks the calling thread as running a kernel while this lives: any fault of the thread is
/// then the kernel's, also in code outside the twin (libc, libomp).
pub struct Running {
    slot: Option<&'static RunSlot>,
    /// The mark is the calling thread's: not sent elsewhere.
    _thread: PhantomData<*const ()>,
}

impl Running {
    /// Marks the calling thread as running `owner`'s `kernel` (an id of the owner's choice, not
    /// 0), whose twin's code is `code`.
    pub fn start(owner: Owner, kernel: u64, code: Option<&Code>) -> Running {
        let thread = this_thread();
        let slot = RUNNING.iter().find(|slot| {
            slot.thread
                .compare_exchange(0, BUSY as usize, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
        });
        if let Some(slot) = slot {
            slot.owner.store(owner.0, Ordering::Relaxed);
            slot.kernel.store(kernel, Ordering::Relaxed);
            slot.code.store(code.map_or(0, Code::id), Ordering::Relaxed);
            slot.thread.store(thread, Ordering::Release);
        }
        Running {
            slot,
            _thread: PhantomData,
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(slot) = self.slot {
            slot.thread.store(0, Ordering::Release);
        }
    }
}

fn this_thread() -> usize {
    // SAFETY: pthread_self has no preconditions; it reads the thread's own descriptor, which is
    // async-signal-safe in glibc (the handler calls it too).
    unsafe { libc::pthread_self() as usize }
}

/// Whose kernel a fault on the calling thread at `instruction` is: (owner, kernel). The
/// thread's own mark first; else the code range holding `instruction`, if a thread is marked
/// as running a kernel of that code (a libomp worker of a kernel is not marked itself; twin
/// code running outside any kernel, a destructor at exit, is no kernel's). Async-signal-safe.
pub(super) fn attribute(instruction: usize) -> Option<(u8, u64)> {
    let thread = this_thread();
    for slot in &RUNNING {
        if slot.thread.load(Ordering::Acquire) == thread {
            return Some((
                slot.owner.load(Ordering::Relaxed),
                slot.kernel.load(Ordering::Relaxed),
            ));
        }
    }
    let (owner, code, always) = code_at(instruction)?;
    if always {
        return Some((owner, 0));
    }
    Some((owner, kernel_running(code)?))
}

/// (owner, registration id, whether every fault there is the owner's) of the code range
/// holding `address`.
fn code_at(address: usize) -> Option<(u8, u64, bool)> {
    for slot in &CODE {
        let id = slot.id.load(Ordering::Acquire);
        if id == 0 || id == BUSY {
            continue;
        }
        let (start, end) = (
            slot.start.load(Ordering::Relaxed),
            slot.end.load(Ordering::Relaxed),
        );
        let owner = slot.owner.load(Ordering::Relaxed);
        let always = slot.always.load(Ordering::Relaxed);
        if (start..end).contains(&address) && slot.id.load(Ordering::Acquire) == id {
            return Some((owner, id, always));
        }
    }
    None
}

/// The kernel of some thread marked as running the code registered as `code`.
fn kernel_running(code: u64) -> Option<u64> {
    for slot in &RUNNING {
        let thread = slot.thread.load(Ordering::Acquire);
        if thread == 0 || thread == BUSY as usize {
            continue;
        }
        let kernel = slot.kernel.load(Ordering::Relaxed);
        if slot.code.load(Ordering::Relaxed) == code
            && slot.thread.load(Ordering::Acquire) == thread
        {
            return Some(kernel);
        }
    }
    None
}
