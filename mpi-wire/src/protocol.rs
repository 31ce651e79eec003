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
/// The program's liveness checks of a device process (one byte), and the answers, which a
/// thread of the device process gives whatever its request loop is doing.
pub const HEARTBEAT_TAG: i32 = 2;
pub const HEARTBEAT_REPLY_TAG: i32 = 3;
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
    /// A notice without a reply (only under a launcher that lets a job outlive a process): the
    /// device process of the rank that follows died, so copies with it end with an error.
    PeerGone,
    /// A 1-, 2- or 4-byte pattern repeated over device memory, written by the device process:
    /// the request carries the pattern, and no data follows ([`Writer::fill`]). Sent only to a
    /// device process that announced [`CAN_FILL`]. New operations go last: the bytes of the
    /// others stay what older device processes read.
    Fill,
}

/// What a device process can do beyond the operations every version knows, announced at the
/// end of its `ListDevices` reply ([`Reader::capabilities`]). A device process older than this
/// field sends none, read as 0, so the program never sends it a request it cannot read (it
/// would not even know which reply tag to answer on).
pub const CAN_FILL: u64 = 1 << 0;
/// Everything this build's device process can do.
pub const CAPABILITIES: u64 = CAN_FILL;

impl Op {
    fn from_byte(b: u8) -> Option<Op> {
        Op::ALL.get(usize::from(b)).copied()
    }
}

/// A request's header: operation, reply tag, device.
const HEADER: usize = 1 + 4 + 4;
/// The longest fill pattern.
const MAX_PATTERN: usize = 4;
/// A launch request up to its argument values: header, kernel, queue, 12 bytes of teams and
/// of threads, shared memory, trip count, version, flags, argument count.
const LAUNCH_FIXED: usize = HEADER + 8 + 8 + 12 + 12 + 4 + 8 + 4 + 8 + 4;

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
    /// A fill request whole: header, queue, destination, size, then the pattern (as
    /// [`Writer::bytes`] writes it). The fields are those of [`Reader::fill`].
    pub fn fill(
        reply_tag: i32,
        device: u32,
        queue: u64,
        dst: u64,
        size: u64,
        pattern: &[u8],
    ) -> Writer {
        let mut w = Writer::request(Op::Fill, reply_tag, device);
        w.u64(queue).u64(dst).u64(size).bytes(pattern);
        w
    }
    /// A launch request whole: header, kernel, queue, configuration and argument values, in
    /// one fixed block and one write for the values (an empty region's request is encoded in
    /// a few dozen instructions; the fields are those of [`Reader::launch`]).
    pub fn launch(
        &mut self,
        reply_tag: i32,
        device: u32,
        kernel: u64,
        queue: u64,
        c: &LaunchConfig,
        args: &[usize],
    ) -> &mut Self {
        let mut b = [0u8; LAUNCH_FIXED];
        let mut at = 0;
        let mut put = |bytes: &[u8]| {
            b[at..at + bytes.len()].copy_from_slice(bytes);
            at += bytes.len();
        };
        put(&[Op::Launch as u8]);
        put(&reply_tag.to_le_bytes());
        put(&device.to_le_bytes());
        put(&kernel.to_le_bytes());
        put(&queue.to_le_bytes());
        for v in c.num_teams.iter().chain(&c.thread_limit) {
            put(&v.to_le_bytes());
        }
        put(&c.dyn_shared_mem.to_le_bytes());
        put(&c.tripcount.to_le_bytes());
        put(&c.kernel_args_version.to_le_bytes());
        put(&c.flags.to_le_bytes());
        put(&(args.len() as u32).to_le_bytes());
        debug_assert_eq!(at, LAUNCH_FIXED);
        self.0.clear();
        self.0.reserve(LAUNCH_FIXED + 8 * args.len());
        self.0.extend_from_slice(&b);
        for a in args {
            self.0.extend_from_slice(&(*a as u64).to_le_bytes());
        }
        self
    }
}

