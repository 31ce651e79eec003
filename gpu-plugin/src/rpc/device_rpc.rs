//! A GPU device's side of the remote calls: the first loaded image whose device code has an RPC
//! client (`__llvm_rpc_client`, LLVM 22's OpenMP device runtime and GPU libc) gets the device a
//! mailbox in page-locked host memory the GPU reaches, which the plugin's server serves; every
//! later image's client is given the same mailbox, as in LLVM's plugins. The device's kernels
//! keep the server running while they may call (from their launch until their queue is found
//! finished).

use super::handlers::DeviceServices;
use super::mailbox::{self, Mailbox};
use super::server::RpcServer;
use plugin_api::{AllocKind, Device, PluginError, QueueHandle};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use sync_util::lock;

type Result<T> = std::result::Result<T, PluginError>;

/// The device runtime's client object.
pub const CLIENT_SYMBOL: &str = "__llvm_rpc_client";

/// Ports per device, as LLVM's plugins ask by default (one per concurrent caller).
pub const PORTS: u32 = 64;

/// The server of this plugin library's devices, started with the first mailbox.
pub fn plugin_server() -> Arc<RpcServer> {
    static SERVER: OnceLock<Arc<RpcServer>> = OnceLock::new();
    Arc::clone(SERVER.get_or_init(|| Arc::new(RpcServer::new())))
}

struct Connected {
    key: u64,
    address: u64,
}

/// One device's mailbox and the launches that may use it.
pub struct DeviceRpc {
    server: Arc<RpcServer>,
    /// Lanes per port: the device's warp or wavefront size.
    lanes: u32,
    mailbox: Mutex<Option<Connected>>,
    /// Launches on each queue not yet found finished, while a mailbox exists.
    running: Mutex<HashMap<u64, usize>>,
}

impl DeviceRpc {
    pub fn new(lanes: u32) -> DeviceRpc {
        DeviceRpc {
            server: plugin_server(),
            lanes: lanes.clamp(1, 64),
            mailbox: Mutex::new(None),
            running: Mutex::new(HashMap::new()),
        }
    }

    /// Gives the client at `client` (`size` bytes of device memory) the device's mailbox,
    /// made on first use.
    pub fn connect<D: Device>(&self, device: &D, client: u64, size: u64) -> Result<()> {
        if size != mailbox::CLIENT_BYTES as u64 {
            return Err(PluginError::invalid_argument(format!(
                "{CLIENT_SYMBOL} has {size} bytes on the device; LLVM 22's client has {}",
                mailbox::CLIENT_BYTES
            )));
        }
        let address = {
            let mut slot = lock(&self.mailbox);
            match slot.as_ref() {
                Some(connected) => connected.address,
                None => {
                    let connected = self.make_mailbox(device)?;
                    let address = connected.address;
                    *slot = Some(connected);
                    address
                }
            }
        };
        let bytes = mailbox::client_bytes(PORTS, address);
        // SAFETY: `bytes` outlives the synchronous copy into the device's global.
        unsafe {
            device.copy_to_device(
                client as usize,
                bytes.as_ptr() as usize,
                size,
                QueueHandle::SYNC,
            )
        }
    }

    fn make_mailbox<D: Device>(&self, device: &D) -> Result<Connected> {
        let size = mailbox::allocation_size(PORTS, self.lanes);
        let address = device.alloc(size, 0, AllocKind::HOST)? as u64;
        // SAFETY: page-locked host memory of `size` bytes just allocated, the host's to write.
        unsafe { std::ptr::write_bytes(address as *mut u8, 0, size as usize) };
        // SAFETY: host memory of the mailbox's size, page-aligned, freed only after the server
        // gave the mailbox back (`disconnect`).
        let mailbox = unsafe { Mailbox::new(address as usize, PORTS, self.lanes) };
        let services = DeviceMemory {
            device: device as *const D,
        };
        let key = self.server.add(mailbox, Arc::new(services));
        Ok(Connected { key, address })
    }

    /// Whether the device has a mailbox.
    pub fn is_connected(&self) -> bool {
        lock(&self.mailbox).is_some()
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

    /// `queue`'s work was found finished (or the queue failed, or was released).
    pub fn finished(&self, queue: QueueHandle) {
        let Some(count) = lock(&self.running).remove(&queue.0) else {
            return;
        };
        for _ in 0..count {
            self.server.end_use();
        }
    }

    /// Why the device's calls are no longer served, if they are not.
    pub fn failure(&self) -> Option<String> {
        let key = lock(&self.mailbox).as_ref()?.key;
        self.server.failure(key)
    }

    /// Takes the mailbox back from the server and frees it (the device is being shut down).
    pub fn disconnect<D: Device>(&self, device: &D) -> Result<()> {
        let Some(connected) = lock(&self.mailbox).take() else {
            return Ok(());
        };
        let queues: Vec<u64> = lock(&self.running).keys().copied().collect();
        for queue in queues {
            self.finished(QueueHandle(queue));
        }
        self.server.remove(connected.key);
        device.free(connected.address as usize, AllocKind::HOST)
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
