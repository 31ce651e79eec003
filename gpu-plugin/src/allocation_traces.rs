//! Where a device's memory came from, for reports that point at the bug: with
//! `OFFLOAD_TRACK_ALLOCATION_TRACES=1` (LLVM 22's variable) every allocation and free a plugin
//! is asked for is kept with its host stack. A free of memory that was never allocated, that
//! was freed already, or of another kind than it was allocated as is reported with both stacks
//! and stops the program (`abort`, as LLVM's plugins); a GPU memory fault names the allocation
//! that holds, or held, or lies closest to the faulting address. Unset, nothing is recorded and
//! a free is checked by nothing but the driver. The wording is LLVM 22's, which its sanitizer
//! tests check.

use crate::host_stacks::{HostStack, Operation};
use plugin_api::AllocKind;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::io::Write as _;
use std::sync::Mutex;
use sync_util::lock;

/// The variable that turns tracking on.
pub const VARIABLE: &str = "OFFLOAD_TRACK_ALLOCATION_TRACES";

/// Whether `OFFLOAD_TRACK_ALLOCATION_TRACES` asks for tracking (LLVM's boolean spellings).
pub fn requested() -> bool {
    std::env::var(VARIABLE).is_ok_and(|value| is_true(&value))
}

fn is_true(value: &str) -> bool {
    ["1", "true", "yes", "on"].contains(&value.trim().to_ascii_lowercase().as_str())
}

/// A fault farther than this from every allocation may be in memory the host never allocated
/// (a global, a stack, shared memory).
const FAR: u64 = 512 << 20;

/// What memory an allocation is, in LLVM's words: the kinds that name the same memory free
/// each other.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Memory {
    Device,
    PinnedHost,
    Managed,
}

impl Memory {
    fn of(kind: AllocKind) -> Memory {
        match kind {
            AllocKind::HOST => Memory::PinnedHost,
            AllocKind::SHARED => Memory::Managed,
            _ => Memory::Device,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Memory::Device => "device memory",
            Memory::PinnedHost => "pinned host memory",
            Memory::Managed => "managed memory",
        }
    }
}

/// One allocation at a base address, and its free once freed.
struct Allocation {
    size: u64,
    memory: Memory,
    /// The host address it was allocated for (0: none).
    host: usize,
    allocated: HostStack,
    freed: Option<HostStack>,
}

/// One device's allocations, tracked or not.
pub struct AllocationTraces {
    on: bool,
    /// Every allocation by base address, oldest first: a base the driver hands out again keeps
    /// the history of its earlier allocations.
    bases: Mutex<BTreeMap<usize, Vec<Allocation>>>,
}

impl AllocationTraces {
    /// Tracking as `OFFLOAD_TRACK_ALLOCATION_TRACES` asks.
    pub fn from_env() -> AllocationTraces {
        AllocationTraces::new(requested())
    }

    pub fn new(on: bool) -> AllocationTraces {
        AllocationTraces {
            on,
            bases: Mutex::new(BTreeMap::new()),
        }
    }

    pub fn is_on(&self) -> bool {
        self.on
    }

    /// Records an allocation the driver made: `size` bytes at `address`, of `kind`, for the
    /// host address `host` (0: none).
    #[inline]
    pub fn allocated(&self, address: usize, size: u64, host: usize, kind: AllocKind) {
        if self.on {
            self.record(address, size, host, kind);
        }
    }

    #[inline(never)]
    fn record(&self, address: usize, size: u64, host: usize, kind: AllocKind) {
        let allocation = Allocation {
            size,
            memory: Memory::of(kind),
            host,
            allocated: HostStack::capture(Operation::DataAlloc),
            freed: None,
        };
        lock(&self.bases)
            .entry(address)
            .or_default()
            .push(allocation);
    }

    /// Checks a free of `address` as `kind` before the driver is asked for it, and records it:
    /// a free of memory not allocated here, freed already, or allocated as another kind is
    /// reported and the program stops.
    #[inline]
    pub fn freeing(&self, address: usize, kind: AllocKind) {
        if self.on {
            self.check_free(address, kind);
        }
    }

