//! The AMDGCN processors of the ELF `EF_AMDGPU_MACH` field, with the target features each
//! has. Shared by the AMDGPU plugin (target IDs, compatibility) and the core (the
//! architectures it names when no device can run a program, as LLVM does).

/// One AMDGCN processor of the ELF `EF_AMDGPU_MACH` table, with the target features it has.
#[derive(Copy, Clone, Debug)]
pub struct Processor {
    pub mach: u32,
    pub name: &'static str,
    pub has_xnack: bool,
    pub has_sramecc: bool,
}

const fn p(mach: u32, name: &'static str) -> Processor {
    Processor {
        mach,
        name,
        has_xnack: false,
        has_sramecc: false,
    }
}
const fn x(mach: u32, name: &'static str) -> Processor {
    Processor {
        mach,
        name,
        has_xnack: true,
        has_sramecc: false,
    }
}
const fn xs(mach: u32, name: &'static str) -> Processor {
    Processor {
        mach,
        name,
        has_xnack: true,
        has_sramecc: true,
    }
}

/// Every AMDGCN `EF_AMDGPU_MACH_*` value of LLVM's `BinaryFormat/ELF.h` (LLVM 19 and later;
/// gfx940 and gfx941 are LLVM 19's, their values reserved since). Which processors have
/// XNACK and SRAMECC is what clang accepts as `:xnack+`/`:sramecc+` for them.
pub const PROCESSORS: &[Processor] = &[
    p(0x020, "gfx600"),
    p(0x021, "gfx601"),
    p(0x022, "gfx700"),
    p(0x023, "gfx701"),
    p(0x024, "gfx702"),
    p(0x025, "gfx703"),
    p(0x026, "gfx704"),
    x(0x028, "gfx801"),
    p(0x029, "gfx802"),
    p(0x02a, "gfx803"),
    x(0x02b, "gfx810"),
    x(0x02c, "gfx900"),
    x(0x02d, "gfx902"),
    x(0x02e, "gfx904"),
    xs(0x02f, "gfx906"),
    xs(0x030, "gfx908"),
    x(0x031, "gfx909"),
    x(0x032, "gfx90c"),
    x(0x033, "gfx1010"),
    x(0x034, "gfx1011"),
    x(0x035, "gfx1012"),
    p(0x036, "gfx1030"),
    p(0x037, "gfx1031"),
    p(0x038, "gfx1032"),
    p(0x039, "gfx1033"),
    p(0x03a, "gfx602"),
    p(0x03b, "gfx705"),
    p(0x03c, "gfx805"),
    p(0x03d, "gfx1035"),
    p(0x03e, "gfx1034"),
    xs(0x03f, "gfx90a"),
    xs(0x040, "gfx940"),
    p(0x041, "gfx1100"),
    x(0x042, "gfx1013"),
    p(0x043, "gfx1150"),
    p(0x044, "gfx1103"),
    p(0x045, "gfx1036"),
    p(0x046, "gfx1101"),
    p(0x047, "gfx1102"),
    p(0x048, "gfx1200"),
    p(0x049, "gfx1250"),
    p(0x04a, "gfx1151"),
    xs(0x04b, "gfx941"),
    xs(0x04c, "gfx942"),
    p(0x04e, "gfx1201"),
    xs(0x04f, "gfx950"),
    x(0x051, "gfx9-generic"),
    x(0x052, "gfx10-1-generic"),
    p(0x053, "gfx10-3-generic"),
    p(0x054, "gfx11-generic"),
    p(0x055, "gfx1152"),
    p(0x058, "gfx1153"),
    p(0x059, "gfx12-generic"),
    p(0x05a, "gfx1251"),
    xs(0x05f, "gfx9-4-generic"),
];

/// The processor with this `EF_AMDGPU_MACH` value.
pub fn processor_by_mach(mach: u32) -> Option<&'static Processor> {
    PROCESSORS.iter().find(|p| p.mach == mach)
}

/// The processor of this name (`gfx90a`).
pub fn processor_by_name(name: &str) -> Option<&'static Processor> {
    PROCESSORS.iter().find(|p| p.name == name)
}
