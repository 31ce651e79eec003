//! The kernels a device launched last, for the report of a kernel that faults. Every launch
//! records its kernel in a ring of the last [`KEPT`]; with `OFFLOAD_TRACK_NUM_KERNEL_LAUNCH_TRACES=N`
//! (LLVM 22's variable) each record also holds the host stack of the launch, and the report
//! shows the stacks of the last N. The wording is LLVM 22's, which its sanitizer tests check:
//! kernels are numbered from the most recent, and each is named as LLVM prettifies OpenMP
//! kernel names (`omp target in main @ 29 (__omp_offloading_…_main_l29)`).

use crate::host_stacks::{HostStack, Operation};
use offload_image::kernel_names::pretty_kernel_name;
use std::collections::VecDeque;
use std::fmt::Write;
use std::io::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use sync_util::lock;

/// Launches a device remembers (LLVM 22 keeps as many).
pub const KEPT: usize = 8;

/// The variable that asks for the host stacks of the last N launches.
pub const STACKS_VARIABLE: &str = "OFFLOAD_TRACK_NUM_KERNEL_LAUNCH_TRACES";

/// A launch's teams (blocks) and threads per team, per dimension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    pub teams: [u32; 3],
    pub threads: [u32; 3],
}

impl std::fmt::Display for Geometry {
    /// `1 team of 256 threads`; a grid or block of more than one dimension as `[x, y, z]`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let part = |f: &mut std::fmt::Formatter<'_>, counts: [u32; 3], one: &str, many: &str| {
            if counts[1] == 1 && counts[2] == 1 {
                let name = if counts[0] == 1 { one } else { many };
                write!(f, "{} {name}", counts[0])
            } else {
                write!(f, "[{}, {}, {}] {many}", counts[0], counts[1], counts[2])
            }
        };
        part(f, self.teams, "team", "teams")?;
        f.write_str(" of ")?;
        part(f, self.threads, "thread", "threads")
    }
}

struct Launch {
    kernel: Arc<str>,
    geometry: Geometry,
    /// The plugin's queue the launch went to (the ABI's queue handle).
    queue: u64,
    /// The host stack of the launch, when stacks are tracked.
    stack: Option<HostStack>,
}

impl Launch {
    /// `'<kernel, prettified>' launched with <geometry>`: LLVM 22's quoted name (which its
    /// tests look for), then the geometry it leaves out.
    fn describe(&self) -> String {
        format!(
            "'{}' launched with {}",
            pretty_kernel_name(&self.kernel),
            self.geometry
        )
    }
}

/// One device's last launches.
pub struct LaunchTraces {
    /// How many stacks a report shows; 0: stacks are not captured at all.
    stacks: usize,
    /// The most recent launch last.
    launches: Mutex<VecDeque<Launch>>,
    /// A fault was reported: a GPU's fault is sticky, every later call fails with it too, and
    /// one report says it all.
    fault_reported: AtomicBool,
}

impl LaunchTraces {
    /// Traces that capture stacks as `OFFLOAD_TRACK_NUM_KERNEL_LAUNCH_TRACES` asks.
    pub fn from_env() -> LaunchTraces {
        let stacks = std::env::var(STACKS_VARIABLE).ok().map_or(0, |text| {
            if text.trim().is_empty() {
                return 0;
            }
            text.trim().parse().unwrap_or_else(|_| {
                log::warn!("{STACKS_VARIABLE}='{text}' is not a number; no stacks are kept");
                0
            })
        });
        LaunchTraces::new(stacks)
    }

    /// Traces that show the stacks of the last `stacks` launches (0: none, and none captured).
    pub fn new(stacks: usize) -> LaunchTraces {
        LaunchTraces {
            stacks,
            launches: Mutex::new(VecDeque::with_capacity(KEPT)),
            fault_reported: AtomicBool::new(false),
        }
    }

    /// Whether a fault was reported already (and marks it reported).
    fn first_fault(&self) -> bool {
        !self.fault_reported.swap(true, Ordering::AcqRel)
    }

    /// The first time the device faults: `OFFLOAD ERROR: <what>` on stderr, then the report of
    /// its last launches. For a driver that does not say which kernel faulted.
    pub fn report_fault(&self, what: &str) {
        if self.first_fault() {
            let _ = write!(
                std::io::stderr(),
                "OFFLOAD ERROR: {what}\n{}",
                self.report()
            );
        }
    }

