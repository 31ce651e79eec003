//! One thread per plugin serves the mailboxes of all its devices. It runs only while kernels
//! that may call the host run (the plugin counts them, [`RpcServer::begin_use`]): it sweeps the
//! mailboxes, spinning while requests come, and after 25 µs without one it sleeps 250 µs
//! between sweeps, as LLVM 22's server does; with no such kernel it waits on a condition
//! variable, using no CPU at all.

use super::handlers::{self, DeviceServices, Served};
use super::mailbox::Mailbox;
use super::opcodes;
use super::port::{Port, PortError};
use std::collections::HashMap;
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use sync_util::lock;

/// Spinning this long after the last request before sleeping between sweeps.
const IDLE_SPIN: Duration = Duration::from_micros(25);
/// The sleep between sweeps of an idle server.
const IDLE_SLEEP: Duration = Duration::from_micros(250);

/// A device's mailbox as the server knows it.
struct Device {
    key: u64,
    mailbox: Mailbox,
    services: Arc<dyn DeviceServices>,
    /// Set once a damaged or unknown request stopped the serving of this mailbox.
    failed: bool,
}

struct Shared {
    devices: Mutex<Vec<Device>>,
    /// Why each mailbox that is no longer served is not, by key: apart from `devices`, which a
    /// sweep holds while it waits on a device in the middle of a request, so that waits for
    /// kernels can ask at any time.
    failures: Mutex<HashMap<u64, String>>,
    users: AtomicUsize,
    stop: AtomicBool,
    idle: Mutex<()>,
    wake: Condvar,
}

/// The server of one plugin's devices.
pub struct RpcServer {
    shared: Arc<Shared>,
    thread: Mutex<Option<JoinHandle<()>>>,
    next_key: AtomicUsize,
}

impl Default for RpcServer {
    fn default() -> Self {
        RpcServer::new()
    }
}

impl RpcServer {
    pub fn new() -> RpcServer {
        RpcServer {
            shared: Arc::new(Shared {
                devices: Mutex::new(Vec::new()),
                failures: Mutex::new(HashMap::new()),
                users: AtomicUsize::new(0),
                stop: AtomicBool::new(false),
                idle: Mutex::new(()),
                wake: Condvar::new(),
            }),
            thread: Mutex::new(None),
            next_key: AtomicUsize::new(1),
        }
    }

    /// Serves `mailbox` from now on, with `services` for its device's requests; the key gives
    /// it back.
    pub fn add(&self, mailbox: Mailbox, services: Arc<dyn DeviceServices>) -> u64 {
        let key = self.next_key.fetch_add(1, Ordering::Relaxed) as u64;
        lock(&self.shared.devices).push(Device {
            key,
            mailbox,
            services,
            failed: false,
        });
        key
    }

    /// Stops serving the mailbox of `key` and gives it back (its memory is the caller's to
    /// free; no sweep uses it any more).
    pub fn remove(&self, key: u64) -> Option<Mailbox> {
        let mut devices = lock(&self.shared.devices);
        let at = devices.iter().position(|d| d.key == key)?;
        lock(&self.shared.failures).remove(&key);
        Some(devices.remove(at).mailbox)
    }

    /// Why the mailbox of `key` is no longer served, if it is not.
    pub fn failure(&self, key: u64) -> Option<String> {
        lock(&self.shared.failures).get(&key).cloned()
    }

    /// A kernel that may call the host started: the server runs until as many
    /// [`RpcServer::end_use`] calls.
    pub fn begin_use(&self) {
        self.start_thread();
        if self.shared.users.fetch_add(1, Ordering::AcqRel) == 0 {
            let _idle = lock(&self.shared.idle);
            self.shared.wake.notify_all();
        }
    }

    pub fn end_use(&self) {
        let _ = self
            .shared
            .users
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1));
    }

    /// One sweep over every mailbox, serving each pending request; whether any was.
    pub fn sweep(&self) -> bool {
        sweep(&self.shared)
    }

    fn start_thread(&self) {
        let mut thread = lock(&self.thread);
        if thread.is_some() || self.shared.stop.load(Ordering::Acquire) {
            return;
        }
        let shared = Arc::clone(&self.shared);
        *thread = std::thread::Builder::new()
            .name("omptarget-rpc".into())
            .spawn(move || run(&shared))
            .map_err(|e| log::warn!("no RPC server thread: {e}"))
            .ok();
    }

    /// Stops the thread. A request in the middle of its exchange is abandoned: a device that
    /// stopped answering does not keep the program from ending.
    pub fn shut_down(&self) {
        self.shared.stop.store(true, Ordering::Release);
        {
            let _idle = lock(&self.shared.idle);
            self.shared.wake.notify_all();
        }
        if let Some(thread) = lock(&self.thread).take() {
            let _ = thread.join();
        }
    }
}

impl Drop for RpcServer {
    fn drop(&mut self) {
        self.shut_down();
    }
}

fn run(shared: &Shared) {
    let mut last_request = Instant::now();
    loop {
        {
            let mut idle = lock(&shared.idle);
            while shared.users.load(Ordering::Acquire) == 0 && !shared.stop.load(Ordering::Acquire)
            {
                idle = shared.wake.wait(idle).unwrap_or_else(|e| e.into_inner());
            }
        }
        if shared.stop.load(Ordering::Acquire) {
            return;
        }
        if sweep(shared) {
            last_request = Instant::now();
        } else if last_request.elapsed() >= IDLE_SPIN {
            std::thread::sleep(IDLE_SLEEP);
        } else {
            std::hint::spin_loop();
        }
    }
}

fn sweep(shared: &Shared) -> bool {
    let mut devices = lock(&shared.devices);
    let mut served = false;
    for device in devices.iter_mut().filter(|d| !d.failed) {
        let mut start = 0;
        while let Some(mut port) = Port::try_open(&device.mailbox, start, &shared.stop) {
            served = true;
            start = port.index() + 1;
            let outcome = handlers::serve(&mut port, &*device.services);
            let failure = match outcome {
                Ok(Served::Done) => None,
                Ok(Served::Unknown(opcode)) => Some(format!(
                    "a device called the host with an unknown request, opcode {}",
                    opcodes::describe(opcode)
                )),
                Err(PortError::TooLarge(size)) => Some(format!(
                    "a device's request sent {size} bytes, more than any request may; its \
                     remote calls are damaged"
                )),
                Err(PortError::Stopped) => return served,
            };
            if let Some(failure) = failure {
                let _ = writeln!(
                    std::io::stderr(),
                    "omptarget error: {failure}; the device's calls to the host are no longer \
                     served"
                );
                device.failed = true;
                lock(&shared.failures).insert(device.key, failure);
                // The port is left open (not closed): closing it would hand a half-read
                // request back as if it were answered.
                break;
            }
            port.close();
        }
    }
    served
}
