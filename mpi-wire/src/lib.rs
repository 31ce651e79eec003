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

/// Whether the launcher keeps the job running when one of its processes dies (Open MPI's
/// `mpirun --enable-recovery`). Only then can the program outlive a device process, or a device
/// process outlive the program, so only then do they watch each other.
pub fn launcher_recovers() -> bool {
    std::env::var("OMPI_MCA_orte_enable_recovery").is_ok_and(|v| v.trim() == "1")
}

/// Every process of the job says its role (`protocol::ROLE_PROGRAM` or `ROLE_DEVICE`), on a
/// duplicate of `MPI_COMM_WORLD` that becomes the plugin's communicator: that communicator and
/// each rank's role. Collective over the whole job, and the same calls on every side, since a
/// nonblocking collective never matches a blocking one. Nonblocking, waited for without
/// spinning: the plugin may join from a thread of its own while the program's threads work, and
/// device processes may wait for a program that computes before it initialises MPI.
pub fn exchange_roles(mpi: &mpi::Mpi, role: i32) -> Result<(mpi::Comm, Vec<i32>), mpi::Error> {
    let comm = mpi.duplicate_politely(mpi.world())?;
    let roles = mpi.all_gather_politely(comm, role)?;
    Ok((comm, roles))
}
