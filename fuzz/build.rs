fn main() {
    // The targets link three plugins as Rust libraries, and each defines the plugin entry
    // points (`omptarget_plugin_*`, exported for the runtime's dlopen) under the same names. No
    // target calls them; let the linker keep one of each instead of refusing the link.
    println!("cargo:rustc-link-arg=-Wl,--allow-multiple-definition");
}
