//! The messages between the MPI plugin (in the program) and a device process.
//!
//! The program sends each request as one message with [`REQUEST_TAG`] to the device process that
//! owns the device. A request names a reply tag, unique among the program's requests in flight;
//! the device process answers every request with exactly one reply message on that tag
//! (`0` and the result, or an error code and its message). Bulk data travels in separate
//! messages on the same tag: after the request for a copy to the device, before the reply of a
//! copy from it. Messages between one pair of processes on one tag arrive in the order sent, so
//! no sequence numbers are needed.
//!
//! A device process executes requests one at a time, in arrival order, each to completion
//! (its device queue synchronised) before it replies: the program's queues and events therefore
//! only wait for replies. Copies between two device processes run on threads of their own.

use plugin_api::{ErrorCode, LaunchConfig, PluginError};

/// The longest reply: the program receives replies into a buffer of this size, without first
/// asking MPI for their length. Device processes replace a longer reply by an error.
pub const MAX_REPLY: usize = 64 << 10;

/// The longest request sent as one message: device processes receive requests into a buffer
/// of this size, without first asking MPI for their length. A longer one (an image, a launch
/// with very many arguments) is announced by an [`Op::Large`] request and follows on a data tag.
pub const MAX_REQUEST: usize = 64 << 10;

/// Tag of requests from the program to a device process.
pub const REQUEST_TAG: i32 = 1;
/// Reply tags are taken from here up to the library's tag bound.
pub const FIRST_REPLY_TAG: i32 = 16;
/// What a process tells the others when the job starts (`MPI_Allgather` on a communicator of
/// our own): the program's ranks and the device processes'.
pub const ROLE_PROGRAM: i32 = 0x6f6d_7000;
pub const ROLE_DEVICE: i32 = 0x6f6d_7001;

