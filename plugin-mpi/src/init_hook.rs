//! Joining inside the program's own `MPI_Init`, through Open MPI's hook framework.
//!
//! A program that initialises MPI in `main` starts the plugin before that (its images register
//! first). The plugin must then join the job once MPI is initialised, and only a thread that may
//! call MPI can do it: at `MPI_THREAD_MULTIPLE` any thread, below it only the one that called
//! `MPI_Init`. Open MPI calls the components of its `hook` framework at the bottom of `MPI_Init`,
//! on that thread, where "all MPI functionality can be used". This library is such a component:
//! it exports `mca_hook_omptarget_component`, and `openmpi-components/mca_hook_omptarget.so`
//! beside it is a link to it, so Open MPI's `dlopen` of that file finds this library, already
//! loaded. Before the program's `MPI_Init`, [`install`] adds that directory to Open MPI's
//! component path (`OMPI_MCA_mca_base_component_path`) in this process's environment.
//!
//! Where the directory is missing or Open MPI's own components cannot be found, the plugin falls
//! back to watching for `MPI_Init` from a thread of its own (see `plugin.rs`).

use mpi_wire::mpi::Mpi;
use std::ffi::{c_char, c_int, OsString};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The directory, beside the plugin, that holds the link `mca_hook_omptarget.so`.
pub const COMPONENT_DIR: &str = "openmpi-components";
const COMPONENT_FILE: &str = "mca_hook_omptarget.so";
/// Open MPI's variable for its component path, and the variable's older synonym.
const PATH_VARS: [&str; 2] = [
    "OMPI_MCA_mca_base_component_path",
    "OMPI_MCA_mca_component_path",
];

/// `mca_base_component_2_1_0_t` of Open MPI's `opal/mca/mca.h`: who the component is.
#[repr(C)]
pub struct ComponentVersion {
    mca_version: [c_int; 3],
    project_name: [u8; 16],
    project_version: [c_int; 3],
    type_name: [u8; 32],
    type_version: [c_int; 3],
    component_name: [u8; 64],
    component_version: [c_int; 3],
    /// open, close, query and register functions: none needed.
    functions: [usize; 4],
    flags: i32,
    reserved: [u8; 28],
}

/// `mca_base_component_data_t`.
#[repr(C)]
pub struct ComponentData {
    param_field: u32,
    reserved: [u8; 32],
}

type InitHook = unsafe extern "C" fn(c_int, *mut *mut c_char, c_int, *mut c_int);

/// `ompi_hook_base_component_1_0_0_t` of Open MPI's `ompi/mca/hook/hook.h`: the version, then
/// one function per hook location, NULL where the component does not listen.
#[repr(C)]
pub struct HookComponent {
    version: ComponentVersion,
    data: ComponentData,
    /// MPI_Initialized top and bottom, MPI_Init_thread top and bottom, MPI_Finalized top and
    /// bottom, ompi_mpi_init top and after OPAL's start: unused.
    earlier: [usize; 8],
    mpi_init_bottom: Option<InitHook>,
    /// ompi_mpi_init's error path, ompi_mpi_finalize top and bottom: unused (MPI_Finalize is
    /// heard through an attribute of MPI_COMM_SELF once joined).
    later: [usize; 3],
}

const fn padded<const N: usize>(text: &[u8]) -> [u8; N] {
    let mut out = [0u8; N];
    let mut i = 0;
    while i < text.len() {
        out[i] = text[i];
        i += 1;
    }
    out
}

/// The component Open MPI looks up by the name of the file it opened.
#[no_mangle]
#[allow(non_upper_case_globals)]
pub static mca_hook_omptarget_component: HookComponent = HookComponent {
    version: ComponentVersion {
        // MCA 2.1.0, the only component format Open MPI 3 to 5 load; the project's version is
        // not compared.
        mca_version: [2, 1, 0],
        project_name: padded(b"ompi"),
        project_version: [4, 1, 0],
        type_name: padded(b"hook"),
        type_version: [1, 0, 0],
        component_name: padded(b"omptarget"),
        component_version: [1, 0, 0],
        functions: [0; 4],
        flags: 0,
        reserved: [0; 28],
    },
    data: ComponentData {
        param_field: 0,
        reserved: [0; 32],
    },
    earlier: [0; 8],
    mpi_init_bottom: Some(at_mpi_init_bottom),
    later: [0; 3],
};

