//! Device code calling the host: the server of LLVM 22's remote procedure calls, over which
//! its GPU libc sends `printf`, file, `malloc` and `exit` requests and its OpenMP device
//! runtime `__llvm_omp_host_call`. The client is LLVM's code on the device, so the shared
//! memory's layout ([`mailbox`]), the packet exchange of a port ([`port`]) and the exchange of
//! each request ([`handlers`], [`printf`]) follow LLVM 22's `rpc.h` and its server, written
//! here in our own words. [`device_rpc`] gives a device's images their client and keeps the
//! plugin's [`server`] running while the device's kernels may call.

pub mod device_rpc;
pub mod handlers;
pub mod mailbox;
pub mod opcodes;
pub mod port;
pub mod printf;
pub mod server;
