//! Valgrind client requests: telling memcheck about memory the runtime and its plugins hand out
//! from pools of their own, so that a program's overruns and uses after free of such memory
//! are reported as they would be for `malloc`'s blocks, with the stack that allocated them.
//!
//! A client request is a magic instruction sequence that does nothing on a real CPU (four
//! rotations that add up to a full turn, then an exchange of a register with itself) and that
//! valgrind's JIT recognises: it reads the request from a six-word array whose address is in
//! one register and leaves its answer in another, which otherwise keeps the default given.
//! Not under valgrind a request is a handful of instructions (the six words stored on the
//! stack, the rotations), with no branch, lock or call. The request codes are valgrind's ABI (`valgrind.h`, `memcheck.h`), which
//! valgrind promises never to change. On architectures other than x86_64 and aarch64 every
//! request is a no-op returning its default.
//!
//! Written here rather than taken from crates.io: `valgrind_request` needs a nightly compiler
//! (`#![feature(asm)]`) and has no memcheck requests; `crabgrind` compiles a C shim against
//! valgrind's headers with `cc` and runs `bindgen` (libclang) at build time, and calls the
//! requests through FFI. The few requests the pools need fit in one small module.
//!
//! The annotations are for memcheck only: other tools ignore memcheck's requests (DHAT warns of
//! each), and a pool watched under callgrind would count the requests' instructions and size
//! its blocks differently. [`running_on_memcheck`] tells memcheck apart, and [`memcheck`]
//! keeps its answer.
//!
//! How the pools use them (memcheck's manual, "Memory pools"): a pool is named by an anchor
//! address ([`create_mempool`]); its spare memory is marked no-access ([`make_mem_noaccess`]);
//! each block handed out becomes a chunk of the pool ([`mempool_alloc`], addressable but
//! undefined, recorded with the allocating stack), and no-access again when it comes back
//! ([`mempool_free`]). An access past a chunk is then reported as "N bytes after a block of
//! size S client-defined", with the chunk's allocation stack, when it falls in the red zone
//! the pool was created with.
#![no_std]

/// `valgrind.h`: core requests.
const RUNNING_ON_VALGRIND: usize = 0x1001;
const MALLOCLIKE_BLOCK: usize = 0x1301;
const FREELIKE_BLOCK: usize = 0x1302;
const CREATE_MEMPOOL: usize = 0x1303;
const DESTROY_MEMPOOL: usize = 0x1304;
const MEMPOOL_ALLOC: usize = 0x1305;
const MEMPOOL_FREE: usize = 0x1306;
/// `memcheck.h`: memcheck's requests start at `VG_USERREQ_TOOL_BASE('M','C')`.
const MEMCHECK_BASE: usize = ((b'M' as usize) << 24) | ((b'C' as usize) << 16);
const MAKE_MEM_NOACCESS: usize = MEMCHECK_BASE;
const MAKE_MEM_UNDEFINED: usize = MEMCHECK_BASE + 1;
const MAKE_MEM_DEFINED: usize = MEMCHECK_BASE + 2;
const CHECK_MEM_IS_ADDRESSABLE: usize = MEMCHECK_BASE + 4;

/// Issues client request `args[0]` with arguments `args[1..]`; `default` is the answer when
/// not under valgrind (or under a tool that does not know the request).
#[inline(always)]
fn request(default: usize, args: [usize; 6]) -> usize {
    #[cfg(target_arch = "x86_64")]
    {
        let mut result = default;
        // SAFETY: the rotations of rdi add up to 128 bits, so rdi is unchanged, and
        // `xchg rbx, rbx` leaves rbx as it was: natively only the flags change (asm! assumes
        // they do). Under valgrind the request reads the six words at rax (live for the whole
        // statement) and writes rdx, declared as an output. No stack is used. Memory is not
        // declared untouched, so the compiler keeps the program's accesses on their side of
        // the request (an access moved before a block became addressable would be reported).
        unsafe {
            core::arch::asm!(
                "rol rdi, 3",
                "rol rdi, 13",
                "rol rdi, 61",
                "rol rdi, 51",
                "xchg rbx, rbx",
                in("rax") args.as_ptr(),
                inout("rdx") result,
                options(nostack),
            );
        }
        result
    }
    #[cfg(target_arch = "aarch64")]
    {
        let mut result = default;
        // SAFETY: the rotations of x12 add up to 128 bits and `orr x10, x10, x10` leaves x10
        // as it was: natively nothing changes. Under valgrind the request reads the six words
        // at x4 (live for the whole statement) and writes x3, declared as an output.
        unsafe {
            core::arch::asm!(
                "ror x12, x12, #3",
                "ror x12, x12, #13",
                "ror x12, x12, #51",
                "ror x12, x12, #61",
                "orr x10, x10, x10",
                in("x4") args.as_ptr(),
                inout("x3") result,
                options(nostack),
            );
        }
        result
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        let _ = args;
        default
    }
}

/// Whether the process runs under valgrind (any tool).
#[inline]
pub fn running_on_valgrind() -> bool {
    request(0, [RUNNING_ON_VALGRIND, 0, 0, 0, 0, 0]) != 0
}

/// Whether the process runs under valgrind's memcheck: asked whether a byte of the stack is
/// addressable, memcheck answers 0 (it is), while a real CPU and other tools give back the
/// default.
#[inline]
pub fn running_on_memcheck() -> bool {
    let probe = 0u8;
    let addr = core::ptr::addr_of!(probe) as usize;
    request(1, [CHECK_MEM_IS_ADDRESSABLE, addr, 1, 0, 0, 0]) == 0
}

