//! `KernelArgsTy`, the argument block of `__tgt_target_kernel`.
//!
//! Version 1 and 2 blocks end after the flags word; the team and thread counts then come from the
//! call's own parameters. From version 3 on the block carries 3-D teams, threads and the dynamic
//! group memory size, and kernels take the implicit launch environment as first argument.

use std::ffi::c_void;

/// The first version whose kernels take the launch environment pointer.
pub(crate) const FIRST_VERSION_WITH_LAUNCH_ENVIRONMENT: u32 = 3;
/// The newest version we know; newer blocks are read as this one (fields are only appended).
pub(crate) const NEWEST_KNOWN_VERSION: u32 = 3;

#[repr(C)]
pub(crate) struct KernelArgsV1 {
    pub version: u32,
    pub num_args: u32,
    pub arg_base_ptrs: *mut *mut c_void,
    pub arg_ptrs: *mut *mut c_void,
    pub arg_sizes: *const i64,
    pub arg_types: *const i64,
    pub arg_names: *const *const c_void,
    pub arg_mappers: *const *const c_void,
    pub tripcount: u64,
    pub flags: u64,
}

#[repr(C)]
pub(crate) struct KernelArgsV3 {
    pub v1: KernelArgsV1,
    pub num_teams: [u32; 3],
    pub thread_limit: [u32; 3],
    pub dyn_cgroup_mem: u32,
}

/// A kernel launch request in Rust terms.
#[derive(Clone, Debug)]
pub(crate) struct KernelRequest {
    pub version: u32,
    pub num_args: usize,
    pub arg_base_ptrs: *mut *mut c_void,
    pub arg_ptrs: *mut *mut c_void,
    pub arg_sizes: *const i64,
    pub arg_types: *const i64,
    pub arg_names: *const *const c_void,
    pub arg_mappers: *const *const c_void,
    pub tripcount: u64,
    pub flags: u64,
    pub num_teams: [u32; 3],
    pub thread_limit: [u32; 3],
    pub dyn_cgroup_mem: u32,
}

#[derive(Debug, PartialEq, Eq)]
pub(crate) enum KernelArgsError {
    Null,
    UnknownVersion(u32),
}

impl std::fmt::Display for KernelArgsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KernelArgsError::Null => write!(f, "null kernel arguments"),
            KernelArgsError::UnknownVersion(v) => {
                write!(f, "kernel argument block version {v} is not supported")
            }
        }
    }
}

/// Reads a kernel argument block of any supported version.
///
/// # Safety
/// `args` must be null or point to a `KernelArgsTy` of the version its first field states.
pub(crate) unsafe fn read_kernel_args(
    args: *const KernelArgsV1,
    num_teams: i32,
    thread_limit: i32,
) -> Result<KernelRequest, KernelArgsError> {
    if args.is_null() {
        return Err(KernelArgsError::Null);
    }
    // SAFETY: every version starts with the version 1 fields (caller's promise).
    let v1 = unsafe { &*args };
    if v1.version == 0 {
        return Err(KernelArgsError::UnknownVersion(0));
    }
    let (teams, threads, dyn_mem) = if v1.version >= FIRST_VERSION_WITH_LAUNCH_ENVIRONMENT {
        // SAFETY: version 3+ blocks have the version 3 layout (caller's promise).
        let v3 = unsafe { &*(args as *const KernelArgsV3) };
        (v3.num_teams, v3.thread_limit, v3.dyn_cgroup_mem)
    } else {
        let clamp = |n: i32| n.max(0) as u32;
        ([clamp(num_teams), 0, 0], [clamp(thread_limit), 0, 0], 0)
    };
    // A target region without a teams construct: the compiler passes -1 teams, which means one
    // team (LLVM's __tgt_target_kernel rewrites the block's count to 1 too). Read as a count
    // it would launch the largest grid, each team running the region's serial part.
    let teams = if num_teams == -1 {
        [1, teams[1], teams[2]]
    } else {
        teams
    };
    Ok(KernelRequest {
        version: v1.version.min(NEWEST_KNOWN_VERSION),
        num_args: v1.num_args as usize,
        arg_base_ptrs: v1.arg_base_ptrs,
        arg_ptrs: v1.arg_ptrs,
        arg_sizes: v1.arg_sizes,
        arg_types: v1.arg_types,
        arg_names: v1.arg_names,
        arg_mappers: v1.arg_mappers,
        tripcount: v1.tripcount,
        flags: v1.flags,
        num_teams: teams,
        thread_limit: threads,
        dyn_cgroup_mem: dyn_mem,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v1(version: u32) -> KernelArgsV1 {
        KernelArgsV1 {
            version,
            num_args: 2,
            arg_base_ptrs: std::ptr::null_mut(),
            arg_ptrs: std::ptr::null_mut(),
            arg_sizes: std::ptr::null(),
            arg_types: std::ptr::null(),
            arg_names: std::ptr::null(),
            arg_mappers: std::ptr::null(),
            tripcount: 7,
            flags: 1,
        }
    }

    #[test]
    fn a_region_without_teams_gets_one_team() {
        let mut args = KernelArgsV3 {
            v1: v1(3),
            num_teams: [u32::MAX, 0, 0],
            thread_limit: [0; 3],
            dyn_cgroup_mem: 0,
        };
        // SAFETY: the arguments are a live struct of the version they name (or null).
        let r =
            unsafe { read_kernel_args(&args as *const _ as *const KernelArgsV1, -1, 0) }.unwrap();
        assert_eq!(r.num_teams, [1, 0, 0]);
        let legacy = v1(1);
        // SAFETY: the arguments are a live struct of the version they name.
        let r = unsafe { read_kernel_args(&legacy, -1, 0) }.unwrap();
        assert_eq!(r.num_teams, [1, 0, 0]);
        args.num_teams = [7, 0, 0];
        // SAFETY: the arguments are a live struct of the version they name (or null).
        let r =
            unsafe { read_kernel_args(&args as *const _ as *const KernelArgsV1, 7, 0) }.unwrap();
        assert_eq!(r.num_teams, [7, 0, 0]);
    }

    #[test]
    fn old_versions_take_teams_from_the_call() {
        let args = v1(1);
        // SAFETY: the arguments are a live struct of the version they name.
        let r = unsafe { read_kernel_args(&args, 8, 64) }.unwrap();
        assert_eq!(
            (r.version, r.num_teams, r.thread_limit, r.tripcount),
            (1, [8, 0, 0], [64, 0, 0], 7)
        );
    }

    #[test]
    fn version_3_reads_its_own_teams() {
        let args = KernelArgsV3 {
            v1: v1(3),
            num_teams: [4, 2, 1],
            thread_limit: [32, 1, 1],
            dyn_cgroup_mem: 16,
        };
        // SAFETY: the arguments are a live struct of the version they name.
        let r = unsafe { read_kernel_args(&args.v1, 99, 99) }.unwrap();
        assert_eq!(
            (r.num_teams, r.thread_limit, r.dyn_cgroup_mem),
            ([4, 2, 1], [32, 1, 1], 16)
        );
        assert_eq!(
            // SAFETY: a null pointer is refused before it is read.
            unsafe { read_kernel_args(std::ptr::null(), 0, 0) }.unwrap_err(),
            KernelArgsError::Null
        );
    }
}
