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

    fn elf(machine: u16, e_type: u16) -> Vec<u8> {
        let mut v = vec![0u8; 64];
        v[..4].copy_from_slice(b"\x7fELF");
        v[4] = 2;
        v[5] = 1;
        v[16..18].copy_from_slice(&e_type.to_le_bytes());
        v[18..20].copy_from_slice(&machine.to_le_bytes());
        v
    }

    #[test]
    fn accepts_x86_64_shared_objects() {
        assert!(image(&elf(62, 3), "x86_64-pc-linux-gnu").compatible);
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
    }
}
