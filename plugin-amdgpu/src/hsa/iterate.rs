//! Collecting what the `hsa_*_iterate_*` calls enumerate into vectors.
//!
//! The runtime calls back once per item; the callback only pushes the item, so all decisions
//! happen afterwards in Rust, away from the callback.

use super::error::check;
use crate::hsa_interface::HsaError;
use hsa_sys::*;
use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Pushes `item` onto the `Vec<T>` that `data` points to.
///
/// # Safety
/// `data` must point to a live `Vec<T>` no one else uses during the call, as the functions
/// below arrange.
unsafe extern "C" fn push_item<T>(item: T, data: *mut c_void) -> hsa_status_t {
    let pushed = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: the caller passes a pointer to its own `Vec<T>`, borrowed for this call only.
        let items = unsafe { &mut *data.cast::<Vec<T>>() };
        items.push(item);
    }));
    match pushed {
        Ok(()) => HSA_STATUS_SUCCESS,
        // No panic may unwind into the runtime; stop the iteration instead.
        Err(_) => HSA_STATUS_ERROR,
    }
}

/// Every agent (`hsa_iterate_agents`).
pub(crate) fn agents(library: &HsaLibrary) -> Result<Vec<hsa_agent_t>, HsaError> {
    let mut agents: Vec<hsa_agent_t> = Vec::new();
    // SAFETY: `push_item::<hsa_agent_t>` matches the callback type, and `agents` outlives the
    // call, which invokes the callback only before it returns.
    let status = unsafe {
        (library.hsa_iterate_agents)(
            Some(push_item::<hsa_agent_t>),
            (&mut agents as *mut Vec<hsa_agent_t>).cast(),
        )
    };
    check("hsa_iterate_agents", status)?;
    Ok(agents)
}

/// The instruction set architectures of `agent` (`hsa_agent_iterate_isas`).
pub(crate) fn isas(library: &HsaLibrary, agent: hsa_agent_t) -> Result<Vec<hsa_isa_t>, HsaError> {
    let mut isas: Vec<hsa_isa_t> = Vec::new();
    // SAFETY: as in `agents`.
    let status = unsafe {
        (library.hsa_agent_iterate_isas)(
            agent,
            Some(push_item::<hsa_isa_t>),
            (&mut isas as *mut Vec<hsa_isa_t>).cast(),
        )
    };
    check("hsa_agent_iterate_isas", status)?;
    Ok(isas)
}

/// The memory pools of `agent` (`hsa_amd_agent_iterate_memory_pools`).
pub(crate) fn memory_pools(
    library: &HsaLibrary,
    agent: hsa_agent_t,
) -> Result<Vec<hsa_amd_memory_pool_t>, HsaError> {
    let mut pools: Vec<hsa_amd_memory_pool_t> = Vec::new();
    // SAFETY: as in `agents`.
    let status = unsafe {
        (library.hsa_amd_agent_iterate_memory_pools)(
            agent,
            Some(push_item::<hsa_amd_memory_pool_t>),
            (&mut pools as *mut Vec<hsa_amd_memory_pool_t>).cast(),
        )
    };
    check("hsa_amd_agent_iterate_memory_pools", status)?;
    Ok(pools)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_callback_collects_items_in_order() {
        let mut items: Vec<hsa_agent_t> = Vec::new();
        let data = (&mut items as *mut Vec<hsa_agent_t>).cast();
        for handle in [7, 9] {
            // SAFETY: `data` points to `items`, alive and otherwise unused here.
            let status = unsafe { push_item(hsa_agent_t { handle }, data) };
            assert_eq!(status, HSA_STATUS_SUCCESS);
        }
        assert_eq!(
            items,
            [hsa_agent_t { handle: 7 }, hsa_agent_t { handle: 9 }]
        );
    }
}
