//! What a device image is, read without the driver: shared with the CUDA driver emulator, so
//! it lives in plugin-api (`gpu::cuda_image`).

pub use offload_image::cuda_image::*;
use plugin_api::PluginError;

/// An image as the plugin reads it before the driver sees it.
pub struct CheckedImage {
    pub kind: ImageKind,
    pub symbols: SymbolTable,
}

/// Everything the plugin reads of an image before handing it to the driver, which trusts it:
/// what it is, a cubin's layout, whether it suits a device of compute capability `device`
/// (an `UNSUPPORTED` error if not), and its symbols.
pub fn check(bytes: &[u8], device: SmVersion) -> Result<CheckedImage, PluginError> {
    let kind = classify(bytes).map_err(PluginError::invalid_argument)?;
    if let ImageKind::Cubin { .. } = kind {
        offload_image::elf_layout::check(bytes, offload_image::elf_layout::Addresses::Unused)
            .map_err(|e| PluginError::invalid_argument(format!("the cubin is damaged: {e}")))?;
    }
    compatible(&kind, device).map_err(PluginError::unsupported)?;
    let symbols = SymbolTable::read(bytes).map_err(PluginError::invalid_argument)?;
    Ok(CheckedImage { kind, symbols })
}
