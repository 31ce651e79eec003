//! The RPC server (`gpu_plugin::rpc`) against LLVM's own clients: LLVM 22's `rpc.h` (around
//! tests/programs/rpc_client.cpp) and LLVM 19's older protocol (its libc's `rpc.h`, around
//! tests/programs/rpc_client_19.cpp), from the sources scripts/fetch-llvm-offload-tests.sh
//! fetches, built for x86-64, run on host threads over shared memory: one lane per port as on a
//! CPU, and in their GPU form, warps of host threads (rpc_warp_client.cpp,
//! rpc_warp_client_19.cpp). Every request the server knows, many ports and threads at once,
//! and damaged or unknown requests, which are reported and stop the serving of that mailbox
//! without a crash or a hang.

use gpu_plugin::rpc::handlers::DeviceServices;
use gpu_plugin::rpc::mailbox::{self, Mailbox};
use gpu_plugin::rpc::protocol::Protocol;
use gpu_plugin::rpc::server::RpcServer;
use std::ffi::{c_char, c_int, c_void, CString};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use tests::llvm_suite::{self, Release};
use tests::Compiler;

/// LLVM's client of `protocol` as a shared library, built once.
fn client_library(protocol: Protocol) -> &'static libloading::Library {
    static LLVM22: OnceLock<libloading::Library> = OnceLock::new();
    static LLVM19: OnceLock<libloading::Library> = OnceLock::new();
    let (cell, compiler, program) = match protocol {
        Protocol::Llvm22 => (&LLVM22, "clang++-22", "rpc_client.cpp"),
        Protocol::Llvm19 => (&LLVM19, "clang++-19", "rpc_client_19.cpp"),
    };
    cell.get_or_init(|| build_client(protocol, compiler, program))
}

/// LLVM's client of `protocol` in its GPU form, each lane a host thread (rpc_warp_client.cpp,
/// rpc_warp_client_19.cpp), built once.
fn warp_library(protocol: Protocol) -> &'static libloading::Library {
    static LLVM22: OnceLock<libloading::Library> = OnceLock::new();
    static LLVM19: OnceLock<libloading::Library> = OnceLock::new();
    let (cell, compiler, program) = match protocol {
        Protocol::Llvm22 => (&LLVM22, "clang++-22", "rpc_warp_client.cpp"),
        Protocol::Llvm19 => (&LLVM19, "clang++-19", "rpc_warp_client_19.cpp"),
    };
    cell.get_or_init(|| build_client(protocol, compiler, program))
}

/// tests/programs/`program`, a client of `protocol` around LLVM's sources, built by `compiler`
/// as a shared library and loaded.
fn build_client(protocol: Protocol, compiler: &str, program: &str) -> libloading::Library {
    let release = match protocol {
        Protocol::Llvm22 => Release::Llvm22,
        Protocol::Llvm19 => Release::Llvm19,
    };
    let suite = llvm_suite::suite_root(release).unwrap_or_else(|e| panic!("{e}"));
    let sources = suite.parent().unwrap().parent().unwrap();
    let includes = match protocol {
        Protocol::Llvm22 => [sources.join("libc/shared"), sources.join("offload/include")],
        Protocol::Llvm19 => [sources.join("libc"), sources.to_path_buf()],
    };
    let out = tests::build_dir().join(format!(
        "lib{}-{}.so",
        program.trim_end_matches(".cpp"),
        std::process::id()
    ));
    // LLVM 19's libc headers need the namespace its build would give them.
    let namespace = match protocol {
        Protocol::Llvm22 => None,
        Protocol::Llvm19 => Some("-DLIBC_NAMESPACE=__llvm_libc_19_1_7"),
    };
    let status = std::process::Command::new(compiler)
        .args(["-O2", "-shared", "-fPIC", "-pthread", "-std=c++17"])
        .args(namespace)
        .args(includes.iter().map(|i| format!("-I{}", i.display())))
        .arg(tests::program(program))
        .arg("-o")
        .arg(&out)
        .status()
        .unwrap_or_else(|e| panic!("run {compiler}: {e}"));
    assert!(status.success(), "{program} did not build");
    // SAFETY: the library runs no initialisers of consequence.
    let library = unsafe { libloading::Library::new(&out) }.expect("load the client");
    let _ = std::fs::remove_file(&out);
    library
}

/// A function of LLVM 22's client library.
fn function<T: Copy>(name: &str) -> T {
    function_of(Protocol::Llvm22, name)
}

/// A function of the client library of `protocol`.
fn function_of<T: Copy>(protocol: Protocol, name: &str) -> T {
    // SAFETY: each name is looked up with the type its definition in rpc_client.cpp and
    // rpc_client_19.cpp has (the same in both).
    unsafe {
        *client_library(protocol)
            .get::<T>(name.as_bytes())
            .expect(name)
    }
}

const BOTH: [Protocol; 2] = [Protocol::Llvm22, Protocol::Llvm19];

/// Host memory standing for device memory: the server's `malloc` and `free`.
#[derive(Default)]
struct HostMemory {
    allocated: AtomicU64,
    freed: AtomicU64,
}

impl DeviceServices for HostMemory {
    fn allocate(&self, size: u64) -> Option<u64> {
        self.allocated.fetch_add(1, Ordering::Relaxed);
        // SAFETY: plain malloc.
        let address = unsafe { libc_malloc(size as usize) } as u64;
        (address != 0).then_some(address)
    }
    fn free(&self, address: u64) {
        self.freed.fetch_add(1, Ordering::Relaxed);
        // SAFETY: an address `allocate` returned.
        unsafe { libc_free(address as *mut c_void) };
    }
}

extern "C" {
    #[link_name = "malloc"]
    fn libc_malloc(size: usize) -> *mut c_void;
    #[link_name = "free"]
    fn libc_free(address: *mut c_void);
}

/// A mailbox, its client object, and a server running for it.
struct Setup {
    server: RpcServer,
    key: u64,
    client: Vec<u64>,
    _memory: Vec<u64>,
    services: Arc<HostMemory>,
}

impl Setup {
    fn new(ports: u32) -> Setup {
        Setup::speaking(ports, Protocol::Llvm22)
    }

    fn speaking(ports: u32, protocol: Protocol) -> Setup {
        Setup::with_lanes(ports, 1, protocol)
    }

    /// A mailbox of `ports` ports of `lanes` buffers each, as a GPU's warp or wavefront has.
    fn with_lanes(ports: u32, lanes: u32, protocol: Protocol) -> Setup {
        let size = mailbox::allocation_size(ports, lanes) as usize;
        let mut memory = vec![0u64; size.div_ceil(8)];
        let base = memory.as_mut_ptr() as usize;
        let mut client = vec![0u64; mailbox::CLIENT_BYTES / 8];
        let bytes = mailbox::client_bytes(ports, base as u64);
        for (word, chunk) in client.iter_mut().zip(bytes.chunks(8)) {
            *word = u64::from_le_bytes(chunk.try_into().unwrap());
        }
        let server = RpcServer::new();
        let services = Arc::new(HostMemory::default());
        // SAFETY: `memory` is 8-aligned, of the mailbox's size, and outlives the server (the
        // server is dropped first: fields drop in order).
        let mailbox = unsafe { Mailbox::new(base, ports, lanes, protocol) };
        let key = server.add(mailbox, services.clone());
        server.begin_use();
        Setup {
            server,
            key,
            client,
            _memory: memory,
            services,
        }
    }

