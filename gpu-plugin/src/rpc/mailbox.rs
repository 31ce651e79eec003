//! The memory a GPU and the host share for remote calls, laid out as LLVM's `rpc.h` lays it out
//! (the device's client is LLVM's own code, so the layout is not ours to choose; LLVM 19 and 22
//! agree on it but for the opcode's width, see [`Protocol`]):
//!
//! ```text
//! u32 client_inbox[ports]     (the server's outbox)
//! u32 client_outbox[ports]    (the server's inbox)
//! Header header[ports]        (u64 lane mask, u32 opcode (u16 in 19); 16 bytes, 8-aligned)
//! Packet packet[ports][lanes] (eight u64 each, 8-aligned)
//! ```
//!
//! A port belongs to the client while its two mailbox words are equal and to the server while
//! they differ; each side only ever writes its own outbox word.

use super::protocol::Protocol;
use std::sync::atomic::{AtomicU32, Ordering};

/// The most ports LLVM's protocol allows.
pub const MAX_PORTS: u32 = 4096;

/// One lane's packet: eight words.
pub type Packet = [u64; 8];

const MAILBOX_WORD: u64 = 4;
const HEADER_BYTES: u64 = 16;
const PACKET_BYTES: u64 = 64;

fn align_up(value: u64, to: u64) -> u64 {
    value.div_ceil(to) * to
}

fn header_offset(ports: u32) -> u64 {
    align_up(2 * MAILBOX_WORD * u64::from(ports), 8)
}

fn packet_offset(ports: u32) -> u64 {
    align_up(header_offset(ports) + HEADER_BYTES * u64::from(ports), 8)
}

/// Bytes of shared memory for `ports` ports of `lanes` lanes each.
pub fn allocation_size(ports: u32, lanes: u32) -> u64 {
    packet_offset(ports) + PACKET_BYTES * u64::from(ports) * u64::from(lanes)
}

/// The device's client object (`rpc::Client`, the same bytes in LLVM 19 and 22) for a mailbox
/// at `address` with `ports` ports: the port count, the client's view of the four arrays and
/// its lock bits (all clear), as the device reads it.
pub fn client_bytes(ports: u32, address: u64) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(CLIENT_BYTES);
    bytes.extend_from_slice(&ports.to_le_bytes());
    bytes.extend_from_slice(&[0; 4]);
    let inbox = address;
    let outbox = address + MAILBOX_WORD * u64::from(ports);
    let header = address + header_offset(ports);
    let packet = address + packet_offset(ports);
    for pointer in [inbox, outbox, header, packet] {
        bytes.extend_from_slice(&pointer.to_le_bytes());
    }
    bytes.resize(CLIENT_BYTES, 0);
    bytes
}

/// `sizeof(rpc::Client)` in LLVM 19 and 22: the port count (padded to 8), four pointers and a lock
/// bit for each of the most ports.
pub const CLIENT_BYTES: usize = 8 + 4 * 8 + (MAX_PORTS as usize / 32) * 4;

/// The server's view of one shared mailbox.
pub struct Mailbox {
    base: usize,
    ports: u32,
    lanes: u32,
    protocol: Protocol,
}

// SAFETY: a mailbox is shared memory made for two parties; every access to it is atomic (the
// mailbox words) or happens while the protocol gives this side the port.
unsafe impl Send for Mailbox {}
// SAFETY: as above; the server takes a port before touching its header or packets.
unsafe impl Sync for Mailbox {}

impl Mailbox {
    /// The mailbox at `base`, `allocation_size(ports, lanes)` bytes, whose client speaks
    /// `protocol`.
    ///
    /// # Safety
    /// `base` is 8-aligned and the memory stays valid and shared with the client (no other
    /// server) for the life of the mailbox.
    pub unsafe fn new(base: usize, ports: u32, lanes: u32, protocol: Protocol) -> Mailbox {
        Mailbox {
            base,
            ports,
            lanes,
            protocol,
        }
    }

