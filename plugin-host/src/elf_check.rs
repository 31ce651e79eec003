//! Decides whether an image is an x86-64 ELF shared object this plugin can load.

use plugin_api::{ImageCompatibility, ImageRef};

const EM_X86_64: u16 = 62;
const ET_DYN: u16 = 3;

fn machine_name(machine: u16) -> &'static str {
    match machine {
        3 => "i386",
        40 => "ARM",
        62 => "x86-64",
        183 => "AArch64",
        190 => "NVIDIA CUDA",
        224 => "AMD GPU",
        243 => "RISC-V",
        21 => "PowerPC64",
        _ => "another machine",
    }
}

/// Whether the program headers (already checked to lie in the file) include a PT_LOAD.
fn has_loadable_segment(bytes: &[u8]) -> bool {
    let phoff = u64::from_le_bytes(bytes[32..40].try_into().unwrap()) as usize;
    let phnum = u16::from_le_bytes([bytes[56], bytes[57]]) as usize;
    (0..phnum).any(|i| bytes[phoff + i * 56..phoff + i * 56 + 4] == 1u32.to_le_bytes())
}

/// The answer for one image, with a reason a user can act on when it is "no".
pub fn check(image: &ImageRef<'_>) -> ImageCompatibility {
    let triple = image.triple.as_str();
    if !triple.is_empty() && !triple.starts_with("x86_64") {
        return ImageCompatibility::no(format!(
            "image is for target '{triple}', the host plugin runs x86_64 images"
        ));
    }
    if !cfg!(target_arch = "x86_64") {
        return ImageCompatibility::no(
            "the host plugin runs x86_64 images and this is not an x86_64 host",
        );
    }
    let bytes = image.bytes.as_slice();
    if bytes.len() < 64 || &bytes[..4] != b"\x7fELF" {
        return ImageCompatibility::no("image is not an ELF file (corrupt or foreign format)");
    }
    if bytes[4] != 2 || bytes[5] != 1 {
        return ImageCompatibility::no("image is not a 64-bit little-endian ELF file");
    }
    // What glibc's loader asks of the identification bytes: ELF version 1 (also in e_version),
    // a System V or GNU ABI of version 0, and zero padding. (NVIDIA's cubins use e_version for
    // their own ABI: this is the host loader's rule, not ELF's.)
    let e_version = u32::from_le_bytes(bytes[20..24].try_into().unwrap());
    if bytes[6] != 1 || e_version != 1 {
        return ImageCompatibility::no("image is damaged: its ELF version is not 1");
    }
    if !matches!(bytes[7], 0 | 3) || bytes[8] != 0 || bytes[9..16].iter().any(|&b| b != 0) {
        return ImageCompatibility::no(
            "image is damaged: its ELF identification names another ABI or is not zero-padded",
        );
    }
    let e_type = u16::from_le_bytes([bytes[16], bytes[17]]);
    let machine = u16::from_le_bytes([bytes[18], bytes[19]]);
    if machine != EM_X86_64 {
        return ImageCompatibility::no(format!(
            "image is an ELF file for {} (e_machine {machine}), the host plugin runs x86-64 images",
            machine_name(machine)
        ));
    }
    if e_type != ET_DYN {
        return ImageCompatibility::no(format!(
            "image is an ELF file of type {e_type}, not a shared object"
        ));
    }
    // The dynamic loader trusts the image's layout: a damaged one must not reach it.
    if let Err(e) =
        offload_image::elf_layout::check(bytes, offload_image::elf_layout::Addresses::Mapped)
    {
        return ImageCompatibility::no(format!("image is damaged: {e}"));
    }
    if !has_loadable_segment(bytes) {
        return ImageCompatibility::no("image is damaged: it has no loadable segment");
    }
    ImageCompatibility::yes()
}

#[cfg(test)]
mod tests {
    use super::*;
    use abi_stable::std_types::{RSlice, RStr};

    fn image(bytes: &[u8], triple: &'static str) -> ImageCompatibility {
        check(&ImageRef {
            bytes: RSlice::from_slice(bytes),
            triple: RStr::from_str(triple),
            arch: RStr::from_str(""),
        })
    }

    /// A header alone (no program or section headers): nothing for a loader to map.
    fn elf(machine: u16, e_type: u16) -> Vec<u8> {
        let mut v = vec![0u8; 64];
        v[..4].copy_from_slice(b"\x7fELF");
        v[4] = 2;
        v[5] = 1;
        v[6] = 1;
        v[20] = 1;
        v[16..18].copy_from_slice(&e_type.to_le_bytes());
        v[18..20].copy_from_slice(&machine.to_le_bytes());
        v[52..54].copy_from_slice(&64u16.to_le_bytes());
        v
    }

    #[test]
    fn accepts_x86_64_shared_objects() {
        let mut so = elf(62, 3);
        // One PT_LOAD of the 64-byte header.
        so.extend([0u8; 56]);
        so[32..40].copy_from_slice(&64u64.to_le_bytes());
        so[54..56].copy_from_slice(&56u16.to_le_bytes());
        so[56..58].copy_from_slice(&1u16.to_le_bytes());
        so[64..68].copy_from_slice(&1u32.to_le_bytes());
        so[96..104].copy_from_slice(&64u64.to_le_bytes());
        so[104..112].copy_from_slice(&64u64.to_le_bytes());
        assert!(image(&so, "x86_64-pc-linux-gnu").compatible);
        let r = image(&elf(62, 3), "");
        assert!(r.reason.contains("no loadable segment"), "{}", r.reason);
    }

    #[test]
    fn refuses_other_machines_and_garbage_with_reasons() {
        let r = image(&elf(183, 3), "");
        assert!(!r.compatible);
        assert!(r.reason.contains("AArch64"), "{}", r.reason);
        let r = image(
            b"not an elf at all, really not an elf at all, not at all, no no no",
            "",
        );
        assert!(r.reason.contains("not an ELF"), "{}", r.reason);
        let r = image(&elf(62, 3), "nvptx64-nvidia-cuda");
        assert!(r.reason.contains("nvptx64"), "{}", r.reason);
        assert!(!image(&elf(62, 2), "").compatible);
        let mut damaged = elf(62, 3);
        damaged[56..58].copy_from_slice(&4u16.to_le_bytes()); // 4 program headers, none there
        damaged[54..56].copy_from_slice(&56u16.to_le_bytes());
        let r = image(&damaged, "");
        assert!(
            r.reason.contains("damaged") && r.reason.contains("program headers"),
            "{}",
            r.reason
        );
    }
}
