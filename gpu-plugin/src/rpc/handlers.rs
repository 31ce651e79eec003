//! What the server does for each request, exchanging packets as LLVM 22's device-side callers
//! (its GPU libc and OpenMP device runtime) expect: the order of sends and receives of each
//! opcode is the client's, not ours to choose. Streams are the C library's `FILE`s of this
//! process, so device output interleaves with the program's own `printf`.

use super::opcodes::*;
use super::port::{Port, PortError};
use super::printf;
use std::ffi::{c_char, c_int, c_void, CStr, CString};

/// What serving a request needs from the device it came from.
pub trait DeviceServices: Send + Sync {
    /// `size` bytes of device memory for the device's `malloc`, without waiting for running
    /// kernels (the kernel that asks is one of them); `None` when there is none.
    fn allocate(&self, size: u64) -> Option<u64>;
    /// Gives back what `allocate` returned.
    fn free(&self, address: u64);
}

/// How a request ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Served {
    Done,
    /// An opcode this server does not know; the port was left as the client left it.
    Unknown(u32),
}

type Result<T> = std::result::Result<T, PortError>;

extern "C" {
    static stdin: *mut libc::FILE;
    static stdout: *mut libc::FILE;
    static stderr: *mut libc::FILE;
}

fn c_stdout() -> *mut libc::FILE {
    // SAFETY: glibc's `stdout` is initialised before any code of ours runs and never changes.
    unsafe { stdout }
}

fn c_stderr() -> *mut libc::FILE {
    // SAFETY: as c_stdout.
    unsafe { stderr }
}

/// The stream a client names: a `FILE *` the server opened for it, or, in the two low bits,
/// stdin (1), stdout (2) or stderr (3), as LLVM's GPU libc encodes its standard streams.
fn stream(encoded: u64) -> *mut libc::FILE {
    match encoded & 3 {
        // SAFETY: as c_stdout.
        1 => unsafe { stdin },
        2 => c_stdout(),
        3 => c_stderr(),
        _ => (encoded & !3) as *mut libc::FILE,
    }
}