    pub fn protocol(&self) -> Protocol {
        self.protocol
    }

    pub fn ports(&self) -> u32 {
        self.ports
    }

    pub fn lanes(&self) -> u32 {
        self.lanes
    }

    pub fn base(&self) -> usize {
        self.base
    }

    fn word(&self, offset: u64) -> &AtomicU32 {
        // SAFETY: `offset` lies in the mailbox arrays (callers index below `ports`), which
        // `new`'s caller keeps valid; u32 words there are 4-aligned as the base is 8-aligned.
        unsafe { &*((self.base + offset as usize) as *const AtomicU32) }
    }

    /// The word the client writes for `port`.
    pub fn inbox(&self, port: u32) -> u32 {
        self.word(MAILBOX_WORD * u64::from(self.ports + port))
            .load(Ordering::Acquire)
    }

    /// The word the server writes for `port`.
    pub fn outbox(&self, port: u32) -> u32 {
        self.word(MAILBOX_WORD * u64::from(port))
            .load(Ordering::Relaxed)
    }

    /// Hands `port` over to the client with `value` as the server's word, after every write
    /// to its packets.
    pub fn set_outbox(&self, port: u32, value: u32) {
        self.word(MAILBOX_WORD * u64::from(port))
            .store(value, Ordering::Release);
    }

    /// `port`'s header: the client's active lanes and the opcode, named as LLVM 22 names it.
    pub fn header(&self, port: u32) -> (u64, u32) {
        let at = self.base + (header_offset(self.ports) + HEADER_BYTES * u64::from(port)) as usize;
        // SAFETY: the header lies in the mailbox and is 8-aligned; the client wrote it before
        // handing the port over (acquired by the inbox load that gave it to the server).
        let (mask, word) = unsafe {
            (
                std::ptr::read_volatile(at as *const u64),
                std::ptr::read_volatile((at + 8) as *const u32),
            )
        };
        (mask, self.protocol.opcode(word))
    }

    /// A copy of `lane`'s packet of `port`.
    pub fn read_packet(&self, port: u32, lane: u32) -> Packet {
        // SAFETY: the packet lies in the mailbox and is 8-aligned; the server holds the port.
        unsafe { std::ptr::read_volatile(self.packet(port, lane)) }
    }

    /// Writes `lane`'s packet of `port`.
    pub fn write_packet(&self, port: u32, lane: u32, packet: &Packet) {
        // SAFETY: as read_packet.
        unsafe { std::ptr::write_volatile(self.packet(port, lane), *packet) }
    }

    fn packet(&self, port: u32, lane: u32) -> *mut Packet {
        let index = u64::from(port) * u64::from(self.lanes) + u64::from(lane);
        (self.base + (packet_offset(self.ports) + PACKET_BYTES * index) as usize) as *mut Packet
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_layout_is_llvm_22s() {
        // 64 ports of 32 lanes: mailboxes 2 x 256 bytes, headers 1 KiB, packets 128 KiB.
        assert_eq!(header_offset(64), 512);
        assert_eq!(packet_offset(64), 512 + 1024);
        assert_eq!(allocation_size(64, 32), 512 + 1024 + 64 * 32 * 64);
        // An odd port count: the headers start 8-aligned.
        assert_eq!(header_offset(3), 24);
        assert_eq!(CLIENT_BYTES, 552);
        let client = client_bytes(3, 0x1000);
        assert_eq!(client.len(), 552);
        assert_eq!(&client[..4], &3u32.to_le_bytes());
        let pointer =
            |i: usize| u64::from_le_bytes(client[8 + 8 * i..16 + 8 * i].try_into().unwrap());
        assert_eq!(
            [pointer(0), pointer(1), pointer(2), pointer(3)],
            [0x1000, 0x100c, 0x1018, 0x1048]
        );
        assert!(client[40..].iter().all(|&b| b == 0));
    }
}
