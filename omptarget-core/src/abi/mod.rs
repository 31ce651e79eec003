//! The data layouts clang-compiled programs hand to the runtime. Raw pointers from C are read
//! here and nowhere else; the rest of the runtime sees Rust values.

pub(crate) mod c_strings;
pub(crate) mod descriptors;
pub(crate) mod interop;
pub(crate) mod kernel_args;
pub(crate) mod kernel_language;
pub(crate) mod map_args;
pub(crate) mod map_type;
pub mod offload_entry;
pub(crate) mod source_location;
