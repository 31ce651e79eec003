//! The program's side of the MPI job: starting MPI (or sharing the program's), finding the
//! device processes that serve this rank, and the request/reply calls.

use mpi_wire::mpi::{Comm, Mpi, Request, THREAD_MULTIPLE};
use mpi_wire::protocol::{
    Op, Reader, Writer, FIRST_REPLY_TAG, MAX_REPLY, MAX_REQUEST, REQUEST_TAG, ROLE_DEVICE,
    ROLE_PROGRAM,
};
use plugin_api::{ErrorCode, PluginError};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

type Result<T> = std::result::Result<T, PluginError>;

/// How to start a job with device processes, for the reasons we give.
pub const LAUNCH_HINT: &str = "mpirun -np 1 ./prog : -np N omptarget-mpi-device";

pub struct Link {
    pub mpi: Mpi,
    pub comm: Comm,
    /// The device processes serving this rank, in rank order.
    pub servers: Vec<i32>,
    next_tag: AtomicI32,
    tag_limit: i32,
    /// Whether we called MPI_Init (then we call MPI_Finalize at exit).
    ours: bool,
    /// Images stored in device processes: (rank, the image's address and length in the
    /// program) -> the number they know it by.
    images: std::sync::Mutex<std::collections::HashMap<(i32, usize, usize), u64>>,
    closed: AtomicBool,
    /// By rank: device processes that stopped answering ([`crate::watchdog`]); whatever waits
    /// for them fails instead.
    dead: Box<[AtomicBool]>,
    /// Whether the launcher lets the job outlive a device process: then waits poll, so that
    /// one found dead ends them ([`mpi_wire::launcher_recovers`]).
    pub watched: bool,
    /// The process that joined the job: a child forked from it inherits the link (and the
    /// exit handler that shuts it down), not the device processes.
    joined_in: host_os::process::SetUpIn,
}

pub fn mpi_error(e: String) -> PluginError {
    PluginError::new(ErrorCode::FAILED, format!("MPI: {e}"))
}

/// Whether the program itself links an MPI library (looked up before we open ours).
fn program_links_mpi() -> bool {
    let this = libloading::os::unix::Library::this();
    // SAFETY: only the symbol's presence is checked; it is never called.
    unsafe { this.get::<*const u8>(b"MPI_Init\0") }.is_ok()
}

/// How the plugin's start went.
pub enum Start {
    /// Joined the job: this rank's device processes are known.
    Joined(Link),
    /// The program links MPI but has not initialised it yet (the runtime starts before `main`
    /// when the program itself has offload images): join once it has ([`Link::join_late`]).
    WaitForProgram(Mpi),
}

/// Whether a late join can happen on the calling thread now.
pub enum Late {
    /// Not yet: MPI is not initialised, or only the main thread may call MPI and this is not it.
    NotYet,
    /// The program finalised MPI without the plugin ever joining.
    Finalized,
    Now,
}

impl Link {
    /// Starts MPI and finds this rank's device processes, or says to wait for the program's
    /// MPI_Init. `Err` is why there are no MPI devices; nothing here hangs or aborts when the
    /// program was not started for the MPI plugin.
    pub fn start() -> std::result::Result<Start, String> {
        if !mpi_wire::under_launcher() {
            return Err(format!(
                "not started by an MPI launcher (remote devices need: {LAUNCH_HINT})"
            ));
        }
        // Open MPI says how many applications the job runs; with one, there are no device
        // processes, and an MPI program must not find MPI initialised behind its back.
        if std::env::var("OMPI_NUM_APP_CTX").is_ok_and(|n| n.trim() == "1") {
            return Err(format!(
                "the MPI job runs one application, so it has no device processes ({LAUNCH_HINT})"
            ));
        }
        let links_mpi = program_links_mpi();
        let mpi = Mpi::open()?;
        if links_mpi && !mpi.is_initialized() {
            return Ok(Start::WaitForProgram(mpi));
        }
        Link::join(mpi, links_mpi).map(Start::Joined)
    }

    /// Whether a program that initialises MPI itself can be joined now, on this thread: once it
    /// has initialised MPI, from any thread at MPI_THREAD_MULTIPLE, else from its main thread
    /// only (which joins to tell the device processes to finish, since the level is refused).
    pub fn can_join_late(mpi: &Mpi) -> Late {
        if !mpi.is_initialized() {
            return Late::NotYet;
        }
        if mpi.is_finalized() {
            return Late::Finalized;
        }
        if mpi.thread_level() < THREAD_MULTIPLE && !mpi.is_thread_main() {
            return Late::NotYet;
        }
        Late::Now
    }

