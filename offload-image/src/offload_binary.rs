//! LLVM's offload-binary container (magic `0x10FF10AD`) that clang's linker wrapper puts around
//! each device image, with the image's triple and architecture as string pairs.

const MAGIC: [u8; 4] = [0x10, 0xFF, 0x10, 0xAD];
const HEADER_SIZE: usize = 32;
const ENTRY_SIZE: usize = 40;

/// A device image unwrapped from its container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnwrappedImage<'a> {
    pub bytes: &'a [u8],
    pub triple: String,
    pub arch: String,
}

#[derive(Debug, PartialEq, Eq)]
pub struct ContainerError(pub String);

impl std::fmt::Display for ContainerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "corrupt offload binary: {}", self.0)
    }
}

fn u64_at(b: &[u8], at: usize) -> Result<u64, ContainerError> {
    b.get(at..at + 8)
        .map(|s| u64::from_le_bytes(s.try_into().unwrap()))
        .ok_or_else(|| ContainerError(format!("field at offset {at} is past the end")))
}

fn range(b: &[u8], offset: u64, len: u64) -> Result<&[u8], ContainerError> {
    let start = usize::try_from(offset).map_err(|_| ContainerError("offset too large".into()))?;
    let len = usize::try_from(len).map_err(|_| ContainerError("size too large".into()))?;
    start
        .checked_add(len)
        .and_then(|end| b.get(start..end))
        .ok_or_else(|| {
            ContainerError(format!(
                "range {start}+{len} is outside the {} byte container",
                b.len()
            ))
        })
}

fn c_string(b: &[u8], offset: u64) -> Result<String, ContainerError> {
    let tail = range(b, offset, 0).map(|_| &b[offset as usize..])?;
    let end = tail
        .iter()
        .position(|&c| c == 0)
        .ok_or_else(|| ContainerError("unterminated string".into()))?;
    Ok(String::from_utf8_lossy(&tail[..end]).into_owned())
}

/// Unwraps the container; bytes without the magic are taken as a bare image of unknown target.
pub fn unwrap(bytes: &[u8]) -> Result<UnwrappedImage<'_>, ContainerError> {
    if bytes.len() < 4 || bytes[..4] != MAGIC {
        return Ok(UnwrappedImage {
            bytes,
            triple: String::new(),
            arch: String::new(),
        });
    }
    if bytes.len() < HEADER_SIZE {
        return Err(ContainerError("truncated header".into()));
    }
    let total = u64_at(bytes, 8)?;
    let container = range(bytes, 0, total)?;
    let entry = range(
        container,
        u64_at(container, 16)?,
        u64_at(container, 24)?.max(ENTRY_SIZE as u64),
    )?;
    let strings_offset = u64_at(entry, 8)?;
    let num_strings = u64_at(entry, 16)?;
    let image = range(container, u64_at(entry, 24)?, u64_at(entry, 32)?)?;
    let (mut triple, mut arch) = (String::new(), String::new());
    for i in 0..num_strings.min(1024) {
        let pair = range(container, strings_offset + 16 * i, 16)?;
        let key = c_string(container, u64_at(pair, 0)?)?;
        let value = c_string(container, u64_at(pair, 8)?)?;
        match key.as_str() {
            "triple" => triple = value,
            "arch" => arch = value,
            _ => {}
        }
    }
    Ok(UnwrappedImage {
        bytes: image,
        triple,
        arch,
    })
}

/// The containers of one `.llvm.offloading` section: clang's linker wrapper places one per
/// device image, each starting at an 8-byte boundary. Stops at the first bytes that are not a
/// container (padding at the end of the section).
pub fn containers(section: &[u8]) -> Vec<&[u8]> {
    let mut found = Vec::new();
    let mut at = 0usize;
    while let Some(rest) = section.get(at..) {
        if rest.len() < HEADER_SIZE || rest[..4] != MAGIC {
            break;
        }
        let Ok(total) = u64_at(rest, 8) else { break };
        let Ok(container) = range(rest, 0, total) else {
            break;
        };
        if container.len() < HEADER_SIZE {
            break;
        }
        found.push(container);
        at += container.len().next_multiple_of(8);
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Builds a container the way LLVM's OffloadBinary::write lays it out.
    fn container(image: &[u8], triple: &str, arch: &str) -> Vec<u8> {
        let strings_at = HEADER_SIZE + ENTRY_SIZE;
        let text_at = strings_at + 2 * 16;
        let mut text = Vec::new();
        let mut offs = Vec::new();
        for s in ["triple", triple, "arch", arch] {
            offs.push((text_at + text.len()) as u64);
            text.extend(s.as_bytes());
            text.push(0);
        }
        let image_at = text_at + text.len();
        let total = image_at + image.len();
        let mut b = MAGIC.to_vec();
        b.extend(1u32.to_le_bytes());
        for v in [total as u64, HEADER_SIZE as u64, ENTRY_SIZE as u64] {
            b.extend(v.to_le_bytes());
        }
        b.extend(1u16.to_le_bytes());
        b.extend(1u16.to_le_bytes());
        b.extend(0u32.to_le_bytes());
        for v in [strings_at as u64, 2, image_at as u64, image.len() as u64] {
            b.extend(v.to_le_bytes());
        }
        for v in offs {
            b.extend(v.to_le_bytes());
        }
        b.extend(text);
        b.extend(image);
        b
    }

    #[test]
    fn unwraps_image_and_strings() {
        let c = container(b"\x7fELFimage", "x86_64-pc-linux-gnu", "");
        let u = unwrap(&c).unwrap();
        assert_eq!(u.bytes, b"\x7fELFimage");
        assert_eq!(u.triple, "x86_64-pc-linux-gnu");
        assert_eq!(u.arch, "");
    }

    #[test]
    fn a_section_holds_aligned_containers() {
        let mut section = container(b"\x7fELFone", "nvptx64-nvidia-cuda", "sm_90");
        section.resize(section.len().next_multiple_of(8), 0);
        section.extend(container(b"\x7fELFtwo", "x86_64-pc-linux-gnu", ""));
        section.extend([0u8; 5]);
        let found = containers(&section);
        assert_eq!(found.len(), 2);
        assert_eq!(unwrap(found[1]).unwrap().triple, "x86_64-pc-linux-gnu");
        assert_eq!(unwrap(found[0]).unwrap().bytes, b"\x7fELFone");
    }

    #[test]
    fn bare_images_pass_through_and_truncation_is_an_error() {
        assert_eq!(unwrap(b"\x7fELF...").unwrap().bytes, b"\x7fELF...");
        let c = container(b"\x7fELFimage", "nvptx64-nvidia-cuda", "sm_90");
        assert!(unwrap(&c[..c.len() - 3]).is_err());
        assert!(unwrap(&c[..20]).is_err());
    }
}
