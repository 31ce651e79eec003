//! What the runtime tells people and tools about itself: `LIBOMPTARGET_INFO` lines (`info`),
//! debug messages (`logging`), the profile (`profile`), OMPT events (`ompt`) and what
//! `omptarget-info` prints (`inventory`).
//!
//! Grouped by purpose, not by layer: `info`, `logging`, `profile` and `ompt` sit near the
//! bottom, below the devices they report on; `inventory` sits on top of `runtime`.

pub mod info;
pub mod inventory;
pub mod logging;
pub(crate) mod ompt;
pub(crate) mod profile;