/// Declares [`Op`] and the list of its values, from one list: a value added to the enum is
/// then never missing from the decoder.
macro_rules! operations {
    ($($(#[$doc:meta])* $name:ident,)*) => {
        /// What a request asks for.
        #[repr(u8)]
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum Op {
            $($(#[$doc])* $name,)*
        }

        impl Op {
            const ALL: &'static [Op] = &[$(Op::$name,)*];
        }
    };
}

operations! {
    /// The devices a process offers: count, then per device its plugin and local number.
    ListDevices,
    /// An image's bytes, kept by the device process under the program's number for it: sent
    /// once per device process, then named by `CheckImage` and `LoadImage`.
    StoreImage,
    CheckImage,
    InitDevice,
    DeviceInfo,
    LoadImage,
    UnloadImage,
    GetKernel,
    GetGlobal,
    Alloc,
    Free,
    /// A queue of the device's; the program reuses it, and the device process releases its
    /// queues when it ends.
    CreateQueue,
    CopyToDevice,
    CopyFromDevice,
    /// A copy between two devices of the same process.
    CopyWithin,
    /// The source half of a copy between two processes: read, send to the peer.
    SendToPeer,
    /// The destination half: receive from the peer, write.
    ReceiveFromPeer,
    Launch,
    MemoryInfo,
    /// A request longer than [`MAX_REQUEST`]: its length and the tag its bytes follow on.
    Large,
    /// The program ends: the device process finalises MPI and exits.
    Shutdown,
}

impl Op {
    fn from_byte(b: u8) -> Option<Op> {
        Op::ALL.get(usize::from(b)).copied()
    }
}

/// Builds a message.
#[derive(Default)]
pub struct Writer(pub Vec<u8>);

impl Writer {
    /// A request: operation, reply tag, device.
    pub fn request(op: Op, reply_tag: i32, device: u32) -> Writer {
        let mut w = Writer(Vec::with_capacity(64));
        w.u8(op as u8).i32(reply_tag).u32(device);
        w
    }
    /// Starts a request in this writer's buffer, which keeps its capacity.
    pub fn start(&mut self, op: Op, reply_tag: i32, device: u32) -> &mut Self {
        self.0.clear();
        self.u8(op as u8).i32(reply_tag).u32(device)
    }
    /// A successful reply; the result follows.
    pub fn ok() -> Writer {
        let mut w = Writer(Vec::with_capacity(32));
        w.i32(0);
        w
    }
    /// A failed reply.
    pub fn error(e: &PluginError) -> Writer {
        let mut w = Writer::default();
        w.i32(e.code.0).str(&e.message);
        w
    }
    pub fn u8(&mut self, v: u8) -> &mut Self {
        self.0.push(v);
        self
    }
    pub fn u32(&mut self, v: u32) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    pub fn i32(&mut self, v: i32) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    pub fn u64(&mut self, v: u64) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    pub fn bytes(&mut self, v: &[u8]) -> &mut Self {
        self.u64(v.len() as u64);
        self.0.extend_from_slice(v);
        self
    }
    pub fn str(&mut self, v: &str) -> &mut Self {
        self.bytes(v.as_bytes())
    }
    pub fn launch_config(&mut self, c: &LaunchConfig) -> &mut Self {
        for v in c.num_teams.iter().chain(&c.thread_limit) {
            self.u32(*v);
        }
        self.u32(c.dyn_shared_mem)
            .u64(c.tripcount)
            .u32(c.kernel_args_version)
            .u64(c.flags)
    }
}

/// Reads a message; every read fails cleanly on a short or malformed message.
#[derive(Clone)]
pub struct Reader<'a> {
    bytes: &'a [u8],
}

fn malformed(what: &str) -> PluginError {
    PluginError::new(ErrorCode::FAILED, format!("malformed MPI message: {what}"))
}

impl<'a> Reader<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        Reader { bytes }
    }
    fn take(&mut self, n: usize) -> Result<&'a [u8], PluginError> {
        if self.bytes.len() < n {
            return Err(malformed("too short"));
        }
        let (head, rest) = self.bytes.split_at(n);
        self.bytes = rest;
        Ok(head)
    }
    pub fn u8(&mut self) -> Result<u8, PluginError> {
        Ok(self.take(1)?[0])
    }
    pub fn u32(&mut self) -> Result<u32, PluginError> {
        Ok(u32::from_le_bytes(
            self.take(4)?.try_into().expect("4 bytes"),
        ))
    }
    pub fn i32(&mut self) -> Result<i32, PluginError> {
        Ok(i32::from_le_bytes(
            self.take(4)?.try_into().expect("4 bytes"),
        ))
    }
    pub fn u64(&mut self) -> Result<u64, PluginError> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }
    pub fn usize(&mut self) -> Result<usize, PluginError> {
        usize::try_from(self.u64()?).map_err(|_| malformed("size"))
    }
    pub fn bytes(&mut self) -> Result<&'a [u8], PluginError> {
        let len = self.usize()?;
        self.take(len)
    }
    pub fn str(&mut self) -> Result<&'a str, PluginError> {
        std::str::from_utf8(self.bytes()?).map_err(|_| malformed("text"))
    }
    pub fn launch_config(&mut self) -> Result<LaunchConfig, PluginError> {
        let mut c = LaunchConfig::default();
        for v in c.num_teams.iter_mut() {
            *v = self.u32()?;
        }
        for v in c.thread_limit.iter_mut() {
            *v = self.u32()?;
        }
        c.dyn_shared_mem = self.u32()?;
        c.tripcount = self.u64()?;
        c.kernel_args_version = self.u32()?;
        c.flags = self.u64()?;
        Ok(c)
    }
    /// A request's operation, reply tag and device.
    pub fn request(&mut self) -> Result<(Op, i32, u32), PluginError> {
        let op = Op::from_byte(self.u8()?).ok_or_else(|| malformed("unknown operation"))?;
        Ok((op, self.i32()?, self.u32()?))
    }
    /// A reply's outcome: `Ok` leaves the reader at the result.
    pub fn reply(&mut self) -> Result<(), PluginError> {
        let code = self.i32()?;
        if code == 0 {
            return Ok(());
        }
        let message = self.str().unwrap_or("(no message)").to_string();
        Err(PluginError::new(ErrorCode(code), message))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_reads_back_as_written() {
        let config = LaunchConfig {
            num_teams: [3, 2, 1],
            thread_limit: [64, 1, 1],
            dyn_shared_mem: 12,
            tripcount: 1000,
            kernel_args_version: 3,
            flags: LaunchConfig::LLVM22_PROGRAM | 1,
        };
        let mut w = Writer::request(Op::Launch, 77, 2);
        w.u64(0xdead_beef)
            .launch_config(&config)
            .bytes(&[1, 2, 3])
            .str("k");
        let mut r = Reader::new(&w.0);
        assert_eq!(r.request().unwrap(), (Op::Launch, 77, 2));
        assert_eq!(r.u64().unwrap(), 0xdead_beef);
        assert_eq!(r.launch_config().unwrap(), config);
        assert_eq!(r.bytes().unwrap(), &[1, 2, 3]);
        assert_eq!(r.str().unwrap(), "k");
        assert!(r.u8().is_err(), "reading past the end is an error");
    }

    #[test]
    fn replies_carry_the_error_code_and_message() {
        let e = PluginError::new(ErrorCode::OUT_OF_MEMORY, "no room");
        let w = Writer::error(&e);
        let got = Reader::new(&w.0).reply().unwrap_err();
        assert_eq!(
            (got.code, got.message.as_str()),
            (ErrorCode::OUT_OF_MEMORY, "no room")
        );
        let mut ok = Writer::ok();
        ok.u64(5);
        let mut r = Reader::new(&ok.0);
        r.reply().unwrap();
        assert_eq!(r.u64().unwrap(), 5);
    }

    #[test]
    fn every_operation_has_its_byte() {
        for b in 0..=255u8 {
            if let Some(op) = Op::from_byte(b) {
                assert_eq!(op as u8, b);
            }
        }
        assert_eq!(Op::from_byte(Op::Shutdown as u8), Some(Op::Shutdown));
        assert_eq!(Op::from_byte(Op::ListDevices as u8), Some(Op::ListDevices));
        assert_eq!(Op::from_byte(Op::ALL.len() as u8), None);
    }
}