    /// Exchanges roles with the device processes (on a duplicate of `MPI_COMM_WORLD`, a
    /// collective of the whole job) once MPI is initialised, by the program or by us.
    /// `links_mpi`: whether the program links MPI itself (found before we opened the library,
    /// which makes its symbols global).
    pub fn join(mpi: Mpi, links_mpi: bool) -> std::result::Result<Link, String> {
        // A level too low is found before the roles are exchanged, but reported after: the
        // device processes wait in that exchange, and must then be told to finish, or the
        // program's MPI_Finalize would wait for them for ever.
        let mut refusal = None;
        let ours = if mpi.is_initialized() {
            let level = mpi.thread_level();
            if level < THREAD_MULTIPLE {
                refusal = Some(format!(
                    "the program initialised MPI with thread level {level}; the MPI plugin calls \
                     MPI from several threads and needs MPI_THREAD_MULTIPLE (3): use \
                     MPI_Init_thread(..., MPI_THREAD_MULTIPLE, ...)"
                ));
            }
            false
        } else if links_mpi {
            return Err(
                "the program uses MPI itself and has not initialised it (Link::start waits)".into(),
            );
        } else {
            let provided = mpi.init_thread_multiple()?;
            if provided < THREAD_MULTIPLE {
                let _ = mpi.finalize();
                return Err(format!(
                    "the MPI library provides thread level {provided}; MPI_THREAD_MULTIPLE (3) is needed"
                ));
            }
            true
        };
        let (comm, roles) = mpi_wire::exchange_roles(&mpi, ROLE_PROGRAM)?;
        let me = mpi.rank(comm)?;
        let ranks_of = |role| -> Vec<i32> {
            (0..roles.len() as i32)
                .filter(|r| roles[*r as usize] == role)
                .collect()
        };
        let programs = ranks_of(ROLE_PROGRAM);
        let index = programs.iter().position(|r| *r == me).unwrap_or(0);
        // The device processes' rule (omptarget-mpi-device): the i-th serves program i mod P.
        let servers: Vec<i32> = ranks_of(ROLE_DEVICE)
            .into_iter()
            .enumerate()
            .filter(|(i, _)| i % programs.len() == index)
            .map(|(_, r)| r)
            .collect();
        let tag_limit = mpi.tag_upper_bound(comm);
        let link = Link {
            mpi,
            comm,
            servers,
            next_tag: AtomicI32::new(FIRST_REPLY_TAG),
            tag_limit,
            ours,
            images: Default::default(),
            closed: AtomicBool::new(false),
            dead: (0..roles.len()).map(|_| AtomicBool::new(false)).collect(),
            watched: mpi_wire::launcher_recovers(),
            joined_in: host_os::process::SetUpIn::this_process(),
        };
        if let Some(why) = refusal {
            // Nothing watches a link that never joined.
            link.shut_down(|| {});
            return Err(why);
        }
        Ok(link)
    }

    /// The number device process `rank` knows `image` by, sending the image's bytes the first
    /// time (once per device process, whatever the number of its devices).
    pub fn image_id(&self, rank: i32, image: &[u8]) -> Result<u64> {
        let mut images = self.images.lock().unwrap_or_else(|e| e.into_inner());
        let key = (rank, image.as_ptr() as usize, image.len());
        if let Some(&id) = images.get(&key) {
            return Ok(id);
        }
        let id = images.len() as u64 + 1;
        let tag = self.tag();
        let mut request = Writer::request(Op::StoreImage, tag, 0);
        request.u64(id).bytes(image);
        self.call(rank, tag, &request)?;
        images.insert(key, id);
        Ok(id)
    }

    /// Whether device process `rank` stopped answering.
    pub fn is_dead(&self, rank: i32) -> bool {
        self.dead
            .get(rank as usize)
            .is_some_and(|d| d.load(Ordering::Acquire))
    }

    /// Records that device process `rank` stopped answering: what waits for it fails from now.
    pub fn mark_dead(&self, rank: i32) {
        if let Some(d) = self.dead.get(rank as usize) {
            d.store(true, Ordering::Release);
        }
    }

    fn gone(rank: i32) -> PluginError {
        PluginError::new(
            ErrorCode::FAILED,
            format!(
                "MPI device process (rank {rank}) is gone: it stopped answering the program's \
                 liveness checks (it died or was killed); the work on its devices is lost"
            ),
        )
    }

