//! A GPU image's x86-64 twin: the host image that clang or flang builds beside it when a program
//! names both offload targets, whose kernels have the same names. The driver emulators (CUDA,
//! HSA) find the twin in the loaded program's `.llvm.offloading` section, load one copy per
//! module from memory, and run each kernel through it ([`TwinKernel`]): a kernel compiled
//! host-style (clang's x86-64 kernels) is called directly (`native_code::call_with_args`); one
//! compiled GPU-style (flang's: it has a kernel environment) through the twin's host device
//! runtime ([`crate::device_runtime`]), on the launch's grid.

use crate::device_environment::KernelConfiguration;
use crate::device_runtime::{self, RuntimeKernel, Shape};
use crate::native_code;
use crate::offload_binary;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicU64, Ordering};

/// How to build a program whose kernels can run on an emulated GPU, for messages: `gpu_target`
/// is the GPU's offload triple and `arch` its `-march`.
pub fn how_to_build(gpu_target: &str, arch: &str) -> String {
    format!(
        "build the program with an x86-64 twin of its GPU image: \
         -fopenmp-targets={gpu_target},x86_64-pc-linux-gnu -Xopenmp-target={gpu_target} \
         -march={arch} (see the README, section on the emulated drivers)"
    )
}

/// The offload section of one loaded object (the program or a shared library).
struct OffloadSection {
    /// Where the section is mapped in this process (0..0 when it is not allocated).
    mapped: std::ops::Range<usize>,
    bytes: Vec<u8>,
}

/// One loaded copy of a twin image. Never unloaded, even when its module is: unlike GPU code
/// on hardware, a twin's code is host code that the process's OpenMP runtime has run (its
/// worker threads keep pointers to the microtasks and threadprivate data they last saw), so
/// closing it left libomp to crash at exit: LLVM 19's runs, whose plugin releases the primary
/// context at exit, died of SIGSEGV in a libomp worker thread in about 4 runs of 10.
pub struct Twin {
    library: std::mem::ManuallyDrop<libloading::os::unix::Library>,
    _file: OwnedFd,
}

impl Twin {
    /// The address of `name` in this copy.
    pub fn symbol(&self, name: &str) -> Option<usize> {
        native_code::symbol_address(&self.library, name)
    }

    /// The twin's kernel `name`, if it has one; `gpu_environment` is the initial bytes of the
    /// GPU image's `<name>_kernel_environment`, if it has one (its execution mode sized the
    /// launch).
    pub fn kernel(&self, name: &str, gpu_environment: Option<&[u8]>) -> Option<TwinKernel> {
        let entry = self.symbol(name)?;
        let runtime = RuntimeKernel::find(name, |s| self.symbol(s));
        let exec_mode = gpu_environment
            .and_then(KernelConfiguration::parse)
            .or(runtime.map(|r| r.config))
            .map_or(0, |c| c.exec_mode);
        Some(TwinKernel {
            entry,
            runtime,
            exec_mode,
        })
    }
}

/// How the offload linker links omptarget-rs's host device runtime into a twin (with
/// `-lomptarget-host-device` and `-L` its lib directory), for messages.
pub const LINK_RUNTIME: &str = "-Xoffload-linker-x86_64-pc-linux-gnu";

/// A kernel of a twin, as an emulator runs it.
#[derive(Copy, Clone, Debug)]
pub struct TwinKernel {
    /// The twin's function.
    pub entry: usize,
    /// Where the kernel was compiled GPU-style: its runtime (whose launcher runs it).
    pub runtime: Option<RuntimeKernel>,
    /// The GPU kernel's execution mode (its image's kernel environment, else the twin's; 0
    /// without one).
    pub exec_mode: u8,
}

/// One launch of a twin's kernel, checked and ready to run on the emulator's thread.
#[derive(Clone, Debug)]
pub struct TwinCall {
    entry: usize,
    words: Vec<usize>,
    league: Option<(RuntimeKernel, Shape, u64)>,
}

impl TwinKernel {
    /// The call for a launch of `blocks` blocks (work-groups) of `block_threads` threads, with
    /// `words` (the GPU kernel's argument words) and `dyn_mem` bytes of dynamic shared memory
    /// per block, on a GPU of `warp_size`-thread warps. A GPU-style kernel runs through the
    /// runtime, a team per block ([`Shape::of_gpu_launch`]); `Err` (a message for kernel
    /// `name`) where the twin lacks the runtime or the runtime cannot pass the words.
    pub fn call(
        &self,
        name: &str,
        words: Vec<usize>,
        (blocks, block_threads): (u64, u64),
        dyn_mem: u64,
        warp_size: u32,
    ) -> Result<TwinCall, String> {
        let league = match self.runtime {
            None => None,
            Some(runtime) => {
                let refusal = match runtime.launcher {
                    None => Some(device_runtime::LaunchError::NoRuntime),
                    Some(_) if words.len() > device_runtime::MAX_KERNEL_WORDS => {
                        Some(device_runtime::LaunchError::TooManyWords(words.len()))
                    }
                    Some(_) => None,
                };
                if let Some(refusal) = refusal {
                    return Err(refusal.message(name, LINK_RUNTIME));
                }
                let shape = Shape::of_gpu_launch(blocks, block_threads, self.exec_mode, warp_size);
                Some((runtime, shape, dyn_mem))
            }
        };
        Ok(TwinCall {
            entry: self.entry,
            words,
            league,
        })
    }
}