/// Serves the request on `port`.
pub fn serve(port: &mut Port<'_>, device: &dyn DeviceServices) -> Result<Served> {
    match port.opcode() {
        NOOP => port.recv(|_, _| {})?,
        WRITE_TO_STDOUT | WRITE_TO_STDERR | WRITE_TO_STREAM | WRITE_TO_STDOUT_NEWLINE => {
            write_text(port)?
        }
        READ_FROM_STREAM => read_from_stream(port)?,
        READ_FGETS => read_line(port)?,
        OPEN_FILE => open_file(port)?,
        CLOSE_FILE => port.recv_and_send(|_, packet| {
            // SAFETY: the client passes a `FILE *` this server's OPEN_FILE returned.
            packet[0] = unsafe { libc::fclose(packet[0] as *mut libc::FILE) } as i64 as u64;
        })?,
        MALLOC => port.recv_and_send(|_, packet| {
            packet[0] = device.allocate(packet[0]).unwrap_or(0);
        })?,
        FREE => port.recv(|_, packet| device.free(packet[0]))?,
        HOST_CALL | OFFLOAD_HOST_CALL => host_call(port)?,
        EXIT => {
            port.recv_and_send(|_, _| {})?;
            let mut status = 0;
            port.recv(|_, packet| status = packet[0] as u32 as c_int)?;
            // The device's exit ends the program at once, as LLVM's server does, but with the
            // output written so far flushed (LLVM's quick_exit leaves it in the buffers).
            // SAFETY: flushing every C stream, then ending the process.
            unsafe {
                libc::fflush(std::ptr::null_mut());
                libc::_exit(status)
            }
        }
        ABORT => {
            port.recv_and_send(|_, _| {})?;
            port.recv(|_, _| {})?;
            std::process::abort()
        }
        FEOF => port.recv_and_send(|_, packet| {
            // SAFETY: a stream the client names (see `stream`).
            packet[0] = unsafe { libc::feof(stream(packet[0])) } as i64 as u64;
        })?,
        FERROR => port.recv_and_send(|_, packet| {
            // SAFETY: as FEOF.
            packet[0] = unsafe { libc::ferror(stream(packet[0])) } as i64 as u64;
        })?,
        CLEARERR => port.recv_and_send(|_, packet| {
            // SAFETY: as FEOF.
            unsafe { libc::clearerr(stream(packet[0])) };
        })?,
        FSEEK => port.recv_and_send(|_, packet| {
            // SAFETY: as FEOF.
            packet[0] =
                unsafe { libc::fseek(stream(packet[0]), packet[1] as i64, packet[2] as c_int) }
                    as i64 as u64;
        })?,
        FTELL => port.recv_and_send(|_, packet| {
            // SAFETY: as FEOF.
            packet[0] = unsafe { libc::ftell(stream(packet[0])) } as u64;
        })?,
        FFLUSH => port.recv_and_send(|_, packet| {
            // SAFETY: as FEOF.
            packet[0] = unsafe { libc::fflush(stream(packet[0])) } as i64 as u64;
        })?,
        UNGETC => port.recv_and_send(|_, packet| {
            // SAFETY: as FEOF.
            packet[0] =
                unsafe { libc::ungetc(packet[0] as c_int, stream(packet[1])) } as i64 as u64;
        })?,
        PRINTF_TO_STDOUT | PRINTF_TO_STDERR | PRINTF_TO_STREAM => print_formatted(port, false)?,
        PRINTF_TO_STDOUT_PACKED | PRINTF_TO_STDERR_PACKED | PRINTF_TO_STREAM_PACKED => {
            print_formatted(port, true)?
        }
        REMOVE => {
            let paths = port.recv_n()?;
            port.send(|lane, packet| {
                packet[0] = with_c_string(&paths[lane as usize], |path| {
                    // SAFETY: a NUL-terminated path.
                    unsafe { libc::remove(path) }
                }) as i64 as u64;
            })?
        }
        RENAME => {
            let old = port.recv_n()?;
            let new = port.recv_n()?;
            port.send(|lane, packet| {
                packet[0] = with_c_string(&old[lane as usize], |old| {
                    with_c_string(&new[lane as usize], |new| {
                        // SAFETY: two NUL-terminated paths.
                        unsafe { libc::rename(old, new) }
                    })
                }) as i64 as u64;
            })?
        }
        SYSTEM => {
            let commands = port.recv_n()?;
            port.send(|lane, packet| {
                packet[0] = with_c_string(&commands[lane as usize], |command| {
                    // SAFETY: a NUL-terminated command.
                    unsafe { libc::system(command) }
                }) as i64 as u64;
            })?
        }
        TEST_INCREMENT => port.recv_and_send(|_, packet| packet[0] = packet[0].wrapping_add(1))?,
        TEST_INTERFACE => test_interface(port)?,
        TEST_STREAM => {
            let data = port.recv_n()?;
            port.send_n(&data)?
        }
        other => return Ok(Served::Unknown(other)),
    }
    Ok(Served::Done)
}

/// The text a lane sent, as a C string (cut at its first NUL); `None` for a lane that sent
/// none.
fn c_string(bytes: &Option<Vec<u8>>) -> Option<CString> {
    let text = bytes.as_ref()?.split(|&b| b == 0).next().unwrap_or(&[]);
    CString::new(text).ok()
}

/// `f` on the text a lane sent, as a C string; -1 for a lane that sent none.
fn with_c_string(bytes: &Option<Vec<u8>>, f: impl FnOnce(*const c_char) -> c_int) -> c_int {
    c_string(bytes).map_or(-1, |text| f(text.as_ptr()))
}

/// Writes `bytes` to `file` under the stream's lock, as one piece.
fn write_all(file: *mut libc::FILE, bytes: &[u8]) -> usize {
    // SAFETY: `file` is a live C stream (see `stream`), `bytes` a valid slice.
    unsafe { libc::fwrite(bytes.as_ptr().cast::<c_void>(), 1, bytes.len(), file) }
}

