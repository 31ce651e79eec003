//! AMDGPU code objects, read without the runtime: `offload_image::amdgpu_code_object` (shared
//! with the emulated HSA runtime, which loads them as ROCm does), re-exported here for the
//! plugin.

pub use offload_image::amdgpu_code_object::*;
