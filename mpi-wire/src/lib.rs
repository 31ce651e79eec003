//! What the MPI plugin (`libomptarget.rtl.mpi.so`) and its device processes
//! (`omptarget-mpi-device`) share: [`mpi`], a thin binding to Open MPI opened at run time, and
//! [`protocol`], the messages between them.

pub mod mpi;
pub mod protocol;

/// The environment variables an MPI launcher sets in every process it starts: Open MPI's, and
/// PMIx's or PMI's for other launchers. None set: not started by a launcher.
pub const LAUNCHER_VARIABLES: [&str; 3] = ["OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK"];

/// Whether an MPI launcher started this process.
pub fn under_launcher() -> bool {
    LAUNCHER_VARIABLES
        .iter()
        .any(|v| std::env::var_os(v).is_some())
}