    /// Whether the device processes have been told to finish.
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// A tag for one request's reply or data, not in use by another request in flight.
    pub fn tag(&self) -> i32 {
        let span = self.tag_limit - FIRST_REPLY_TAG;
        let n = self.next_tag.fetch_add(1, Ordering::Relaxed);
        FIRST_REPLY_TAG + (n - FIRST_REPLY_TAG).rem_euclid(span)
    }

    fn check_open(&self) -> Result<()> {
        if self.is_closed() {
            return Err(PluginError::new(
                ErrorCode::FAILED,
                "the MPI plugin has shut its device processes down (the program is ending)",
            ));
        }
        Ok(())
    }

    /// Sends a request without waiting.
    pub fn send(&self, rank: i32, request: &Writer) -> Result<()> {
        self.check_open()?;
        self.check_alive(rank)?;
        if request.0.len() > MAX_REQUEST {
            let data_tag = self.tag();
            let mut large = Writer::request(Op::Large, 0, 0);
            large.u64(request.0.len() as u64).i32(data_tag);
            self.send_unless_dead(&large.0, rank, REQUEST_TAG)?;
            self.send_unless_dead(&request.0, rank, data_tag)
        } else {
            self.send_unless_dead(&request.0, rank, REQUEST_TAG)
        }
    }

    /// Sends one message to `rank`. Where the launcher keeps a job whose process died, the
    /// send polls (as a blocking send does inside MPI), so that a process found dead meanwhile
    /// ends it: a message over MPI's eager limit (4 KiB on shared memory: a launch of some 500
    /// arguments) completes only when the process receives it, and one sent to a process that
    /// died after its last reply waited for ever. Such a send is left to MPI with a copy of
    /// the bytes, which is never freed.
    fn send_unless_dead(&self, bytes: &[u8], rank: i32, tag: i32) -> Result<()> {
        if !self.watched {
            return self
                .mpi
                .send(self.comm, bytes, rank, tag)
                .map_err(mpi_error);
        }
        let copy = bytes.to_vec();
        // SAFETY: the copy lives until the sends complete, or for ever if they are abandoned.
        let sends = unsafe {
            self.mpi
                .isend(self.comm, copy.as_ptr(), copy.len(), rank, tag)
        }
        .map_err(mpi_error)?;
        self.wait(rank, sends)
            .inspect_err(|_| std::mem::forget(copy))
    }

    /// Receives the reply on `tag` and gives its bytes to `read` (they are borrowed from a
    /// buffer of the thread's).
    fn receive_reply<T>(
        &self,
        rank: i32,
        tag: i32,
        read: impl FnOnce(&[u8]) -> Result<T>,
    ) -> Result<T> {
        thread_local! {
            static BUFFER: std::cell::RefCell<Vec<u8>> = std::cell::RefCell::new(vec![0; MAX_REPLY]);
        }
        let mut read = Some(read);
        let mut receive = |buffer: &mut Vec<u8>| {
            let len = self.receive_unless_dead(buffer, rank, tag)?;
            (read.take().expect("read once"))(&buffer[..len])
        };
        // The runtime's exit work may come after this thread's locals are gone.
        match BUFFER.try_with(|b| receive(&mut b.borrow_mut())) {
            Ok(outcome) => outcome,
            Err(_) => receive(&mut vec![0; MAX_REPLY]),
        }
    }

    /// Receives one message from `rank` on `tag` into `buffer`, polling (as a blocking receive
    /// does inside MPI) so that a device process found dead meanwhile ends the wait.
    fn receive_unless_dead(&self, buffer: &mut [u8], rank: i32, tag: i32) -> Result<usize> {
        if !self.watched {
            // The launcher ends the job with a dead process: MPI's own wait is enough.
            return self
                .mpi
                .recv_up_to(self.comm, buffer, rank, tag)
                .map_err(mpi_error);
        }
        // SAFETY: `buffer` outlives the request: it completes or is cancelled below.
        let mut request = unsafe {
            self.mpi
                .irecv_up_to(self.comm, buffer.as_mut_ptr(), buffer.len(), rank, tag)
        }
        .map_err(mpi_error)?;
        loop {
            if let Some(len) = self.mpi.test_received(&mut request).map_err(mpi_error)? {
                return Ok(len);
            }
            if self.is_dead(rank) {
                self.mpi.cancel(request);
                return Err(Self::gone(rank));
            }
        }
    }