    /// The first time the device faults: the kernel launched last and `cause` as LLVM 22 reports
    /// a kernel that trapped (`OFFLOAD ERROR: Kernel '<name>'`, `OFFLOAD ERROR: <cause>`), with
    /// the launch's host stack when stacks are tracked.
    pub fn report_kernel_fault(&self, cause: &str, queue: Option<u64>) {
        if self.first_fault() {
            let text = self.kernel_fault_report(cause, queue);
            let _ = std::io::stderr().write_all(text.as_bytes());
        }
    }

    /// The text of [`LaunchTraces::report_kernel_fault`].
    fn kernel_fault_report(&self, cause: &str, queue: Option<u64>) -> String {
        let launches = lock(&self.launches);
        // The queue that failed ran the faulting kernel: of concurrent launches on several
        // queues (`nowait` regions), the newest on that queue, not the newest of all.
        let faulted = queue
            .and_then(|queue| launches.iter().rev().find(|l| l.queue == queue))
            .or_else(|| launches.back());
        let mut text = String::new();
        if let Some(launch) = faulted {
            let _ = writeln!(text, "OFFLOAD ERROR: Kernel {}", launch.describe());
        }
        let _ = writeln!(text, "OFFLOAD ERROR: {cause}");
        if let Some(stack) = faulted.and_then(|l| l.stack.as_ref()) {
            stack.write(&mut text);
        }
        text
    }

    /// Records a launch of `kernel` with `geometry` on `queue`, with the caller's stack when
    /// stacks are tracked.
    pub fn record(&self, kernel: &Arc<str>, geometry: Geometry, queue: u64) {
        let stack = (self.stacks > 0).then(|| HostStack::capture(Operation::LaunchKernel));
        let mut launches = lock(&self.launches);
        if launches.len() == KEPT {
            launches.pop_front();
        }
        launches.push_back(Launch {
            kernel: kernel.clone(),
            geometry,
            queue,
            stack,
        });
    }

    /// The kernel launched last, prettified; `None` before the first launch.
    pub fn last_kernel(&self) -> Option<String> {
        lock(&self.launches)
            .back()
            .map(|launch| pretty_kernel_name(&launch.kernel))
    }

    /// The host stack of the last launch, one line per frame (empty when stacks are not
    /// tracked).
    pub fn last_stack(&self) -> String {
        let launches = lock(&self.launches);
        let mut text = String::new();
        if let Some(stack) = launches.back().and_then(|l| l.stack.as_ref()) {
            stack.write(&mut text);
        }
        text
    }

