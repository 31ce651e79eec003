//! Images load whatever the device process's environment: a host image (and the x86-64 twin an
//! emulated GPU driver runs) needs the runtime's library by soname (`DT_NEEDED`
//! `libomptarget.so.19.1` from clang 19, `libomptarget.so.22.1` from clang 22), and the device
//! process has the runtime linked in, not loaded as that library. The loader would search
//! `LD_LIBRARY_PATH` for it, and the program's environment does not always reach the device
//! processes: Open MPI applies `mpirun -x VAR` to the first application context of an MPMD
//! command only, so `mpirun -x LD_LIBRARY_PATH=... -np 1 ./prog : -np 2 omptarget-mpi-device`
//! left every image unloadable ("libomptarget.so.19.1: cannot open shared object file").
//!
//! So before the first image loads, the device process opens those libraries by their full path
//! in its own install tree (the `lib/` beside its `bin/`, where it finds its plugins). The
//! dynamic loader meets a `DT_NEEDED` name with an object already loaded under that soname
//! before it searches any path, so every later image, and every image's twin, takes these,
//! whatever `LD_LIBRARY_PATH` says. They are opened `RTLD_LOCAL`, as a dependency of an image
//! is: an image still finds their symbols (its dependencies are in its own lookup scope), and
//! nothing else in the process does. The same objects were loaded before, through
//! `LD_LIBRARY_PATH`, when it was set; nothing is rewritten and nothing else changes.

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The runtime's libraries, in loading order: the LLVM 19 compatibility library needs the
/// other, which its `$ORIGIN` run path finds, and which is then already loaded.
pub const SONAMES: [&str; 2] = ["libomptarget.so.22.1", "libomptarget.so.19.1"];

const RTLD_NOW: c_int = 2;
const RTLD_LOCAL: c_int = 0;

extern "C" {
    fn dlopen(file: *const c_char, mode: c_int) -> *mut c_void;
    fn dlerror() -> *mut c_char;
}

/// Loads the runtime's libraries once, from the first of `directories` that holds
/// `libomptarget.so.22.1` (the device process's own `lib/` first, then its plugins'). Never
/// fails: what could not be loaded is only logged, and the image's own load then reports it.
pub fn load_once(directories: impl FnOnce() -> Vec<PathBuf>) {
    static DONE: OnceLock<()> = OnceLock::new();
    DONE.get_or_init(|| {
        let dirs = directories();
        let Some(dir) = dirs.iter().find(|d| d.join(SONAMES[0]).is_file()) else {
            log::debug!(
                "omptarget-mpi-device: no {} in {dirs:?}; images find the runtime through \
                 the loader's search path",
                SONAMES[0]
            );
            return;
        };
        for name in SONAMES {
            let path = dir.join(name);
            if !path.is_file() {
                continue;
            }
            match open(&path) {
                Ok(()) => log::debug!(
                    "omptarget-mpi-device: {} loaded for the images",
                    path.display()
                ),
                Err(e) => log::debug!("omptarget-mpi-device: cannot load {}: {e}", path.display()),
            }
        }
    });
}

/// Opens `path` for the rest of the process (the handle is never closed).
fn open(path: &Path) -> Result<(), String> {
    let cpath = CString::new(path.as_os_str().as_encoded_bytes()).map_err(|e| e.to_string())?;
    // SAFETY: `cpath` is NUL-terminated; opening the runtime's library runs only its
    // initialisers (Rust's standard library's), as loading it for an image always did.
    let handle = unsafe { dlopen(cpath.as_ptr(), RTLD_NOW | RTLD_LOCAL) };
    if !handle.is_null() {
        return Ok(());
    }
    // SAFETY: dlerror has no preconditions; it returns NULL or the loader's message.
    let message = unsafe { dlerror() };
    if message.is_null() {
        return Err("dlopen failed".into());
    }
    // SAFETY: a non-NULL dlerror result is a NUL-terminated string, valid until the next dl
    // call on this thread; it is copied at once.
    let text = unsafe { CStr::from_ptr(message) };
    Err(text.to_string_lossy().into_owned())
}
