//! Tests of streams, signals and events over the `SoftwareHsa` test double. Every test body
//! runs under a watchdog, so a hang fails the test instead of blocking the run.

mod choice;
mod copies;
mod errors;
mod events;
mod ordering;
mod resources;
mod support;
mod timing;
