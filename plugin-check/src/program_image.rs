//! The device images the checker can give a plugin: taken out of an offloading program (the
//! containers clang's linker wrapper embeds), or a bare device image file.

use object::{Object, ObjectSymbol};
use omptarget_core::offload_binary;

const CONTAINER_MAGIC: [u8; 4] = [0x10, 0xFF, 0x10, 0xAD];
/// Name parts of what `check_program.c` defines.
pub const KERNEL_FUNCTION: &str = "omptarget_plugin_check_kernel";
/// The kernel that runs until the checker releases it.
pub const WAIT_FUNCTION: &str = "omptarget_plugin_check_wait";
pub const GLOBAL_NAME: &str = "omptarget_plugin_check_global";

pub struct DeviceImage {
    pub bytes: Vec<u8>,
    pub triple: String,
    pub arch: String,
}

impl DeviceImage {
    pub fn describe(&self) -> String {
        let target = match (self.triple.is_empty(), self.arch.is_empty()) {
            (true, _) => "unknown target".to_string(),
            (false, true) => self.triple.clone(),
            (false, false) => format!("{} {}", self.triple, self.arch),
        };
        format!("{} bytes, {target}", self.bytes.len())
    }

    /// The offload kernel generated for `check_program.c`'s function, found in the image's ELF
    /// symbol table (x86-64 objects, cubins and AMDGPU code objects are all ELF).
    pub fn check_kernel_name(&self) -> Option<String> {
        self.kernel_name(KERNEL_FUNCTION)
    }

    /// The offload kernel generated for the target region in `check_program.c`'s `function`:
    /// a symbol of an ELF image, or an `.entry` of a PTX one.
    pub fn kernel_name(&self, function: &str) -> Option<String> {
        let wanted = format!("_{function}_l");
        // `..._<function>_l<line>`, not the `_kernel_environment` and `_dynamic_environment`
        // globals GPU images have beside each kernel.
        let is_kernel = |n: &str| {
            n.starts_with("__omp_offloading_")
                && n.rsplit_once(&wanted).is_some_and(|(_, line)| {
                    !line.is_empty() && line.bytes().all(|b| b.is_ascii_digit())
                })
        };
        match object::File::parse(&*self.bytes) {
            Ok(file) => file
                .symbols()
                .chain(file.dynamic_symbols())
                .filter_map(|s| s.name().ok().map(str::to_string))
                .find(|n| is_kernel(n)),
            Err(_) => ptx_entries(&self.bytes).find(|n| is_kernel(n)),
        }
    }
}

/// The kernels of a PTX text: the names after `.entry`.
fn ptx_entries(bytes: &[u8]) -> impl Iterator<Item = String> + '_ {
    let text = std::str::from_utf8(bytes).unwrap_or("");
    text.lines().filter_map(|line| {
        let mut words = line.split_whitespace();
        words.find(|w| *w == ".entry")?;
        let name = words.next()?.split('(').next()?;
        (!name.is_empty()).then(|| name.to_string())
    })
}

/// Every device image in `bytes`: the containers embedded in an offloading program, else the
/// file itself as one bare image.
pub fn images_in(bytes: &[u8]) -> Result<Vec<DeviceImage>, String> {
    let mut images = Vec::new();
    let mut at = 0;
    while let Some(found) = find(&bytes[at..], &CONTAINER_MAGIC) {
        let start = at + found;
        // The magic can occur by chance in code or data: not every match is a container.
        if let Ok(image) = offload_binary::unwrap(&bytes[start..]) {
            images.push(DeviceImage {
                bytes: image.bytes.to_vec(),
                triple: image.triple,
                arch: image.arch,
            });
        }
        at = start + CONTAINER_MAGIC.len();
    }
    if images.is_empty() {
        if bytes.is_empty() {
            return Err("the file is empty".into());
        }
        images.push(DeviceImage {
            bytes: bytes.to_vec(),
            triple: String::new(),
            arch: String::new(),
        });
    }
    Ok(images)
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// A minimal ELF header for a machine no offload plugin runs (s390), as a foreign image.
pub fn foreign_elf() -> Vec<u8> {
    let mut header = vec![0u8; 64];
    header[..4].copy_from_slice(b"\x7fELF");
    header[4] = 2; // 64-bit
    header[5] = 2; // big-endian, as s390x is
    header[6] = 1;
    header[16..18].copy_from_slice(&3u16.to_be_bytes()); // shared object
    header[18..20].copy_from_slice(&22u16.to_be_bytes()); // EM_S390
    header
}

#[cfg(test)]
mod tests {
    use super::*;

    fn container(image: &[u8], triple: &str) -> Vec<u8> {
        // Header (32) + one entry (40) + one string pair (16) + strings + image.
        let strings = format!("triple\0{triple}\0");
        let strings_at = 32 + 40 + 16;
        let image_at = strings_at + strings.len();
        let total = image_at + image.len();
        let mut b = Vec::new();
        b.extend_from_slice(&CONTAINER_MAGIC);
        b.extend_from_slice(&1u32.to_le_bytes());
        for v in [total as u64, 32, 40] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        b.extend_from_slice(&1u16.to_le_bytes());
        b.extend_from_slice(&1u16.to_le_bytes());
        b.extend_from_slice(&0u32.to_le_bytes());
        for v in [(32 + 40) as u64, 1, image_at as u64, image.len() as u64] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        for v in [strings_at as u64, (strings_at + 7) as u64] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        b.extend_from_slice(strings.as_bytes());
        b.extend_from_slice(image);
        b
    }

    #[test]
    fn finds_containers_inside_a_program_and_skips_chance_matches() {
        let mut program = b"\x7fELF junk \x10\xff\x10\xad not a container ".to_vec();
        program.extend(container(b"IMAGE-ONE", "x86_64-pc-linux-gnu"));
        program.extend(b"more");
        program.extend(container(b"IMAGE-TWO", "nvptx64-nvidia-cuda"));
        let images = images_in(&program).unwrap();
        assert_eq!(images.len(), 2);
        assert_eq!(images[0].bytes, b"IMAGE-ONE");
        assert_eq!(images[0].triple, "x86_64-pc-linux-gnu");
        assert_eq!(images[1].triple, "nvptx64-nvidia-cuda");
    }

    #[test]
    fn a_file_without_containers_is_one_bare_image() {
        let images = images_in(b"\x7fELF bare").unwrap();
        assert_eq!(images.len(), 1);
        assert!(images[0].triple.is_empty());
        assert!(images_in(b"").is_err());
    }
}
