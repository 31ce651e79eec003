//! Device images as files, read without a driver or the plugin ABI: the checks a loader's input
//! must pass, the containers clang puts images in, and what each vendor's format says about its
//! target and symbols. The core, the plugins, the emulated drivers and the fuzz targets read
//! images through this crate, so each format is parsed in one place.
//!
//! - [`elf_layout`]: an ELF image is laid out consistently before any loader trusts it.
//! - [`offload_binary`]: LLVM's offload-binary container around each device image.
//! - [`cuda_image`]: a cubin's SM or a PTX image's target, and its symbols.
//! - [`amdgpu_code_object`]: an AMDGPU code object's target ID, kernels and metadata.
//! - [`amdgpu_processors`]: the AMDGCN processors of the ELF `EF_AMDGPU_MACH` field.
//! - [`kernel_names`]: OpenMP kernels' names, and how reports show them.
//! - [`device_environment`]: the device and kernel environment globals of OpenMP images.
//! - [`device_runtime`]: GPU-style kernels in x86-64 images, run through omptarget-rs's host
//!   device runtime (its launcher), for host devices and for the emulators' twins.
//! - [`twin`]: a GPU image's x86-64 twin, which the emulated drivers run.
//! - [`native_code`]: native code that arrives as bytes, loaded from memory and called.
//! - [`llvm_ir`]: LLVM IR (bitcode) images, recognised to be refused (no JIT here).

pub mod amdgpu_code_object;
pub mod amdgpu_processors;
pub mod cuda_image;
pub mod device_environment;
pub mod device_runtime;
pub mod elf_layout;
pub mod kernel_names;
pub mod llvm_ir;
pub mod native_code;
pub mod offload_binary;
pub mod twin;