fn write_text(port: &mut Port<'_>) -> Result<()> {
    let opcode = port.opcode();
    let lanes = port.lanes().count().max(1);
    let mut files = vec![std::ptr::null_mut(); 64.max(lanes)];
    if opcode == WRITE_TO_STREAM {
        port.recv(|lane, packet| files[lane as usize] = packet[0] as *mut libc::FILE)?;
    } else {
        let standard = if opcode == WRITE_TO_STDERR {
            c_stderr()
        } else {
            c_stdout()
        };
        files.iter_mut().for_each(|file| *file = standard);
    }
    let texts = port.recv_n()?;
    port.send(|lane, packet| {
        let file = stream(files[lane as usize] as u64);
        let text = texts[lane as usize].as_deref().unwrap_or(&[]);
        let mut written = write_all(file, text);
        if opcode == WRITE_TO_STDOUT_NEWLINE && written == text.len() {
            written += write_all(file, b"\n");
        }
        packet[0] = written as u64;
    })
}

fn read_from_stream(port: &mut Port<'_>) -> Result<()> {
    let mut data: Vec<Option<Vec<u8>>> = vec![None; port.lane_span()];
    port.recv(|lane, packet| {
        let wanted = packet[0].min(super::port::MAX_TRANSFER) as usize;
        let mut buffer = vec![0u8; wanted];
        // SAFETY: `buffer` holds `wanted` bytes; the stream is one the client names.
        let read = unsafe { libc::fread(buffer.as_mut_ptr().cast(), 1, wanted, stream(packet[1])) };
        buffer.truncate(read);
        data[lane as usize] = Some(buffer);
    })?;
    port.send_n(&data)?;
    port.send(|lane, packet| {
        packet[0] = data[lane as usize].as_ref().map_or(0, |d| d.len() as u64);
    })
}

fn read_line(port: &mut Port<'_>) -> Result<()> {
    let mut data: Vec<Option<Vec<u8>>> = vec![None; port.lane_span()];
    port.recv(|lane, packet| {
        let size = packet[0].clamp(1, 1 << 20) as usize;
        let mut buffer = vec![0u8; size];
        // SAFETY: `buffer` holds `size` bytes; the stream is one the client names.
        let line =
            unsafe { libc::fgets(buffer.as_mut_ptr().cast(), size as c_int, stream(packet[1])) };
        data[lane as usize] = Some(if line.is_null() {
            Vec::new()
        } else {
            let len = buffer.iter().position(|&b| b == 0).unwrap_or(size - 1);
            buffer.truncate(len + 1);
            buffer
        });
    })?;
    port.send_n(&data)
}

fn open_file(port: &mut Port<'_>) -> Result<()> {
    let paths = port.recv_n()?;
    port.recv_and_send(|lane, packet| {
        let mut mode = [0u8; 64];
        for (chunk, word) in mode.chunks_mut(8).zip(packet.iter()) {
            chunk.copy_from_slice(&word.to_le_bytes());
        }
        let mode = CStr::from_bytes_until_nul(&mode).ok();
        packet[0] = match (c_string(&paths[lane as usize]), mode) {
            (Some(path), Some(mode)) => {
                // SAFETY: a NUL-terminated path and mode.
                let file = unsafe { libc::fopen(path.as_ptr(), mode.as_ptr()) };
                file as u64
            }
            _ => 0,
        };
    })
}

fn host_call(port: &mut Port<'_>) -> Result<()> {
    let mut arguments = port.recv_n()?;
    let mut results = vec![0u64; arguments.len()];
    port.recv(|lane, packet| {
        let function = packet[0];
        if function == 0 {
            return;
        }
        let data = arguments[lane as usize]
            .as_mut()
            .map_or(std::ptr::null_mut(), |a| a.as_mut_ptr().cast::<c_void>());
        // SAFETY: `__llvm_omp_host_call`'s contract: the device passes the address of a host
        // function taking the argument block, whose copy lives until the call returns.
        let call: unsafe extern "C" fn(*mut c_void) -> u64 =
            unsafe { std::mem::transmute(function as usize) };
        // SAFETY: as above.
        results[lane as usize] = unsafe { call(data) };
    })?;
    port.send(|lane, packet| packet[0] = results[lane as usize])
}

