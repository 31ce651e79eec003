//! Launch decisions that need no driver: whether a kernel must be opted in to more dynamic
//! shared memory before it. (The grid and block of a launch are both GPU plugins' rules:
//! `gpu_plugin::KernelLimits::dimensions`.)

use std::sync::Mutex;
use sync_util::lock;

/// What a kernel may use of dynamic shared memory by default: 48 KiB less its static shared
/// memory. Beyond that the kernel must opt in (`CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`).
pub const DEFAULT_SHARED_BYTES: u32 = 48 * 1024;

/// A launch asked for more dynamic shared memory than the device can give one block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SharedMemoryTooLarge {
    pub requested: u32,
    /// The device's opt-in maximum per block (`CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN`).
    pub device_max: u32,
    /// The kernel's static shared memory, which counts against `device_max`.
    pub static_bytes: u32,
}

impl std::fmt::Display for SharedMemoryTooLarge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} bytes of dynamic shared memory requested, but the device allows at most {} bytes \
             per block (with opt-in), {} of which the kernel's static shared memory uses",
            self.requested, self.device_max, self.static_bytes
        )
    }
}

/// The new limit a launch needs: `None` when `requested` fits the kernel's `current` limit,
/// `Some(requested)` when the kernel must be opted in first, an error when not even the
/// device's opt-in maximum fits it.
pub fn opt_in_needed(
    requested: u32,
    current: u32,
    device_max: u32,
    static_bytes: u32,
) -> Result<Option<u32>, SharedMemoryTooLarge> {
    if requested <= current {
        return Ok(None);
    }
    if requested > device_max.saturating_sub(static_bytes) {
        return Err(SharedMemoryTooLarge {
            requested,
            device_max,
            static_bytes,
        });
    }
    Ok(Some(requested))
}

/// A kernel's dynamic shared memory limit as last set in the driver. It only grows, so a
/// launch that checked it never races with one that would lower it.
pub struct DynamicSharedLimit {
    current: Mutex<u32>,
    static_bytes: u32,
}

/// Why a launch could not get the dynamic shared memory it asked for.
#[derive(Debug, PartialEq, Eq)]
pub enum OptInError<E> {
    TooLarge(SharedMemoryTooLarge),
    /// Setting the attribute failed.
    Driver(E),
}

impl DynamicSharedLimit {
    /// `current`: the kernel's limit as the driver reports it after loading.
    pub fn new(current: u32, static_bytes: u32) -> DynamicSharedLimit {
        DynamicSharedLimit {
            current: Mutex::new(current),
            static_bytes,
        }
    }

    /// Raises the limit to `requested` through `set` if the launch needs it. The lock is held
    /// across `set` (a quick attribute call) so that concurrent launches set it in order.
    pub fn ensure<E>(
        &self,
        requested: u32,
        device_max: u32,
        set: impl FnOnce(u32) -> Result<(), E>,
    ) -> Result<(), OptInError<E>> {
        let mut current = lock(&self.current);
        match opt_in_needed(requested, *current, device_max, self.static_bytes) {
            Ok(None) => Ok(()),
            Ok(Some(limit)) => {
                set(limit).map_err(OptInError::Driver)?;
                *current = limit;
                Ok(())
            }
            Err(e) => Err(OptInError::TooLarge(e)),
        }
    }

    pub fn current(&self) -> u32 {
        *lock(&self.current)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KIB: u32 = 1024;

    #[test]
    fn small_requests_need_no_opt_in() {
        assert_eq!(opt_in_needed(0, 48 * KIB, 227 * KIB, 0), Ok(None));
        assert_eq!(opt_in_needed(48 * KIB, 48 * KIB, 227 * KIB, 0), Ok(None));
    }

    #[test]
    fn requests_above_the_limit_opt_in() {
        assert_eq!(
            opt_in_needed(48 * KIB + 1, 48 * KIB, 227 * KIB, 0),
            Ok(Some(48 * KIB + 1))
        );
        // Static shared memory lowers the default limit the driver reports.
        assert_eq!(
            opt_in_needed(40 * KIB, 32 * KIB, 227 * KIB, 16 * KIB),
            Ok(Some(40 * KIB))
        );
    }

    #[test]
    fn requests_above_the_device_fail_naming_both_sizes() {
        let e = opt_in_needed(228 * KIB, 48 * KIB, 227 * KIB, 0).unwrap_err();
        let text = e.to_string();
        assert!(text.contains(&(228 * KIB).to_string()), "{text}");
        assert!(text.contains(&(227 * KIB).to_string()), "{text}");
        // The kernel's static shared memory counts against the device's maximum.
        assert!(opt_in_needed(220 * KIB, 48 * KIB, 227 * KIB, 8 * KIB).is_err());
        assert!(opt_in_needed(219 * KIB, 48 * KIB, 227 * KIB, 8 * KIB).is_ok());
    }

    #[test]
    fn the_limit_is_set_once_and_only_raised() {
        let limit = DynamicSharedLimit::new(48 * KIB, 0);
        let mut calls = Vec::new();
        let mut launch = |bytes| {
            limit.ensure(bytes, 100 * KIB, |v| {
                calls.push(v);
                Ok::<(), ()>(())
            })
        };
        launch(1024).unwrap();
        launch(64 * KIB).unwrap();
        launch(64 * KIB).unwrap();
        launch(50 * KIB).unwrap();
        launch(80 * KIB).unwrap();
        assert_eq!(calls, [64 * KIB, 80 * KIB]);
        assert_eq!(limit.current(), 80 * KIB);
    }

    #[test]
    fn a_failed_opt_in_leaves_the_limit() {
        let limit = DynamicSharedLimit::new(48 * KIB, 0);
        assert_eq!(
            limit.ensure(64 * KIB, 100 * KIB, |_| Err("refused")),
            Err(OptInError::Driver("refused"))
        );
        assert_eq!(limit.current(), 48 * KIB);
        let too_large = limit.ensure(200 * KIB, 100 * KIB, |_| -> Result<(), ()> {
            panic!("the driver must not be asked")
        });
        assert!(matches!(too_large, Err(OptInError::TooLarge(_))));
    }
}
