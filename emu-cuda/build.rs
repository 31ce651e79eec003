// The library is installed as libcuda.so.1, the driver's soname. It is never unmapped
// (-z nodelete): LLVM's runtime dlcloses the driver at exit while the emulator's stream
// workers still sleep in its code, and joining them from a destructor would deadlock on the
// loader's lock with a worker that is starting.
fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libcuda.so.1");
    println!("cargo:rustc-cdylib-link-arg=-Wl,-z,nodelete");
}
