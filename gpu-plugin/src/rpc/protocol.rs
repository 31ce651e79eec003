//! The two releases of LLVM's remote-call protocol that device code speaks. The shared memory,
//! the client object and the packet exchange are the same in both; they differ in how device
//! code names its client, in the width of a request's opcode and in the opcodes' numbers:
//!
//! | release | client global | the global holds | opcode |
//! |---|---|---|---|
//! | LLVM 19 (its GPU libc) | `__llvm_libc_rpc_client` | a pointer to the client | 16 bits, `0..=27` |
//! | LLVM 22 (GPU libc, OpenMP device runtime) | `__llvm_rpc_client` | the client | 32 bits, `'c' << 24 \| n` |
//!
//! LLVM 19's numbers are LLVM 22's libc numbers without the `'c'` base, so a request is served
//! by the same handler under either release once its opcode is named as LLVM 22 names it.

use super::opcodes;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Protocol {
    Llvm19,
    Llvm22,
}

/// LLVM 19's last opcode (`RPC_REMOVE`); rename and system came later.
const LLVM19_LAST: u32 = 27;

impl Protocol {
    /// Every release, in the order an image's globals are looked up.
    pub const ALL: [Protocol; 2] = [Protocol::Llvm22, Protocol::Llvm19];

    /// The device code's global that holds the client or points at it.
    pub fn client_symbol(self) -> &'static str {
        match self {
            Protocol::Llvm19 => "__llvm_libc_rpc_client",
            Protocol::Llvm22 => "__llvm_rpc_client",
        }
    }

    /// Whether the global is a pointer to the client (the client lives elsewhere in device
    /// memory) rather than the client itself.
    pub fn client_by_pointer(self) -> bool {
        self == Protocol::Llvm19
    }

    pub fn name(self) -> &'static str {
        match self {
            Protocol::Llvm19 => "LLVM 19",
            Protocol::Llvm22 => "LLVM 22",
        }
    }

    /// The opcode of a request whose header holds `word` (the header's 32 bits after the lane
    /// mask), named as LLVM 22 names it. An LLVM 19 number past its last opcode stays as it
    /// is: below LLVM 22's bases, it is unknown to the server and reported as sent.
    pub fn opcode(self, word: u32) -> u32 {
        match self {
            Protocol::Llvm22 => word,
            Protocol::Llvm19 => {
                let number = word & 0xffff;
                if number <= LLVM19_LAST {
                    opcodes::NOOP | number
                } else {
                    number
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn llvm_19s_numbers_are_llvm_22s_libc_numbers() {
        let old = Protocol::Llvm19;
        assert_eq!(old.opcode(0), opcodes::NOOP);
        assert_eq!(old.opcode(12), opcodes::HOST_CALL);
        assert_eq!(old.opcode(21), opcodes::PRINTF_TO_STDOUT);
        assert_eq!(old.opcode(27), opcodes::REMOVE);
        // The header's two bytes after a 16-bit opcode are padding, whatever they hold.
        assert_eq!(old.opcode(0xabcd_0002), opcodes::WRITE_TO_STDOUT);
        // Past LLVM 19's last: unknown, with its own number.
        assert_eq!(old.opcode(28), 28);
        assert_eq!(old.opcode(0xffff), 0xffff);
        assert_eq!(Protocol::Llvm22.opcode(opcodes::RENAME), opcodes::RENAME);
    }
}
