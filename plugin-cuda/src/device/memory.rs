//! Device memory from the stream-ordered allocator, page-locked host ranges and peer access.

use super::*;

impl CudaDevice {
    // ---- memory ----

    /// Device memory from the stream-ordered allocator, on a stream of its own: it does not
    /// wait for running kernels, so device-side malloc pools can grow while a kernel runs.
    pub(super) fn alloc_non_blocking(&self, size: u64) -> driver::Result<u64> {
        if !self.driver.has_async_allocator() {
            return self.driver.alloc_device(size);
        }
        let stream = self.allocation_stream()?;
        let ptr = self.driver.alloc_async(size, stream)?;
        if let Err(e) = self.driver.synchronize(stream) {
            // The caller never sees the address: free it (stream-ordered, else synchronously).
            if self.driver.free_async(ptr, stream).is_err() {
                let _ = self.driver.free_device(ptr);
            }
            return Err(e);
        }
        Ok(ptr)
    }

    /// The allocator's stream, created on first use; the device owns it.
    pub(super) fn allocation_stream(&self) -> driver::Result<Stream> {
        let mut slot = lock(&self.allocation_stream);
        if let Some(s) = &*slot {
            return Ok(s.handle());
        }
        let s = OwnedStream::create(&self.driver)?;
        let handle = s.handle();
        *slot = Some(s);
        Ok(handle)
    }

    /// Page-locks `[host, host + size)` for every context (the plugin counts pins, see
    /// `CudaPlugin::pin_memory`): the address the device uses for `host`, and whether this call
    /// locked it (`false`: the program or another library had registered it already; it stays
    /// registered after the last unpin).
    pub fn page_lock(&self, host: usize, size: u64) -> Result<(u64, bool)> {
        self.activate()?;
        let what = || format!("page-locking {size} bytes at {host:#x}");
        let ours = self
            .driver
            .register_host(host, size)
            .map_err(|e| failed(what(), e))?;
        match self.driver.host_device_pointer(host) {
            Ok(device) => Ok((device, ours)),
            Err(e) => {
                if ours {
                    let _ = self.driver.unregister_host(host);
                }
                Err(failed(what(), e))
            }
        }
    }

    /// Undoes `page_lock` of the range starting at `start`.
    pub fn page_unlock(&self, start: usize) -> Result<()> {
        self.activate()?;
        self.driver
            .unregister_host(start)
            .map_err(|e| failed(format!("unlocking {start:#x}"), e))
    }

    // ---- copies ----

    pub(super) fn peer_access(&self, peer: &CudaDevice) -> Result<bool> {
        let index = peer.identity.ordinal as usize;
        let mut peers = lock(&self.peers);
        match peers.get(index).copied() {
            Some(PeerAccess::Enabled) => return Ok(true),
            Some(PeerAccess::Unavailable) | None => return Ok(false),
            Some(PeerAccess::Unknown) => {}
        }
        self.activate()?;
        let can = self
            .driver
            .can_access_peer(self.identity.handle, peer.identity.handle)
            .map_err(|e| failed("checking peer access", e))?;
        let state = if !can {
            PeerAccess::Unavailable
        } else {
            match self.driver.enable_peer_access(peer.context) {
                Ok(()) => PeerAccess::Enabled,
                Err(e) if e.code == driver::codes::TOO_MANY_PEERS => {
                    log::debug!("cuda: too many peers, copying through the driver instead");
                    PeerAccess::Unavailable
                }
                Err(e) => return Err(failed("enabling peer access", e)),
            }
        };
        peers[index] = state;
        Ok(state == PeerAccess::Enabled)
    }
}
