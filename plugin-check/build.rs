// Host offload images name libomptarget.so.19.1 as a needed library. Inside a program it is
// already loaded; the checker carries the runtime statically, so the image must find the
// installed one beside the checker. An old-style RPATH (not RUNPATH) applies to the
// dependencies of every library the checker dlopens, which is what makes that work.
fn main() {
    println!("cargo:rustc-link-arg-bins=-Wl,--disable-new-dtags,-rpath,$ORIGIN/../lib");
}
