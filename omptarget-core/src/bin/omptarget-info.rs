//! `omptarget-info`: where the runtime looks for plugins, what it found, and the devices.

use omptarget_core::inventory::Inventory;
use omptarget_core::runtime::Runtime;

fn main() {
    let mut json = false;
    for arg in std::env::args().skip(1) {
        match arg.as_str() {
            "--json" => json = true,
            "-h" | "--help" => {
                println!("usage: omptarget-info [--json]\n\nLists the plugin search path, each plugin found (file, ABI version,\nloaded or skipped and why) and each offload device with its properties.\nHonours LIBOMPTARGET_PLUGIN_PATH, LIBOMPTARGET_PLUGINS_TO_LOAD and OMP_TARGET_OFFLOAD.");
                return;
            }
            other => {
                eprintln!("omptarget-info: unknown argument '{other}' (try --help)");
                std::process::exit(2);
            }
        }
    }
    // Every plugin is started and every device numbered, plugin by plugin: the numbers a
    // program gets when it has images for every plugin (a program's devices are numbered image
    // by image, only for plugins its images may run on).
    let runtime = Runtime::get();
    runtime.number_every_device();
    let inventory = Inventory::collect(runtime);
    if json {
        print!("{}", inventory.to_json());
    } else {
        print!("{}", inventory.to_text());
    }
}
