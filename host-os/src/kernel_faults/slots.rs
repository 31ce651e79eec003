//! Faults recorded by the signal handler for the watcher: fixed slots of atomics (no
//! allocation, no lock in the handler). Several threads of one kernel may fault at once.

use super::Fault;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, AtomicU8, AtomicUsize, Ordering};

const SLOTS: usize = 64;
const FREE: u8 = 0;
const WRITING: u8 = 1;
const READY: u8 = 2;

struct Slot {
    state: AtomicU8,
    owner: AtomicU8,
    signal: AtomicI32,
    code: AtomicI32,
    address: AtomicUsize,
    instruction: AtomicUsize,
    error: AtomicU64,
    kernel: AtomicU64,
    trap: AtomicBool,
}

static RECORDED: [Slot; SLOTS] = [const {
    Slot {
        state: AtomicU8::new(FREE),
        owner: AtomicU8::new(0),
        signal: AtomicI32::new(0),
        code: AtomicI32::new(0),
        address: AtomicUsize::new(0),
        instruction: AtomicUsize::new(0),
        error: AtomicU64::new(0),
        kernel: AtomicU64::new(0),
        trap: AtomicBool::new(false),
    }
}; SLOTS];

/// Records `owner`'s fault; false when every slot is taken (the watcher is behind: the fault's
/// kernel already faulted, or many did at once). Async-signal-safe.
pub fn record(owner: u8, fault: &Fault) -> bool {
    for slot in &RECORDED {
        if slot
            .state
            .compare_exchange(FREE, WRITING, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            continue;
        }
        slot.owner.store(owner, Ordering::Relaxed);
        slot.signal.store(fault.signal, Ordering::Relaxed);
        slot.code.store(fault.code, Ordering::Relaxed);
        slot.address.store(fault.address, Ordering::Relaxed);
        slot.instruction.store(fault.instruction, Ordering::Relaxed);
        slot.error.store(fault.error, Ordering::Relaxed);
        slot.kernel.store(fault.kernel, Ordering::Relaxed);
        slot.trap.store(fault.trap, Ordering::Relaxed);
        slot.state.store(READY, Ordering::Release);
        return true;
    }
    false
}

/// Takes every recorded fault: (owner, fault).
pub fn take() -> Vec<(u8, Fault)> {
    let mut taken = Vec::new();
    for slot in &RECORDED {
        if slot.state.load(Ordering::Acquire) != READY {
            continue;
        }
        let fault = Fault {
            signal: slot.signal.load(Ordering::Relaxed),
            code: slot.code.load(Ordering::Relaxed),
            address: slot.address.load(Ordering::Relaxed),
            instruction: slot.instruction.load(Ordering::Relaxed),
            error: slot.error.load(Ordering::Relaxed),
            kernel: slot.kernel.load(Ordering::Relaxed),
            trap: slot.trap.load(Ordering::Relaxed),
        };
        taken.push((slot.owner.load(Ordering::Relaxed), fault));
        slot.state.store(FREE, Ordering::Release);
    }
    taken
}
