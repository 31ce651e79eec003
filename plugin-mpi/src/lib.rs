//! `libomptarget.rtl.mpi.so`: the devices of other MPI processes as OpenMP devices.
//!
//! A job started as `mpirun -np 1 ./prog : -np N omptarget-mpi-device` has device processes
//! that load the runtime's plugins and offer their devices. This plugin, in the program, finds
//! the device processes that serve its rank and forwards every device operation to them as
//! MPI messages (`mpi_wire::protocol`). MPI is loaded when the plugin starts, and only under an
//! MPI launcher: other programs get zero devices with the reason.

mod device;
mod init_hook;
mod link;
mod plugin;
mod watchdog;

pub use plugin::MpiPlugin;

plugin_api::export_plugin!(MpiPlugin);
