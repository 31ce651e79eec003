//! Turning a status code into an [`HsaError`] that names the call.

use crate::hsa_interface::HsaError;
use hsa_sys::{hsa_status_t, is_error, status_name};

/// The error for `call` having returned `status`:
/// `"hsa_init failed: HSA_STATUS_ERROR_OUT_OF_RESOURCES (0x1008)"`.
pub fn hsa_error(call: &str, status: hsa_status_t) -> HsaError {
    HsaError::new(
        status,
        format!("{call} failed: {} ({status:#x})", status_name(status)),
    )
}

/// `Ok` for a status that is not an error, else [`hsa_error`].
pub fn check(call: &str, status: hsa_status_t) -> Result<(), HsaError> {
    if is_error(status) {
        Err(hsa_error(call, status))
    } else {
        Ok(())
    }
}

/// An error the layer itself detects (a bad argument, an unexpected symbol kind), under the
/// status HSA would have used.
pub(crate) fn usage_error(status: hsa_status_t, message: impl Into<String>) -> HsaError {
    HsaError::new(status, message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use hsa_sys::*;

    #[test]
    fn errors_name_the_call_and_the_status() {
        let error = hsa_error("hsa_init", HSA_STATUS_ERROR_OUT_OF_RESOURCES);
        assert_eq!(error.status, 0x1008);
        assert_eq!(
            error.message,
            "hsa_init failed: HSA_STATUS_ERROR_OUT_OF_RESOURCES (0x1008)"
        );
        assert_eq!(
            hsa_error("hsa_queue_create", HSA_STATUS_ERROR_MEMORY_FAULT).message,
            "hsa_queue_create failed: HSA_STATUS_ERROR_MEMORY_FAULT (0x2b)"
        );
    }

    #[test]
    fn success_and_break_pass() {
        assert_eq!(check("x", HSA_STATUS_SUCCESS), Ok(()));
        assert_eq!(check("x", HSA_STATUS_INFO_BREAK), Ok(()));
        assert_eq!(
            check("hsa_signal_destroy", HSA_STATUS_ERROR_INVALID_SIGNAL)
                .unwrap_err()
                .message,
            "hsa_signal_destroy failed: HSA_STATUS_ERROR_INVALID_SIGNAL (0x1006)"
        );
    }
}
