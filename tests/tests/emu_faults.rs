//! Kernels that fault on the emulated GPU drivers end as they end on a GPU: the driver reports
//! the fault and the process goes on (our runtime then stops it with its own fatal error),
//! instead of dying of the x86-64 twin's SIGSEGV or SIGILL. Through our runtime and plugins
//! (held-out programs that write through a null pointer or call `__builtin_trap()`, built for
//! sm_90 and gfx90a with their twins), with LLVM 19's runtime as the judge of the messages, and
//! in-process on each emulator's entry points (a kernel given a null array): CUDA's sticky
//! error, HSA's memory-fault event and queue error.
//! The programs run on the install tree's emulators (`dist/emu`, or `$OMPTARGET_DIST/emu`);
//! the in-process tests on the emulators' crates.

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};
use tests::conformance::{EmulatedGpu, LLVM19_FIRST_GPU_DEVICE, LLVM19_LIB_DIR};

const NULL_WRITE: &str = "emu_fault_null_write.c";
const TRAP: &str = "emu_fault_trap.c";
const TRAP_NOWAIT: &str = "emu_fault_trap_nowait.c";
/// No run may take longer: a faulting kernel must not hang the program.
const LIMIT: Duration = Duration::from_secs(60);

/// The emulated drivers' directory (under their sonames) for `LD_LIBRARY_PATH`.
fn emulators() -> PathBuf {
    tests::dist().join("emu")
}

struct Run {
    status: ExitStatus,
    took: Duration,
    stdout: String,
    stderr: String,
}

impl Run {
    /// Asserts that the run ended in time and not of a fault signal.
    fn survived_the_fault(&self) -> &Self {
        assert!(self.took < LIMIT, "hung:\n{}", self.stderr);
        let fault_signals = [
            libc_signal::SEGV,
            libc_signal::ILL,
            libc_signal::BUS,
            libc_signal::FPE,
        ];
        assert!(
            !self
                .status
                .signal()
                .is_some_and(|s| fault_signals.contains(&s)),
            "killed by the kernel's fault ({:?}):\n{}{}",
            self.status,
            self.stdout,
            self.stderr
        );
        assert!(self.stdout.contains("before=1"), "{}", self.stdout);
        assert!(!self.stdout.contains("not reached"), "{}", self.stdout);
        self
    }

    /// Whether a line of stderr written by `who` (a prefix) contains `text`.
    fn says(&self, who: &str, text: &str) -> bool {
        self.stderr
            .lines()
            .any(|l| l.trim_start().starts_with(who) && l.contains(text))
    }
}

/// The fault signals' numbers (Linux, x86-64).
mod libc_signal {
    pub const ILL: i32 = 4;
    pub const BUS: i32 = 7;
    pub const FPE: i32 = 8;
    pub const SEGV: i32 = 11;
}