    #[inline(never)]
    fn check_free(&self, address: usize, kind: AllocKind) {
        let stack = HostStack::capture(Operation::DataDelete);
        let memory = Memory::of(kind);
        // Checked and marked at once: of frees racing for one allocation, one frees it and the
        // others are double frees.
        let mut bases = lock(&self.bases);
        let Some(history) = bases.get_mut(&address) else {
            drop(bases);
            let error = format!(
                "deallocation of non-allocated {}: {}",
                memory.name(),
                pointer(address)
            );
            stop(&error, &stack, None);
        };
        let last = history.last().expect("a base has an allocation");
        let error = if last.freed.is_some() {
            Some(format!(
                "double-free of {}: {}",
                memory.name(),
                pointer(address)
            ))
        } else if last.memory != memory {
            Some(format!(
                "deallocation requires {} but allocation was {}: {}",
                memory.name(),
                last.memory.name(),
                pointer(address)
            ))
        } else {
            None
        };
        if let Some(error) = error {
            stop(&error, &stack, Some((address, history)));
        }
        if let Some(last) = history.last_mut() {
            last.freed = Some(stack);
        }
    }

    /// What the allocations say about a faulting `address`: the allocation that holds it (or
    /// held it, freed since), else the closest one, with their stacks; without tracking, how
    /// to turn it on.
    pub fn describe_address(&self, address: usize) -> String {
        if !self.on {
            return format!("Use '{VARIABLE}=true' to track device allocations\n");
        }
        let bases = lock(&self.bases);
        let mut text = String::new();
        let inside = bases.iter().find(|(&base, history)| {
            let size = history.last().map_or(0, |a| a.size);
            base <= address && (address - base) < size as usize
        });
        if let Some((&base, history)) = inside {
            let prior = history.last().is_some_and(|a| a.freed.is_some());
            let _ = writeln!(
                text,
                "Device pointer {} points into{} host-issued allocation:",
                pointer(address),
                if prior { " prior" } else { "" }
            );
            write_history(&mut text, base, history);
            return text;
        }
        let closest = bases
            .iter()
            .filter_map(|(&base, history)| {
                let size = history.last()?.size.max(1);
                let last_byte = base as u64 + size - 1;
                let address = address as u64;
                let distance = if address < base as u64 {
                    base as u64 - address
                } else {
                    address - last_byte
                };
                Some((distance, base, history))
            })
            .min_by_key(|&(distance, ..)| distance);
        let Some((distance, base, history)) = closest else {
            let _ = writeln!(
                text,
                "No host-issued allocations; device pointer {} might be a global, stack, or \
                 shared location",
                pointer(address)
            );
            return text;
        };
        let _ = writeln!(
            text,
            "Device pointer {} does not point into any (current or prior) host-issued \
             allocation{}.",
            pointer(address),
            if distance < FAR {
                ""
            } else {
                " (might be a global, stack, or shared location)"
            }
        );
        let _ = writeln!(
            text,
            "Closest host-issued allocation (distance {distance} byte{}; might be by page):",
            if distance > 1 { "s" } else { "" }
        );
        write_history(&mut text, base, history);
        text
    }
}

/// An address as C's `%p` prints it.
fn pointer(address: usize) -> String {
    format!("{address:#x}")
}

/// Reports `error` with the stack of the free and, when known, the allocation's history at
/// `base`, then stops the program.
fn stop(error: &str, stack: &HostStack, allocation: Option<(usize, &[Allocation])>) -> ! {
    let mut text = format!("OFFLOAD ERROR: {error}\n");
    stack.write(&mut text);
    text.push('\n');
    if let Some((base, history)) = allocation {
        write_history(&mut text, base, history);
    }
    let _ = std::io::stderr().write_all(text.as_bytes());
    std::process::abort()
}

