//! AMDGPU code objects, read without the runtime: `plugin_api::gpu::amdgpu_code_object`
//! (shared with the emulated HSA runtime, which loads them as ROCm does), re-exported here for
//! the plugin. Its tests live here: they build code objects with clang and run the plugin's
//! checks on them.

pub use plugin_api::gpu::amdgpu_code_object::*;

#[cfg(test)]
pub(crate) mod tests;
