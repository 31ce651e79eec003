// The library is installed as libcuda.so.1, the driver's soname.
fn main() {
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libcuda.so.1");
}
