//! Device code calling the host: the server of LLVM's remote procedure calls, over which its
//! GPU libc sends `printf`, file, `malloc` and `exit` requests and LLVM 22's OpenMP device
//! runtime `__llvm_omp_host_call`. The client is LLVM's code on the device, so the shared
//! memory's layout ([`mailbox`]), the packet exchange of a port ([`port`]) and the exchange of
//! each request ([`handlers`], [`printf`]) follow LLVM's `rpc.h` and its server, written here
//! in our own words; LLVM 19's and 22's releases of it differ only where [`protocol`] says. [`device_rpc`] gives a device's images their client and keeps the
//! plugin's [`server`] running while the device's kernels may call.

pub mod device_rpc;
pub mod handlers;
pub mod mailbox;
pub mod opcodes;
pub mod port;
pub mod printf;
pub mod protocol;
pub mod server;
