//! Which process state belongs to. A child forked from a process that offloads inherits its
//! exit handlers and a copy of its runtime, but not its drivers' state or its remote device
//! processes: what such a child does as it exits must leave them to its parent. The core and
//! the MPI plugin (whose exit handler and `MPI_Finalize` hook run without the core) both ask.

/// The process something was set up in.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct SetUpIn(u32);

impl SetUpIn {
    /// The calling process.
    pub fn this_process() -> SetUpIn {
        SetUpIn(std::process::id())
    }

    /// The calling process was forked from the one this names (or from a child of it).
    pub fn is_forked_child(&self) -> bool {
        std::process::id() != self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_process_it_was_set_up_in_is_not_a_forked_child() {
        assert!(!SetUpIn::this_process().is_forked_child());
        assert!(SetUpIn(0).is_forked_child());
    }
}