    fn client(&self) -> usize {
        self.client.as_ptr() as usize
    }
}

type Increment = unsafe extern "C" fn(usize, u64) -> u64;

#[test]
fn the_client_is_the_size_our_server_writes() {
    for protocol in BOTH {
        let size: unsafe extern "C" fn() -> u64 = function_of(protocol, "rpc_client_size");
        // SAFETY: no arguments.
        let bytes = unsafe { size() };
        assert_eq!(bytes, mailbox::CLIENT_BYTES as u64, "{protocol:?}");
    }
}

#[test]
fn many_threads_on_many_ports_each_get_their_own_answers() {
    let setup = Setup::new(16);
    let increment: Increment = function("rpc_increment");
    let echo: unsafe extern "C" fn(usize, *const u8, u64, *mut u8) -> u64 = function("rpc_echo");
    let client = setup.client();
    std::thread::scope(|scope| {
        for thread in 0..12u64 {
            scope.spawn(move || {
                for i in 0..200u64 {
                    let value = thread << 32 | i;
                    // SAFETY: the client object lives for the scope.
                    assert_eq!(unsafe { increment(client, value) }, value + 1);
                    let data: Vec<u8> = (0..(i * 7 % 300))
                        .map(|b| (b as u8) ^ (thread as u8))
                        .collect();
                    let mut back = vec![0u8; data.len()];
                    // SAFETY: `back` holds as many bytes as are sent.
                    let size = unsafe {
                        echo(client, data.as_ptr(), data.len() as u64, back.as_mut_ptr())
                    };
                    assert_eq!(size, data.len() as u64);
                    assert_eq!(back, data);
                }
            });
        }
    });
    assert_eq!(setup.server.failure(setup.key), None);
}

#[test]
fn sizes_around_the_packet_boundaries_go_there_and_back() {
    let setup = Setup::new(4);
    let echo: unsafe extern "C" fn(usize, *const u8, u64, *mut u8) -> u64 = function("rpc_echo");
    for len in [
        0usize, 1, 55, 56, 57, 63, 64, 119, 120, 121, 184, 185, 4096, 100_000,
    ] {
        let data: Vec<u8> = (0..len).map(|b| (b * 31 % 251) as u8).collect();
        let mut back = vec![0u8; len];
        // SAFETY: `back` holds `len` bytes.
        let size = unsafe { echo(setup.client(), data.as_ptr(), len as u64, back.as_mut_ptr()) };
        assert_eq!((size, &back), (len as u64, &data), "{len} bytes");
    }
}

#[test]
fn mixed_sends_and_receives_follow_llvms_interface_test() {
    let setup = Setup::new(2);
    let interface: unsafe extern "C" fn(usize, bool, u64) -> u64 = function("rpc_interface");
    // SAFETY: the client object lives for the test.
    assert_eq!(unsafe { interface(setup.client(), true, 10) }, 16);
    // SAFETY: as above.
    assert_eq!(unsafe { interface(setup.client(), false, 10) }, 17);
}

fn c(text: &str) -> CString {
    CString::new(text).unwrap()
}

