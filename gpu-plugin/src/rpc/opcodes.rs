//! The requests a device's client sends, numbered as LLVM 22's libc (`rpc_opcodes.h`: base
//! `'c'`) and offload runtime (`RPCOpcodes.h`: base `'o'`) number them.

const fn libc(n: u32) -> u32 {
    ((b'c' as u32) << 24) | n
}

pub const NOOP: u32 = libc(0);
pub const EXIT: u32 = libc(1);
pub const WRITE_TO_STDOUT: u32 = libc(2);
pub const WRITE_TO_STDERR: u32 = libc(3);
pub const WRITE_TO_STREAM: u32 = libc(4);
pub const WRITE_TO_STDOUT_NEWLINE: u32 = libc(5);
pub const READ_FROM_STREAM: u32 = libc(6);
pub const READ_FGETS: u32 = libc(7);
pub const OPEN_FILE: u32 = libc(8);
pub const CLOSE_FILE: u32 = libc(9);
pub const MALLOC: u32 = libc(10);
pub const FREE: u32 = libc(11);
pub const HOST_CALL: u32 = libc(12);
pub const ABORT: u32 = libc(13);
pub const FEOF: u32 = libc(14);
pub const FERROR: u32 = libc(15);
pub const CLEARERR: u32 = libc(16);
pub const FSEEK: u32 = libc(17);
pub const FTELL: u32 = libc(18);
pub const FFLUSH: u32 = libc(19);
pub const UNGETC: u32 = libc(20);
pub const PRINTF_TO_STDOUT: u32 = libc(21);
pub const PRINTF_TO_STDERR: u32 = libc(22);
pub const PRINTF_TO_STREAM: u32 = libc(23);
pub const PRINTF_TO_STDOUT_PACKED: u32 = libc(24);
pub const PRINTF_TO_STDERR_PACKED: u32 = libc(25);
pub const PRINTF_TO_STREAM_PACKED: u32 = libc(26);
pub const REMOVE: u32 = libc(27);
pub const RENAME: u32 = libc(28);
pub const SYSTEM: u32 = libc(29);
/// LLVM's own protocol tests' requests, served so that those tests run against this server.
pub const TEST_INCREMENT: u32 = libc(1 << 15);
pub const TEST_INTERFACE: u32 = libc((1 << 15) + 1);
pub const TEST_STREAM: u32 = libc((1 << 15) + 2);

/// `__llvm_omp_host_call` of LLVM 22's OpenMP device runtime.
pub const OFFLOAD_HOST_CALL: u32 = (b'o' as u32) << 24;

/// An opcode for messages: its base letter and number when it has one (`'c' 21`).
pub fn describe(opcode: u32) -> String {
    let base = (opcode >> 24) as u8;
    if base.is_ascii_graphic() {
        format!("{opcode:#x} ('{}' {})", base as char, opcode & 0x00ff_ffff)
    } else {
        format!("{opcode:#x}")
    }
}