impl TwinCall {
    /// The league the runtime runs, for a GPU-style kernel.
    pub fn shape(&self) -> Option<Shape> {
        self.league.map(|(_, shape, _)| shape)
    }

    /// Runs the kernel, returning when it has finished (on every team); `Err` with a message
    /// for kernel `name` where the runtime refused it.
    ///
    /// # Safety
    /// The twin of the kernel is loaded during the call, and its kernel takes the words.
    pub unsafe fn run(&self, name: &str) -> Result<(), String> {
        match &self.league {
            // SAFETY: the caller's promise: a twin kernel of one pointer-sized value per word.
            None => unsafe { native_code::call_with_args(self.entry, &self.words) },
            Some((runtime, shape, dyn_mem)) => {
                // SAFETY: the caller's promise; the runtime is the kernel's twin's.
                unsafe {
                    device_runtime::launch(self.entry, runtime, &self.words, *shape, *dyn_mem)
                }
                .map_err(|e| e.message(name, LINK_RUNTIME))?
            }
        }
        Ok(())
    }
}

/// Loads the twin of the GPU image at `image` (`len` bytes), whose kernels are `kernels`: the
/// x86-64 image of the same object's offload section, searched in every loaded object, then in
/// the program file `also_in` (not loaded; the emulators' `OMPTARGET_EMU_TWINS`). There an image
/// no program holds (a bare cubin or PTX file a tool loads), or one whose object has no x86-64
/// image, takes that program's x86-64 image if it defines every one of its kernels. `Ok(None)` when there is none; `Err` when it would
/// not load.
pub fn load_for(
    image: usize,
    len: usize,
    kernels: &[&str],
    also_in: Option<&str>,
) -> Result<Option<Twin>, String> {
    // SAFETY: the caller read `len` bytes at `image` already (the module's own bytes).
    let wanted = unsafe { std::slice::from_raw_parts(image as *const u8, len) };
    let sections = offload_sections(also_in)?;
    let x86_image = |section: &OffloadSection| {
        offload_binary::containers(&section.bytes)
            .into_iter()
            .filter_map(|c| offload_binary::unwrap(c).ok())
            .find(|u| u.triple.starts_with("x86_64"))
            .map(|u| u.bytes.to_vec())
    };
    let owner = sections
        .iter()
        .find(|s| s.mapped.contains(&image))
        .or_else(|| {
            sections.iter().find(|s| {
                offload_binary::containers(&s.bytes)
                    .iter()
                    .any(|c| offload_binary::unwrap(c).is_ok_and(|u| u.bytes.starts_with(wanted)))
            })
        });
    // The twins program names the kernels' twins where the image's own object has none (a
    // program built for the GPU alone, whose twin was built apart so that no runtime numbers
    // host devices for it).
    let from_twins_program = || {
        (also_in.is_some() && !kernels.is_empty())
            .then(|| sections.last().and_then(x86_image))
            .flatten()
            .filter(|twin| defines_all(twin, kernels))
    };
    let twin = owner.and_then(x86_image).or_else(from_twins_program);
    let Some(twin) = twin else {
        return Ok(None);
    };
    static LOADED: AtomicU64 = AtomicU64::new(0);
    let name = format!(
        "omptarget-emu-twin{}",
        LOADED.fetch_add(1, Ordering::Relaxed)
    );
    let file = native_code::memory_file(&name, &twin)
        .map_err(|e| format!("cannot create an in-memory file for the twin image: {e}"))?;
    let library = native_code::open_library(&native_code::fd_path(&file))
        .map_err(|e| format!("the dynamic loader refused the twin image: {e}"))?;
    Ok(Some(Twin {
        library: std::mem::ManuallyDrop::new(library),
        _file: file,
    }))
}

/// Whether the shared object `image` defines (exports) every one of `symbols`.
fn defines_all(image: &[u8], symbols: &[&str]) -> bool {
    use object::{Object, ObjectSymbol};
    let Ok(file) = object::File::parse(image) else {
        return false;
    };
    let defined: std::collections::HashSet<&str> = file
        .dynamic_symbols()
        .filter(|s| !s.is_undefined())
        .filter_map(|s| s.name().ok())
        .collect();
    symbols.iter().all(|s| defined.contains(s))
}