fn scratch(name: &str) -> PathBuf {
    let dir = tests::build_dir().join(format!("rpc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

#[test]
fn files_are_opened_written_read_and_closed_on_the_host() {
    for protocol in BOTH {
        files_with(protocol);
    }
}

fn files_with(protocol: Protocol) {
    let setup = Setup::speaking(8, protocol);
    let client = setup.client();
    let fopen: unsafe extern "C" fn(usize, *const c_char, *const c_char) -> u64 =
        function_of(protocol, "rpc_fopen");
    let write: unsafe extern "C" fn(usize, c_int, u64, *const c_char, u64) -> u64 =
        function_of(protocol, "rpc_write");
    let op: unsafe extern "C" fn(usize, c_int, u64) -> u64 = function_of(protocol, "rpc_stream_op");
    let fseek: unsafe extern "C" fn(usize, u64, i64, c_int) -> u64 =
        function_of(protocol, "rpc_fseek");
    let fread: unsafe extern "C" fn(usize, u64, *mut u8, u64) -> u64 =
        function_of(protocol, "rpc_fread");
    let fgets: unsafe extern "C" fn(usize, u64, *mut u8, c_int) -> u64 =
        function_of(protocol, "rpc_fgets");
    let ungetc: unsafe extern "C" fn(usize, c_int, u64) -> u64 =
        function_of(protocol, "rpc_ungetc");
    let path_op: unsafe extern "C" fn(usize, c_int, *const c_char) -> u64 =
        function_of(protocol, "rpc_path_op");
    let path = scratch(&format!("file-{protocol:?}.txt"));
    let text = "first line\nsecond line\n";
    // SAFETY: (every call below) the client object lives for the test, strings are
    // NUL-terminated and buffers hold the sizes passed.
    unsafe {
        let file = fopen(client, c(path.to_str().unwrap()).as_ptr(), c("w+").as_ptr());
        assert_ne!(file, 0, "fopen");
        assert_eq!(
            write(client, 3, file, c(text).as_ptr(), text.len() as u64),
            text.len() as u64
        );
        assert_eq!(op(client, 4, file), 0, "fflush");
        assert_eq!(op(client, 3, file), text.len() as u64, "ftell");
        assert_eq!(fseek(client, file, 0, 0), 0, "fseek");
        let mut line = [0u8; 64];
        assert_eq!(
            fgets(client, file, line.as_mut_ptr(), 64),
            12,
            "fgets: the line and its NUL"
        );
        assert_eq!(&line[..12], b"first line\n\0");
        assert_eq!(ungetc(client, b's' as c_int, file), b's' as u64);
        let mut rest = [0u8; 64];
        // The pushed-back character comes first.
        assert_eq!(fread(client, file, rest.as_mut_ptr(), 64), 13);
        assert_eq!(&rest[..13], b"ssecond line\n");
        assert_ne!(op(client, 1, file), 0, "feof after the end");
        assert_eq!(op(client, 2, file), 0, "ferror");
        op(client, 5, file);
        assert_eq!(op(client, 1, file), 0, "clearerr cleared the end");
        assert_eq!(op(client, 0, file), 0, "fclose");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
        let mut last = path.clone();
        if protocol == Protocol::Llvm22 {
            let rename: unsafe extern "C" fn(usize, *const c_char, *const c_char) -> u64 =
                function_of(protocol, "rpc_rename");
            let renamed = scratch("renamed.txt");
            assert_eq!(
                rename(
                    client,
                    c(path.to_str().unwrap()).as_ptr(),
                    c(renamed.to_str().unwrap()).as_ptr()
                ),
                0
            );
            assert!(renamed.exists() && !path.exists());
            last = renamed;
        }
        assert_eq!(
            path_op(client, 0, c(last.to_str().unwrap()).as_ptr()),
            0,
            "remove"
        );
        assert!(!last.exists());
        if protocol == Protocol::Llvm22 {
            assert_eq!(path_op(client, 1, c("exit 3").as_ptr()), 3 << 8, "system");
        }
        // Standard streams: the bytes written come back (stdout with its newline).
        assert_eq!(write(client, 0, 0, c("rpc: to stdout ").as_ptr(), 15), 15);
        assert_eq!(write(client, 2, 0, c("rpc: a line").as_ptr(), 11), 12);
        assert_eq!(write(client, 1, 0, c("rpc: to stderr\n").as_ptr(), 15), 15);
    }
}

#[test]
fn device_malloc_and_free_reach_the_device_services() {
    for protocol in BOTH {
        malloc_and_free_with(protocol);
    }
}

fn malloc_and_free_with(protocol: Protocol) {
    let setup = Setup::speaking(4, protocol);
    let malloc: unsafe extern "C" fn(usize, u64) -> u64 = function_of(protocol, "rpc_malloc");
    let free: unsafe extern "C" fn(usize, u64) = function_of(protocol, "rpc_free");
    // SAFETY: the client object lives for the test.
    let address = unsafe { malloc(setup.client(), 4096) };
    assert_ne!(address, 0);
    // SAFETY: as above.
    unsafe { free(setup.client(), address) };
    // The free is answered by nothing: wait for the server to have taken it.
    let start = std::time::Instant::now();
    while setup.services.freed.load(Ordering::Relaxed) == 0 && start.elapsed().as_secs() < 5 {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    assert_eq!(setup.services.allocated.load(Ordering::Relaxed), 1);
    assert_eq!(setup.services.freed.load(Ordering::Relaxed), 1);
}

/// The host function a device calls: the sum of its argument block's bytes, plus one.
extern "C" fn sum_plus_one(data: *mut c_void) -> u64 {
    // SAFETY: the server passes the copy of the 100-byte block the client sent.
    let bytes = unsafe { std::slice::from_raw_parts(data as *const u8, 100) };
    bytes.iter().map(|&b| u64::from(b)).sum::<u64>() + 1
}

#[test]
fn llvm_omp_host_call_runs_the_host_function_on_the_sent_block() {
    let setup = Setup::new(4);
    let call: unsafe extern "C" fn(usize, *const c_void, *const u8, u64) -> u64 =
        function("rpc_host_call");
    let block: Vec<u8> = (0..100u8).collect();
    // SAFETY: a host function of the expected type and a 100-byte block.
    let result = unsafe {
        call(
            setup.client(),
            sum_plus_one as *const c_void,
            block.as_ptr(),
            100,
        )
    };
    assert_eq!(result, (0..100u64).sum::<u64>() + 1);
}

/// A host function for LLVM 19's host call, whose result does not go back to the device: the
/// block is the address of a result slot, then bytes; the slot gets their count and sum.
extern "C" fn count_and_sum_into_slot(data: *mut c_void) -> u64 {
    // SAFETY: the block starts with the slot's address and the count of the bytes after it,
    // which the test sent (see below).
    unsafe {
        let words = data as *const u64;
        let slot = *words as *mut [u64; 2];
        let count = *words.add(1);
        let bytes = std::slice::from_raw_parts((words.add(2)) as *const u8, count as usize);
        *slot = [count, bytes.iter().map(|&b| u64::from(b)).sum()];
    }
    0
}

#[test]
fn llvm_19s_host_calls_from_many_threads_carry_blocks_of_every_size() {
    let setup = Setup::speaking(16, Protocol::Llvm19);
    let call: unsafe extern "C" fn(usize, *const c_void, *const u8, u64) -> u64 =
        function_of(Protocol::Llvm19, "rpc_host_call");
    let client = setup.client();
    std::thread::scope(|scope| {
        for thread in 0..8u64 {
            scope.spawn(move || {
                for (i, len) in [0u64, 1, 39, 40, 41, 47, 48, 103, 104, 105, 1000, 70_000]
                    .into_iter()
                    .cycle()
                    .take(60)
                    .enumerate()
                {
                    let mut slot = [0u64; 2];
                    let mut block = Vec::with_capacity(16 + len as usize);
                    block.extend_from_slice(&(&mut slot as *mut [u64; 2] as u64).to_le_bytes());
                    block.extend_from_slice(&len.to_le_bytes());
                    block.extend((0..len).map(|b| (b as u8) ^ (thread as u8) ^ (i as u8)));
                    let sum: u64 = block[16..].iter().map(|&b| u64::from(b)).sum();
                    // SAFETY: a host function of the expected type; the block and the slot
                    // live until the call returns (it returns after the host function ran).
                    unsafe {
                        call(
                            client,
                            count_and_sum_into_slot as *const c_void,
                            block.as_ptr(),
                            block.len() as u64,
                        )
                    };
                    // SAFETY: the host function's write happened before the server answered.
                    let got = unsafe { std::ptr::read_volatile(&slot) };
                    assert_eq!(got, [len, sum], "thread {thread}, {len} bytes");
                }
            });
        }
    });
    assert_eq!(setup.server.failure(setup.key), None);
}

/// The argument block of `%d %s|%5.2f|%c|%x|%s` as the device packs it (each argument at its
/// alignment) for 42, "text", 1.23456, 'Z', 0xbeef, a null string.
fn printf_arguments(text: *const c_char) -> Vec<u8> {
    let mut block = Vec::new();
    block.extend_from_slice(&42i32.to_le_bytes());
    block.extend_from_slice(&[0; 4]);
    block.extend_from_slice(&(text as u64).to_le_bytes());
    block.extend_from_slice(&1.23456f64.to_le_bytes());
    block.extend_from_slice(&(b'Z' as i32).to_le_bytes());
    block.extend_from_slice(&0xbeefu32.to_le_bytes());
    block.extend_from_slice(&0u64.to_le_bytes());
    block
}

#[test]
fn printf_formats_on_the_host_with_strings_read_from_the_client() {
    for protocol in BOTH {
        printf_with(protocol);
    }
}

fn printf_with(protocol: Protocol) {
    let setup = Setup::speaking(8, protocol);
    let client = setup.client();
    let fopen: unsafe extern "C" fn(usize, *const c_char, *const c_char) -> u64 =
        function_of(protocol, "rpc_fopen");
    let op: unsafe extern "C" fn(usize, c_int, u64) -> u64 = function_of(protocol, "rpc_stream_op");
    let printf: unsafe extern "C" fn(
        usize,
        c_int,
        bool,
        u64,
        *const c_char,
        *const u8,
        u64,
    ) -> c_int = function_of(protocol, "rpc_printf");
    let path = scratch(&format!("printf-{protocol:?}.txt"));
    let text = c("text");
    let format = c("%d %s|%5.2f|%c|%x|%s\n");
    let arguments = printf_arguments(text.as_ptr());
    let expected = "42 text| 1.23|Z|beef|(null)\n";
    // SAFETY: (every call) live client, NUL-terminated strings, the argument block's size.
    unsafe {
        let file = fopen(client, c(path.to_str().unwrap()).as_ptr(), c("w").as_ptr());
        assert_ne!(file, 0);
        let lines = 50;
        std::thread::scope(|scope| {
            for _ in 0..5 {
                scope.spawn(|| {
                    for _ in 0..lines / 5 {
                        let n = printf(
                            client,
                            2,
                            false,
                            file,
                            format.as_ptr(),
                            arguments.as_ptr(),
                            arguments.len() as u64,
                        );
                        assert_eq!(n, expected.len() as c_int);
                    }
                });
            }
        });
        assert_eq!(op(client, 0, file), 0);
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            expected.repeat(lines)
        );
        // %n is refused: -1, nothing written.
        let refused = printf(client, 0, false, 0, c("%n").as_ptr(), arguments.as_ptr(), 8);
        assert_eq!(refused, -1);
    }
}

/// The host function of the warps' host calls: the block is a count, then that many bytes;
/// the answer carries both the count and the bytes' sum.
extern "C" fn count_and_sum(data: *mut c_void) -> u64 {
    // SAFETY: the server passes the copy of the block a lane sent, which starts with the count
    // of the bytes after it (rpc_warp_client.cpp).
    unsafe {
        let count = std::ptr::read_unaligned(data as *const u64);
        let bytes = std::slice::from_raw_parts((data as *const u8).add(8), count as usize);
        count * 1_000_000 + bytes.iter().map(|&b| u64::from(b)).sum::<u64>()
    }
}

extern "C" {
    #[link_name = "fopen"]
    fn libc_fopen(path: *const c_char, mode: *const c_char) -> *mut c_void;
    #[link_name = "fclose"]
    fn libc_fclose(file: *mut c_void) -> c_int;
}

type WarpRun = unsafe extern "C" fn(usize, u32, u32, u64, c_int, u64, *mut u64);

/// The requests of the warp clients, numbered as tests/programs/rpc_warp.h numbers them.
const INCREMENT: c_int = 0;
const ECHO: c_int = 1;
const PRINTF: c_int = 2;
const MALLOC_FREE: c_int = 3;
const HOST_CALL: c_int = 4;

/// The host function of LLVM 19's warps' host calls, whose result does not go back to the
/// device: the block is the address of the lane's result, then what [`count_and_sum`] reads;
/// its answer goes to that address.
extern "C" fn count_and_sum_into(data: *mut c_void) {
    // SAFETY: the server passes the copy of the block a lane sent (rpc_warp_client_19.cpp): the
    // address of a word the lane reads once the call has returned, then count_and_sum's block.
    unsafe {
        let result = std::ptr::read_unaligned(data as *const u64) as *mut u64;
        let answer = count_and_sum((data as *mut u8).add(8) as *mut c_void);
        (*(result as *const AtomicU64)).store(answer, Ordering::Release);
    }
}

/// LLVM's clients of both protocols as a GPU runs them (rpc_warp_client.cpp and
/// rpc_warp_client_19.cpp: one host thread per lane, the lane primitives meeting at barriers):
/// warps of 32 and 64 lanes, all lanes or some, more warps than ports, each lane with its own
/// sizes and data. Every lane gets its own answer: numbers (LLVM 22), byte streams of sizes
/// from 0 to several packets (LLVM 22's test request; LLVM 19's through a file of each lane's
/// own, written, read back and removed), printf with each lane's `%s` read back, a block of
/// device memory each, and a host call on each lane's block.
#[test]
fn warps_of_32_and_64_lanes_each_get_every_lanes_answer() {
    for protocol in BOTH {
        warps_with(protocol);
    }
}

fn warps_with(protocol: Protocol) {
    let run: WarpRun = *warp_function(protocol, "rpc_warp_run");
    let files = c(scratch(&format!("warp-files-{protocol:?}"))
        .to_str()
        .unwrap());
    let (echo_seed, host_function) = match protocol {
        Protocol::Llvm22 => (5, count_and_sum as *const () as u64),
        // The lanes' bytes are those of seed 5 here too.
        Protocol::Llvm19 => (
            files.as_ptr() as u64,
            count_and_sum_into as *const () as u64,
        ),
    };
    for (lanes, active) in [
        (32u32, u32::MAX as u64),
        (32, 0x0000_f0f0),
        (64, u64::MAX),
        (64, 0x8000_0000_0000_0421),
    ] {
        let setup = Setup::with_lanes(2, lanes, protocol);
        let warps = 3u32;
        let calling: Vec<(u32, u32)> = (0..warps)
            .flat_map(|w| {
                (0..lanes)
                    .filter(move |l| active >> l & 1 == 1)
                    .map(move |l| (w, l))
            })
            .collect();
        let requests = |request: c_int, seed: u64| {
            let mut results = vec![0u64; (warps * lanes) as usize];
            // SAFETY: a live client object; `results` holds a slot for every lane.
            unsafe {
                run(
                    setup.client(),
                    warps,
                    lanes,
                    active,
                    request,
                    seed,
                    results.as_mut_ptr(),
                )
            };
            results
        };
        let key = |w: u32, l: u32| (u64::from(w) << 8) | u64::from(l);
        let case = format!("{protocol:?}: {lanes} lanes, active {active:#x}");

        // LLVM 19's libc has no test requests.
        if protocol == Protocol::Llvm22 {
            let results = requests(INCREMENT, 77);
            for &(w, l) in &calling {
                let slot = (w * lanes + l) as usize;
                assert_eq!(
                    results[slot],
                    (key(w, l) << 32 | 77) + 1,
                    "{case}: increment {w}/{l}"
                );
            }
        }

        let results = requests(ECHO, echo_seed);
        for &(w, l) in &calling {
            let size = (u64::from(l) * 37 + u64::from(w) * 11 + 5) % 300;
            assert_eq!(
                results[(w * lanes + l) as usize],
                size,
                "{case}: echo {w}/{l}"
            );
        }

        let path = scratch(&format!("warp-printf-{protocol:?}-{lanes}-{active:x}.txt"));
        // SAFETY: NUL-terminated strings; the file is closed below.
        let file = unsafe { libc_fopen(c(path.to_str().unwrap()).as_ptr(), c("w").as_ptr()) };
        assert!(!file.is_null());
        let results = requests(PRINTF, file as u64);
        // SAFETY: the file fopen opened; no request uses it any more.
        assert_eq!(unsafe { libc_fclose(file) }, 0);
        let mut expected: Vec<String> = calling
            .iter()
            .map(|&(w, l)| {
                let text = match l % 5 {
                    0 => "(null)".to_string(),
                    _ => "x".repeat(l as usize),
                };
                format!("warp {w} lane {l}: {text}|{}\n", -i64::from(w * 1000 + l))
            })
            .collect();
        for (&(w, l), line) in calling.iter().zip(&expected) {
            let count = results[(w * lanes + l) as usize];
            assert_eq!(count, line.len() as u64, "{case}: printf count {w}/{l}");
        }
        let written = std::fs::read_to_string(&path).unwrap();
        let mut lines: Vec<String> = written.split_inclusive('\n').map(String::from).collect();
        lines.sort();
        expected.sort();
        assert_eq!(lines, expected, "{case}: printf");

        // A warp's blocks are all live at once (its lanes free theirs after all allocated);
        // another warp's may reuse them once freed.
        let results = requests(MALLOC_FREE, 0);
        for w in 0..warps {
            let mut addresses: Vec<u64> = calling
                .iter()
                .filter(|&&(cw, _)| cw == w)
                .map(|&(w, l)| results[(w * lanes + l) as usize])
                .collect();
            let count = addresses.len();
            assert!(addresses.iter().all(|&a| a != 0), "{case}: malloc");
            addresses.sort();
            addresses.dedup();
            assert_eq!(
                addresses.len(),
                count,
                "{case}: warp {w}'s blocks are distinct"
            );
        }
        let start = std::time::Instant::now();
        while setup.services.freed.load(Ordering::Relaxed) < calling.len() as u64
            && start.elapsed().as_secs() < 10
        {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert_eq!(
            setup.services.freed.load(Ordering::Relaxed),
            calling.len() as u64,
            "{case}: frees"
        );

        let results = requests(HOST_CALL, host_function);
        for &(w, l) in &calling {
            let count = key(w, l) % 97;
            let sum: u64 = (0..count).map(|i| (i + u64::from(l)) & 0xff).sum();
            assert_eq!(
                results[(w * lanes + l) as usize],
                count * 1_000_000 + sum,
                "{case}: host call {w}/{l}"
            );
        }
        assert_eq!(setup.server.failure(setup.key), None, "{case}");
    }
}

/// A function of the warp client library of `protocol`.
fn warp_function<T>(protocol: Protocol, name: &str) -> libloading::Symbol<'static, T> {
    // SAFETY: the name is looked up with the type of its definition in rpc_warp_client.cpp and
    // rpc_warp_client_19.cpp (the same in both).
    unsafe {
        warp_library(protocol)
            .get::<T>(name.as_bytes())
            .expect(name)
    }
}

/// A device that stops in the middle of a request (rpc_client.cpp's `rpc_stall`: the first
/// packet of a stream, then nothing) leaves the server waiting for the rest. Whether the
/// mailbox still works is answered meanwhile (the waits for kernels ask it while they poll),
/// and the server still stops when the program ends.
#[test]
fn a_device_stalled_in_a_request_blocks_neither_questions_nor_the_end() {
    // Leaked: a thread that does not come back must not keep anything it uses from living.
    let setup: &'static Setup = Box::leak(Box::new(Setup::new(4)));
    let stall: unsafe extern "C" fn(usize) = function("rpc_stall");
    // SAFETY: a live client object (leaked with the setup).
    unsafe { stall(setup.client()) };
    // Time for the server to take the request and begin waiting for its rest.
    std::thread::sleep(std::time::Duration::from_millis(200));
    let within = |what: &str, question: fn(&'static Setup) -> Option<String>| {
        let (sender, receiver) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = sender.send(question(setup));
        });
        receiver
            .recv_timeout(std::time::Duration::from_secs(10))
            .unwrap_or_else(|_| panic!("{what} did not come back while the device stalled"))
    };
    assert_eq!(
        within("the mailbox's failure", |s| s.server.failure(s.key)),
        None
    );
    within("the server's stop", |s| {
        s.server.shut_down();
        None
    });
}

#[test]
fn unknown_and_damaged_requests_are_reported_and_nothing_hangs() {
    for (protocol, function_name, what) in [
        (
            Protocol::Llvm22,
            "rpc_unknown",
            "unknown request, opcode 0x7a000007 ('z' 7)",
        ),
        (Protocol::Llvm22, "rpc_damaged", "more than any request may"),
        (
            Protocol::Llvm19,
            "rpc_unknown",
            "unknown request, opcode 0x7007",
        ),
        (Protocol::Llvm19, "rpc_damaged", "more than any request may"),
    ] {
        let setup = Setup::speaking(4, protocol);
        let request: unsafe extern "C" fn(usize) = function_of(protocol, function_name);
        let client = setup.client();
        // The client waits for an answer that never comes: its thread is left behind.
        let _ = std::thread::Builder::new().spawn(move || {
            // SAFETY: the client object is leaked below, so it outlives this thread.
            unsafe { request(client) }
        });
        let start = std::time::Instant::now();
        while setup.server.failure(setup.key).is_none() && start.elapsed().as_secs() < 10 {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let failure = setup.server.failure(setup.key).unwrap_or_default();
        assert!(failure.contains(what), "{failure}");
        // Shutting down does not wait for the silent client.
        setup.server.shut_down();
        std::mem::forget(setup);
    }
}

// --- Through the plugins, on the emulated drivers ----------------------------------------------

use tests::conformance::EmulatedGpu;

/// tests/programs/rpc_host_call.cpp built with clang++-22 twice: for `gpu` alone (the program)
/// and for `gpu` and x86-64 (its twin, `<program>.twin`), each written aside and renamed.
fn build_host_call_program(gpu: EmulatedGpu) -> PathBuf {
    build_rpc_program(gpu, Protocol::Llvm22)
}

/// The program of `protocol`, built as [`build_host_call_program`] says by the compiler whose
/// device code speaks it: rpc_host_call.cpp by clang++-22, rpc_libc_19.cpp (its twin's client
/// from LLVM 19's sources) by clang++-19.
fn build_rpc_program(gpu: EmulatedGpu, protocol: Protocol) -> PathBuf {
    let suite = llvm_suite::suite_root(Release::Llvm22).unwrap_or_else(|e| panic!("{e}"));
    let sources = suite.parent().unwrap().parent().unwrap();
    let (program, compiler, mut client_flags) = match protocol {
        Protocol::Llvm22 => (
            "rpc_host_call.cpp",
            Compiler::Clang22,
            vec![
                format!("-I{}", sources.join("libc/shared").display()),
                format!("-I{}", sources.join("offload/include").display()),
            ],
        ),
        Protocol::Llvm19 => {
            let old = llvm_suite::suite_root(Release::Llvm19).unwrap_or_else(|e| panic!("{e}"));
            let old = old.parent().unwrap().parent().unwrap();
            (
                "rpc_libc_19.cpp",
                Compiler::Clang19,
                vec![
                    format!("-I{}", old.join("libc").display()),
                    "-DLIBC_NAMESPACE=__llvm_libc_19_1_7".to_string(),
                ],
            )
        }
    };
    // The twin's client addresses the mailbox with the GPU's lanes.
    client_flags.push(format!("-DTWIN_LANES={}", gpu_lanes(gpu)));
    let twin_flags = match compiler {
        Compiler::Clang22 => tests::clang22_twin_flags(gpu),
        Compiler::Clang19 => tests::clang19_twin_flags(gpu),
    };
    build_with_twin(gpu, program, compiler, &twin_flags, &client_flags)
}

/// tests/programs/`program` built by `compiler` twice with `twin_flags` (see
/// [`tests::clang22_twin_flags`] and [`tests::clang19_twin_flags`]) and `extra`: for `gpu`
/// alone (the program) and for `gpu` and x86-64 (its twin, `<program>.twin`), each written
/// aside and renamed.
fn build_with_twin(
    gpu: EmulatedGpu,
    program: &str,
    compiler: Compiler,
    twin_flags: &[String],
    extra: &[String],
) -> PathBuf {
    let (stem, cpp) = match program.strip_suffix(".cpp") {
        Some(stem) => (stem, true),
        None => (program.trim_end_matches(".c"), false),
    };
    // clang-22 takes LLVM 22's omp.h from beside the system's, and its `-lomptarget` finds
    // ours (libomptarget.so.22.1) and libomp in LLVM 19's tree; clang-19 has its own omp.h and
    // links LLVM 19's runtime (libomptarget.so.19.1), which either runtime then provides.
    let (compiler, search_path, own) = match compiler {
        Compiler::Clang22 => (
            if cpp { "clang++-22" } else { "clang-22" },
            tests::clang22_twin_path(gpu),
            vec![
                format!("-I{}", tests::clang22_include().display()),
                format!("-L{}", tests::lib_dir().display()),
                "-L/usr/lib/llvm-19/lib".to_string(),
            ],
        ),
        Compiler::Clang19 => (
            if cpp { "clang++-19" } else { "clang-19" },
            tests::clang19_twin_path(gpu),
            vec![],
        ),
    };
    // Named by compiler too: tests running at once build the same program with each.
    let out = tests::build_dir().join(format!(
        "{stem}-{}-{compiler}-{}",
        gpu.arch(),
        std::process::id()
    ));
    let gpu_only: Vec<String> = twin_flags
        .iter()
        .map(|f| f.replace(",x86_64-pc-linux-gnu", ""))
        .collect();
    for (flags, path) in [
        (gpu_only.as_slice(), out.clone()),
        (twin_flags, out.with_extension("twin")),
    ] {
        let partial = path.with_extension("part");
        let output = std::process::Command::new(compiler)
            .env("PATH", &search_path)
            .args(["-O2", "-fopenmp", "-Wno-openmp-target"])
            .args(flags)
            .args(&own)
            .args(extra)
            .arg(tests::program(program))
            .arg("-o")
            .arg(&partial)
            .output()
            .unwrap_or_else(|e| panic!("run {compiler}: {e}"));
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        std::fs::rename(&partial, &path).unwrap();
    }
    out
}

/// The lanes of a warp (sm_90) or a wavefront (gfx90a), which our plugins give each port.
fn gpu_lanes(gpu: EmulatedGpu) -> u32 {
    match gpu {
        EmulatedGpu::Cuda => 32,
        EmulatedGpu::Amdgpu => 64,
    }
}

/// What rpc_host_call.cpp prints when its threads' calls at once were all right.
const THREADS_OUTPUT: &str = "threads at once: host calls right in 8 of 8, device blocks in 8\n";

const HOST_CALL_OUTPUT: &str = "host call: 360 (expected 360); puts wrote 22; device malloc: 63\n\
                                device printf: 27; device file: 22 bytes";

/// LLVM's runtime, its plugins on an emulated driver, runs a program with its twin as the
/// judge (`judge`: [`tests::emulated::llvm_22_command`] or
/// [`tests::emulated::llvm_19_command`]): it succeeds and prints each of `expected`.
fn assert_llvm_passes(mut judge: std::process::Command, expected: &[&str]) {
    let llvm = judge.output().expect("run under LLVM's runtime");
    let stdout = String::from_utf8_lossy(&llvm.stdout);
    assert!(
        llvm.status.success() && expected.iter().all(|e| stdout.contains(e)),
        "LLVM's runtime: {judge:?}: {llvm:?}"
    );
}

/// The file the program's kernel wrote through the host (its own path with .txt), removed.
fn assert_device_wrote_its_file(gpu: EmulatedGpu, exe: &std::path::Path) {
    let file = exe.with_extension("txt");
    assert_eq!(
        std::fs::read_to_string(&file).unwrap_or_default(),
        "written by the device\n",
        "{gpu:?}"
    );
    let _ = std::fs::remove_file(&file);
}

/// The thread waiting for a kernel that may call the host sleeps in the driver while the
/// kernel runs (rpc_host_call.cpp's `wait`: a kernel whose host call takes a second): it wakes
/// only to ask whether the device's calls are still served. Polling instead took a sixth of a
/// core; this allows a twenty-fifth.
fn assert_waiting_thread_sleeps(gpu: EmulatedGpu, exe: &std::path::Path, env: &[(&str, String)]) {
    let (code, stdout, stderr) = tests::emulated::run(gpu, exe, &["wait"], env);
    assert_eq!(code, Some(0), "{gpu:?}: {stdout}{stderr}");
    let cpu_ms: f64 = stderr
        .lines()
        .find_map(|line| {
            line.strip_prefix("waiting: ")?
                .split(' ')
                .next()?
                .parse()
                .ok()
        })
        .unwrap_or_else(|| panic!("{gpu:?}: no waiting time in {stderr}"));
    assert!(cpu_ms < 40.0, "{gpu:?}: {stderr}");
}

/// A kernel calls a host function, writes a line and allocates device memory through our
/// plugin's server, and the thread waiting for a kernel that waits for the host sleeps; LLVM
/// 22's runtime runs the same binary as the judge on the emulated HSA
/// runtime. Not on the emulated CUDA driver: LLVM 22's server serves the device's `malloc` with
/// a plain device allocation (`cuMemAlloc`), which the emulator makes wait for the device's
/// work, as CUDA's implicit synchronisation rule says and as LLVM's non-blocking allocation
/// kind was made to avoid; the kernel then waits for its `malloc` and the `malloc` for the
/// kernel. Ours uses the stream-ordered allocator for it.
#[test]
fn kernels_call_the_host_through_our_plugins_on_both_emulators() {
    for gpu in [EmulatedGpu::Amdgpu, EmulatedGpu::Cuda] {
        let exe = build_host_call_program(gpu);
        let twin = exe.with_extension("twin");
        let env = [("OMPTARGET_EMU_TWINS", twin.display().to_string())];
        let (code, stdout, stderr) = tests::emulated::run(gpu, &exe, &[], &env);
        assert_eq!(code, Some(0), "{gpu:?}: {stdout}{stderr}");
        assert!(
            stdout.contains("hello from the device\n")
                && stdout.contains("printf from the device: 42\n")
                && stdout.contains(HOST_CALL_OUTPUT)
                && stdout.contains(THREADS_OUTPUT),
            "{gpu:?}: {stdout}"
        );
        assert_device_wrote_its_file(gpu, &exe);
        assert_waiting_thread_sleeps(gpu, &exe, &env);
        if gpu == EmulatedGpu::Amdgpu {
            let judge = tests::emulated::llvm_22_command(&exe, &twin, 60);
            assert_llvm_passes(judge, &[HOST_CALL_OUTPUT, THREADS_OUTPUT]);
        }
        let _ = std::fs::remove_file(&exe);
        let _ = std::fs::remove_file(&twin);
        let _ = std::fs::remove_file(exe.with_extension("txt"));
    }
}

/// LLVM 19's protocol through our plugins: the GPU image's `__llvm_libc_rpc_client` points at
/// the client, which the plugin finds through it; the twin, with LLVM 19's client in its GPU
/// form (the GPU image has the same client code, for a GPU), calls a host function, writes a
/// line, prints, writes a file, allocates and frees, then makes host calls, allocations and
/// frees from 8 threads at once. The program is clang-19's, and LLVM 19's runtime (its plugins
/// serve this protocol) runs the same binary as the judge.
#[test]
fn llvm_19s_protocol_reaches_the_host_through_our_plugins_on_both_emulators() {
    const LINES: [&str; 4] = [
        "hello from the device (LLVM 19)\n",
        "printf from the device: 19\n",
        "host call: 360 (expected 360); puts wrote 32; device malloc: 63\n\
         device printf: 27; device file: 22 bytes",
        THREADS_OUTPUT,
    ];
    for gpu in [EmulatedGpu::Amdgpu, EmulatedGpu::Cuda] {
        let exe = build_rpc_program(gpu, Protocol::Llvm19);
        let twin = exe.with_extension("twin");
        // The GPU image keeps the pointer the plugins read and the client it points at, which
        // the image's own client code uses (on a GPU, the requests are real).
        gpu_image_defines(&exe, gpu, &["__llvm_libc_rpc_client", "rpc_client_object"]);
        let env = [("OMPTARGET_EMU_TWINS", twin.display().to_string())];
        let (code, stdout, stderr) = tests::emulated::run(gpu, &exe, &[], &env);
        assert_eq!(code, Some(0), "{gpu:?}: {stdout}\n{stderr}");
        for line in LINES {
            assert!(stdout.contains(line), "{gpu:?}: {stdout}");
        }
        assert_device_wrote_its_file(gpu, &exe);
        assert_llvm_passes(tests::emulated::llvm_19_command(&exe, &twin, 60), &LINES);
        assert_device_wrote_its_file(gpu, &exe);
        let _ = std::fs::remove_file(&exe);
        let _ = std::fs::remove_file(&twin);
    }
}

/// What tests/programs/rpc_gpu_libc.c prints when its kernel's libc calls all did their part.
const GPU_LIBC_LINES: [&str; 3] = [
    "device printf: 42 from the GPU 0xff z\n",
    "device puts\n",
    "file \"written by the device\", sum 4950\nPASS\n",
];

/// The sizes of `names` in the program's GPU image, each of which the image must define.
fn gpu_image_defines(exe: &std::path::Path, gpu: EmulatedGpu, names: &[&str]) -> Vec<u64> {
    use object::{Object, ObjectSymbol};
    let triple = match gpu {
        EmulatedGpu::Amdgpu => "amdgcn",
        EmulatedGpu::Cuda => "nvptx64",
    };
    let image = tests::emulated::device_image(exe, triple);
    let image = object::File::parse(&*image).unwrap();
    let size = |name: &&str| {
        let symbol = image.symbols().find(|s| s.name() == Ok(*name));
        symbol
            .filter(|s| s.is_definition())
            .unwrap_or_else(|| panic!("{gpu:?}: the GPU image does not define {name}"))
            .size()
    };
    names.iter().map(size).collect()
}

/// LLVM 22's GPU libc, built from LLVM 22's sources by scripts/build-llvm22-gpu-libc.sh and
/// linked as the README says, in a kernel that prints, writes and reads a file, allocates and
/// frees (tests/programs/rpc_gpu_libc.c). A GPU image's code cannot run here, so it is read:
/// the gfx90a image sends each request those calls make (their opcodes are in its code), the
/// sm_90 image holds the client and leaves malloc and free to CUDA's allocator, as LLVM's libc
/// does there. On both emulators our plugin finds that client and writes it, and the twin gives
/// the results a GPU gives; LLVM 22's runtime runs the same binary on the emulated HSA runtime.
#[test]
fn llvm_22s_gpu_libc_builds_into_images_that_are_clients_of_our_server() {
    for gpu in [EmulatedGpu::Amdgpu, EmulatedGpu::Cuda] {
        let flags = tests::clang22_gpu_libc_flags(gpu);
        let exe = build_with_twin(gpu, "rpc_gpu_libc.c", Compiler::Clang22, &flags, &[]);
        let twin = exe.with_extension("twin");
        match gpu {
            EmulatedGpu::Amdgpu => assert_sends_the_libc_requests(&exe),
            EmulatedGpu::Cuda => assert_cubin_holds_the_client(&exe),
        }
        let twins = twin.display().to_string();
        let (code, stdout, stderr, trace) =
            tests::emulated::run_traced(gpu, &exe, "gpu-libc", &[("OMPTARGET_EMU_TWINS", &twins)]);
        assert_eq!(code, Some(0), "{gpu:?}: {stdout}\n{stderr}");
        for line in GPU_LIBC_LINES {
            assert!(stdout.contains(line), "{gpu:?}: {stdout}");
        }
        assert!(stderr.contains("device stderr: -7\n"), "{gpu:?}: {stderr}");
        assert!(
            client_written(&trace),
            "{gpu:?}: the plugin did not write the client:\n{trace}"
        );
        if gpu == EmulatedGpu::Amdgpu {
            assert_llvm_passes(
                tests::emulated::llvm_22_command(&exe, &twin, 60),
                &["PASS\n"],
            );
        }
        let _ = std::fs::remove_file(&exe);
        let _ = std::fs::remove_file(&twin);
    }
}

/// LLVM 19's GPU libc, built from LLVM 19's sources by scripts/build-llvm19-gpu-libc.sh and
/// linked as a clang-19 user links it (the archive on the link line), in the same kernel as
/// [`llvm_22s_gpu_libc_builds_into_images_that_are_clients_of_our_server`]. Each GPU image
/// defines LLVM 19's client and the pointer to it, on both emulators our plugin finds that
/// pointer and writes the client where it points, and the twin gives the results a GPU gives;
/// LLVM 19's runtime, whose plugins serve this protocol, runs the same binaries as the judge.
#[test]
fn llvm_19s_gpu_libc_builds_into_images_that_are_clients_of_our_server() {
    for gpu in [EmulatedGpu::Amdgpu, EmulatedGpu::Cuda] {
        let libc = tests::llvm19_gpu_libc(gpu).display().to_string();
        let flags = tests::clang19_twin_flags(gpu);
        let exe = build_with_twin(gpu, "rpc_gpu_libc.c", Compiler::Clang19, &flags, &[libc]);
        let twin = exe.with_extension("twin");
        let sizes = gpu_image_defines(
            &exe,
            gpu,
            &[
                "__llvm_libc_rpc_client",
                "_ZN19__llvm_libc_19_1_7_3rpc6clientE",
            ],
        );
        let client_size = sizes[1];
        let twins = twin.display().to_string();
        let (code, stdout, stderr, trace) = tests::emulated::run_traced(
            gpu,
            &exe,
            "gpu-libc-19",
            &[("OMPTARGET_EMU_TWINS", &twins)],
        );
        assert_eq!(code, Some(0), "{gpu:?}: {stdout}\n{stderr}");
        assert!(
            client_written_where_it_points(&trace, client_size),
            "{gpu:?}: the plugin did not write the client where __llvm_libc_rpc_client \
             points:\n{trace}"
        );
        for line in GPU_LIBC_LINES {
            assert!(stdout.contains(line), "{gpu:?}: {stdout}");
        }
        assert!(stderr.contains("device stderr: -7\n"), "{gpu:?}: {stderr}");
        assert_llvm_passes(
            tests::emulated::llvm_19_command(&exe, &twin, 60),
            &["PASS\n"],
        );
        let _ = std::fs::remove_file(&exe);
        let _ = std::fs::remove_file(&twin);
    }
}

/// The gfx90a image's code carries the opcode of every request the program's libc calls make:
/// printf to stdout and stderr (the packed-argument forms AMDGPU's varargs need), puts, fopen,
/// fwrite, fgets, fclose, and malloc/free for the slabs of libc's device allocator.
fn assert_sends_the_libc_requests(exe: &std::path::Path) {
    let image = exe.with_extension("gfx90a.o");
    std::fs::write(&image, tests::emulated::device_image(exe, "amdgcn")).unwrap();
    let listing = std::process::Command::new("/usr/lib/llvm-22/bin/llvm-objdump")
        .arg("-d")
        .arg(&image)
        .output()
        .expect("run llvm-objdump");
    let _ = std::fs::remove_file(&image);
    let code = String::from_utf8_lossy(&listing.stdout).to_lowercase();
    assert!(
        listing.status.success() && code.contains("s_endpgm"),
        "{listing:?}"
    );
    for (name, opcode) in [
        ("LIBC_WRITE_TO_STREAM", 4),
        ("LIBC_WRITE_TO_STDOUT_NEWLINE", 5),
        ("LIBC_READ_FGETS", 7),
        ("LIBC_OPEN_FILE", 8),
        ("LIBC_CLOSE_FILE", 9),
        ("LIBC_MALLOC", 10),
        ("LIBC_FREE", 11),
        ("LIBC_PRINTF_TO_STDOUT_PACKED", 24),
        ("LIBC_PRINTF_TO_STDERR_PACKED", 25),
    ] {
        // LLVM_LIBC_OPCODE(n) of rpc_opcodes.h: 'c' in the top byte.
        let immediate = format!("{:#x}", (u32::from(b'c') << 24) | opcode);
        assert!(
            code.contains(&immediate),
            "{name} ({immediate}) is not in the gfx90a code"
        );
    }
}

/// The sm_90 cubin defines the client LLVM's libc calls through, and leaves malloc and free to
/// CUDA (LLVM's libc has no NVPTX allocator of its own yet).
fn assert_cubin_holds_the_client(exe: &std::path::Path) {
    use object::{Object, ObjectSymbol};
    let cubin = tests::emulated::device_image(exe, "nvptx64");
    let file = object::File::parse(&*cubin).unwrap();
    let symbol = |name: &str| file.symbols().find(|s| s.name() == Ok(name));
    assert!(
        symbol("__llvm_rpc_client").is_some_and(|s| s.is_definition()),
        "no client in the cubin"
    );
    for name in ["malloc", "free"] {
        assert!(
            symbol(name).is_some_and(|s| s.is_undefined()),
            "{name} in the cubin"
        );
    }
}

/// Whether a driver trace shows the plugin looking the client up and copying into it: the
/// HSA symbol's address or CUDA's global, then a host-to-device copy to that address.
fn client_written(trace: &str) -> bool {
    looked_up_address(trace.lines(), "__llvm_rpc_client").is_some_and(|a| {
        let destination = format!("dst={a} ");
        trace
            .lines()
            .any(|l| is_copy_to_device(l) && l.contains(&destination))
    })
}

/// Whether a driver trace shows the plugin looking LLVM 19's `__llvm_libc_rpc_client` up and
/// then copying a client (`size` bytes) to where that pointer points: a copy of that size whose
/// destination is not the pointer itself (whose 8 bytes it reads first).
fn client_written_where_it_points(trace: &str, size: u64) -> bool {
    let mut after = trace
        .lines()
        .skip_while(|l| !l.contains("name=__llvm_libc_rpc_client"));
    let Some(pointer) = looked_up_address(&mut after, "__llvm_libc_rpc_client") else {
        return false;
    };
    let copy = after.find(|l| is_copy_to_device(l) && l.contains(&format!(" size={size} ")));
    copy.is_some_and(|l| l.contains(" dst=") && !l.contains(&format!("dst={pointer} ")))
}

/// The address the driver answered for the symbol `name` (HSA's `address=`, CUDA's `dptr=`),
/// from the first of `lines` that names it.
fn looked_up_address<'t>(lines: impl Iterator<Item = &'t str>, name: &str) -> Option<&'t str> {
    let named = format!("name={name} ");
    lines.filter(|l| l.contains(&named)).find_map(|l| {
        l.split_whitespace().find_map(|w| {
            w.strip_prefix("address=")
                .or_else(|| w.strip_prefix("dptr="))
        })
    })
}