/// Runs `exe` with `env` and `LD_LIBRARY_PATH=path`, killed after [`LIMIT`].
fn run_with(exe: &Path, path: String, env: &[(&str, String)]) -> Run {
    let start = Instant::now();
    let mut child = Command::new(exe)
        .env("LD_LIBRARY_PATH", path)
        .env("OMP_TARGET_OFFLOAD", "mandatory")
        .env_remove("LIBOMPTARGET_PLUGINS_TO_LOAD")
        .env_remove("HSA_RUNTIME_LIB")
        .env_remove("OMPTARGET_EMU_TRACE")
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run the program");
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > LIMIT {
            let _ = child.kill();
            break child.wait().unwrap();
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let took = start.elapsed();
    let output = child.wait_with_output().unwrap();
    Run {
        status,
        took,
        stdout: tests::text(&output.stdout),
        stderr: tests::text(&output.stderr),
    }
}

/// Our runtime with only `gpu`'s plugin, on the emulators under test.
fn run_ours(gpu: EmulatedGpu, exe: &Path) -> Run {
    run_ours_with(gpu, exe, &[])
}

/// [`run_ours`] with more environment variables.
fn run_ours_with(gpu: EmulatedGpu, exe: &Path, more: &[(&str, String)]) -> Run {
    let mut env = vec![("LIBOMPTARGET_PLUGINS_TO_LOAD", gpu.plugin().to_string())];
    env.extend(more.iter().cloned());
    if gpu == EmulatedGpu::Amdgpu {
        let hsa = emulators().join("libhsa-runtime64.so.1");
        env.push(("HSA_RUNTIME_LIB", hsa.display().to_string()));
    }
    let path = format!("{}:{}", emulators().display(), tests::lib_dir().display());
    run_with(exe, path, &env)
}

/// LLVM 19's runtime (its GPU plugins built in), on the emulators under test.
fn run_llvm_19(exe: &Path) -> Run {
    let path = format!("{}:{LLVM19_LIB_DIR}", emulators().display());
    let device = LLVM19_FIRST_GPU_DEVICE.to_string();
    run_with(exe, path, &[("OMP_DEFAULT_DEVICE", device)])
}

/// After the fault of the null-write program, the plugin names the kernels the device launched
/// last, newest first, as LLVM 22 words it, each with its launch geometry; with
/// `OFFLOAD_TRACK_NUM_KERNEL_LAUNCH_TRACES=1`, the last launch's host stack from the plugin's
/// operation down to the program's `main`.
fn the_null_write_s_launches_are_reported(gpu: EmulatedGpu, exe: &Path, run: &Run) {
    assert!(
        run.says("Display last 2 kernels launched:", "")
            && run.says(
                "Kernel 0: 'omp target in main @ 16 (__omp_offloading_",
                "_main_l16)' launched with "
            )
            && run.says("Kernel 1: 'omp target in main @ 12 (", ""),
        "{}",
        run.stderr
    );
    let traced = run_ours_with(
        gpu,
        exe,
        &[("OFFLOAD_TRACK_NUM_KERNEL_LAUNCH_TRACES", "1".into())],
    );
    traced.survived_the_fault();
    assert!(
        traced.says("Display 1 of the 2 last kernel launch traces", "")
            && traced.says("Kernel 0: 'omp target in main @ 16", "")
            && !traced.says("Kernel 1:", "")
            && traced.says("#0", "launchKernel (offload plugin)")
            && traced.says("#1", " __tgt_target_kernel")
            && traced.says("#", " main"),
        "{}",
        traced.stderr
    );
}

#[test]
fn a_null_write_in_a_kernel_is_the_cuda_drivers_illegal_address() {
    let exe = tests::compile_cuda_twin(NULL_WRITE);
    let run = run_ours(EmulatedGpu::Cuda, &exe);
    run.survived_the_fault();
    assert!(
        run.says("omptarget error", "CUDA_ERROR_ILLEGAL_ADDRESS"),
        "{}",
        run.stderr
    );
    assert!(run.says("omptarget fatal error", ""), "{}", run.stderr);
    // The plugin names the kernels the device ran last, newest first, as LLVM 22 words it.
    assert!(
        run.says(
            "OFFLOAD ERROR",
            "a kernel on CUDA device 0 faulted: CUDA_ERROR_ILLEGAL_ADDRESS (700)"
        ),
        "{}",
        run.stderr
    );
    the_null_write_s_launches_are_reported(EmulatedGpu::Cuda, &exe, &run);
    let llvm = run_llvm_19(&exe);
    llvm.survived_the_fault();
    assert!(
        llvm.stderr
            .contains("an illegal memory access was encountered"),
        "{}",
        llvm.stderr
    );
}

#[test]
fn a_trap_in_a_kernel_is_the_cuda_drivers_illegal_instruction() {
    let exe = tests::compile_cuda_twin(TRAP);
    let run = run_ours(EmulatedGpu::Cuda, &exe);
    run.survived_the_fault();
    assert!(
        run.says("omptarget error", "CUDA_ERROR_ILLEGAL_INSTRUCTION"),
        "{}",
        run.stderr
    );
    assert!(
        run.says("OFFLOAD ERROR", "CUDA_ERROR_ILLEGAL_INSTRUCTION (715)")
            && run.says("Kernel 0: 'omp target in main @", ""),
        "{}",
        run.stderr
    );
    let llvm = run_llvm_19(&exe);
    llvm.survived_the_fault();
    assert!(
        llvm.stderr
            .contains("an illegal instruction was encountered"),
        "{}",
        llvm.stderr
    );
}

#[test]
fn a_null_write_in_a_kernel_is_an_hsa_memory_fault() {
    let exe = tests::compile_amdgpu_twin(NULL_WRITE);
    let run = run_ours(EmulatedGpu::Amdgpu, &exe);
    run.survived_the_fault();
    // Our plugin's memory-fault handler names the address and stops the program, as LLVM's,
    // in LLVM 22's words.
    assert!(
        run.says("OFFLOAD ERROR", "memory access fault by GPU")
            && run.says(
                "OFFLOAD ERROR",
                "at virtual address 0x0. Reasons: page not present"
            ),
        "{}",
        run.stderr
    );
    the_null_write_s_launches_are_reported(EmulatedGpu::Amdgpu, &exe, &run);
    let llvm = run_llvm_19(&exe);
    llvm.survived_the_fault();
    assert!(
        llvm.stderr.contains("Memory access fault by GPU")
            && llvm.stderr.contains("Page not present"),
        "{}",
        llvm.stderr
    );
}

#[test]
fn a_trap_in_a_kernel_is_an_hsa_exception_on_its_queue() {
    let exe = tests::compile_amdgpu_twin(TRAP);
    let run = run_ours(EmulatedGpu::Amdgpu, &exe);
    run.survived_the_fault();
    assert!(
        run.says("omptarget error", "HSA_STATUS_ERROR_EXCEPTION"),
        "{}",
        run.stderr
    );
    // LLVM 22's report of a kernel that trapped, which its sanitizer tests check.
    assert!(
        run.says(
            "OFFLOAD ERROR: Kernel 'omp target in main @ 14 (__omp_offloading_",
            "_main_l14)'"
        ) && run.says(
            "OFFLOAD ERROR: execution interrupted by hardware trap instruction",
            ""
        ),
        "{}",
        run.stderr
    );
    assert_eq!(
        run.stderr
            .matches("HSA_STATUS_ERROR_EXCEPTION (0x1016)")
            .count(),
        2,
        "the queue's failure once as it happens, once in the runtime's error:\n{}",
        run.stderr
    );
    let llvm = run_llvm_19(&exe);
    llvm.survived_the_fault();
    assert!(
        llvm.stderr.contains("HSA_STATUS_ERROR_EXCEPTION"),
        "{}",
        llvm.stderr
    );
}

/// A `nowait` region that traps ends the program with the runtime's fatal error (the failure
/// its task's poll found is not lost), naming the region that trapped (line 20) even when
/// other `nowait` regions were launched after it.
#[test]
fn a_trap_in_a_nowait_region_is_fatal_and_names_its_kernel() {
    for (gpu, exe) in [
        (EmulatedGpu::Amdgpu, tests::compile_amdgpu_twin(TRAP_NOWAIT)),
        (EmulatedGpu::Cuda, tests::compile_cuda_twin(TRAP_NOWAIT)),
    ] {
        let run = run_ours(gpu, &exe);
        run.survived_the_fault();
        assert_eq!(
            run.status.signal(),
            Some(6),
            "{gpu:?}: {:?}\n{}",
            run.status,
            run.stderr
        );
        assert!(
            run.says("omptarget fatal error", ""),
            "{gpu:?}:\n{}",
            run.stderr
        );
        if gpu == EmulatedGpu::Amdgpu {
            assert!(
                run.says("OFFLOAD ERROR: Kernel 'omp target in main @ 20 (", ""),
                "{}",
                run.stderr
            );
        }
    }
}

/// The catcher changes nothing for kernels that do not fault.
#[test]
fn kernels_that_do_not_fault_run_as_before() {
    for (gpu, exe) in [
        (EmulatedGpu::Cuda, tests::compile_cuda_twin("emu_saxpy.c")),
        (
            EmulatedGpu::Amdgpu,
            tests::compile_amdgpu_twin("emu_saxpy.c"),
        ),
    ] {
        let run = run_ours(gpu, &exe);
        assert!(
            run.status.success() && run.stdout.contains(" ok"),
            "{gpu:?}: {:?}\n{}{}",
            run.status,
            run.stdout,
            run.stderr
        );
    }
}

// --- In-process, on the emulators' entry points -----------------------------------------------

/// emu_params.c's kernel writes four ints through its array argument: given a null array, it
/// writes through a null pointer.
const PARAMS: &str = "emu_params.c";

mod cuda {
    use omptarget_emu_cuda::*;
    use std::ffi::{c_void, CString};
    use std::time::{Duration, Instant};

    pub const ILLEGAL_ADDRESS: u32 = 700;
    const CHILD: &str = "OMPTARGET_TEST_EMU_FAULTS_CUDA_CHILD";

    struct Context {
        function: usize,
    }

    /// Retains device 0's primary context, makes it current, loads the kernel.
    fn context(exe: &std::path::Path) -> Context {
        let mut context = 0usize;
        assert_eq!(cuDevicePrimaryCtxRetain(&mut context, 0), 0);
        assert_eq!(cuCtxSetCurrent(context), 0);
        let (cubin, kernel) = tests::emulated::cuda_image_and_kernel(exe);
        let mut module = 0usize;
        assert_eq!(cuModuleLoadData(&mut module, cubin.as_ptr().cast()), 0);
        // The driver reads the image during the load only.
        let name = CString::new(kernel).unwrap();
        let mut function = 0usize;
        assert_eq!(cuModuleGetFunction(&mut function, module, name.as_ptr()), 0);
        Context { function }
    }

    fn launch(function: usize, stream: usize, mut array: u64) -> u32 {
        let mut environment = 0u64;
        let mut params: [*mut c_void; 2] = [
            (&mut environment as *mut u64).cast(),
            (&mut array as *mut u64).cast(),
        ];
        // SAFETY: the parameter pointers outlive the call (the values are copied at launch).
        unsafe {
            cuLaunchKernel(
                function,
                1,
                1,
                1,
                1,
                1,
                1,
                0,
                stream,
                params.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        }
    }

    /// A kernel that writes through a null pointer makes CUDA_ERROR_ILLEGAL_ADDRESS the
    /// context's sticky error: its stream's synchronisation, queries, events recorded after
    /// it, the context's other streams and every later call answer it, none waits forever;
    /// the error names itself. Released for the last time, the context comes back without it:
    /// a kernel runs again, and one that faults on the legacy default stream returns the error
    /// from its launch instead of hanging the caller.
    #[test]
    fn a_faulting_kernel_is_the_contexts_sticky_error() {
        let exe = tests::compile_cuda_twin(super::PARAMS);
        if !tests::emulated::in_child_with_twins(
            "cuda::a_faulting_kernel_is_the_contexts_sticky_error",
            CHILD,
            &exe,
            &[],
        ) {
            return;
        }
        let start = Instant::now();
        assert_eq!(cuInit(0), 0);
        let Context { function } = context(&exe);
        let (mut stream, mut other, mut event) = (0usize, 0usize, 0usize);
        assert_eq!(cuStreamCreate(&mut stream, 0), 0);
        assert_eq!(cuStreamCreate(&mut other, 1), 0);
        assert_eq!(cuEventCreate(&mut event, 0), 0);
        assert_eq!(launch(function, stream, 0), 0, "launched; it faults later");
        assert_eq!(cuEventRecord(event, stream), 0);
        assert_eq!(cuStreamSynchronize(stream), ILLEGAL_ADDRESS);
        assert_eq!(cuStreamQuery(stream), ILLEGAL_ADDRESS);
        assert_eq!(cuEventSynchronize(event), ILLEGAL_ADDRESS);
        assert_eq!(cuStreamSynchronize(other), ILLEGAL_ADDRESS);
        let mut pointer = 0u64;
        assert_eq!(cuMemAlloc_v2(&mut pointer, 64), ILLEGAL_ADDRESS);
        assert_eq!(launch(function, other, 0), ILLEGAL_ADDRESS);
        assert_eq!(cuStreamDestroy_v2(stream), ILLEGAL_ADDRESS);
        let mut name = std::ptr::null();
        assert_eq!(cuGetErrorName(ILLEGAL_ADDRESS, &mut name), 0);
        // SAFETY: the driver hands out a static NUL-terminated name.
        let name = unsafe { std::ffi::CStr::from_ptr(name) };
        assert_eq!(name.to_str().unwrap(), "CUDA_ERROR_ILLEGAL_ADDRESS");

        // A new primary context: no error, and kernels run.
        assert_eq!(cuDevicePrimaryCtxRelease_v2(0), 0);
        let Context { function } = context(&exe);
        let mut array = 0u64;
        assert_eq!(cuMemAlloc_v2(&mut array, 16), 0);
        assert_eq!(launch(function, 0, array), 0);
        let mut values = [0i32; 4];
        assert_eq!(cuMemcpyDtoH_v2(values.as_mut_ptr().cast(), array, 16), 0);
        assert_eq!(values, [7, 14, 21, 28]);
        assert_eq!(launch(function, 0, 0), ILLEGAL_ADDRESS, "legacy stream");
        assert_eq!(cuCtxGetDevice(&mut 0), ILLEGAL_ADDRESS);
        assert!(start.elapsed() < Duration::from_secs(60));
    }
}

mod hsa {
    use hsa_sys::*;
    use omptarget_emu_hsa::*;
    use std::ffi::c_void;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::sync::Mutex;
    use std::time::{Duration, Instant};

    const CHILD: &str = "OMPTARGET_TEST_EMU_FAULTS_HSA_CHILD";

    /// (agent handle, address) of each memory fault event.
    static FAULTS: Mutex<Vec<(u64, u64)>> = Mutex::new(Vec::new());
    static QUEUE_ERRORS: Mutex<Vec<hsa_status_t>> = Mutex::new(Vec::new());

    unsafe extern "C" fn on_event(event: *const hsa_amd_event_t, _: *mut c_void) -> hsa_status_t {
        // SAFETY: the runtime passes a live event.
        let event = unsafe { &*event };
        if event.event_type == HSA_AMD_GPU_MEMORY_FAULT_EVENT {
            FAULTS.lock().unwrap().push((
                event.memory_fault.agent.handle,
                event.memory_fault.virtual_address,
            ));
        }
        HSA_STATUS_SUCCESS
    }

    unsafe extern "C" fn on_queue_error(status: hsa_status_t, _: *mut hsa_queue_t, _: *mut c_void) {
        QUEUE_ERRORS.lock().unwrap().push(status);
    }

    unsafe extern "C" fn collect<T>(item: T, data: *mut c_void) -> hsa_status_t {
        // SAFETY: `data` is the caller's vector.
        unsafe { (*(data as *mut Vec<T>)).push(item) };
        HSA_STATUS_SUCCESS
    }

    fn info<T: Default>(get: impl FnOnce(*mut c_void) -> hsa_status_t) -> T {
        let mut value = T::default();
        assert_eq!(get(&mut value as *mut T as *mut c_void), 0);
        value
    }

    /// (CPU agent, first GPU agent).
    fn agents() -> (hsa_agent_t, hsa_agent_t) {
        let mut agents: Vec<hsa_agent_t> = Vec::new();
        assert_eq!(
            hsa_iterate_agents(Some(collect), &mut agents as *mut _ as *mut c_void),
            0
        );
        let kind =
            |a: hsa_agent_t| -> u32 { info(|v| hsa_agent_get_info(a, HSA_AGENT_INFO_DEVICE, v)) };
        let cpu = *agents
            .iter()
            .find(|&&a| kind(a) == HSA_DEVICE_TYPE_CPU)
            .unwrap();
        let gpu = *agents
            .iter()
            .find(|&&a| kind(a) == HSA_DEVICE_TYPE_GPU)
            .unwrap();
        (cpu, gpu)
    }

    fn pools(agent: hsa_agent_t) -> Vec<hsa_amd_memory_pool_t> {
        let mut found: Vec<hsa_amd_memory_pool_t> = Vec::new();
        assert_eq!(
            hsa_amd_agent_iterate_memory_pools(
                agent,
                Some(collect),
                &mut found as *mut _ as *mut c_void
            ),
            0
        );
        found
    }

    fn allocate(pool: hsa_amd_memory_pool_t, size: usize) -> *mut u8 {
        let mut pointer = std::ptr::null_mut();
        assert_eq!(hsa_amd_memory_pool_allocate(pool, size, 0, &mut pointer), 0);
        pointer.cast()
    }

    /// A kernel that writes through a null pointer is a GPU memory fault: the system event
    /// handler gets the address, the queue's error callback `HSA_STATUS_ERROR_MEMORY_FAULT`,
    /// the dispatch's completion signal is never decremented, and the queue can still be
    /// destroyed (nothing waits for the faulting kernel).
    #[test]
    fn a_faulting_kernel_is_a_memory_fault_on_its_queue() {
        let exe = tests::compile_amdgpu_twin(super::PARAMS);
        if !tests::emulated::in_child_with_twins(
            "hsa::a_faulting_kernel_is_a_memory_fault_on_its_queue",
            CHILD,
            &exe,
            &[],
        ) {
            return;
        }
        assert_eq!(hsa_init(), 0);
        assert_eq!(
            hsa_amd_register_system_event_handler(Some(on_event), std::ptr::null_mut()),
            0
        );
        let (cpu, gpu) = agents();
        let code = {
            use object::{Object, ObjectSection};
            let bytes = std::fs::read(&exe).unwrap();
            let file = object::File::parse(&*bytes).unwrap();
            let section = file.section_by_name(".llvm.offloading").unwrap();
            offload_image::offload_binary::containers(section.data().unwrap())
                .into_iter()
                .filter_map(|c| offload_image::offload_binary::unwrap(c).ok())
                .find(|u| u.triple.starts_with("amdgcn"))
                .map(|u| u.bytes.to_vec())
                .unwrap()
        };
        let mut reader = hsa_code_object_reader_t::default();
        assert_eq!(
            hsa_code_object_reader_create_from_memory(
                code.as_ptr().cast(),
                code.len(),
                &mut reader
            ),
            0
        );
        let mut executable = hsa_executable_t::default();
        assert_eq!(
            hsa_executable_create_alt(
                HSA_PROFILE_FULL,
                HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT,
                std::ptr::null(),
                &mut executable
            ),
            0
        );
        assert_eq!(
            hsa_executable_load_agent_code_object(
                executable,
                gpu,
                reader,
                std::ptr::null(),
                std::ptr::null_mut()
            ),
            0
        );
        let metadata = offload_image::amdgpu_code_object::check(&code).unwrap();
        let kernel = &metadata.kernels()[0];
        let mut symbol = hsa_executable_symbol_t::default();
        let name = std::ffi::CString::new(kernel.symbol.as_str()).unwrap();
        assert_eq!(
            hsa_executable_get_symbol_by_name(executable, name.as_ptr(), &gpu, &mut symbol),
            0
        );
        let symbol_info =
            |attribute| -> u64 { info(|v| hsa_executable_symbol_get_info(symbol, attribute, v)) };
        let object = symbol_info(HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT);
        let group = symbol_info(HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE) as u32;
        let private = symbol_info(HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE) as u32;
        // Both pointer arguments (the launch environment and the array) null.
        let kernarg_pool = pools(cpu)
            .into_iter()
            .find(|&p| {
                let flags: u32 = info(|v| {
                    hsa_amd_memory_pool_get_info(p, HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS, v)
                });
                flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT != 0
            })
            .unwrap();
        let kernarg = allocate(kernarg_pool, kernel.kernarg_segment_size.max(16) as usize);
        // SAFETY: the buffer holds the kernel's kernarg segment.
        unsafe { std::ptr::write_bytes(kernarg, 0, kernel.kernarg_segment_size as usize) };
        assert_eq!(
            hsa_amd_agents_allow_access(1, &gpu, std::ptr::null(), kernarg.cast()),
            0
        );
        let mut done = hsa_signal_t::default();
        assert_eq!(hsa_signal_create(1, 0, std::ptr::null(), &mut done), 0);
        let mut queue = std::ptr::null_mut();
        assert_eq!(
            hsa_queue_create(
                gpu,
                64,
                HSA_QUEUE_TYPE_MULTI,
                Some(on_queue_error),
                std::ptr::null_mut(),
                u32::MAX,
                u32::MAX,
                &mut queue
            ),
            0
        );
        // One work-item: a dispatch packet with the barrier bit, header published last.
        let mut words = [0u32; 16];
        words[1] = 1 | 1 << 16; // work-group 1x1x1
        words[2] = 1;
        words[3] = 1; // grid 1x1x1
        words[4] = 1;
        words[5] = 1;
        words[6] = private;
        words[7] = group;
        words[8] = object as u32;
        words[9] = (object >> 32) as u32;
        words[10] = kernarg as u64 as u32;
        words[11] = (kernarg as u64 >> 32) as u32;
        words[14] = done.handle as u32;
        words[15] = (done.handle >> 32) as u32;
        let header = HSA_PACKET_TYPE_KERNEL_DISPATCH << HSA_PACKET_HEADER_TYPE
            | 1 << HSA_PACKET_HEADER_BARRIER;
        words[0] = header | 1 << 16; // one dimension
        let index = hsa_queue_add_write_index_relaxed(queue, 1);
        // SAFETY: the queue is live; its ring has `size` 64-byte slots and this one is ours
        // until its header is published.
        unsafe {
            let q = &*queue;
            let slot = (q.base_address as *mut [u32; 16]).add((index % q.size as u64) as usize);
            for (i, word) in words.iter().enumerate().skip(1) {
                (*slot)[i] = *word;
            }
            (*(slot as *const AtomicU32)).store(words[0], Ordering::Release);
            hsa_signal_store_screlease(q.doorbell_signal, index as i64);
        }
        let start = Instant::now();
        while QUEUE_ERRORS.lock().unwrap().is_empty() && start.elapsed() < Duration::from_secs(20) {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(
            *QUEUE_ERRORS.lock().unwrap(),
            vec![HSA_STATUS_ERROR_MEMORY_FAULT]
        );
        let faults = FAULTS.lock().unwrap().clone();
        assert_eq!(faults, vec![(gpu.handle, 0)], "one fault, at address 0");
        let value = hsa_signal_wait_scacquire(
            done,
            HSA_SIGNAL_CONDITION_EQ,
            0,
            50_000_000,
            HSA_WAIT_STATE_BLOCKED,
        );
        assert_eq!(value, 1, "the faulting dispatch never completes");
        assert_eq!(hsa_queue_destroy(queue), 0);
    }
}
