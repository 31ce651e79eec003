//! The data layouts clang-compiled programs hand to the runtime. Raw pointers from C are read
//! here and nowhere else; the rest of the runtime sees Rust values.

pub mod c_strings;
pub mod descriptors;
pub mod interop;
pub mod kernel_args;
pub mod kernel_language;
pub mod map_args;
pub mod map_type;
pub mod offload_entry;
pub mod source_location;