/// [`running_on_memcheck`], asked once per process.
#[inline]
pub fn memcheck() -> bool {
    use core::sync::atomic::{AtomicU8, Ordering};
    const UNKNOWN: u8 = 0;
    const NO: u8 = 1;
    const YES: u8 = 2;
    static ANSWER: AtomicU8 = AtomicU8::new(UNKNOWN);
    match ANSWER.load(Ordering::Relaxed) {
        UNKNOWN => {
            let yes = running_on_memcheck();
            ANSWER.store(if yes { YES } else { NO }, Ordering::Relaxed);
            yes
        }
        answer => answer == YES,
    }
}

/// [`make_mem_noaccess`] under memcheck ([`memcheck`]); nothing otherwise.
#[inline]
pub fn noaccess_under_memcheck(addr: usize, len: usize) {
    if memcheck() {
        make_mem_noaccess(addr, len);
    }
}

/// [`make_mem_undefined`] under memcheck ([`memcheck`]); nothing otherwise.
#[inline]
pub fn undefined_under_memcheck(addr: usize, len: usize) {
    if memcheck() {
        make_mem_undefined(addr, len);
    }
}

/// Marks `len` bytes at `addr` unaddressable: memcheck reports any access to them.
#[inline]
pub fn make_mem_noaccess(addr: usize, len: usize) {
    request(0, [MAKE_MEM_NOACCESS, addr, len, 0, 0, 0]);
}

/// Marks `len` bytes at `addr` addressable, with undefined contents.
#[inline]
pub fn make_mem_undefined(addr: usize, len: usize) {
    request(0, [MAKE_MEM_UNDEFINED, addr, len, 0, 0, 0]);
}

/// Marks `len` bytes at `addr` addressable and defined.
#[inline]
pub fn make_mem_defined(addr: usize, len: usize) {
    request(0, [MAKE_MEM_DEFINED, addr, len, 0, 0, 0]);
}

/// Tells memcheck that `size` bytes at `addr` were allocated, as by `malloc`, by a custom
/// allocator that keeps `redzone` no-access bytes on either side. Not for blocks inside
/// memory memcheck already knows as a `malloc` block (use a memory pool there).
#[inline]
pub fn malloclike_block(addr: usize, size: usize, redzone: usize, is_zeroed: bool) {
    request(
        0,
        [MALLOCLIKE_BLOCK, addr, size, redzone, is_zeroed as usize, 0],
    );
}

/// Tells memcheck that the block at `addr` from [`malloclike_block`] was freed.
#[inline]
pub fn freelike_block(addr: usize, redzone: usize) {
    request(0, [FREELIKE_BLOCK, addr, redzone, 0, 0, 0]);
}

/// Creates a memory pool named by `anchor` (any address unique to the pool and stable while it
/// lives) whose chunks have `redzone` bytes on either side, kept no-access by the pool. A
/// pool's superblocks may be `malloc` blocks: memcheck then describes an address by the chunk
/// it belongs to and leak-checks the chunks, not the superblock.
#[inline]
pub fn create_mempool(anchor: usize, redzone: usize, is_zeroed: bool) {
    request(
        0,
        [CREATE_MEMPOOL, anchor, redzone, is_zeroed as usize, 0, 0],
    );
}

/// Forgets the pool named by `anchor` and all its chunks.
#[inline]
pub fn destroy_mempool(anchor: usize) {
    request(0, [DESTROY_MEMPOOL, anchor, 0, 0, 0, 0]);
}

/// Records `size` bytes at `addr` as a chunk of the pool `anchor`, allocated here (the stack
/// memcheck shows for errors in the chunk), addressable and undefined.
#[inline]
pub fn mempool_alloc(anchor: usize, addr: usize, size: usize) {
    request(0, [MEMPOOL_ALLOC, anchor, addr, size, 0, 0]);
}

/// Ends the chunk at `addr` of the pool `anchor`: its bytes become no-access.
#[inline]
pub fn mempool_free(anchor: usize, addr: usize) {
    request(0, [MEMPOOL_FREE, anchor, addr, 0, 0, 0]);
}

#[cfg(test)]
mod tests {
    /// Natively every request answers its default and changes nothing (the test binary is
    /// not run under valgrind by `cargo test`).
    #[test]
    fn requests_are_no_ops_natively() {
        let mut buffer = [7u8; 64];
        let addr = buffer.as_mut_ptr() as usize;
        if super::running_on_valgrind() {
            return;
        }
        assert!(!super::running_on_memcheck());
        assert!(!super::memcheck());
        super::noaccess_under_memcheck(addr, 64);
        super::undefined_under_memcheck(addr, 64);
        super::create_mempool(addr, 16, false);
        super::make_mem_noaccess(addr, 64);
        super::mempool_alloc(addr, addr, 8);
        super::mempool_free(addr, addr);
        super::destroy_mempool(addr);
        super::make_mem_undefined(addr, 64);
        super::make_mem_defined(addr, 64);
        super::malloclike_block(addr, 8, 0, false);
        super::freelike_block(addr, 0);
        assert_eq!(super::request(42, [0x1001, 0, 0, 0, 0, 0]), 42);
        assert_eq!(buffer, [7u8; 64]);
    }
}