    /// The report of the device's last launches, as LLVM 22 words it; empty before the first.
    pub fn report(&self) -> String {
        let launches = lock(&self.launches);
        let kept = launches.len();
        let mut text = String::new();
        if kept == 0 {
            return text;
        }
        let newest_first = launches.iter().rev();
        if self.stacks > 0 {
            let shown = self.stacks.min(kept);
            if kept == 1 {
                text.push_str("Display kernel launch trace\n");
            } else {
                let _ = writeln!(
                    text,
                    "Display {shown} of the {kept} last kernel launch traces"
                );
            }
            for (i, launch) in newest_first.take(shown).enumerate() {
                let kernel = launch.describe();
                if kept == 1 {
                    let _ = writeln!(text, "Kernel {kernel}");
                } else {
                    let _ = writeln!(text, "Kernel {i}: {kernel}");
                }
                if let Some(stack) = &launch.stack {
                    stack.write(&mut text);
                }
                text.push('\n');
            }
            return text;
        }
        if kept == 1 {
            text.push_str("Display only launched kernel:\n");
            let _ = writeln!(text, "Kernel {}", launches[0].describe());
        } else {
            let _ = writeln!(text, "Display last {kept} kernels launched:");
            for (i, launch) in newest_first.enumerate() {
                let _ = writeln!(text, "Kernel {i}: {}", launch.describe());
            }
        }
        let _ = writeln!(
            text,
            "Use '{STACKS_VARIABLE}=<n>' to see the host stacks of the last n launches"
        );
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ONE: Geometry = Geometry {
        teams: [1, 1, 1],
        threads: [1, 1, 1],
    };
    const WIDE: Geometry = Geometry {
        teams: [4, 2, 1],
        threads: [256, 1, 1],
    };

    fn kernels(names: &[&str]) -> Vec<Arc<str>> {
        names.iter().map(|&n| Arc::from(n)).collect()
    }

    #[test]
    fn without_stacks_the_report_names_the_last_kernels_newest_first() {
        let traces = LaunchTraces::new(0);
        assert_eq!(traces.report(), "");
        let names = kernels(&["__omp_offloading_1_2_main_l3", "k1", "k2"]);
        traces.record(&names[0], ONE, 1);
        let single = traces.report();
        assert!(single.starts_with(
            "Display only launched kernel:\nKernel 'omp target in main @ 3 \
             (__omp_offloading_1_2_main_l3)' launched with 1 team of 1 thread\n"
        ));
        for _ in 0..5 {
            traces.record(&names[1], ONE, 1);
        }
        traces.record(&names[2], WIDE, 1);
        traces.record(&names[0], ONE, 1);
        let report = traces.report();
        assert!(
            report.starts_with("Display last 8 kernels launched:\n"),
            "{report}"
        );
        assert!(
            report.contains("Kernel 0: 'omp target in main @ 3"),
            "{report}"
        );
        assert!(
            report.contains("Kernel 1: 'k2' launched with [4, 2, 1] teams of 256 threads\n"),
            "{report}"
        );
        assert!(
            report.contains("Kernel 7: 'omp target in main @ 3"),
            "{report}"
        );
        traces.record(&names[1], ONE, 1);
        let report = traces.report();
        assert!(!report.contains("Kernel 8:"), "{report}");
        assert!(
            report.contains("Kernel 7: 'k1'"),
            "only the last 8: {report}"
        );
    }

    #[test]
    fn with_stacks_the_report_shows_the_last_n_launches_with_their_stacks() {
        let traces = LaunchTraces::new(2);
        let names = kernels(&["first", "second", "third"]);
        for name in &names {
            launch_from_here(&traces, name);
        }
        let report = traces.report();
        assert!(
            report.starts_with("Display 2 of the 3 last kernel launch traces\nKernel 0: 'third' launched with 1 team of 1 thread\n"),
            "{report}"
        );
        assert!(report.contains("Kernel 1: 'second'"), "{report}");
        assert!(!report.contains("'first'"), "{report}");
        // The launching function is on the stack; the capture's own frames are not shown.
        assert!(report.contains("launch_from_here"), "{report}");
        assert!(
            report.lines().nth(2).unwrap().starts_with("    #0 "),
            "{report}"
        );
        assert!(!report.contains("Backtrace"), "{report}");
        // The stack starts with the operation, in LLVM's words.
        assert!(
            report.contains("thread\n    #0 launchKernel (offload plugin)\n"),
            "{report}"
        );
        assert!(traces.last_stack().contains("launch_from_here"));
        assert_eq!(traces.last_kernel().as_deref(), Some("third"));
    }

    /// A launching function of its own, kept as a frame in optimised builds: not inlined, and
    /// not left by a tail call.
    #[inline(never)]
    fn launch_from_here(traces: &LaunchTraces, kernel: &Arc<str>) -> usize {
        traces.record(kernel, ONE, 1);
        std::hint::black_box(kernel.len())
    }

    #[test]
    fn a_queue_that_failed_blames_its_own_last_kernel() {
        let traces = LaunchTraces::new(0);
        let names = kernels(&["on_one", "on_two", "on_one_again_no"]);
        traces.record(&names[0], ONE, 1);
        traces.record(&names[1], ONE, 2);
        let report = traces.kernel_fault_report("trapped", Some(1));
        assert_eq!(
            report,
            "OFFLOAD ERROR: Kernel 'on_one' launched with 1 team of 1 thread\n\
             OFFLOAD ERROR: trapped\n"
        );
        // A queue with no launch: the newest launch of all.
        assert!(traces
            .kernel_fault_report("trapped", Some(9))
            .starts_with("OFFLOAD ERROR: Kernel 'on_two'"));
    }
}
