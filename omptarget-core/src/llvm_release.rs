//! Which LLVM runtime's behaviour a program was built for. Our library carries LLVM 22's soname
//! and serves clang-19 programs too; where LLVM 22 changed what programs observe (the wording
//! of `LIBOMPTARGET_INFO` lines, what `use_device_ptr` gives for unmapped data), a program gets
//! the behaviour of its own release.
//!
//! The program tells it in three ways: its offload entry table's layout (clang 19's 32-byte
//! entries, or the 56-byte ones of clang 20 and newer); for a program without entries (no
//! target region and no `declare target` variable), the compiler named in its device images'
//! `.comment` section; and, where no image names one (a cubin names ptxas), whether the process
//! loaded `libomptarget.so.19.1`, the name clang-19 programs link against.

use object::{Object, ObjectSection};

#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub(crate) enum LlvmRelease {
    Llvm19,
    /// Also what a program is taken for when nothing tells.
    #[default]
    Llvm22,
}

impl LlvmRelease {
    /// The release of a compiler of major version `major`: 19 and older behave as LLVM 19.
    pub(crate) fn of_clang(major: u32) -> LlvmRelease {
        match major {
            0..=19 => LlvmRelease::Llvm19,
            _ => LlvmRelease::Llvm22,
        }
    }

    /// The release of the clang that built an ELF device image, from its `.comment` section
    /// (`Debian clang version 19.1.7 (...)`); `None` for other images or none named.
    pub(crate) fn of_image(bytes: &[u8]) -> Option<LlvmRelease> {
        let file = object::File::parse(bytes).ok()?;
        let comment = file.section_by_name(".comment")?.data().ok()?;
        comment
            .split(|&b| b == 0)
            .filter_map(|s| std::str::from_utf8(s).ok())
            .find_map(clang_major)
            .map(LlvmRelease::of_clang)
    }

    /// LLVM 19 when this process has loaded `libomptarget.so.19.1` (our stub, which needs this
    /// library): some program or library in it was linked by clang 19. `None` otherwise.
    pub(crate) fn of_loaded_names() -> Option<LlvmRelease> {
        // glibc's RTLD_NOLOAD: only look for a loaded library, never load one.
        const RTLD_NOLOAD: std::ffi::c_int = 4;
        let flags = RTLD_NOLOAD | libloading::os::unix::RTLD_LAZY;
        // SAFETY: with RTLD_NOLOAD nothing is loaded, so no library initialiser runs.
        let loaded = unsafe { libloading::os::unix::Library::open(Some(CLANG19_NAME), flags) };
        loaded.is_ok().then_some(LlvmRelease::Llvm19)
    }
}

/// The runtime's name in the programs clang 19 links.
const CLANG19_NAME: &str = "libomptarget.so.19.1";

/// The major version in a compiler identification such as `Debian clang version 22.1.8 (1)`.
fn clang_major(text: &str) -> Option<u32> {
    let (_, rest) = text.split_once("clang version ")?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compiler_identifications() {
        assert_eq!(
            clang_major("Debian clang version 19.1.7 (3~deb12u1)"),
            Some(19)
        );
        assert_eq!(clang_major("clang version 22.1.8"), Some(22));
        assert_eq!(clang_major("GCC: (Debian 12.2.0-14+deb12u1) 12.2.0"), None);
        assert_eq!(LlvmRelease::of_clang(18), LlvmRelease::Llvm19);
        assert_eq!(LlvmRelease::of_clang(20), LlvmRelease::Llvm22);
        assert_eq!(LlvmRelease::of_image(b"not an ELF file"), None);
        // The unit tests' process links no OpenMP runtime.
        assert_eq!(LlvmRelease::of_loaded_names(), None);
    }
}
