//! A GPU device's side of the remote calls: the first loaded image whose device code has an RPC
//! client (`__llvm_rpc_client` of LLVM 22's OpenMP device runtime and GPU libc, or LLVM 19's
//! GPU libc's `__llvm_libc_rpc_client`) gets the device a mailbox in page-locked host memory
//! the GPU reaches, which the plugin's server serves; every later image whose client speaks the
//! same release of the protocol is given the same mailbox, as in LLVM's plugins. The device's
//! kernels keep the server running while they may call (from their launch until their queue is
//! found finished), and waits for them fail once the device's calls are no longer served.

use super::handlers::DeviceServices;
use super::mailbox::{self, Mailbox};
use super::protocol::Protocol;
use super::server::RpcServer;
use plugin_api::{AllocKind, Device, PluginError, QueueHandle};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;
use sync_util::lock;

type Result<T> = std::result::Result<T, PluginError>;

/// Ports per device, as LLVM's plugins ask by default (one per concurrent caller).
pub const PORTS: u32 = 64;

/// How long a wait for a queue whose kernels may call the host blocks in the driver before it
/// asks again whether the device's calls are still served: how late a kernel left waiting
/// for an answer that will not come is found out.
const WAIT_SLICE: Duration = Duration::from_millis(100);

/// The server of this plugin library's devices, started with the first mailbox.
pub fn plugin_server() -> Arc<RpcServer> {
    static SERVER: OnceLock<Arc<RpcServer>> = OnceLock::new();
    Arc::clone(SERVER.get_or_init(|| Arc::new(RpcServer::new())))
}

struct Connected {
    protocol: Protocol,
    key: u64,
    address: u64,
}

/// One device's mailboxes (one per release of the protocol its images speak) and the launches
/// that may use them.
pub struct DeviceRpc {
    server: Arc<RpcServer>,
    /// Lanes per port: the device's warp or wavefront size.
    lanes: u32,
    mailboxes: Mutex<Vec<Connected>>,
    /// Launches on each queue not yet found finished, while a mailbox exists (and, with none
    /// left, each queue that had some when the device's calls stopped being served).
    running: Mutex<HashMap<u64, usize>>,
}

impl DeviceRpc {
    pub fn new(lanes: u32) -> DeviceRpc {
        DeviceRpc {
            server: plugin_server(),
            lanes: lanes.clamp(1, 64),
            mailboxes: Mutex::new(Vec::new()),
            running: Mutex::new(HashMap::new()),
        }
    }

    /// Gives the client that the device code's `protocol` global names (`size` bytes of
    /// device memory at `global`) the device's mailbox for that protocol, made on first use.
    pub fn connect<D: Device>(
        &self,
        device: &D,
        protocol: Protocol,
        global: u64,
        size: u64,
    ) -> Result<()> {
        let symbol = protocol.client_symbol();
        let expected = if protocol.client_by_pointer() {
            8
        } else {
            mailbox::CLIENT_BYTES as u64
        };
        if size != expected {
            return Err(PluginError::invalid_argument(format!(
                "{symbol} has {size} bytes on the device; {}'s has {expected}",
                protocol.name()
            )));
        }
        let client = if protocol.client_by_pointer() {
            let mut pointer = 0u64;
            // SAFETY: an 8-byte global of the device read into a local of 8 bytes.
            unsafe {
                device.copy_from_device(
                    &mut pointer as *mut u64 as usize,
                    global as usize,
                    8,
                    QueueHandle::SYNC,
                )?
            };
            if pointer == 0 {
                return Err(PluginError::invalid_argument(format!(
                    "{symbol} is null on the device: its client cannot be reached"
                )));
            }
            pointer
        } else {
            global
        };
        let address = {
            let mut mailboxes = lock(&self.mailboxes);
            match mailboxes.iter().find(|m| m.protocol == protocol) {
                Some(connected) => connected.address,
                None => {
                    let connected = self.make_mailbox(device, protocol)?;
                    let address = connected.address;
                    mailboxes.push(connected);
                    address
                }
            }
        };
        let bytes = mailbox::client_bytes(PORTS, address);
        // SAFETY: `bytes` outlives the synchronous copy into the device's client object, which
        // LLVM's device code sizes as `rpc::Client` (CLIENT_BYTES).
        unsafe {
            device.copy_to_device(
                client as usize,
                bytes.as_ptr() as usize,
                bytes.len() as u64,
                QueueHandle::SYNC,
            )
        }
    }

    fn make_mailbox<D: Device>(&self, device: &D, protocol: Protocol) -> Result<Connected> {
        let size = mailbox::allocation_size(PORTS, self.lanes);
        let address = device.alloc(size, 0, AllocKind::HOST)? as u64;
        // SAFETY: page-locked host memory of `size` bytes just allocated, the host's to write.
        unsafe { std::ptr::write_bytes(address as *mut u8, 0, size as usize) };
        // SAFETY: host memory of the mailbox's size, page-aligned, freed only after the server
        // gave the mailbox back (`disconnect`).
        let mailbox = unsafe { Mailbox::new(address as usize, PORTS, self.lanes, protocol) };
        let services = DeviceMemory {
            device: device as *const D,
        };
        let key = self.server.add(mailbox, Arc::new(services));
        Ok(Connected {
            protocol,
            key,
            address,
        })
    }

