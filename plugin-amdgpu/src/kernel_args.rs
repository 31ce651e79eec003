//! The bytes of a kernel's argument segment: the explicit arguments the core passes, then the
//! hidden (implicit) arguments the compiler's code reads, placed where the kernel's metadata
//! says. LLVM writes a fixed code-object-v5 struct instead; following the metadata also serves
//! v4 kernels and kernels without some hidden arguments.

use crate::code_object::KernelMetadata;

/// What a launch fills into the hidden arguments.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct LaunchShape {
    /// Work-groups (teams) in x, y and z (y and z are 1 but for bare kernels).
    pub blocks: [u32; 3],
    /// Work-items (threads) per work-group in x, y and z.
    pub threads: [u32; 3],
    /// Dynamic LDS bytes the launch asked for.
    pub dynamic_lds: u32,
}

impl LaunchShape {
    /// Dimensions in use: up to the last with more than one work-group or work-item.
    pub fn dimensions(&self) -> u32 {
        (1..3)
            .rev()
            .find(|&d| self.blocks[d] > 1 || self.threads[d] > 1)
            .map_or(1, |d| d as u32 + 1)
    }
}

/// The explicit arguments of a launch.
#[derive(Copy, Clone, Debug)]
pub enum Explicit<'a> {
    /// One pointer-sized value per explicit argument (an OpenMP launch: the launch environment
    /// first when the kernel takes one), each placed where the metadata says.
    Values(&'a [usize]),
    /// The explicit arguments as the kernel language laid them out (a kernel-language launch,
    /// LLVM 22's `llvmLaunchKernel`): copied to the start of the segment as they are.
    Buffer(&'a [u8]),
}

/// Builds the argument segment of `kernel` for `explicit`, then its hidden arguments.
pub fn build(
    kernel: &KernelMetadata,
    explicit: Explicit<'_>,
    shape: LaunchShape,
) -> Result<Vec<u8>, String> {
    let mut segment = vec![0u8; kernel.kernarg_segment_size as usize];
    match explicit {
        Explicit::Values(values) => place_values(kernel, &mut segment, values)?,
        Explicit::Buffer(buffer) => place_buffer(kernel, &mut segment, buffer)?,
    }
    place_hidden(kernel, &mut segment, shape)?;
    Ok(segment)
}

fn place_values(
    kernel: &KernelMetadata,
    segment: &mut [u8],
    values: &[usize],
) -> Result<(), String> {
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
        put(segment, arg.offset, arg.size, *value as u64, &kernel.name)?;
    }
    Ok(())
}

/// The bytes a kernel-language parameter buffer for `kernel` may have: from the end of its
/// last explicit argument up to that end rounded up to the widest alignment its arguments can
/// have. The compiler's parameter struct has the kernel's layout (natural alignment on host
/// and device), so its size is the span rounded up to the struct's alignment: `(long *, int)`
/// spans 12 bytes and clang passes 16.
fn buffer_sizes(kernel: &KernelMetadata) -> std::ops::RangeInclusive<usize> {
    let span = kernel.explicit_args_size() as usize;
    // An argument's alignment divides its size and its offset (any alignment divides 0).
    let widest_divisor = |n: u32| 1u32 << n.trailing_zeros().min(31);
    let align = kernel
        .args
        .iter()
        .filter(|a| !a.is_hidden())
        .map(|a| widest_divisor(a.size.max(1)).min(widest_divisor(a.offset)))
        .max()
        .unwrap_or(1) as usize;
    span..=span.next_multiple_of(align)
}

/// A kernel-language parameter buffer: the bytes its explicit arguments span, copied as they
/// are (the struct's tail padding, if passed, is not: a kernel without hidden arguments has a
/// segment no longer than its arguments).
fn place_buffer(kernel: &KernelMetadata, segment: &mut [u8], buffer: &[u8]) -> Result<(), String> {
    let sizes = buffer_sizes(kernel);
    let span = *sizes.start();
    if !sizes.contains(&buffer.len()) {
        let padded = match sizes.end() - span {
            0 => String::new(),
            _ => format!(" ({} with the parameter struct's padding)", sizes.end()),
        };
        return Err(format!(
            "kernel '{}' takes {span} bytes of explicit arguments{padded}, the launch passes a \
             {}-byte parameter buffer",
            kernel.name,
            buffer.len()
        ));
    }
    segment
        .get_mut(..span)
        .ok_or_else(|| {
            format!(
                "kernel '{}' has explicit arguments beyond its argument segment",
                kernel.name
            )
        })?
        .copy_from_slice(&buffer[..span]);
    Ok(())
}

