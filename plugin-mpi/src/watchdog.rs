//! Notices device processes that are gone. Open MPI's launcher ends the whole job when one of
//! its processes dies, unless it runs with `--enable-recovery`; then the program goes on, and
//! MPI itself never says that a peer is gone: a receive from it waits for ever. So a thread of
//! the plugin asks each device process, a few times a second, for a one-byte answer, which a
//! thread of the device process gives whatever its request loop is doing. A device process
//! that leaves a question unanswered for [`TIMEOUT`] is marked dead: the waits for its replies
//! end with an error, and requests to it fail at once.

use crate::link::Link;
use mpi_wire::mpi::Request;
use mpi_wire::protocol::{HEARTBEAT_REPLY_TAG, HEARTBEAT_TAG};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Between two questions to a device process.
const PERIOD: Duration = Duration::from_millis(200);
/// An unanswered question for this long means the device process is gone.
const TIMEOUT: Duration = Duration::from_secs(3);

struct Running {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<()>,
}

static RUNNING: Mutex<Option<Running>> = Mutex::new(None);

/// One device process: the question in flight and the buffers MPI uses for it.
struct Peer {
    rank: i32,
    asked: Option<(Request, Request, Instant)>,
    question: Box<[u8; 1]>,
    answer: Box<[u8; 1]>,
}

/// Starts watching `link`'s device processes (once).
pub fn start(link: Arc<Link>) {
    let mut running = RUNNING.lock().unwrap_or_else(|e| e.into_inner());
    if running.is_some() || link.servers.is_empty() || !link.watched {
        return;
    }
    let stop = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&stop);
    let thread = std::thread::Builder::new()
        .name("omptarget-mpi-watch".into())
        .spawn(move || watch(&link, &flag));
    match thread {
        Ok(thread) => *running = Some(Running { stop, thread }),
        Err(e) => log::warn!("mpi plugin: {e}; a device process that dies is not noticed"),
    }
}

/// Stops watching, before the device processes are told to finish (and MPI finalised).
pub fn stop() {
    let running = RUNNING.lock().unwrap_or_else(|e| e.into_inner()).take();
    if let Some(running) = running {
        running.stop.store(true, Ordering::Release);
        running.thread.thread().unpark();
        let _ = running.thread.join();
    }
}

fn watch(link: &Link, stop: &AtomicBool) {
    let mut peers: Vec<Peer> = link
        .servers
        .iter()
        .map(|&rank| Peer {
            rank,
            asked: None,
            question: Box::new([0]),
            answer: Box::new([0]),
        })
        .collect();
    while !stop.load(Ordering::Acquire) {
        for peer in peers.iter_mut().filter(|p| !link.is_dead(p.rank)) {
            if let Err(e) = check(link, peer) {
                log::warn!("mpi plugin: checking device process {}: {e}", peer.rank);
            }
        }
        std::thread::park_timeout(PERIOD);
    }
    // Questions still out: the answers to live processes are awaited (they come at once);
    // those of dead ones are left to MPI.
    for peer in peers {
        if let Some((question, mut answer, _)) = peer.asked {
            if link.is_dead(peer.rank) {
                std::mem::forget(peer.question);
                std::mem::forget(peer.answer);
                continue;
            }
            let _ = link.mpi.wait(question);
            if !matches!(link.mpi.test_received(&mut answer), Ok(Some(_))) {
                link.mpi.cancel(answer);
            }
        }
    }
}

/// Asks `peer` a question if none is out, else looks for its answer.
fn check(link: &Link, peer: &mut Peer) -> Result<(), String> {
    match &mut peer.asked {
        None => {
            // SAFETY: the buffers live in `peer` until the requests complete (or, for a dead
            // process, for ever).
            let answer = unsafe {
                link.mpi.irecv_up_to(
                    link.comm,
                    peer.answer.as_mut_ptr(),
                    1,
                    peer.rank,
                    HEARTBEAT_REPLY_TAG,
                )
            }?;
            // SAFETY: as above.
            let mut question = unsafe {
                link.mpi.isend(
                    link.comm,
                    peer.question.as_ptr(),
                    1,
                    peer.rank,
                    HEARTBEAT_TAG,
                )
            }?;
            let question = question.pop().expect("one chunk");
            peer.asked = Some((question, answer, Instant::now()));
        }
        Some((_, answer, since)) => {
            if link.mpi.test_received(answer)?.is_some() {
                let (question, _, _) = peer.asked.take().expect("asked");
                link.mpi.wait(question)?;
            } else if since.elapsed() > TIMEOUT {
                log::warn!(
                    "mpi plugin: device process (rank {}) has not answered for {TIMEOUT:?}: \
                     it is gone, and the work on its devices fails",
                    peer.rank
                );
                link.mark_dead(peer.rank);
                link.announce_gone(peer.rank);
            }
        }
    }
    Ok(())
}
