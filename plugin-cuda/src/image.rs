//! What a device image is, read without the driver: shared with the CUDA driver emulator, so
//! it lives in plugin-api (`gpu::cuda_image`).

pub use plugin_api::gpu::cuda_image::*;