fn place_hidden(
    kernel: &KernelMetadata,
    segment: &mut [u8],
    shape: LaunchShape,
) -> Result<(), String> {
    for arg in kernel
        .args
        .iter()
        .filter(|a| a.value_kind.starts_with("hidden_"))
    {
        let value: u64 = match arg.value_kind.as_str() {
            "hidden_block_count_x" => shape.blocks[0] as u64,
            "hidden_block_count_y" => shape.blocks[1] as u64,
            "hidden_block_count_z" => shape.blocks[2] as u64,
            "hidden_group_size_x" => shape.threads[0] as u64,
            "hidden_group_size_y" => shape.threads[1] as u64,
            "hidden_group_size_z" => shape.threads[2] as u64,
            "hidden_grid_dims" => shape.dimensions() as u64,
            "hidden_dynamic_lds_size" => shape.dynamic_lds as u64,
            // Offsets and remainders are 0 (whole work-groups from the origin); the buffers
            // of services we do not provide (hostcall, printf, heap v1, multigrid sync) stay
            // null, which the device code checks.
            _ => 0,
        };
        put(segment, arg.offset, arg.size, value, &kernel.name)?;
    }
    Ok(())
}

/// Writes the low `size` bytes of `value` at `offset`.
fn put(segment: &mut [u8], offset: u32, size: u32, value: u64, kernel: &str) -> Result<(), String> {
    let (offset, size) = (offset as usize, size as usize);
    if size > 8 {
        return Err(format!(
            "kernel '{kernel}' has an argument of {size} bytes at offset {offset}; the runtime \
             passes pointer-sized values only"
        ));
    }
    let slot = segment
        .get_mut(offset..offset.saturating_add(size))
        .ok_or_else(|| {
            format!("kernel '{kernel}' has an argument of {size} bytes at offset {offset}, outside its argument segment")
        })?;
    slot.copy_from_slice(&value.to_le_bytes()[..size]);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use offload_image::amdgpu_code_object::test_images::{images, kernel_named};

    fn word<const N: usize>(segment: &[u8], at: u32) -> [u8; N] {
        segment[at as usize..at as usize + N].try_into().unwrap()
    }

    /// The saxpy kernel of real code objects (v5 and v4): explicit arguments where the
    /// metadata puts them, hidden ones set from the launch.
    #[test]
    fn segments_of_real_kernels() {
        let shape = LaunchShape {
            blocks: [120, 1, 1],
            threads: [256, 1, 1],
            dynamic_lds: 64,
        };
        for label in ["gfx90a", "v4:gfx90a:sramecc+:xnack-"] {
            let code = images().code_object(label);
            let kernel = kernel_named(&code, "saxpy");
            let explicit: Vec<_> = kernel.args.iter().filter(|a| !a.is_hidden()).collect();
            let values: Vec<usize> = (0..explicit.len()).map(|i| 0x1000 + i).collect();
            let segment = build(kernel, Explicit::Values(&values), shape).unwrap();
            assert_eq!(
                segment.len(),
                kernel.kernarg_segment_size as usize,
                "{label}"
            );
            for (arg, value) in explicit.iter().zip(&values) {
                let mut bytes = [0u8; 8];
                bytes[..arg.size as usize]
                    .copy_from_slice(&segment[arg.offset as usize..][..arg.size as usize]);
                assert_eq!(u64::from_le_bytes(bytes), *value as u64, "{label}");
            }
            if let Some(a) = kernel.arg("hidden_block_count_x") {
                assert_eq!(u32::from_le_bytes(word(&segment, a.offset)), 120);
                let y = kernel.arg("hidden_block_count_y").unwrap();
                assert_eq!(u32::from_le_bytes(word(&segment, y.offset)), 1);
                let g = kernel.arg("hidden_group_size_x").unwrap();
                assert_eq!(u16::from_le_bytes(word(&segment, g.offset)), 256);
                let d = kernel.arg("hidden_grid_dims").unwrap();
                assert_eq!(u16::from_le_bytes(word(&segment, d.offset)), 1);
            } else {
                assert!(label.starts_with("v4"), "a v5 kernel without block counts");
            }
            // A three-dimensional (bare) launch: every count and size, three dimensions.
            let cube = LaunchShape {
                blocks: [3, 2, 1],
                threads: [4, 2, 2],
                dynamic_lds: 0,
            };
            if let Some(a) = kernel.arg("hidden_block_count_x") {
                let segment = build(kernel, Explicit::Values(&values), cube).unwrap();
                let read = |kind: &str| {
                    let a = kernel.arg(kind).unwrap();
                    let mut bytes = [0u8; 4];
                    bytes[..a.size as usize]
                        .copy_from_slice(&segment[a.offset as usize..][..a.size as usize]);
                    u32::from_le_bytes(bytes)
                };
                assert_eq!(u32::from_le_bytes(word(&segment, a.offset)), 3);
                assert_eq!(read("hidden_block_count_y"), 2);
                assert_eq!(read("hidden_block_count_z"), 1);
                assert_eq!(read("hidden_group_size_y"), 2);
                assert_eq!(read("hidden_group_size_z"), 2);
                assert_eq!(read("hidden_grid_dims"), 3);
            }
            // Too few or too many values: refused, naming the kernel.
            let why = build(kernel, Explicit::Values(&values[1..]), shape).unwrap_err();
            assert!(
                why.contains(&kernel.name) && why.contains("arguments"),
                "{why}"
            );
        }
    }

    #[test]
    fn arguments_outside_the_segment_are_refused() {
        let kernel = KernelMetadata {
            name: "k".into(),
            kernarg_segment_size: 8,
            args: vec![crate::code_object::KernelArgument {
                offset: 4,
                size: 8,
                value_kind: "by_value".into(),
                name: None,
            }],
            ..Default::default()
        };
        let why = build(
            &kernel,
            Explicit::Values(&[1]),
            LaunchShape {
                blocks: [1; 3],
                threads: [1; 3],
                dynamic_lds: 0,
            },
        )
        .unwrap_err();
        assert!(why.contains("outside its argument segment"), "{why}");
    }

    /// A kernel-language launch: the parameter buffer lands where the explicit arguments are,
    /// byte for byte, and the hidden arguments follow as for any launch; a buffer of another
    /// size is refused, naming both sizes.
    #[test]
    fn parameter_buffers_fill_the_explicit_arguments() {
        let shape = LaunchShape {
            blocks: [7, 1, 1],
            threads: [64, 1, 1],
            dynamic_lds: 0,
        };
        let code = images().code_object("gfx90a");
        let kernel = kernel_named(&code, "saxpy");
        let span = kernel
            .args
            .iter()
            .filter(|a| !a.is_hidden())
            .map(|a| (a.offset + a.size) as usize)
            .max()
            .unwrap();
        let buffer: Vec<u8> = (0..span).map(|i| i as u8 ^ 0x5a).collect();
        let segment = build(kernel, Explicit::Buffer(&buffer), shape).unwrap();
        assert_eq!(&segment[..span], &buffer[..]);
        let a = kernel.arg("hidden_block_count_x").unwrap();
        assert_eq!(u32::from_le_bytes(word(&segment, a.offset)), 7);
        for wrong in [span - 4, span + 4] {
            let why = build(kernel, Explicit::Buffer(&vec![0; wrong]), shape).unwrap_err();
            assert!(
                why.contains(&kernel.name)
                    && why.contains(&format!("takes {span} bytes"))
                    && why.contains(&format!("a {wrong}-byte parameter buffer")),
                "{why}"
            );
        }
    }

    fn argument(offset: u32, size: u32, kind: &str) -> crate::code_object::KernelArgument {
        crate::code_object::KernelArgument {
            offset,
            size,
            value_kind: kind.into(),
            name: None,
        }
    }

    /// Hidden arguments of a code-object-v5 kernel from `at` on (block counts, group sizes,
    /// grid dimensions), as clang-22 lays them out.
    fn hidden_from(at: u32) -> Vec<crate::code_object::KernelArgument> {
        vec![
            argument(at, 4, "hidden_block_count_x"),
            argument(at + 4, 4, "hidden_block_count_y"),
            argument(at + 8, 4, "hidden_block_count_z"),
            argument(at + 12, 2, "hidden_group_size_x"),
            argument(at + 14, 2, "hidden_group_size_y"),
            argument(at + 16, 2, "hidden_group_size_z"),
            argument(at + 64, 2, "hidden_grid_dims"),
        ]
    }

    /// clang-22's parameter struct holds the explicit arguments with their tail padding: the
    /// kernels below are clang-22's gfx90a code for `-foffload-via-llvm` CUDA kernels. The
    /// bytes the arguments span are copied (the padding is not: the first kernel's segment
    /// ends with its arguments), the hidden arguments follow; a buffer shorter than the
    /// arguments or longer than the padded struct is refused.
    #[test]
    fn parameter_buffers_may_hold_the_structs_tail_padding() {
        let shape = LaunchShape {
            blocks: [3, 2, 1],
            threads: [8, 4, 1],
            dynamic_lds: 0,
        };
        // __global__ void fill(long *out, int n): 12 bytes, no hidden arguments; clang passes 16.
        let fill = KernelMetadata {
            name: "_Z4fillPli".into(),
            kernarg_segment_size: 12,
            args: vec![argument(0, 8, "global_buffer"), argument(8, 4, "by_value")],
            ..Default::default()
        };
        assert_eq!(buffer_sizes(&fill), 12..=16);
        let buffer: Vec<u8> = (1..=16).collect();
        let segment = build(&fill, Explicit::Buffer(&buffer), shape).unwrap();
        assert_eq!(segment, &buffer[..12]);
        assert_eq!(
            build(&fill, Explicit::Buffer(&buffer[..12]), shape).unwrap(),
            &buffer[..12]
        );
        for wrong in [8, 20] {
            let why = build(&fill, Explicit::Buffer(&vec![0; wrong]), shape).unwrap_err();
            assert_eq!(
                why,
                format!(
                    "kernel '_Z4fillPli' takes 12 bytes of explicit arguments (16 with the \
                     parameter struct's padding), the launch passes a {wrong}-byte parameter \
                     buffer"
                )
            );
        }

        // LLVM's basic_launch_multi_arg.cu: (int *, short, int *, short), 26 bytes; clang
        // passes 32, and the hidden arguments start there.
        let mut args = vec![
            argument(0, 8, "global_buffer"),
            argument(8, 2, "by_value"),
            argument(16, 8, "global_buffer"),
            argument(24, 2, "by_value"),
        ];
        args.extend(hidden_from(32));
        let square = KernelMetadata {
            name: "_Z6squarePisS_s".into(),
            kernarg_segment_size: 32 + 256,
            args,
            ..Default::default()
        };
        assert_eq!(buffer_sizes(&square), 26..=32);
        let buffer: Vec<u8> = (0..32).map(|i| 0xa0 ^ i).collect();
        let segment = build(&square, Explicit::Buffer(&buffer), shape).unwrap();
        assert_eq!(&segment[..26], &buffer[..26]);
        assert_eq!(&segment[26..32], &[0; 6], "the padding is not copied");
        assert_eq!(u32::from_le_bytes(word(&segment, 32)), 3);
        assert_eq!(u32::from_le_bytes(word(&segment, 36)), 2);
        assert_eq!(u32::from_le_bytes(word(&segment, 40)), 1);
        assert_eq!(u16::from_le_bytes(word(&segment, 44)), 8);
        assert_eq!(u16::from_le_bytes(word(&segment, 46)), 4);
        assert_eq!(u16::from_le_bytes(word(&segment, 48)), 1);
        assert_eq!(u16::from_le_bytes(word(&segment, 96)), 2);
        assert!(build(&square, Explicit::Buffer(&[0; 40]), shape).is_err());

        // A 16-byte aligned argument (CUDA's float4) before an int: 20 bytes, 32 with padding.
        let float4 = KernelMetadata {
            name: "k".into(),
            kernarg_segment_size: 20,
            args: vec![argument(0, 16, "by_value"), argument(16, 4, "by_value")],
            ..Default::default()
        };
        assert_eq!(buffer_sizes(&float4), 20..=32);
        // Without explicit arguments only an empty buffer fits.
        let none = KernelMetadata {
            name: "k".into(),
            kernarg_segment_size: 256,
            args: hidden_from(0),
            ..Default::default()
        };
        assert_eq!(buffer_sizes(&none), 0..=0);
        let why = build(&none, Explicit::Buffer(&[0; 8]), shape).unwrap_err();
        assert!(
            why.contains("takes 0 bytes of explicit arguments, the launch passes a 8-byte"),
            "{why}"
        );
    }
}