/// The last allocation at `base` (its free first, when freed), then the earlier ones there,
/// newest first, as LLVM 22 lays them out.
fn write_history(text: &mut String, base: usize, history: &[Allocation]) {
    let Some((last, earlier)) = history.split_last() else {
        return;
    };
    if let Some(freed) = &last.freed {
        text.push_str("Last deallocation:\n");
        freed.write(text);
        text.push('\n');
    }
    let _ = writeln!(
        text,
        "Last allocation of size {}{} -> device pointer {}:",
        last.size,
        for_host(last.host),
        pointer(base)
    );
    last.allocated.write(text);
    text.push('\n');
    if earlier.is_empty() {
        return;
    }
    text.push_str("Prior allocations with the same base pointer:\n");
    for (n, allocation) in earlier.iter().rev().enumerate() {
        let _ = writeln!(
            text,
            " #{n} Prior deallocation of size {}:",
            allocation.size
        );
        if let Some(freed) = &allocation.freed {
            freed.write(text);
        }
        text.push('\n');
        let _ = writeln!(
            text,
            " #{n} Prior allocation{} -> device pointer {}:",
            for_host(allocation.host),
            pointer(base)
        );
        allocation.allocated.write(text);
        text.push('\n');
    }
}

fn for_host(host: usize) -> String {
    if host == 0 {
        String::new()
    } else {
        format!(" for host pointer {}", pointer(host))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn untracked_devices_record_nothing_and_say_how_to_track() {
        let traces = AllocationTraces::new(false);
        traces.allocated(0x1000, 8, 0, AllocKind::DEFAULT);
        traces.freeing(0x1000, AllocKind::DEFAULT);
        traces.freeing(0x1000, AllocKind::DEFAULT);
        assert!(lock(&traces.bases).is_empty());
        assert_eq!(
            traces.describe_address(0x1000),
            "Use 'OFFLOAD_TRACK_ALLOCATION_TRACES=true' to track device allocations\n"
        );
    }

    #[test]
    fn the_variable_takes_llvms_boolean_spellings() {
        for yes in ["1", "true", "TRUE", "on", "yes"] {
            assert!(is_true(yes), "{yes}");
        }
        for no in ["0", "false", "off", "", "2"] {
            assert!(!is_true(no), "{no}");
        }
    }

    #[test]
    fn a_fault_inside_a_freed_allocation_names_its_free_and_allocation() {
        let traces = AllocationTraces::new(true);
        traces.allocated(0x10_0000, 1 << 30, 0x7000, AllocKind::DEFAULT);
        traces.freeing(0x10_0000, AllocKind::DEVICE);
        let text = traces.describe_address(0x10_0000 + (1 << 29));
        assert!(
            text.starts_with(&format!(
                "Device pointer {:#x} points into prior host-issued allocation:\n\
                 Last deallocation:\n    #0 dataDelete (offload plugin)\n",
                0x10_0000 + (1 << 29)
            )),
            "{text}"
        );
        assert!(
            text.contains(
                "Last allocation of size 1073741824 for host pointer 0x7000 -> device pointer \
                 0x100000:\n    #0 dataAlloc (offload plugin)\n"
            ),
            "{text}"
        );
        // A live allocation is not "prior".
        traces.allocated(0x10_0000, 4096, 0, AllocKind::DEFAULT);
        let text = traces.describe_address(0x10_0010);
        assert!(
            text.starts_with("Device pointer 0x100010 points into host-issued allocation:\n"),
            "{text}"
        );
        assert!(
            text.contains("Prior allocations with the same base pointer:\n #0 Prior deallocation of size 1073741824:\n"),
            "{text}"
        );
    }

    #[test]
    fn a_fault_outside_every_allocation_names_the_closest_and_its_distance() {
        let traces = AllocationTraces::new(true);
        assert!(traces
            .describe_address(0x5000)
            .starts_with("No host-issued allocations; device pointer 0x5000 might be"));
        traces.allocated(0x10_0000, 0x4000, 0, AllocKind::DEFAULT);
        traces.allocated(0x20_0000, 0x1000, 0, AllocKind::HOST);
        // One past the end: distance 1 from the last byte.
        let text = traces.describe_address(0x10_4000);
        assert!(
            text.starts_with(
                "Device pointer 0x104000 does not point into any (current or prior) \
                 host-issued allocation.\n\
                 Closest host-issued allocation (distance 1 byte; might be by page):\n\
                 Last allocation of size 16384 -> device pointer 0x100000:\n"
            ),
            "{text}"
        );
        // A page before the second.
        let text = traces.describe_address(0x1f_f000);
        assert!(
            text.contains("(distance 4096 bytes; might be by page):\nLast allocation of size 4096 -> device pointer 0x200000:"),
            "{text}"
        );
        let text = traces.describe_address(0x7000_0000);
        assert!(
            text.contains("allocation (might be a global, stack, or shared location).\n"),
            "{text}"
        );
    }

    /// The reports that stop the program, each in a child process of this test binary.
    #[test]
    fn bad_frees_are_reported_and_stop_the_program() {
        const CHILD: &str = "OMPTARGET_TEST_ALLOCATION_TRACES_CHILD";
        if let Ok(case) = std::env::var(CHILD) {
            let traces = AllocationTraces::new(true);
            match case.as_str() {
                "double" => {
                    traces.allocated(0x1000, 8, 0, AllocKind::DEFAULT);
                    traces.freeing(0x1000, AllocKind::DEFAULT);
                    traces.allocated(0x1000, 16, 0, AllocKind::DEFAULT);
                    traces.freeing(0x1000, AllocKind::DEFAULT);
                    traces.freeing(0x1000, AllocKind::DEFAULT);
                }
                "foreign" => traces.freeing(0x7ffd_0000, AllocKind::DEFAULT),
                "kind" => {
                    traces.allocated(0x1000, 8, 0, AllocKind::HOST);
                    traces.freeing(0x1000, AllocKind::DEFAULT);
                }
                "same-memory" => {
                    // Kinds that name the same memory free each other.
                    traces.allocated(0x1000, 8, 0, AllocKind::DEVICE);
                    traces.freeing(0x1000, AllocKind::DEFAULT);
                    traces.allocated(0x2000, 8, 0, AllocKind::DEVICE_NON_BLOCKING);
                    traces.freeing(0x2000, AllocKind::DEVICE);
                    std::process::exit(0);
                }
                _ => unreachable!(),
            }
            std::process::exit(3);
        }
        let run = |case: &str| {
            let output = std::process::Command::new(std::env::current_exe().unwrap())
                .args([
                    "--exact",
                    "allocation_traces::tests::bad_frees_are_reported_and_stop_the_program",
                    "--nocapture",
                ])
                .env(CHILD, case)
                .output()
                .unwrap();
            (
                output.status,
                String::from_utf8_lossy(&output.stderr).into_owned(),
            )
        };
        use std::os::unix::process::ExitStatusExt;
        let (status, stderr) = run("double");
        assert_eq!(status.signal(), Some(6), "aborted: {status:?}\n{stderr}");
        assert!(
            stderr.contains("OFFLOAD ERROR: double-free of device memory: 0x1000\n    #0 dataDelete (offload plugin)\n"),
            "{stderr}"
        );
        for part in [
            "Last deallocation:\n    #0 dataDelete",
            "Last allocation of size 16 -> device pointer 0x1000:\n    #0 dataAlloc",
            "Prior allocations with the same base pointer:\n #0 Prior deallocation of size 8:\n    #0 dataDelete",
            " #0 Prior allocation -> device pointer 0x1000:\n    #0 dataAlloc",
        ] {
            assert!(stderr.contains(part), "{part}:\n{stderr}");
        }
        let (status, stderr) = run("foreign");
        assert_eq!(status.signal(), Some(6), "{stderr}");
        assert!(
            stderr.contains(
                "OFFLOAD ERROR: deallocation of non-allocated device memory: 0x7ffd0000\n"
            ),
            "{stderr}"
        );
        assert!(!stderr.contains("Last allocation"), "{stderr}");
        let (status, stderr) = run("kind");
        assert_eq!(status.signal(), Some(6), "{stderr}");
        assert!(
            stderr.contains(
                "OFFLOAD ERROR: deallocation requires device memory but allocation was pinned \
                 host memory: 0x1000\n"
            ) && stderr.contains("Last allocation of size 8 -> device pointer 0x1000:"),
            "{stderr}"
        );
        let (status, stderr) = run("same-memory");
        assert_eq!(status.code(), Some(0), "{stderr}");
    }
}
