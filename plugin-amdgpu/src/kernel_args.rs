//! The bytes of a kernel's argument segment: the explicit arguments the core passes, then the
//! hidden (implicit) arguments the compiler's code reads, placed where the kernel's metadata
//! says. LLVM writes a fixed code-object-v5 struct instead; following the metadata also serves
//! v4 kernels and kernels without some hidden arguments.

use crate::code_object::KernelMetadata;

/// What a launch fills into the hidden arguments.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct LaunchShape {
    /// Work-groups (teams) in x; y and z are 1.
    pub blocks: u32,
    /// Work-items (threads) per work-group in x; y and z are 1.
    pub threads: u32,
    /// Dynamic LDS bytes the launch asked for.
    pub dynamic_lds: u32,
}

/// Builds the argument segment of `kernel` for `values` (one pointer-sized value per explicit
/// argument, launch environment first when the kernel takes one).
pub fn build(
    kernel: &KernelMetadata,
    values: &[usize],
    shape: LaunchShape,
) -> Result<Vec<u8>, String> {
    let mut segment = vec![0u8; kernel.kernarg_segment_size as usize];
    let explicit: Vec<_> = kernel
        .args
        .iter()
        .filter(|a| !a.value_kind.starts_with("hidden_"))
        .collect();
    if explicit.len() != values.len() {
        return Err(format!(
            "kernel '{}' takes {} arguments, the launch passes {}",
            kernel.name,
            explicit.len(),
            values.len()
        ));
    }
    for (arg, value) in explicit.iter().zip(values) {
        put(
            &mut segment,
            arg.offset,
            arg.size,
            *value as u64,
            &kernel.name,
        )?;
    }
    for arg in kernel
        .args
        .iter()
        .filter(|a| a.value_kind.starts_with("hidden_"))
    {
        let value: u64 = match arg.value_kind.as_str() {
            "hidden_block_count_x" => shape.blocks as u64,
            "hidden_block_count_y" | "hidden_block_count_z" => 1,
            "hidden_group_size_x" => shape.threads as u64,
            "hidden_group_size_y" | "hidden_group_size_z" => 1,
            "hidden_grid_dims" => 1,
            "hidden_dynamic_lds_size" => shape.dynamic_lds as u64,
            // Offsets and remainders are 0 (whole work-groups from the origin); the buffers
            // of services we do not provide (hostcall, printf, heap v1, multigrid sync) stay
            // null, which the device code checks.
            _ => 0,
        };
        put(&mut segment, arg.offset, arg.size, value, &kernel.name)?;
    }
    Ok(segment)
}

/// Writes the low `size` bytes of `value` at `offset`.
fn put(segment: &mut [u8], offset: u32, size: u32, value: u64, kernel: &str) -> Result<(), String> {
    let (offset, size) = (offset as usize, size as usize);
    let slot = segment
        .get_mut(offset..offset.saturating_add(size))
        .filter(|_| size <= 8)
        .ok_or_else(|| {
            format!("kernel '{kernel}' has an argument of {size} bytes at offset {offset}, outside its argument segment")
        })?;
    slot.copy_from_slice(&value.to_le_bytes()[..size]);
    Ok(())
}