/// A fill request as read ([`Reader::fill`]).
#[derive(Debug, PartialEq, Eq)]
pub struct Fill<'a> {
    pub queue: u64,
    pub dst: usize,
    pub size: u64,
    pub pattern: &'a [u8],
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
    /// The rest of a launch request after its header ([`Writer::launch`]): kernel, queue,
    /// configuration and the number of argument values, which follow (read with `u64`).
    pub fn launch(&mut self) -> Result<(u64, u64, LaunchConfig, usize), PluginError> {
        let b: &[u8; LAUNCH_FIXED - HEADER] = self
            .take(LAUNCH_FIXED - HEADER)?
            .try_into()
            .expect("the length taken");
        let u32_at = |at: usize| u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"));
        let u64_at = |at: usize| u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"));
        let config = LaunchConfig {
            num_teams: [u32_at(16), u32_at(20), u32_at(24)],
            thread_limit: [u32_at(28), u32_at(32), u32_at(36)],
            dyn_shared_mem: u32_at(40),
            tripcount: u64_at(44),
            kernel_args_version: u32_at(52),
            flags: u64_at(56),
        };
        let count = u32_at(64) as usize;
        if self.bytes.len() < count * 8 {
            return Err(malformed("too few launch arguments"));
        }
        Ok((u64_at(0), u64_at(8), config, count))
    }
    /// The rest of a fill request after its header ([`Writer::fill`]): queue, destination,
    /// size and pattern. A pattern other than 1, 2 or 4 bytes, a size that is not a whole
    /// number of patterns, and bytes after the pattern are refused: such a request was damaged.
    pub fn fill(&mut self) -> Result<Fill<'a>, PluginError> {
        let (queue, dst, size) = (self.u64()?, self.usize()?, self.u64()?);
        let len = self.usize()?;
        if !matches!(len, 1 | 2 | MAX_PATTERN) {
            return Err(malformed("fill pattern length"));
        }
        let pattern = self.take(len)?;
        if size % len as u64 != 0 {
            return Err(malformed("fill size"));
        }
        if !self.bytes.is_empty() {
            return Err(malformed("bytes after a fill request"));
        }
        Ok(Fill {
            queue,
            dst,
            size,
            pattern,
        })
    }
    /// A request's operation, reply tag and device.
    pub fn request(&mut self) -> Result<(Op, i32, u32), PluginError> {
        let op = Op::from_byte(self.u8()?).ok_or_else(|| malformed("unknown operation"))?;
        Ok((op, self.i32()?, self.u32()?))
    }
    /// The reply tag of a request whose operation [`Reader::request`] refused (one of a newer
    /// program's), so that the device process can refuse it on that tag instead of leaving the
    /// program waiting. `None` for a notice (tag below [`FIRST_REPLY_TAG`]: nobody waits) or a
    /// message shorter than a header.
    pub fn unknown_request_tag(bytes: &[u8]) -> Option<i32> {
        let tag = i32::from_le_bytes(bytes.get(1..5)?.try_into().ok()?);
        (bytes.len() >= HEADER && tag >= FIRST_REPLY_TAG).then_some(tag)
    }
    /// What a device process can do, at the end of its `ListDevices` reply (after its
    /// summary): nothing beyond every version's operations when the field is absent (a device
    /// process older than it).
    pub fn capabilities(&mut self) -> u64 {
        self.u64().unwrap_or(0)
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
        let mut w = Writer::request(Op::Alloc, 77, 2);
        w.u64(0xdead_beef).bytes(&[1, 2, 3]).str("k");
        let mut r = Reader::new(&w.0);
        assert_eq!(r.request().unwrap(), (Op::Alloc, 77, 2));
        assert_eq!(r.u64().unwrap(), 0xdead_beef);
        assert_eq!(r.bytes().unwrap(), &[1, 2, 3]);
        assert_eq!(r.str().unwrap(), "k");
        assert!(r.u8().is_err(), "reading past the end is an error");

        let mut w = Writer::default();
        w.launch(78, 3, 0xfeed, 9, &config, &[5, usize::MAX]);
        let mut r = Reader::new(&w.0);
        assert_eq!(r.request().unwrap(), (Op::Launch, 78, 3));
        assert_eq!(r.launch().unwrap(), (0xfeed, 9, config, 2));
        assert_eq!((r.u64().unwrap(), r.u64().unwrap()), (5, u64::MAX));
        assert!(r.u8().is_err(), "nothing follows the arguments");

        // A request cut short, in its fixed part or its values, is refused.
        for cut in [w.0.len() - 1, LAUNCH_FIXED - 1] {
            let mut r = Reader::new(&w.0[..cut]);
            r.request().unwrap();
            assert!(r.launch().is_err(), "cut at {cut}");
        }
    }

    #[test]
    fn a_fill_request_reads_back_as_written_and_carries_no_data() {
        for pattern in [&[0xa5][..], &[1, 2], &[1, 2, 3, 4]] {
            let w = Writer::fill(79, 4, 6, 0x7000_0001, 12, pattern);
            // Header, queue, destination, size, the pattern's length and the pattern: the
            // request's length does not grow with the size filled.
            assert_eq!(w.0.len(), HEADER + 8 * 4 + pattern.len());
            let mut r = Reader::new(&w.0);
            assert_eq!(r.request().unwrap(), (Op::Fill, 79, 4));
            assert_eq!(
                r.fill().unwrap(),
                Fill {
                    queue: 6,
                    dst: 0x7000_0001,
                    size: 12,
                    pattern
                }
            );
        }
    }

    #[test]
    fn a_damaged_fill_request_is_refused() {
        let refused = |bytes: &[u8]| {
            let mut r = Reader::new(bytes);
            r.request().unwrap();
            r.fill().is_err()
        };
        let w = Writer::fill(80, 0, 0, 0x1000, 8, &[1, 2, 3, 4]);
        // Cut anywhere after the header: in the fixed fields, the length or the pattern.
        for cut in HEADER..w.0.len() {
            assert!(refused(&w.0[..cut]), "cut at {cut}");
        }
        // Bytes after the pattern.
        let mut longer = w.0.clone();
        longer.push(0);
        assert!(refused(&longer));
        // A pattern of 3, 0 or 8 bytes; a size that is no whole number of patterns.
        for pattern in [&[1, 2, 3][..], &[], &[0; 8]] {
            assert!(refused(&Writer::fill(80, 0, 0, 0x1000, 24, pattern).0));
        }
        assert!(refused(&Writer::fill(80, 0, 0, 0x1000, 6, &[1, 2, 3, 4]).0));
        // A pattern length beyond the message.
        let mut huge = Writer::request(Op::Fill, 80, 0);
        huge.u64(0).u64(0x1000).u64(4).u64(u64::MAX);
        assert!(refused(&huge.0));
    }

    #[test]
    fn an_unknown_request_is_answered_on_its_tag_and_a_notice_is_not() {
        let mut newer = Writer::request(Op::Fill, 81, 1);
        newer.0[0] = Op::ALL.len() as u8;
        assert!(Reader::new(&newer.0).request().is_err());
        assert_eq!(Reader::unknown_request_tag(&newer.0), Some(81));
        let mut notice = Writer::request(Op::PeerGone, 0, 0);
        notice.0[0] = Op::ALL.len() as u8;
        assert_eq!(Reader::unknown_request_tag(&notice.0), None);
        assert_eq!(Reader::unknown_request_tag(&newer.0[..HEADER - 1]), None);
    }

    #[test]
    fn a_device_list_without_capabilities_offers_none() {
        // As a device process older than the field answers: count, devices, summary.
        let mut older = Writer::ok();
        older.u32(1).str("host").i32(0).str("host: 1 devices");
        let mut newer = Writer::ok();
        newer.0.extend_from_slice(&older.0[4..]);
        newer.u64(CAPABILITIES);
        for (reply, want) in [(&older, 0), (&newer, CAN_FILL)] {
            let mut r = Reader::new(&reply.0);
            r.reply().unwrap();
            assert_eq!(r.u32().unwrap(), 1);
            assert_eq!((r.str().unwrap(), r.i32().unwrap()), ("host", 0));
            assert_eq!(r.str().unwrap(), "host: 1 devices");
            assert_eq!(r.capabilities() & CAN_FILL, want);
        }
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
        // Older device processes read these bytes: new operations only ever go last.
        assert_eq!(
            (Op::CopyToDevice as u8, Op::PeerGone as u8, Op::Fill as u8),
            (12, 21, 22)
        );
        assert_eq!(Op::from_byte(Op::ALL.len() as u8), None);
    }
}
