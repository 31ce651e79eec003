//! The server's side of one port, as LLVM 22's protocol runs it: the client always speaks
//! first, and every `send` of one side is met by a `recv` of the other. Each step waits for the
//! port to be the server's (the mailbox words differ), works on the packets of the client's
//! active lanes, and hands the port back by flipping the server's word.

use super::mailbox::{Mailbox, Packet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How long the server spins for the client's next packet of a request it is serving.
const SPIN_WITHIN_REQUEST: Duration = Duration::from_micros(10);

/// Why a port's exchange ended early.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PortError {
    /// The server is stopping while it waited for the client.
    Stopped,
    /// The client sent a size no lane buffer can hold.
    TooLarge(u64),
}

/// Payload bytes of a first packet of `send_n` (its first word is the size).
const FIRST_CHUNK: u64 = 56;
/// Payload bytes of every later packet.
const CHUNK: u64 = 64;
/// The most bytes one lane may send in one `recv_n` (a larger size is a damaged client).
pub const MAX_TRANSFER: u64 = 1 << 30;

/// An open port, taken while the client's request was pending.
pub struct Port<'a> {
    mailbox: &'a Mailbox,
    index: u32,
    out: u32,
    /// The last step was a receive (the next one first hands the port back).
    receive: bool,
    owns_buffer: bool,
    mask: u64,
    opcode: u32,
    stop: &'a AtomicBool,
}

