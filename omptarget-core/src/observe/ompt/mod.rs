//! OMPT, the OpenMP tools interface, for target constructs: tools (profilers, tracers) learn of
//! device initialisation, image loads, target constructs, data operations and kernel submissions.
//!
//! - `abi`: the OMPT C types and callback signatures.
//! - `connection`: binding the tool's callbacks through libomp, once.
//! - `events`: what is reported, and the per-thread construct state.
//! - `return_address`: the program's call site reported as `codeptr_ra`.
//!
//! Device-side tracing (`ompt_set_trace_ompt` and the buffer API) is not provided; LLVM 19 does
//! not provide it either.

pub(crate) mod abi;
pub(crate) mod connection;
pub(crate) mod events;
pub(crate) mod return_address;

pub(crate) use abi::{DataOpKind, TargetKind};
pub(crate) use connection::{connect, tool};
pub(crate) use events::{ConstructScope, DataOp, Submit};
