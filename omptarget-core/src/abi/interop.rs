//! The structures LLVM 22's interop entry points receive (`offload/include/OpenMP/InteropAPI.h`):
//! the preference list of `__tgt_interop_get`, the call context and the dependences.

use std::ffi::c_void;

/// LLVM 22's `kmp_interop_type_t`: what `__tgt_interop_get` is asked for.
pub(crate) const INTEROP_TYPE_TARGET: i32 = 0;
pub(crate) const INTEROP_TYPE_TARGETSYNC: i32 = 1;
/// What clang passes to `__tgt_interop_init` for `targetsync` (LLVM 19's `tasksync`); `target`
/// is 1 there.
pub(crate) const LEGACY_INTEROP_TYPE_TARGETSYNC: i32 = 2;

/// `interop_spec_t`: one `prefer_type` entry.
#[repr(C)]
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct InteropSpec {
    /// A foreign runtime id (`omp_ifr_*`, LLVM's `tgt_fr_*`).
    pub fr_id: i32,
    /// `interop_attrs_t`: bit 0 `inorder`.
    pub attrs: u32,
    /// Implementation-specific attributes, passed through.
    pub impl_attrs: i64,
}

impl InteropSpec {
    pub(crate) fn inorder(&self) -> bool {
        self.attrs & 1 != 0
    }
}

/// `interop_ctx_t`.
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub(crate) struct InteropContext {
    /// Version of this structure; 0 is the only one.
    pub version: u32,
    /// `interop_flags_t`: bit 0 `implicit` (made for a `dispatch` construct, owned by the
    /// runtime), bit 1 `nowait`.
    pub flags: u32,
    /// The calling thread's libomp thread number.
    pub gtid: i32,
}

impl InteropContext {
    pub(crate) fn implicit(&self) -> bool {
        self.flags & 1 != 0
    }
    pub(crate) fn nowait(&self) -> bool {
        self.flags & 2 != 0
    }
}

/// `dep_pack_t`: the construct's `depend` clauses as `kmp_depend_info_t` arrays.
#[repr(C)]
#[derive(Copy, Clone, Debug)]
pub(crate) struct DependencePack {
    pub ndeps: i32,
    pub ndeps_noalias: i32,
    pub deps: *const c_void,
    pub noalias: *const c_void,
}

impl DependencePack {
    /// The pack the LLVM 19 entry points describe with a count and one array.
    pub(crate) fn from_list(ndeps: i32, deps: *const c_void) -> Self {
        DependencePack {
            ndeps,
            ndeps_noalias: 0,
            deps,
            noalias: std::ptr::null(),
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.ndeps <= 0 && self.ndeps_noalias <= 0
    }
}