    /// Receives the reply on `tag`; `Ok` holds the result's bytes (read them with a [`Reader`]
    /// after its `reply()`).
    pub fn reply(&self, rank: i32, tag: i32) -> Result<Vec<u8>> {
        self.receive_reply(rank, tag, |bytes| {
            Reader::new(bytes).reply()?;
            Ok(bytes.to_vec())
        })
    }

    /// Receives the reply on `tag` of a request without a result: its outcome.
    pub fn outcome(&self, rank: i32, tag: i32) -> Result<()> {
        self.receive_reply(rank, tag, |bytes| Reader::new(bytes).reply())
    }

    /// Whether the reply on `tag` has arrived.
    pub fn has_reply(&self, rank: i32, tag: i32) -> Result<bool> {
        self.mpi
            .has_message(self.comm, rank, tag)
            .map_err(mpi_error)
    }

    /// `Err` naming the device process of `rank` if it was found dead.
    pub fn check_alive(&self, rank: i32) -> Result<()> {
        if self.is_dead(rank) {
            return Err(Self::gone(rank));
        }
        Ok(())
    }

    /// Tells the other live device processes that the one of `rank` is gone, so that copies
    /// between them and it end (a notice: no reply comes).
    pub fn announce_gone(&self, rank: i32) {
        // MPI_Finalize's barrier would wait for the dead process.
        if !self.mpi.skip_finalize_barrier() {
            log::warn!("mpi plugin: MPI_Finalize may wait for the dead device process {rank}");
        }
        for &other in self
            .servers
            .iter()
            .filter(|&&r| r != rank && !self.is_dead(r))
        {
            let mut notice = Writer::request(Op::PeerGone, 0, 0);
            notice.i32(rank);
            if let Err(e) = self.send(other, &notice) {
                log::warn!("mpi plugin: telling device process {other} that {rank} is gone: {e}");
            }
        }
    }

    /// A request and its reply.
    pub fn call(&self, rank: i32, tag: i32, request: &Writer) -> Result<Vec<u8>> {
        self.send(rank, request)?;
        self.reply(rank, tag)
    }

    /// Waits for the transfers of a request to `rank`. Where the launcher keeps a job whose
    /// process died, polls instead (as a blocking wait does inside MPI), so that a process
    /// found dead meanwhile ends the wait: a device process that replied to a copy back and
    /// died while sending the data would otherwise leave the program waiting for ever. The
    /// transfers are then left to MPI, so their buffers must outlive them (the program's data,
    /// or a copy that is never freed).
    pub fn wait(&self, rank: i32, requests: Vec<Request>) -> Result<()> {
        if !self.watched {
            for r in requests {
                self.mpi.wait(r).map_err(mpi_error)?;
            }
            return Ok(());
        }
        let mut pending = requests;
        while !pending.is_empty() {
            // Completed requests leave the list in place: a pass allocates nothing.
            let mut i = 0;
            while i < pending.len() {
                if self.mpi.test(&mut pending[i]).map_err(mpi_error)? {
                    pending.swap_remove(i);
                } else {
                    i += 1;
                }
            }
            if !pending.is_empty() && self.is_dead(rank) {
                pending.into_iter().for_each(|r| self.mpi.abandon(r));
                return Err(Self::gone(rank));
            }
        }
        Ok(())
    }

    /// Tells every device process to finish, then finalises MPI if we initialised it. Later
    /// calls fail with a clear error (the runtime may still unload images after this).
    /// `stop_watching` runs first, when this call is the one that shuts the link down: it ends
    /// the watchdog's thread, whose questions to the device processes use MPI on the link.
    pub fn shut_down(&self, stop_watching: impl FnOnce()) {
        if self.joined_in.is_forked_child() {
            // A forked child exits: the device processes are its parent's.
            return;
        }
        if self.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        stop_watching();
        for &rank in self.servers.iter().filter(|&&r| !self.is_dead(r)) {
            let tag = self.tag();
            let request = Writer::request(Op::Shutdown, tag, 0);
            let sent = self.mpi.send(self.comm, &request.0, rank, REQUEST_TAG);
            if sent.is_ok() {
                let _ = self.outcome(rank, tag);
            }
        }
        if self.ours {
            if let Err(e) = self.mpi.finalize() {
                log::warn!("mpi plugin: {e}");
            }
        }
    }
}