/// A trace line of a copy that may go to the device (HSA's copies go either way).
fn is_copy_to_device(line: &str) -> bool {
    line.starts_with("cuMemcpyHtoD") || line.starts_with("hsa_amd_memory_async_copy")
}

/// The CPU time of this process's thread named `name` (user and system, in clock ticks).
fn thread_cpu_ticks(name: &str) -> Option<u64> {
    for task in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
        let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
        if comm.trim() == name {
            let stat = std::fs::read_to_string(task.path().join("stat")).ok()?;
            let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
            return Some(
                fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?,
            );
        }
    }
    None
}

/// With no kernel that may call running, the server's thread waits without using the CPU. In a
/// child process of its own, so that other tests' servers are not measured.
#[test]
fn an_idle_server_uses_no_cpu() {
    const CHILD: &str = "OMPTARGET_TEST_RPC_IDLE_CHILD";
    if std::env::var_os(CHILD).is_none() {
        let output = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "an_idle_server_uses_no_cpu",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD, "1")
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        return;
    }
    let setup = Setup::new(4);
    let increment: Increment = function("rpc_increment");
    // SAFETY: the client object lives for the test.
    assert_eq!(unsafe { increment(setup.client(), 1) }, 2);
    setup.server.end_use();
    std::thread::sleep(std::time::Duration::from_millis(50));
    let before = thread_cpu_ticks("omptarget-rpc").expect("the server's thread");
    std::thread::sleep(std::time::Duration::from_millis(500));
    let after = thread_cpu_ticks("omptarget-rpc").expect("the server's thread");
    assert!(
        after - before <= 1,
        "{} ticks in half a second while idle",
        after - before
    );
}

