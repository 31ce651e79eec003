//! The threads on which the emulators run device work (kernels, streams), kept for reuse.
//!
//! A kernel's x86-64 twin calls libomp (`__kmpc_fork_teams`, `__kmpc_parallel_51`), which makes
//! the thread running it a libomp root. A thread that then exits unregisters that root from its
//! thread-local destructor, under libomp's fork/join lock, while other kernels' threads register
//! theirs: libomp 19 can deadlock there (one exiting thread holding the lock while it waits,
//! the next kernel's `__kmpc_fork_teams` waiting for the lock), with LLVM's runtime and ours
//! alike. A GPU starts no thread per kernel, so neither does the emulator: a worker that
//! finishes its job waits for the next one and never exits while the process runs.
//!
//! Every job gets a thread at once (an idle worker, else a new one), so device work that the
//! driver runs concurrently still runs concurrently.

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex, MutexGuard};

type Job = Box<dyn FnOnce() + Send + 'static>;

#[derive(Default)]
struct Waiting {
    jobs: VecDeque<Job>,
    /// Workers waiting for a job; each queued job has one of them to itself.
    idle: usize,
}

struct Pool {
    waiting: Mutex<Waiting>,
    wake: Condvar,
}

static POOL: Pool = Pool {
    waiting: Mutex::new(Waiting {
        jobs: VecDeque::new(),
        idle: 0,
    }),
    wake: Condvar::new(),
};

fn waiting() -> MutexGuard<'static, Waiting> {
    // A job's panic never happens under this lock, so a poisoned lock still holds valid
    // counts.
    POOL.waiting.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs `job` on a worker thread now: an idle one, or a new one named `name` when none is
/// free. Fails only when a new thread is needed and cannot be started (the job is dropped).
pub fn run(name: &str, job: impl FnOnce() + Send + 'static) -> std::io::Result<()> {
    let mut waiting = waiting();
    if waiting.idle > waiting.jobs.len() {
        waiting.jobs.push_back(Box::new(job));
        drop(waiting);
        POOL.wake.notify_one();
        return Ok(());
    }
    drop(waiting);
    std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            // Kernels run here: a kernel that overflows its stack must reach the fault
            // catcher's handler too.
            crate::kernel_faults::alternate_stack();
            job();
            serve();
        })
        .map(drop)
}

/// A worker's life after its first job: take queued jobs, wait when there are none.
fn serve() -> ! {
    let mut waiting = waiting();
    loop {
        if let Some(job) = waiting.jobs.pop_front() {
            drop(waiting);
            // A panicking job must not take the worker (and the queued jobs counted on it)
            // with it; the job's owner sees its work unfinished.
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
            waiting = self::waiting();
            continue;
        }
        waiting.idle += 1;
        waiting = POOL.wake.wait(waiting).unwrap_or_else(|e| e.into_inner());
        waiting.idle -= 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{mpsc, Arc, Barrier};
    use std::time::Duration;

    /// One test: the pool is the process's.
    #[test]
    fn jobs_run_concurrently_on_reused_workers_that_survive_panics() {
        // Four jobs that can only finish together: each must have a thread of its own.
        let barrier = Arc::new(Barrier::new(5));
        let (done, finished) = mpsc::channel();
        for _ in 0..4 {
            let (barrier, done) = (barrier.clone(), done.clone());
            run("test-worker", move || {
                barrier.wait();
                done.send(std::thread::current().id()).unwrap();
            })
            .unwrap();
        }
        barrier.wait();
        let first: Vec<_> = (0..4)
            .map(|_| finished.recv_timeout(Duration::from_secs(10)).unwrap())
            .collect();
        // Idle and nothing queued: a queued job (the panicking one) still counts on a worker
        // that was woken for it but has not taken it yet.
        let idle_again = || loop {
            let w = waiting();
            if w.idle >= 4 && w.jobs.is_empty() {
                break;
            }
            drop(w);
            std::thread::sleep(Duration::from_millis(1));
        };
        // Once they are idle again, later jobs (no more at a time than idle workers) run on
        // the same threads, also after a job panicked on one of them.
        let count = Arc::new(AtomicUsize::new(0));
        for round in 0..4 {
            idle_again();
            if round == 2 {
                run("test-worker", || panic!("job failed")).unwrap();
                idle_again();
            }
            for _ in 0..4 {
                let (done, count) = (done.clone(), count.clone());
                run("test-worker", move || {
                    count.fetch_add(1, Ordering::SeqCst);
                    done.send(std::thread::current().id()).unwrap();
                })
                .unwrap();
            }
            for _ in 0..4 {
                let id = finished.recv_timeout(Duration::from_secs(10)).unwrap();
                assert!(first.contains(&id), "a job ran on a new thread");
            }
        }
        assert_eq!(count.load(Ordering::SeqCst), 16);
    }
}