/// The `.llvm.offloading` sections of every object loaded in this process, then that of the
/// program `also_in`.
fn offload_sections(also_in: Option<&str>) -> Result<Vec<OffloadSection>, String> {
    let mut sections: Vec<OffloadSection> = loaded_objects()
        .into_iter()
        .filter_map(|(path, bias)| section_of(&path, bias))
        .collect();
    if let Some(path) = also_in {
        let mut section = section_of(path, 0)
            .ok_or_else(|| format!("OMPTARGET_EMU_TWINS={path} has no offload section"))?;
        section.mapped = 0..0;
        sections.push(section);
    }
    Ok(sections)
}

fn section_of(path: &str, bias: usize) -> Option<OffloadSection> {
    use object::{Object, ObjectSection};
    let data = std::fs::read(path).ok()?;
    let file = object::File::parse(&*data).ok()?;
    let section = file.section_by_name(".llvm.offloading")?;
    let bytes = section.data().ok()?.to_vec();
    let start = bias.checked_add(section.address() as usize)?;
    let mapped = if section.address() != 0 {
        start..start + bytes.len()
    } else {
        0..0
    };
    Some(OffloadSection { mapped, bytes })
}

/// (file, load bias) of each loaded object; the program itself is `/proc/self/exe`.
fn loaded_objects() -> Vec<(String, usize)> {
    extern "C" fn visit(
        info: *mut libc::dl_phdr_info,
        _size: usize,
        found: *mut libc::c_void,
    ) -> libc::c_int {
        // SAFETY: dl_iterate_phdr passes a valid info record and our `found` vector.
        let (info, found) = unsafe { (&*info, &mut *(found as *mut Vec<(String, usize)>)) };
        let name = if info.dlpi_name.is_null() {
            String::new()
        } else {
            // SAFETY: dlpi_name is a NUL-terminated string owned by the loader.
            unsafe { std::ffi::CStr::from_ptr(info.dlpi_name) }
                .to_string_lossy()
                .into_owned()
        };
        let path = if name.is_empty() && found.is_empty() {
            "/proc/self/exe".to_owned()
        } else {
            name
        };
        if !path.is_empty() && !path.starts_with("linux-vdso") {
            found.push((path, info.dlpi_addr as usize));
        }
        0
    }
    let mut found: Vec<(String, usize)> = Vec::new();
    // SAFETY: the callback only reads the records and appends to `found`, which outlives the
    // call.
    unsafe { libc::dl_iterate_phdr(Some(visit), &mut found as *mut _ as *mut libc::c_void) };
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runtime(launcher: Option<usize>, exec_mode: u8) -> RuntimeKernel {
        RuntimeKernel {
            launcher,
            config: KernelConfiguration {
                exec_mode,
                ..KernelConfiguration::default()
            },
        }
    }

    #[test]
    fn gpu_style_kernels_get_the_launch_grid_and_others_a_plain_call() {
        let kernel = |runtime, exec_mode| TwinKernel {
            entry: 0x1000,
            runtime,
            exec_mode,
        };
        // Host-style (clang's x86-64 kernels): called once, whatever the grid.
        let plain = kernel(None, 0).call("k", vec![1, 2], (100, 256), 0, 64);
        assert_eq!(plain.unwrap().shape(), None);
        // GPU-style, generic mode on gfx90a: 3 work-groups of thread_limit(5) + a wavefront.
        let generic = kernel(Some(runtime(Some(0x2000), 1)), 1);
        let call = generic.call("k", vec![1], (3, 69), 16, 64).unwrap();
        let shape = call.shape().unwrap();
        assert_eq!(
            (shape.teams, shape.thread_limit, shape.default_threads),
            (3, 5, 5)
        );
        // SPMD: every thread of the block.
        let spmd = kernel(Some(runtime(Some(0x2000), 1)), 2);
        let shape = spmd.call("k", vec![1], (4, 128), 0, 32).unwrap().shape();
        assert_eq!(shape.map(|s| (s.teams, s.thread_limit)), Some((4, 128)));
    }

    #[test]
    fn gpu_style_kernels_the_runtime_cannot_run_are_refused_at_launch() {
        let without = TwinKernel {
            entry: 0x1000,
            runtime: Some(runtime(None, 1)),
            exec_mode: 1,
        };
        let refused = without.call("k", vec![1], (1, 64), 0, 64).unwrap_err();
        assert!(refused.contains("was compiled GPU-style"), "{refused}");
        assert!(refused.contains(&format!("{LINK_RUNTIME} -lomptarget-host-device")));
        let with = TwinKernel {
            runtime: Some(runtime(Some(0x2000), 2)),
            ..without
        };
        let words = vec![0; device_runtime::MAX_KERNEL_WORDS + 1];
        let refused = with.call("k", words, (1, 64), 0, 64).unwrap_err();
        assert!(refused.contains("takes 65 arguments"), "{refused}");
    }
}
