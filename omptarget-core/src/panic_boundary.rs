//! Where Rust code is called from C (entry points, the exit handler): a panic must not unwind
//! into the caller, so it is reported and turned into the caller's failure value here.

use std::panic::{catch_unwind, AssertUnwindSafe};

/// Runs an entry point's body; a panic is reported and turned into `fallback`.
pub(crate) fn guard<T>(entry_point: &str, fallback: T, body: impl FnOnce() -> T) -> T {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(value) => value,
        Err(payload) => {
            let what = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            crate::observe::logging::failure_message(&format!(
                "internal error in {entry_point}: {what}"
            ));
            fallback
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_the_fallback_value() {
        let value = guard("test_entry", -1, || -> i32 { panic!("boom") });
        assert_eq!(value, -1);
        assert_eq!(guard("test_entry", -1, || 0), 0);
    }
}
