//! Answers the program's liveness checks ([`HEARTBEAT_TAG`]) from a thread of its own, so that
//! a long request (a kernel that runs for minutes) does not look like a dead process, and ends
//! this process when the program stops asking (it died: the launcher would keep this process
//! waiting for its requests for ever). Only where the launcher lets a job outlive one of its
//! processes (`mpirun --enable-recovery`); elsewhere the launcher ends the job. It polls gently
//! (every 10 ms) rather than waiting in MPI, which spins.

use mpi_wire::mpi::{Comm, Mpi};
use mpi_wire::protocol::{HEARTBEAT_REPLY_TAG, HEARTBEAT_TAG};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The program asks several times a second; this long without a question, it is gone.
const PROGRAM_TIMEOUT: Duration = Duration::from_secs(10);
/// Between looks for a question: the program asks every 200 ms and waits 3 s for the answer,
/// so 10 ms late is nothing, and an idle device process wakes 100 times a second, not 1 000.
const ANSWER_PAUSE: Duration = Duration::from_millis(10);

pub struct Heartbeat {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Heartbeat {
    /// Starts answering `program`'s checks on `comm`.
    pub fn start(mpi: &'static Mpi, comm: Comm, program: i32) -> Heartbeat {
        let stop = Arc::new(AtomicBool::new(false));
        if !mpi_wire::launcher_recovers() {
            return Heartbeat { stop, thread: None };
        }
        let flag = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("omptarget-mpi-heartbeat".into())
            .spawn(move || {
                if let Err(e) = answer(mpi, comm, program, &flag) {
                    eprintln!("omptarget-mpi-device: liveness answers stopped: {e}");
                }
            });
        let thread = match thread {
            Ok(t) => Some(t),
            Err(e) => {
                eprintln!("omptarget-mpi-device: {e}: the program may take this process for dead");
                None
            }
        };
        Heartbeat { stop, thread }
    }

    /// Stops answering (before MPI is finalised).
    pub fn stop(mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn answer(mpi: &Mpi, comm: Comm, program: i32, stop: &AtomicBool) -> Result<(), String> {
    let mut question = [0u8; 1];
    let answer = [1u8; 1];
    // The program's questions start once it has listed this process's devices.
    let mut last_question: Option<Instant> = None;
    loop {
        // SAFETY: `question` outlives the request: it completes or is cancelled below.
        let mut request =
            unsafe { mpi.irecv_up_to(comm, question.as_mut_ptr(), 1, program, HEARTBEAT_TAG) }?;
        loop {
            if mpi.test_received(&mut request)?.is_some() {
                mpi.send(comm, &answer, program, HEARTBEAT_REPLY_TAG)?;
                last_question = Some(Instant::now());
                break;
            }
            if last_question.is_some_and(|t| t.elapsed() > PROGRAM_TIMEOUT) {
                eprintln!(
                    "omptarget-mpi-device: the program (rank {program}) has not checked on this \
                     process for {PROGRAM_TIMEOUT:?}: it is gone; exiting"
                );
                std::process::exit(1);
            }
            if stop.load(Ordering::Acquire) {
                mpi.cancel(request);
                return Ok(());
            }
            std::thread::sleep(ANSWER_PAUSE);
        }
    }
}