/// A kernel's request that no server knows (tests/programs/rpc_unknown_request.cpp, its twin
/// LLVM 22's client in its GPU form): the plugin reports the opcode, the wait for the kernel,
/// which waits for an answer that will not come, fails with it, and the program ends with the
/// target region's failure instead of waiting for ever. (LLVM 22's plugins print "Unhandled
/// or invalid RPC opcode!" and hand the port back unanswered: the kernel goes on with what its
/// buffer held, and this program ends with 0.)
#[test]
fn a_kernels_unknown_request_fails_it_with_its_opcode() {
    let suite = llvm_suite::suite_root(Release::Llvm22).unwrap_or_else(|e| panic!("{e}"));
    let sources = suite.parent().unwrap().parent().unwrap();
    for gpu in [EmulatedGpu::Amdgpu, EmulatedGpu::Cuda] {
        let flags = [
            format!("-I{}", sources.join("libc/shared").display()),
            format!("-DTWIN_LANES={}", gpu_lanes(gpu)),
        ];
        let exe = build_with_twin(
            gpu,
            "rpc_unknown_request.cpp",
            Compiler::Clang22,
            &tests::clang22_twin_flags(gpu),
            &flags,
        );
        let twin = exe.with_extension("twin");
        let twins = ("OMPTARGET_EMU_TWINS", twin.display().to_string());
        // On CUDA, the wait's one host function (queued behind the kernel to wake the waiting
        // thread) refused too: the wait then polls, and fails all the same.
        let refused = ("OMPTARGET_EMU_FAIL", "cuLaunchHostFunc:1".to_string());
        let mut cases = vec![vec![twins.clone()]];
        if gpu == EmulatedGpu::Cuda {
            cases.push(vec![twins, refused]);
        }
        // Waited for at once, and as a `nowait` kernel whose task polls its queue.
        for (args, env) in [&[][..], &["nowait"]]
            .into_iter()
            .flat_map(|args| cases.iter().map(move |env| (args, env)))
        {
            let (code, stdout, stderr) = tests::emulated::run(gpu, &exe, args, env);
            let case = format!("{gpu:?} {args:?} {env:?}");
            assert_ne!(
                code,
                Some(124),
                "{case}: the program hung\n{stdout}{stderr}"
            );
            assert_ne!(code, Some(0), "{case}: {stdout}{stderr}");
            assert!(
                stdout.contains("a kernel without requests: 1") && !stdout.contains("returned"),
                "{case}: {stdout}"
            );
            assert!(
                stderr.contains(
                    "the kernel cannot finish: a device called the host with an unknown \
                     request, opcode 0x7a000007 ('z' 7)"
                ) && stderr.contains("failure of target construct"),
                "{case}: {stderr}"
            );
        }
        let _ = std::fs::remove_file(&exe);
        let _ = std::fs::remove_file(&twin);
    }
}