impl<'a> Port<'a> {
    /// The first port from `start` on with a request pending, if any.
    pub fn try_open(mailbox: &'a Mailbox, start: u32, stop: &'a AtomicBool) -> Option<Port<'a>> {
        (start..mailbox.ports()).find_map(|index| {
            let out = mailbox.outbox(index);
            if mailbox.inbox(index) == out {
                return None;
            }
            let (mask, opcode) = mailbox.header(index);
            Some(Port {
                mailbox,
                index,
                out,
                receive: false,
                owns_buffer: true,
                mask,
                opcode,
                stop,
            })
        })
    }

    pub fn opcode(&self) -> u32 {
        self.opcode
    }

    pub fn index(&self) -> u32 {
        self.index
    }

    /// One past the highest active lane: what a per-lane table of this request needs (a CPU
    /// client, or a GPU's single calling thread, has one lane where the mailbox has a warp's).
    pub fn lane_span(&self) -> usize {
        let highest = 64 - self.mask.leading_zeros() as usize;
        highest.min(self.mailbox.lanes().min(64) as usize)
    }

    /// The client's active lanes that exist on this mailbox.
    pub fn lanes(&self) -> impl Iterator<Item = u32> + '_ {
        let mask = self.mask;
        (0..self.mailbox.lanes().min(64)).filter(move |lane| mask & (1 << lane) != 0)
    }

    /// Waits until the port is the server's again: spinning for the few microseconds a client
    /// in the middle of a request takes to answer, then yielding, then sleeping.
    fn wait_for_ownership(&self) -> Result<(), PortError> {
        let started = Instant::now();
        let mut spins = 0u32;
        let mut spinning = true;
        while self.mailbox.inbox(self.index) == self.out {
            if self.stop.load(Ordering::Relaxed) {
                return Err(PortError::Stopped);
            }
            if spinning {
                std::hint::spin_loop();
                spins = spins.wrapping_add(1);
                // The clock is read every 64 turns: it costs more than a turn.
                spinning = spins & 63 != 0 || started.elapsed() < SPIN_WITHIN_REQUEST;
            } else if started.elapsed() < Duration::from_micros(50) {
                std::thread::yield_now();
            } else {
                std::thread::sleep(Duration::from_micros(20));
            }
        }
        Ok(())
    }

    fn hand_back(&mut self) {
        self.out ^= 1;
        self.mailbox.set_outbox(self.index, self.out);
    }

    /// Reads each active lane's packet.
    pub fn recv(&mut self, mut read: impl FnMut(u32, &Packet)) -> Result<(), PortError> {
        if self.receive {
            self.hand_back();
            self.owns_buffer = false;
        }
        if !self.owns_buffer {
            self.wait_for_ownership()?;
        }
        for lane in self.lanes().collect::<Vec<_>>() {
            read(lane, &self.mailbox.read_packet(self.index, lane));
        }
        self.receive = true;
        self.owns_buffer = true;
        Ok(())
    }

    /// Fills each active lane's packet and hands the port to the client.
    pub fn send(&mut self, mut fill: impl FnMut(u32, &mut Packet)) -> Result<(), PortError> {
        if !self.owns_buffer {
            self.wait_for_ownership()?;
        }
        for lane in self.lanes().collect::<Vec<_>>() {
            let mut packet = self.mailbox.read_packet(self.index, lane);
            fill(lane, &mut packet);
            self.mailbox.write_packet(self.index, lane, &packet);
        }
        self.hand_back();
        self.owns_buffer = false;
        self.receive = false;
        Ok(())
    }

    /// A receive whose packets are changed in place and sent back.
    pub fn recv_and_send(
        &mut self,
        mut work: impl FnMut(u32, &mut Packet),
    ) -> Result<(), PortError> {
        let mut packets = Vec::new();
        self.recv(|lane, packet| {
            let mut packet = *packet;
            work(lane, &mut packet);
            packets.push((lane, packet));
        })?;
        self.send(|lane, packet| {
            if let Some((_, answer)) = packets.iter().find(|(l, _)| *l == lane) {
                *packet = *answer;
            }
        })
    }

    /// Each active lane's buffer of any size, sent in packets (`send_n` on the client); `None`
    /// for the lanes not active, by lane.
    pub fn recv_n(&mut self) -> Result<Vec<Option<Vec<u8>>>, PortError> {
        let lanes = self.lane_span();
        let mut data: Vec<Option<Vec<u8>>> = vec![None; lanes];
        let mut sizes = vec![0u64; lanes];
        let mut too_large = None;
        self.recv(|lane, packet| {
            let size = packet[0];
            if size > MAX_TRANSFER {
                too_large = Some(size);
                return;
            }
            sizes[lane as usize] = size;
            let first = size.min(FIRST_CHUNK) as usize;
            let mut bytes = Vec::with_capacity(size as usize);
            bytes.extend_from_slice(&packet_bytes(packet)[8..8 + first]);
            data[lane as usize] = Some(bytes);
        })?;
        if let Some(size) = too_large {
            return Err(PortError::TooLarge(size));
        }
        let longest = sizes.iter().copied().max().unwrap_or(0);
        let mut offset = FIRST_CHUNK;
        while offset < longest {
            self.recv(|lane, packet| {
                let size = sizes[lane as usize];
                if let (Some(bytes), true) = (data[lane as usize].as_mut(), offset < size) {
                    let len = (size - offset).min(CHUNK) as usize;
                    bytes.extend_from_slice(&packet_bytes(packet)[..len]);
                }
            })?;
            offset += CHUNK;
        }
        Ok(data)
    }

    /// Sends each lane's buffer in packets (`recv_n` on the client); lanes without one send
    /// nothing.
    pub fn send_n(&mut self, data: &[Option<Vec<u8>>]) -> Result<(), PortError> {
        let bytes_of = |lane: u32| data.get(lane as usize).and_then(Option::as_ref);
        let longest = self
            .lanes()
            .filter_map(|lane| bytes_of(lane).map(|b| b.len() as u64))
            .max()
            .unwrap_or(0);
        self.send(|lane, packet| {
            let bytes = bytes_of(lane).map_or(&[][..], Vec::as_slice);
            packet[0] = bytes.len() as u64;
            let first = bytes.len().min(FIRST_CHUNK as usize);
            let mut payload = [0u8; 56];
            payload[..first].copy_from_slice(&bytes[..first]);
            for (word, chunk) in packet[1..].iter_mut().zip(payload.chunks(8)) {
                *word = u64::from_le_bytes(chunk.try_into().unwrap_or([0; 8]));
            }
        })?;
        let mut offset = FIRST_CHUNK as usize;
        while (offset as u64) < longest {
            self.send(|lane, packet| {
                let bytes = bytes_of(lane).map_or(&[][..], Vec::as_slice);
                if offset < bytes.len() {
                    let len = (bytes.len() - offset).min(CHUNK as usize);
                    let mut payload = [0u8; 64];
                    payload[..len].copy_from_slice(&bytes[offset..offset + len]);
                    for (word, chunk) in packet.iter_mut().zip(payload.chunks(8)) {
                        *word = u64::from_le_bytes(chunk.try_into().unwrap_or([0; 8]));
                    }
                }
            })?;
            offset += CHUNK as usize;
        }
        Ok(())
    }

    /// Ends the exchange; a port the server holds goes back to the client.
    pub fn close(mut self) {
        if self.owns_buffer {
            self.hand_back();
        }
    }
}

/// A packet's bytes, as the client wrote them (little-endian words).
fn packet_bytes(packet: &Packet) -> [u8; 64] {
    let mut bytes = [0u8; 64];
    for (chunk, word) in bytes.chunks_mut(8).zip(packet) {
        chunk.copy_from_slice(&word.to_le_bytes());
    }
    bytes
}