    /// Whether the device has a mailbox.
    pub fn is_connected(&self) -> bool {
        !lock(&self.mailboxes).is_empty()
    }

    /// Runs `launch`, the launch of a kernel on `queue`: the server runs until the queue is
    /// found finished ([`DeviceRpc::finished`]), or, on the synchronous queue, until the launch
    /// returns (it has finished the kernel then).
    pub fn launch<T>(&self, queue: QueueHandle, launch: impl FnOnce() -> T) -> T {
        if !self.is_connected() {
            return launch();
        }
        self.server.begin_use();
        if queue == QueueHandle::SYNC {
            let result = launch();
            self.server.end_use();
            return result;
        }
        *lock(&self.running).entry(queue.0).or_insert(0) += 1;
        launch()
    }

    /// `queue`'s work was found finished (or the queue failed, or was released). Once the
    /// device's calls are no longer served, the queue stays known as one whose kernels may
    /// call: those still running may wait for ever, so every later wait on it fails too.
    pub fn finished(&self, queue: QueueHandle) {
        let count = {
            let mut running = lock(&self.running);
            let Some(count) = running.get_mut(&queue.0) else {
                return;
            };
            let count = std::mem::take(count);
            // Asked only for queues that had such launches: every wait ends here.
            if self.failure().is_none() {
                running.remove(&queue.0);
            }
            count
        };
        for _ in 0..count {
            self.server.end_use();
        }
    }

    /// Why the device's calls are no longer served, if they are not.
    pub fn failure(&self) -> Option<String> {
        let keys: Vec<u64> = lock(&self.mailboxes).iter().map(|m| m.key).collect();
        keys.into_iter().find_map(|key| self.server.failure(key))
    }

    /// An error when `queue` has launches that may call the host, not yet found finished,
    /// while the device's calls are no longer served: such a kernel may wait for an answer
    /// that will not come.
    pub fn check(&self, queue: QueueHandle) -> Result<()> {
        if !lock(&self.running).contains_key(&queue.0) {
            return Ok(());
        }
        match self.failure() {
            Some(failure) => Err(PluginError::failed(format!(
                "the kernel cannot finish: {failure}"
            ))),
            None => Ok(()),
        }
    }

    /// Waits for `queue`'s work while the queue has launches that may call the host: a
    /// driver's wait without end would wait for ever for a kernel whose call the server could
    /// not take. `wait_within(slice)` is the driver's blocking wait for the queue, for at most
    /// `slice` (true: the work is done, or failed, which the plugin's own wait then reports);
    /// between slices this fails ([`DeviceRpc::check`]) once the device's calls are no longer
    /// served. Other queues return at once, for the plugin's own wait.
    pub fn wait_for(
        &self,
        queue: QueueHandle,
        mut wait_within: impl FnMut(Duration) -> bool,
    ) -> Result<()> {
        if !lock(&self.running).contains_key(&queue.0) {
            return Ok(());
        }
        while !wait_within(WAIT_SLICE) {
            self.check(queue)?;
        }
        Ok(())
    }

    /// Takes the mailboxes back from the server and frees them (the device is being shut
    /// down).
    pub fn disconnect<D: Device>(&self, device: &D) -> Result<()> {
        let mailboxes = std::mem::take(&mut *lock(&self.mailboxes));
        if mailboxes.is_empty() {
            return Ok(());
        }
        let queues: Vec<u64> = lock(&self.running).keys().copied().collect();
        for queue in queues {
            self.finished(QueueHandle(queue));
        }
        let mut result = Ok(());
        for connected in mailboxes {
            self.server.remove(connected.key);
            let freed = device.free(connected.address as usize, AllocKind::HOST);
            result = result.and(freed);
        }
        result
    }
}

/// A device's `malloc` and `free` for its kernels: device memory of the non-blocking kind, so
/// that a kernel's request does not wait for that kernel. The device is the plugin's: it stays
/// where it is for the life of the plugin, and [`DeviceRpc::disconnect`] (called when the device
/// is shut down) takes these services from the server before the device goes.
struct DeviceMemory<D> {
    device: *const D,
}

// SAFETY: `D: Device` is Send and Sync; the pointer is only dereferenced while the device lives
// (see the type's comment).
unsafe impl<D: Device> Send for DeviceMemory<D> {}
// SAFETY: as above.
unsafe impl<D: Device> Sync for DeviceMemory<D> {}

impl<D: Device> DeviceMemory<D> {
    fn device(&self) -> &D {
        // SAFETY: the device outlives its registration with the server (see the type).
        unsafe { &*self.device }
    }
}

impl<D: Device> DeviceServices for DeviceMemory<D> {
    fn allocate(&self, size: u64) -> Option<u64> {
        self.device()
            .alloc(size.max(1), 0, AllocKind::DEVICE_NON_BLOCKING)
            .ok()
            .map(|a| a as u64)
    }

    fn free(&self, address: u64) {
        if let Err(e) = self
            .device()
            .free(address as usize, AllocKind::DEVICE_NON_BLOCKING)
        {
            log::warn!("a device's free of {address:#x} failed: {e}");
        }
    }
}