/// LLVM's protocol test of mixed sends and receives, answered as its server answers.
fn test_interface(port: &mut Port<'_>) -> Result<()> {
    let mut end_with_recv = false;
    let mut count = 0u64;
    port.recv(|_, packet| end_with_recv = packet[0] != 0)?;
    port.recv(|_, packet| count = packet[0])?;
    port.send(|_, packet| {
        count += 1;
        packet[0] = count;
    })?;
    port.recv(|_, packet| count = packet[0])?;
    port.send(|_, packet| {
        count += 1;
        packet[0] = count;
    })?;
    port.recv(|_, packet| count = packet[0])?;
    port.recv(|_, packet| count = packet[0])?;
    for _ in 0..2 {
        port.send(|_, packet| {
            count += 1;
            packet[0] = count;
        })?;
    }
    if end_with_recv {
        port.recv(|_, packet| count = packet[0])
    } else {
        port.send(|_, packet| {
            count += 1;
            packet[0] = count;
        })
    }
}

/// `printf` and its kin: the format, then (once told their size) the arguments, then the text
/// of each `%s` argument the client is asked for, then the result.
fn print_formatted(port: &mut Port<'_>, packed: bool) -> Result<()> {
    let opcode = port.opcode();
    let span = port.lane_span();
    let mut files = vec![std::ptr::null_mut::<libc::FILE>(); span];
    if matches!(opcode, PRINTF_TO_STREAM | PRINTF_TO_STREAM_PACKED) {
        port.recv(|lane, packet| files[lane as usize] = stream(packet[0]))?;
    } else {
        let standard = if matches!(opcode, PRINTF_TO_STDERR | PRINTF_TO_STDERR_PACKED) {
            c_stderr()
        } else {
            c_stdout()
        };
        files.iter_mut().for_each(|file| *file = standard);
    }
    let formats = port.recv_n()?;
    let format_of = |lane: u32| formats.get(lane as usize).and_then(Option::as_deref);
    port.send(|lane, packet| {
        packet[0] = format_of(lane).map_or(0, |f| printf::argument_bytes(f, packed));
    })?;
    let arguments = port.recv_n()?;
    let arguments_of = |lane: u32| {
        arguments
            .get(lane as usize)
            .and_then(Option::as_deref)
            .unwrap_or(&[])
    };
    // The `%s` arguments each lane's client must send the text of, first to last.
    let mut wanted: Vec<std::collections::VecDeque<u64>> = (0..span as u32)
        .map(|lane| {
            format_of(lane)
                .map(|f| printf::string_arguments(f, arguments_of(lane), packed).into())
                .unwrap_or_default()
        })
        .collect();
    let mut strings: Vec<Vec<Vec<u8>>> = vec![Vec::new(); span];
    while wanted.iter().any(|w| !w.is_empty()) {
        let mut asked = [false; 64];
        port.send(|lane, packet| {
            let next = wanted[lane as usize].pop_front();
            asked[lane as usize] = next.is_some();
            packet[1] = next.unwrap_or(0);
        })?;
        let texts = port.recv_n()?;
        for (lane, text) in texts.into_iter().enumerate().take(span) {
            if let (true, Some(mut text)) = (asked[lane], text) {
                if text.last() == Some(&0) {
                    text.pop();
                }
                strings[lane].push(text);
            }
        }
        // A client that has no more lanes to ask for ends the loop even if a damaged one
        // keeps listing strings: every lane asked at most once per string it listed.
    }
    port.send(|lane, packet| {
        let result = format_of(lane).map_or(-1i64, |format| {
            match printf::format(format, arguments_of(lane), packed, &strings[lane as usize]) {
                Ok(text) => {
                    let written = write_all(files[lane as usize], &text);
                    if written == text.len() {
                        written as i64
                    } else {
                        -1
                    }
                }
                Err(error) => {
                    log::warn!("a device printf was refused: {error}");
                    -1
                }
            }
        });
        packet[0] = result as u64;
        packet[1] = 0;
    })
}