/// What runs at the bottom of the program's MPI_Init: the plugin's join, given to [`install`].
static AT_INIT: OnceLock<fn()> = OnceLock::new();

/// The bottom of the program's MPI_Init, on the thread that called it.
unsafe extern "C" fn at_mpi_init_bottom(
    _argc: c_int,
    _argv: *mut *mut c_char,
    _requested: c_int,
    _provided: *mut c_int,
) {
    if let Some(&at_init) = AT_INIT.get() {
        // No unwinding into Open MPI.
        let _ = std::panic::catch_unwind(at_init);
    }
}

/// Makes the program's MPI_Init load this library as a hook component that calls `at_init` at
/// its bottom: `Ok` with the directory added to Open MPI's component path, or why not.
pub fn install(mpi: &Mpi, at_init: fn()) -> Result<PathBuf, String> {
    // Set even when the path cannot be: a component path the user set may hold the directory.
    let _ = AT_INIT.set(at_init);
    let ours = host_os::loaded_file(&mca_hook_omptarget_component as *const _ as usize)
        .ok_or("the plugin's own file is unknown")?;
    let dir = ours
        .parent()
        .ok_or("the plugin's own file has no directory")?
        .join(COMPONENT_DIR);
    let link = dir.join(COMPONENT_FILE);
    let same = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    if !same(&link, &ours) {
        return Err(format!(
            "{} is not a link to {}",
            link.display(),
            ours.display()
        ));
    }
    let (var, current) = match PATH_VARS
        .iter()
        .find_map(|v| std::env::var_os(v).map(|value| (*v, value)))
    {
        Some(set) => set,
        None => (PATH_VARS[0], default_component_path(mpi)?),
    };
    let mut path = OsString::from(dir.as_os_str());
    if !current.is_empty() {
        path.push(":");
        path.push(&current);
    }
    std::env::set_var(var, &path);
    Ok(dir)
}

/// Open MPI's component path when nobody set it: its own components' directory, then the
/// user's (`~/.openmpi/components`). Its own is `openmpi` beside the real file of `libmpi`
/// (upstream's layout) or `openmpi/lib/openmpi3` (Debian's), unless `OPAL_PKGLIBDIR` moves it.
fn default_component_path(mpi: &Mpi) -> Result<OsString, String> {
    let components = match std::env::var_os("OPAL_PKGLIBDIR") {
        Some(dir) => PathBuf::from(dir),
        None => {
            let library = mpi
                .library_file()
                .and_then(|f| f.canonicalize().ok())
                .ok_or("the MPI library's file is unknown")?;
            let lib = library.parent().unwrap_or(Path::new("/"));
            ["openmpi", "openmpi/lib/openmpi3", "openmpi/lib/openmpi"]
                .iter()
                .map(|name| lib.join(name))
                .find(|dir| holds_components(dir))
                .ok_or_else(|| {
                    format!(
                        "no directory of Open MPI components beside {}",
                        library.display()
                    )
                })?
        }
    };
    let mut path = OsString::from(components.as_os_str());
    if let Some(home) = std::env::var_os("HOME") {
        path.push(":");
        path.push(Path::new(&home).join(".openmpi/components"));
    }
    Ok(path)
}

fn holds_components(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|mut entries| {
        entries.any(|e| e.is_ok_and(|e| e.file_name().to_string_lossy().starts_with("mca_")))
    })
}

#[test]
fn the_component_has_open_mpis_layout() {
    // Offsets of ompi_hook_base_component_1_0_0_t on x86_64 (Open MPI 4.1).
    assert_eq!(std::mem::size_of::<ComponentVersion>(), 224);
    assert_eq!(std::mem::size_of::<ComponentData>(), 36);
    assert_eq!(std::mem::offset_of!(HookComponent, earlier), 264);
    assert_eq!(std::mem::offset_of!(HookComponent, mpi_init_bottom), 328);
    assert_eq!(
        &mca_hook_omptarget_component.version.type_name[..5],
        b"hook\0"
    );
}
