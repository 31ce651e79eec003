//! `omptarget-mpi-device`: offers this node's devices to an MPI program.
//!
//! Started by the MPI launcher as the second application of the job:
//! `mpirun -np 1 ./prog : -np N omptarget-mpi-device [--plugins host,cuda]`. It loads the
//! runtime's plugins itself (the host plugin unless told otherwise), finds which program rank
//! it serves, and executes that program's requests (see `mpi_wire::protocol`) until the program
//! ends.

mod devices;
mod fill;
mod heartbeat;
mod memory;
mod runtime_libs;
mod serve;

use mpi_wire::mpi::{Mpi, THREAD_MULTIPLE};
use mpi_wire::protocol::{ROLE_DEVICE, ROLE_PROGRAM};

/// Plugins loaded when neither `--plugins` nor this variable names any.
const DEFAULT_PLUGINS: &str = "host";
/// Variable naming the plugins a device process loads (comma-separated), like `--plugins`.
const PLUGINS_VAR: &str = "OMPTARGET_MPI_DEVICE_PLUGINS";

const USAGE: &str = "usage: omptarget-mpi-device [--plugins NAME[,NAME...]]

Serves this node's offload devices to an OpenMP program of the same MPI job. Start it with
the launcher, after the program:  mpirun -np 1 ./prog : -np N omptarget-mpi-device
--plugins (or OMPTARGET_MPI_DEVICE_PLUGINS) names the plugins to load (default: host);
the program sees their devices, numbered after its own.";

fn fail(message: &str) -> ! {
    eprintln!("omptarget-mpi-device: {message}");
    std::process::exit(1)
}

fn plugin_names() -> Vec<String> {
    let mut args = std::env::args().skip(1);
    let mut list = std::env::var(PLUGINS_VAR).unwrap_or_else(|_| DEFAULT_PLUGINS.into());
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--plugins" => {
                list = args
                    .next()
                    .unwrap_or_else(|| fail("--plugins needs a list"))
            }
            "-h" | "--help" => {
                println!("{USAGE}");
                std::process::exit(0);
            }
            other => fail(&format!("unknown argument '{other}' (try --help)")),
        }
    }
    let names: Vec<String> = list
        .split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty() && s != "mpi")
        .collect();
    if names.is_empty() {
        fail("no plugins to load (the mpi plugin cannot serve itself)");
    }
    names
}

/// For benchmarks (`mpi-bench`): before anything else, answer this many 1-byte ping-pongs from
/// rank 0 (the program) on `MPI_COMM_WORLD` (tags 1 and 2), so that the program can time MPI's
/// own round trip between exactly the two processes its requests go between.
const ECHO_VAR: &str = "OMPTARGET_MPI_DEVICE_ECHO";

fn echo(mpi: &Mpi, program: i32, n: usize) {
    let mut byte = [0u8; 1];
    for _ in 0..n {
        let answered = mpi
            .recv(mpi.world(), &mut byte, program, 1)
            .and_then(|()| mpi.send(mpi.world(), &byte, program, 2));
        if let Err(e) = answered {
            fail(&format!("{ECHO_VAR}: {e}"));
        }
    }
}

fn main() {
    omptarget_core::logging::init();
    // LIBOMPTARGET_INFO reaches the plugins here as in a program (their launch lines).
    omptarget_core::info::init();
    let names = plugin_names();
    if !mpi_wire::under_launcher() {
        fail(&format!("not started by an MPI launcher\n{USAGE}"));
    }
    // Leaked: it lives as long as the process, and threads of the server hold it.
    let mpi: &'static Mpi = Box::leak(Box::new(Mpi::open().unwrap_or_else(|e| fail(&e))));
    let provided = mpi.init_thread_multiple().unwrap_or_else(|e| fail(&e));
    if provided < THREAD_MULTIPLE {
        fail(&format!(
            "the MPI library provides thread level {provided}; MPI_THREAD_MULTIPLE (3) is needed"
        ));
    }
    if let Some(n) = std::env::var(ECHO_VAR)
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
    {
        echo(mpi, 0, n);
    }
    let (comm, roles) = mpi_wire::exchange_roles(mpi, ROLE_DEVICE).unwrap_or_else(|e| fail(&e));
    let me = mpi.rank(comm).unwrap_or_else(|e| fail(&e));
    let ranks_of = |role| -> Vec<i32> {
        (0..roles.len() as i32)
            .filter(|r| roles[*r as usize] == role)
            .collect()
    };
    let programs = ranks_of(ROLE_PROGRAM);
    let servers = ranks_of(ROLE_DEVICE);
    if programs.is_empty() {
        let _ = mpi.finalize();
        fail("the job has no program that uses the MPI plugin (mpirun -np 1 ./prog : -np N omptarget-mpi-device)");
    }
    // Device processes are shared out among the program's ranks in turn; the program side
    // computes the same assignment.
    let index = servers.iter().position(|r| *r == me).unwrap_or(0);
    let program = programs[index % programs.len()];
    let devices = devices::Devices::load(&names);
    log::debug!(
        "omptarget-mpi-device rank {me}: serving rank {program} with {} devices ({})",
        devices.count(),
        devices.summary()
    );
    let heartbeat = heartbeat::Heartbeat::start(mpi, comm, program);
    serve::Server::new(mpi, comm, program, devices).run();
    heartbeat.stop();
    if let Err(e) = mpi.finalize() {
        fail(&e);
    }
}
