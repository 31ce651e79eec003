//! The emulated CUDA driver's rules, one by one, called in-process as a plugin would call the
//! driver: each is a rule of the real driver that a plugin bug would break (the codes are the
//! driver's). Modules use the sm_90 cubin of a real clang-19 program.

use omptarget_emu_cuda::*;
use std::ffi::{c_int, c_void, CString};
use std::sync::{Condvar, Mutex, OnceLock};

const INVALID_VALUE: u32 = 1;
const OUT_OF_MEMORY: u32 = 2;
const INVALID_DEVICE: u32 = 101;
const INVALID_IMAGE: u32 = 200;
const INVALID_CONTEXT: u32 = 201;
const NO_BINARY_FOR_GPU: u32 = 209;
const INVALID_HANDLE: u32 = 400;
const NOT_FOUND: u32 = 500;
const NOT_READY: u32 = 600;
const HOST_MEMORY_ALREADY_REGISTERED: u32 = 712;
const HOST_MEMORY_NOT_REGISTERED: u32 = 713;
const NOT_SUPPORTED: u32 = 801;

/// Initialises the driver and makes device 0's primary context current on this thread.
fn with_context() {
    assert_eq!(cuInit(0), 0);
    let mut context = 0usize;
    assert_eq!(cuDevicePrimaryCtxRetain(&mut context, 0), 0);
    assert_eq!(cuCtxSetCurrent(context), 0);
}

fn allocate(size: usize) -> u64 {
    let mut pointer = 0u64;
    assert_eq!(cuMemAlloc_v2(&mut pointer, size), 0);
    pointer
}

#[test]
fn calls_that_need_a_context_fail_without_a_current_one() {
    assert_eq!(cuInit(0), 0);
    std::thread::spawn(|| {
        let mut pointer = 0u64;
        assert_eq!(cuMemAlloc_v2(&mut pointer, 4096), INVALID_CONTEXT);
        let mut stream = 0usize;
        assert_eq!(cuStreamCreate(&mut stream, 0), INVALID_CONTEXT);
        let (mut free, mut total) = (0, 0);
        assert_eq!(cuMemGetInfo_v2(&mut free, &mut total), INVALID_CONTEXT);
    })
    .join()
    .unwrap();
}

#[test]
fn device_memory_is_checked_on_every_copy_and_free() {
    with_context();
    let size = 1 << 20;
    let device = allocate(size);
    let host = vec![7u8; size + 1];
    let mut back = vec![0u8; size];
    assert_eq!(cuMemcpyHtoD_v2(device, host.as_ptr().cast(), size), 0);
    assert_eq!(cuMemcpyDtoH_v2(back.as_mut_ptr().cast(), device, size), 0);
    assert_eq!(back, host[..size]);
    assert_eq!(
        cuMemcpyHtoD_v2(device, host.as_ptr().cast(), size + 1),
        INVALID_VALUE,
        "a copy past the end of the allocation"
    );
    assert_eq!(
        cuMemcpyHtoD_v2(host.as_ptr() as u64, back.as_ptr().cast(), 16),
        INVALID_VALUE,
        "a host pointer as the device pointer"
    );
    assert_eq!(
        cuMemFree_v2(device + 64),
        INVALID_VALUE,
        "an interior pointer"
    );
    assert_eq!(cuMemFree_v2(device), 0);
    assert_eq!(cuMemFree_v2(device), INVALID_VALUE, "a double free");
    assert_eq!(
        cuMemcpyDtoH_v2(back.as_mut_ptr().cast(), device, 16),
        INVALID_VALUE,
        "a copy from freed memory"
    );
    let mut pointer = 0u64;
    assert_eq!(
        cuMemAlloc_v2(&mut pointer, 5 << 30),
        OUT_OF_MEMORY,
        "over the 4 GiB"
    );
    let (mut free, mut total) = (0usize, 0usize);
    assert_eq!(cuMemGetInfo_v2(&mut free, &mut total), 0);
    assert_eq!(total, 4 << 30);
    assert!(free <= total);
}

#[test]
fn host_registration_follows_the_driver() {
    with_context();
    let buffer = vec![0u8; 8192];
    let start = buffer.as_ptr() as *mut c_void;
    assert_eq!(cuMemHostRegister_v2(start, 8192, 0), 0);
    assert_eq!(
        cuMemHostRegister_v2(start, 8192, 0),
        HOST_MEMORY_ALREADY_REGISTERED
    );
    let mut device = 0u64;
    // SAFETY: an interior address of the registered buffer.
    let interior = unsafe { start.cast::<u8>().add(100) }.cast();
    assert_eq!(cuMemHostGetDevicePointer_v2(&mut device, interior, 0), 0);
    assert_eq!(device, interior as u64, "unified addressing");
    assert_eq!(cuMemHostUnregister(interior), HOST_MEMORY_NOT_REGISTERED);
    assert_eq!(cuMemHostUnregister(start), 0);
    assert_eq!(cuMemHostUnregister(start), HOST_MEMORY_NOT_REGISTERED);
    assert_eq!(
        cuMemHostGetDevicePointer_v2(&mut device, start, 0),
        INVALID_VALUE
    );
    let mut pinned: *mut c_void = std::ptr::null_mut();
    assert_eq!(cuMemAllocHost_v2(&mut pinned, 100), 0);
    assert_eq!(
        cuMemFreeHost(start),
        INVALID_VALUE,
        "not from cuMemAllocHost"
    );
    assert_eq!(cuMemFreeHost(pinned), 0);
}

#[test]
fn destroyed_and_mistaken_handles_are_refused() {
    with_context();
    let (mut stream, mut event) = (0usize, 0usize);
    assert_eq!(cuStreamCreate(&mut stream, 0), 0);
    assert_eq!(
        cuStreamCreate(&mut 0usize, 4),
        INVALID_VALUE,
        "unknown flags"
    );
    assert_eq!(cuEventCreate(&mut event, 0), 0);
    assert_eq!(cuStreamQuery(stream), 0);
    assert_eq!(
        cuEventRecord(stream, stream),
        INVALID_HANDLE,
        "a stream as an event"
    );
    assert_eq!(cuEventRecord(event, stream), 0);
    assert_eq!(cuStreamWaitEvent(stream, event, 0), 0);
    assert_eq!(cuStreamSynchronize(stream), 0);
    assert_eq!(cuEventSynchronize(event), 0);
    assert_eq!(cuStreamDestroy_v2(stream), 0);
    assert_eq!(cuStreamSynchronize(stream), INVALID_HANDLE);
    assert_eq!(cuEventDestroy_v2(event), 0);
    assert_eq!(cuEventSynchronize(event), INVALID_HANDLE);
}

/// `cuEventElapsedTime`: the time between two reached records, as the stream reached them;
/// the driver's errors for events without timing, never recorded or not yet reached.
#[test]
fn elapsed_time_is_measured_between_reached_records() {
    with_context();
    let (mut stream, mut start, mut end, mut untimed) = (0usize, 0usize, 0usize, 0usize);
    assert_eq!(cuStreamCreate(&mut stream, 1), 0);
    assert_eq!(cuEventCreate(&mut start, 0), 0);
    assert_eq!(cuEventCreate(&mut end, 0), 0);
    assert_eq!(cuEventCreate(&mut untimed, 2), 0, "CU_EVENT_DISABLE_TIMING");
    let mut ms = -1f32;
    assert_eq!(
        cuEventElapsedTime(&mut ms, start, end),
        INVALID_HANDLE,
        "never recorded"
    );
    let size = 64 << 20;
    let device = allocate(size);
    let host = vec![1u8; size];
    let before = std::time::Instant::now();
    assert_eq!(cuEventRecord(start, stream), 0);
    assert_eq!(
        cuMemcpyHtoDAsync_v2(device, host.as_ptr().cast(), size, stream),
        0
    );
    assert_eq!(cuEventRecord(end, stream), 0);
    assert_eq!(cuEventRecord(untimed, stream), 0);
    // A 64 MiB copy has not finished microseconds after it was queued.
    assert_eq!(cuEventElapsedTime(&mut ms, start, end), NOT_READY);
    assert_eq!(cuStreamSynchronize(stream), 0);
    let wall_ms = before.elapsed().as_secs_f32() * 1e3;
    assert_eq!(cuEventElapsedTime(&mut ms, start, end), 0);
    assert!(ms > 0.0 && ms <= wall_ms, "{ms} ms of {wall_ms} ms");
    let mut back = 0f32;
    assert_eq!(cuEventElapsedTime(&mut back, end, start), 0);
    assert_eq!(back, -ms, "the other way round is negative");
    assert_eq!(
        cuEventElapsedTime(&mut ms, start, untimed),
        INVALID_HANDLE,
        "an event without timing"
    );
    assert_eq!(
        cuEventElapsedTime(std::ptr::null_mut(), start, end),
        INVALID_VALUE
    );
    for event in [start, end, untimed] {
        assert_eq!(cuEventDestroy_v2(event), 0);
    }
    assert_eq!(cuEventElapsedTime(&mut ms, start, end), INVALID_HANDLE);
    assert_eq!(cuMemFree_v2(device), 0);
    assert_eq!(cuStreamDestroy_v2(stream), 0);
}

/// The sm_90 cubin of a real program, and the name of one of its kernels.
fn cubin() -> &'static (Vec<u8>, String) {
    static CUBIN: OnceLock<(Vec<u8>, String)> = OnceLock::new();
    CUBIN.get_or_init(|| {
        tests::emulated::cuda_image_and_kernel(&tests::compile_cuda_twin("emu_saxpy.c"))
    })
}

fn load(bytes: &[u8]) -> Result<usize, u32> {
    let mut module = 0usize;
    match cuModuleLoadData(&mut module, bytes.as_ptr().cast()) {
        0 => Ok(module),
        code => Err(code),
    }
}

#[test]
fn modules_are_checked_like_the_driver_does() {
    with_context();
    let (bytes, kernel) = cubin();
    let module = load(bytes).expect("the real cubin loads");
    let name = CString::new(kernel.as_str()).unwrap();
    let mut function = 0usize;
    assert_eq!(cuModuleGetFunction(&mut function, module, name.as_ptr()), 0);
    let missing = CString::new("no_such_kernel").unwrap();
    assert_eq!(
        cuModuleGetFunction(&mut function.clone(), module, missing.as_ptr()),
        NOT_FOUND
    );
    let environment = CString::new("__omp_rtl_device_environment").unwrap();
    let (mut address, mut size) = (0u64, 0usize);
    assert_eq!(
        cuModuleGetGlobal_v2(&mut address, &mut size, module, environment.as_ptr()),
        0
    );
    assert!(size > 0);
    let mut readback = vec![1u8; size];
    assert_eq!(
        cuMemcpyDtoH_v2(readback.as_mut_ptr().cast(), address, size),
        0
    );

    let mut newer = bytes.clone();
    newer[48] = 100; // e_flags: sm_100, newer than the device
    assert_eq!(load(&newer), Err(NO_BINARY_FOR_GPU));
    let mut x86 = bytes.clone();
    x86[18..20].copy_from_slice(&62u16.to_le_bytes());
    assert_eq!(load(&x86), Err(INVALID_IMAGE));

    assert_eq!(cuModuleUnload(module), 0);
    assert_eq!(cuModuleUnload(module), INVALID_HANDLE);
    assert_eq!(
        cuFuncGetAttribute(&mut 0, 0, function),
        INVALID_HANDLE,
        "functions go with their module"
    );
}

/// Launches `function` with a zeroed parameter buffer big enough for any of its kernels.
fn launch(function: usize, block: u32, shared: u32) -> u32 {
    let mut params = [0u8; 512];
    let mut size = params.len();
    // cuda.h's markers are the addresses 1 (buffer pointer) and 2 (buffer size).
    #[allow(clippy::manual_dangling_ptr)]
    let mut extra: [*mut c_void; 5] = [
        1usize as *mut c_void,
        params.as_mut_ptr().cast(),
        2usize as *mut c_void,
        (&mut size as *mut usize).cast(),
        std::ptr::null_mut(),
    ];
    // SAFETY: the parameter buffer and its size outlive the call.
    unsafe {
        cuLaunchKernel(
            function,
            1,
            1,
            1,
            block,
            1,
            1,
            shared,
            0,
            std::ptr::null_mut(),
            extra.as_mut_ptr(),
        )
    }
}

#[test]
fn launches_respect_the_kernel_limits_and_the_shared_memory_opt_in() {
    with_context();
    let (bytes, kernel) = cubin();
    let module = load(bytes).unwrap();
    let name = CString::new(kernel.as_str()).unwrap();
    let mut function = 0usize;
    assert_eq!(cuModuleGetFunction(&mut function, module, name.as_ptr()), 0);
    let mut max_threads = 0;
    assert_eq!(cuFuncGetAttribute(&mut max_threads, 0, function), 0);
    assert!((1..=1024).contains(&max_threads));
    assert_eq!(launch(function, max_threads as u32 + 1, 0), INVALID_VALUE);
    assert_eq!(
        launch(function, 1, 64 * 1024),
        INVALID_VALUE,
        "over 48 KiB, not opted in"
    );
    assert_eq!(
        cuFuncSetAttribute(function, 8, 300 * 1024),
        INVALID_VALUE,
        "over 227 KiB"
    );
    assert_eq!(cuFuncSetAttribute(function, 8, 64 * 1024), 0);
    // Past the checks; this process has no twin of the kernel, which the launch says.
    assert_eq!(launch(function, 1, 64 * 1024), NOT_SUPPORTED);
    assert_eq!(cuModuleUnload(module), 0);
}

/// Reads `len` bytes of device memory at `device`.
fn read_back(device: u64, len: usize) -> Vec<u8> {
    let mut back = vec![0u8; len];
    assert_eq!(cuMemcpyDtoH_v2(back.as_mut_ptr().cast(), device, len), 0);
    back
}

/// `cuMemsetD8/16/32` and their `Async` forms as the driver takes them: `count` elements of
/// the call's width, from a start aligned to it, all inside memory the device reaches (device
/// allocations, page-locked host memory); anything else is `INVALID_VALUE` and writes nothing.
#[test]
fn memsets_set_aligned_elements_inside_what_the_device_reaches() {
    with_context();
    let size = 4096;
    let a = allocate(size);
    assert_eq!(cuMemsetD8_v2(a, 0x11, size), 0);
    assert_eq!(cuMemsetD16_v2(a + 2, 0xbeef, 3), 0);
    assert_eq!(cuMemsetD32_v2(a + 8, 0xa1b2_c3d4, 2), 0);
    assert_eq!(
        cuMemsetD8Async(a + 17, 0x5a, 5, 0),
        0,
        "any start for bytes"
    );
    assert_eq!(cuMemsetD32Async(a + 24, 7, 0, 0), 0, "no elements");
    let mut expected = vec![0x11u8; size];
    expected[2..8].copy_from_slice(&[0xef, 0xbe, 0xef, 0xbe, 0xef, 0xbe]);
    expected[8..12].copy_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
    expected[12..16].copy_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
    expected[17..22].fill(0x5a);
    assert_eq!(read_back(a, size), expected);

    assert_eq!(cuMemsetD16_v2(a + 1, 0, 1), INVALID_VALUE, "odd start");
    assert_eq!(cuMemsetD16Async(a + 3, 0, 1, 0), INVALID_VALUE, "odd start");
    assert_eq!(cuMemsetD32_v2(a + 2, 0, 1), INVALID_VALUE, "2 past a word");
    assert_eq!(cuMemsetD32Async(a + 6, 0, 1, 0), INVALID_VALUE);
    assert_eq!(
        cuMemsetD32_v2(a + size as u64 - 4, 0, 2),
        INVALID_VALUE,
        "an element past the allocation's end"
    );
    assert_eq!(cuMemsetD8_v2(a, 0, size + 1), INVALID_VALUE);
    assert_eq!(
        cuMemsetD32_v2(a, 0, usize::MAX / 2),
        INVALID_VALUE,
        "a byte count past the address space"
    );
    assert_eq!(cuMemsetD8_v2(0, 0, 1), INVALID_VALUE, "null");
    let mut pageable = vec![3u8; 64];
    assert_eq!(
        cuMemsetD8_v2(pageable.as_mut_ptr() as u64, 0, 64),
        INVALID_VALUE,
        "pageable host memory"
    );
    assert_eq!(pageable, [3; 64]);
    assert_eq!(read_back(a, size), expected, "refused calls wrote nothing");

    // Page-locked host memory: the device reaches it at the host's address.
    let mut pinned: *mut c_void = std::ptr::null_mut();
    assert_eq!(cuMemAllocHost_v2(&mut pinned, 64), 0);
    assert_eq!(cuMemsetD32_v2(pinned as u64, 0x0102_0304, 16), 0);
    // SAFETY: 64 bytes of page-locked host memory, set above.
    let words = unsafe { std::slice::from_raw_parts(pinned.cast::<u32>(), 16) };
    assert_eq!(words, [0x0102_0304; 16]);
    assert_eq!(cuMemFreeHost(pinned), 0);

    let mut stream = 0usize;
    assert_eq!(cuStreamCreate(&mut stream, 1), 0);
    assert_eq!(cuStreamDestroy_v2(stream), 0);
    assert_eq!(
        cuMemsetD8Async(a, 0, 1, stream),
        INVALID_HANDLE,
        "a destroyed stream"
    );
    assert_eq!(cuMemFree_v2(a), 0);
    assert_eq!(cuMemsetD8_v2(a, 0, 1), INVALID_VALUE, "freed memory");

    std::thread::spawn(move || {
        assert_eq!(cuMemsetD8_v2(a, 0, 1), INVALID_CONTEXT);
        assert_eq!(cuMemsetD32Async(a, 0, 1, 0), INVALID_CONTEXT);
    })
    .join()
    .unwrap();
}

/// In a child process with `OMPTARGET_EMU_DELAY_US` and `OMPTARGET_EMU_TRACE` (read once per
/// process).
const MEMSET_CHILD: &str = "OMPTARGET_TEST_EMU_CUDA_MEMSET_CHILD";
const MEMSET_DELAY: std::time::Duration = std::time::Duration::from_millis(100);

/// An asynchronous memset runs on its stream's worker like a copy: after the work queued
/// before it, after the emulator's delay, not before the call returns; and each call is a
/// line of the trace with its element count and bytes (a 2D one with its pitch and shape).
#[test]
fn async_memsets_run_in_stream_order_after_the_delay_and_are_traced() {
    if std::env::var_os(MEMSET_CHILD).is_none() {
        let trace = tests::build_dir().join("emu-cuda-memset-trace.txt");
        let _ = std::fs::remove_file(&trace);
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "async_memsets_run_in_stream_order_after_the_delay_and_are_traced",
                "--nocapture",
            ])
            .env(MEMSET_CHILD, "1")
            .env(
                "OMPTARGET_EMU_DELAY_US",
                MEMSET_DELAY.as_micros().to_string(),
            )
            .env("OMPTARGET_EMU_TRACE", &trace)
            .output()
            .unwrap();
        assert!(
            out.status.success() && tests::text(&out.stdout).contains("1 passed"),
            "{}{}",
            tests::text(&out.stdout),
            tests::text(&out.stderr)
        );
        let trace = std::fs::read_to_string(&trace).unwrap();
        let line = |call: &str, detail: &str| {
            trace
                .lines()
                .any(|l| l.starts_with(call) && l.contains(detail) && l.ends_with("CUDA_SUCCESS"))
        };
        assert!(line("cuMemsetD32Async ", "count=256 size=1024"), "{trace}");
        // Copies say how many bytes they moved, so that a trace's traffic can be summed.
        assert!(line("cuMemcpyHtoDAsync_v2 ", " size=4096"), "{trace}");
        assert!(line("cuMemcpyDtoHAsync_v2 ", " size=4096"), "{trace}");
        assert!(
            line("cuMemsetD8Async ", "value=0x5a count=64 size=64"),
            "{trace}"
        );
        assert!(
            trace.lines().any(
                |l| l.starts_with("cuMemsetD16_v2 ") && l.ends_with("CUDA_ERROR_INVALID_VALUE")
            ),
            "{trace}"
        );
        assert!(
            line(
                "cuMemsetD2D32Async ",
                "pitch=8 value=0x1 width=1 height=4 size=16"
            ),
            "{trace}"
        );
        return;
    }
    with_context();
    let size = 4096;
    let device = allocate(size);
    let mut stream = 0usize;
    assert_eq!(cuStreamCreate(&mut stream, 1), 0);
    let mut pinned: *mut c_void = std::ptr::null_mut();
    assert_eq!(cuMemAllocHost_v2(&mut pinned, 2 * size), 0);
    // SAFETY: page-locked host memory of 2 * size bytes, only read by the host below while
    // the stream does not write it, or after it has.
    let host = |range: std::ops::Range<usize>| unsafe {
        std::slice::from_raw_parts(pinned.cast::<u8>().add(range.start), range.len()).to_vec()
    };
    assert_eq!(cuMemsetD8_v2(pinned as u64, 0, 2 * size), 0);
    let data = vec![7u8; size];
    let start = std::time::Instant::now();
    assert_eq!(
        cuMemcpyHtoDAsync_v2(device, data.as_ptr().cast(), size, stream),
        0
    );
    assert_eq!(cuMemsetD32Async(device + 1024, 0xa1b2_c3d4, 256, stream), 0);
    assert_eq!(
        cuMemcpyDtoHAsync_v2(pinned, device, size, stream),
        0,
        "to page-locked memory: asynchronous"
    );
    assert_eq!(host(0..size), vec![0; size], "nothing has run yet");
    assert_eq!(cuStreamSynchronize(stream), 0);
    assert!(start.elapsed() >= 3 * MEMSET_DELAY);
    let mut expected = data.clone();
    for word in expected[1024..2048].chunks_mut(4) {
        word.copy_from_slice(&0xa1b2_c3d4u32.to_le_bytes());
    }
    assert_eq!(host(0..size), expected, "copy, then memset, then copy back");

    // Straight into page-locked memory: not written when the call returns.
    let at = pinned as u64 + size as u64;
    let start = std::time::Instant::now();
    assert_eq!(cuMemsetD8Async(at, 0x5a, 64, stream), 0);
    assert_eq!(host(size..size + 64), [0; 64]);
    assert_eq!(cuStreamSynchronize(stream), 0);
    assert!(start.elapsed() >= MEMSET_DELAY);
    assert_eq!(host(size..size + 64), [0x5a; 64]);
    assert_eq!(cuMemsetD16_v2(at + 1, 0, 1), INVALID_VALUE);
    assert_eq!(cuMemsetD2D32Async(device, 8, 1, 1, 4, stream), 0);
    assert_eq!(cuStreamSynchronize(stream), 0);
    assert_eq!(cuStreamDestroy_v2(stream), 0);
    assert_eq!(cuMemFreeHost(pinned), 0);
    assert_eq!(cuMemFree_v2(device), 0);
}

/// A gate that a host function holds its stream at until the test opens it.
#[derive(Default)]
struct Gate {
    open: Mutex<bool>,
    changed: Condvar,
}

impl Gate {
    fn open(&self) {
        *self.open.lock().unwrap() = true;
        self.changed.notify_all();
    }

    fn as_data(&self) -> *mut c_void {
        (self as *const Gate).cast_mut().cast()
    }
}

/// A host function: waits at the `Gate` its data points to.
unsafe extern "C" fn wait_at_gate(data: *mut c_void) {
    // SAFETY: the test's gate, which outlives the stream's work.
    let gate = unsafe { &*data.cast::<Gate>() };
    let mut open = gate.open.lock().unwrap();
    while !*open {
        open = gate.changed.wait(open).unwrap();
    }
}

/// What host functions and callbacks saw: a label, the thread they ran on and the status a
/// callback got.
type Seen = Mutex<Vec<(&'static str, std::thread::ThreadId, u32)>>;

/// The data of `note_host_function` and `note_callback`.
struct Note {
    seen: &'static Seen,
    label: &'static str,
}

impl Note {
    fn leak(seen: &'static Seen, label: &'static str) -> *mut c_void {
        Box::into_raw(Box::new(Note { seen, label })).cast()
    }

    fn record(data: *mut c_void, status: u32) {
        // SAFETY: a leaked `Note` (`Note::leak`).
        let note = unsafe { &*data.cast::<Note>() };
        let thread = std::thread::current().id();
        note.seen.lock().unwrap().push((note.label, thread, status));
    }
}

unsafe extern "C" fn note_host_function(data: *mut c_void) {
    Note::record(data, u32::MAX);
}

unsafe extern "C" fn note_callback(_stream: usize, status: u32, data: *mut c_void) {
    Note::record(data, status);
}

/// `cuLaunchHostFunc` and `cuStreamAddCallback` (the first after each launch in LLVM 22's
/// plugin): the host function runs in stream order on the stream's worker, not on the caller's
/// thread and not before the work queued before it; a callback gets `CUDA_SUCCESS`. The
/// driver's argument checks. (After a kernel fault: the sticky-error test in emu-cuda.)
#[test]
fn host_functions_and_callbacks_run_in_stream_order_on_the_streams_worker() {
    with_context();
    static SEEN: Seen = Mutex::new(Vec::new());
    let gate = Box::leak(Box::default()) as &'static Gate;
    let mut stream = 0usize;
    assert_eq!(cuStreamCreate(&mut stream, 1), 0);
    let device = allocate(4096);
    assert_eq!(
        cuLaunchHostFunc(stream, Some(wait_at_gate), gate.as_data()),
        0
    );
    assert_eq!(cuMemsetD8Async(device, 0x33, 4096, stream), 0);
    let first = Note::leak(&SEEN, "host function");
    assert_eq!(cuLaunchHostFunc(stream, Some(note_host_function), first), 0);
    let second = Note::leak(&SEEN, "callback");
    assert_eq!(
        cuStreamAddCallback(stream, Some(note_callback), second, 0),
        0
    );
    std::thread::sleep(std::time::Duration::from_millis(20));
    assert!(SEEN.lock().unwrap().is_empty(), "held behind the gate");
    assert_eq!(cuStreamQuery(stream), NOT_READY);
    gate.open();
    assert_eq!(cuStreamSynchronize(stream), 0);
    let seen = SEEN.lock().unwrap().clone();
    let labels: Vec<_> = seen.iter().map(|s| (s.0, s.2)).collect();
    assert_eq!(labels, [("host function", u32::MAX), ("callback", 0)]);
    let me = std::thread::current().id();
    assert!(seen.iter().all(|s| s.1 == seen[0].1 && s.1 != me));
    assert_eq!(
        read_back(device, 4096),
        vec![0x33; 4096],
        "the memset ran first"
    );

    assert_eq!(cuLaunchHostFunc(stream, None, first), INVALID_VALUE);
    assert_eq!(cuStreamAddCallback(stream, None, second, 0), INVALID_VALUE);
    assert_eq!(
        cuStreamAddCallback(stream, Some(note_callback), second, 1),
        INVALID_VALUE,
        "flags must be 0"
    );
    assert_eq!(cuStreamDestroy_v2(stream), 0);
    assert_eq!(
        cuLaunchHostFunc(stream, Some(note_host_function), first),
        INVALID_HANDLE
    );
    assert_eq!(
        cuStreamAddCallback(stream, Some(note_callback), second, 0),
        INVALID_HANDLE
    );
    assert_eq!(cuMemFree_v2(device), 0);
    std::thread::spawn(|| {
        let null = std::ptr::null_mut();
        assert_eq!(
            cuLaunchHostFunc(0, Some(note_host_function), null),
            INVALID_CONTEXT
        );
    })
    .join()
    .unwrap();
}

/// `cuEventQuery`: `CUDA_SUCCESS` for an event never recorded or whose latest record the
/// stream reached, `CUDA_ERROR_NOT_READY` before; a destroyed event is an invalid handle.
#[test]
fn an_event_query_says_whether_the_stream_reached_the_latest_record() {
    with_context();
    let gate = Box::leak(Box::default()) as &'static Gate;
    let (mut stream, mut event) = (0usize, 0usize);
    assert_eq!(cuStreamCreate(&mut stream, 1), 0);
    assert_eq!(cuEventCreate(&mut event, 2), 0);
    assert_eq!(cuEventQuery(event), 0, "never recorded");
    assert_eq!(cuEventRecord(event, stream), 0);
    assert_eq!(cuEventSynchronize(event), 0);
    assert_eq!(cuEventQuery(event), 0);
    assert_eq!(
        cuLaunchHostFunc(stream, Some(wait_at_gate), gate.as_data()),
        0
    );
    assert_eq!(cuEventRecord(event, stream), 0);
    assert_eq!(cuEventQuery(event), NOT_READY);
    gate.open();
    assert_eq!(cuEventSynchronize(event), 0);
    assert_eq!(cuEventQuery(event), 0);
    assert_eq!(cuEventQuery(stream), INVALID_HANDLE, "a stream");
    assert_eq!(cuEventDestroy_v2(event), 0);
    assert_eq!(cuEventQuery(event), INVALID_HANDLE);
    assert_eq!(cuStreamDestroy_v2(stream), 0);
}

/// The saxpy kernel's function handle, in a module of its own.
fn saxpy_function() -> (usize, usize) {
    with_context();
    let (bytes, kernel) = cubin();
    let module = load(bytes).unwrap();
    let name = CString::new(kernel.as_str()).unwrap();
    let mut function = 0usize;
    assert_eq!(cuModuleGetFunction(&mut function, module, name.as_ptr()), 0);
    (module, function)
}

/// Launches `function` with a zeroed parameter buffer of `size` bytes (see `launch`).
fn launch_with_buffer(function: usize, size: usize) -> u32 {
    let mut params = vec![0u8; size.max(1)];
    let mut size = size;
    #[allow(clippy::manual_dangling_ptr)]
    let mut extra: [*mut c_void; 5] = [
        1usize as *mut c_void,
        params.as_mut_ptr().cast(),
        2usize as *mut c_void,
        (&mut size as *mut usize).cast(),
        std::ptr::null_mut(),
    ];
    // SAFETY: the parameter buffer and its size outlive the call.
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
            0,
            std::ptr::null_mut(),
            extra.as_mut_ptr(),
        )
    }
}

/// `cuFuncGetParamInfo`, as LLVM 22's plugin walks it to size a kernel's parameter buffer:
/// each parameter's offset and size in the layout the cubin records (an OpenMP kernel's are
/// 8-byte values, one after the other), `INVALID_VALUE` past the last; a buffer of exactly the
/// size found passes the launch's check, one byte less does not.
#[test]
fn parameter_info_walks_the_kernels_parameter_layout() {
    let (module, function) = saxpy_function();
    let mut layout = Vec::new();
    loop {
        let (mut offset, mut size) = (usize::MAX, usize::MAX);
        match cuFuncGetParamInfo(function, layout.len(), &mut offset, &mut size) {
            0 => layout.push((offset, size)),
            INVALID_VALUE => break,
            other => panic!("cuFuncGetParamInfo: {other}"),
        }
    }
    assert!(!layout.is_empty());
    for (i, &(offset, size)) in layout.iter().enumerate() {
        assert_eq!((offset, size), (8 * i, 8), "{layout:?}");
    }
    let mut offset = 0usize;
    assert_eq!(
        cuFuncGetParamInfo(function, 0, &mut offset, std::ptr::null_mut()),
        0,
        "the size is optional"
    );
    assert_eq!(
        cuFuncGetParamInfo(function, 0, std::ptr::null_mut(), &mut 0),
        INVALID_VALUE,
        "the offset is not"
    );
    let end = layout.last().map(|&(o, s)| o + s).unwrap();
    // Past the parameter checks; this process has no twin of the kernel.
    assert_eq!(launch_with_buffer(function, end), NOT_SUPPORTED);
    assert_eq!(launch_with_buffer(function, end - 1), INVALID_VALUE);
    assert_eq!(cuModuleUnload(module), 0);
    assert_eq!(
        cuFuncGetParamInfo(function, 0, &mut offset, &mut 0),
        INVALID_HANDLE
    );
}

/// Dynamic shared memory of 512 bytes per thread (a `CUoccupancyB2DSize`).
unsafe extern "C" fn shared_per_thread(block: c_int) -> usize {
    block as usize * 512
}

/// `cuOccupancyMaxPotentialBlockSize` from the emulated H100's limits (2048 threads, 32 blocks
/// and 228 KiB of shared memory per multiprocessor, 1 KiB of it reserved per block, 132
/// multiprocessors), as CUDA's occupancy calculator answers: the block size, within the
/// kernel's limit and the caller's, that keeps the most threads resident (the largest that
/// fills a multiprocessor), with the kernel's dynamic shared memory allowance; and the grid
/// that fills the device with it.
#[test]
fn occupancy_answers_from_the_devices_limits() {
    let (module, function) = saxpy_function();
    let (mut max_threads, mut static_shared) = (0, 0);
    assert_eq!(cuFuncGetAttribute(&mut max_threads, 0, function), 0);
    assert_eq!(cuFuncGetAttribute(&mut static_shared, 1, function), 0);
    assert_eq!(
        (max_threads, static_shared),
        (128, 0),
        "the sums below are for this kernel"
    );
    let occupancy = |shared: usize, limit: c_int, callback| {
        let (mut grid, mut block) = (-1, -1);
        let code = cuOccupancyMaxPotentialBlockSize(
            &mut grid, &mut block, function, callback, shared, limit,
        );
        assert_eq!(code, 0);
        (grid, block)
    };
    assert_eq!(occupancy(0, 0, None), (16 * 132, 128), "16 blocks of 128");
    assert_eq!(occupancy(0, i32::MAX, None), (16 * 132, 128));
    // 96 threads: 21 blocks, 2016 threads; 64 threads: 32 blocks (all slots), 2048 threads.
    assert_eq!(occupancy(0, 96, None), (32 * 132, 64));
    assert_eq!(
        occupancy(100 * 1024, 0, None),
        (0, 0),
        "over the 48 KiB allowed without opting in"
    );
    // 512 bytes a thread: 128 threads would need 64 KiB, over the allowance; 96 threads: 4
    // blocks of 49 KiB (384 threads); 64: 6 blocks of 33 KiB (384, no better); 32: 13 blocks
    // of 17 KiB (416 threads).
    let per_thread = Some(shared_per_thread as unsafe extern "C" fn(c_int) -> usize);
    assert_eq!(occupancy(0, 0, per_thread), (13 * 132, 32));
    assert_eq!(cuFuncSetAttribute(function, 8, 100 * 1024), 0);
    assert_eq!(
        occupancy(100 * 1024, 0, None),
        (2 * 132, 128),
        "opted in: two blocks of 101 KiB fit"
    );
    let (mut grid, mut block) = (0, 0);
    let null = std::ptr::null_mut();
    assert_eq!(
        cuOccupancyMaxPotentialBlockSize(null, &mut block, function, None, 0, 0),
        INVALID_VALUE
    );
    assert_eq!(
        cuOccupancyMaxPotentialBlockSize(&mut grid, &mut block, function, None, 0, -1),
        INVALID_VALUE,
        "a negative limit"
    );
    assert_eq!(cuModuleUnload(module), 0);
    assert_eq!(
        cuOccupancyMaxPotentialBlockSize(&mut grid, &mut block, function, None, 0, 0),
        INVALID_HANDLE
    );
}

/// `cuMemsetD2D{8,16,32}Async`: `height` rows of `width` elements, `pitch` bytes apart, as LLVM
/// 22's plugin fills memory with an 8-byte pattern (two 4-byte columns, the pattern's size as
/// the pitch). The start and the pitch aligned to the element, the pitch at least a row (unused
/// for one row), every row inside one allocation; else `INVALID_VALUE`, nothing written.
#[test]
fn two_dimensional_memsets_set_rows_a_pitch_apart() {
    with_context();
    let size = 4096;
    let a = allocate(size);
    let mut stream = 0usize;
    assert_eq!(cuStreamCreate(&mut stream, 1), 0);
    assert_eq!(cuMemsetD8Async(a, 0, size, stream), 0);
    // The pattern 0x1111111122222222 over the first 64 bytes.
    let pattern = 0x1111_1111_2222_2222u64;
    assert_eq!(cuMemsetD2D32Async(a, 8, pattern as u32, 1, 8, stream), 0);
    assert_eq!(
        cuMemsetD2D32Async(a + 4, 8, (pattern >> 32) as u32, 1, 8, stream),
        0
    );
    // Three 16-bit elements per row, rows 10 bytes apart, from byte 100.
    assert_eq!(cuMemsetD2D16Async(a + 100, 10, 0xbeef, 3, 4, stream), 0);
    // One row: the pitch is not used.
    assert_eq!(cuMemsetD2D8Async(a + 200, 0, 0x5a, 5, 1, stream), 0);
    assert_eq!(
        cuMemsetD2D32Async(a, 3, 0, 0, 5, stream),
        INVALID_VALUE,
        "pitch"
    );
    assert_eq!(cuStreamSynchronize(stream), 0);
    // On the legacy stream, which a non-blocking stream does not wait for: after the sync.
    assert_eq!(
        cuMemsetD2D8Async(a + 300, 3, 0x77, 2, 3, 0),
        0,
        "legacy stream"
    );
    let mut expected = vec![0u8; size];
    for word in expected[..64].chunks_mut(8) {
        word.copy_from_slice(&pattern.to_le_bytes());
    }
    for row in 0..4 {
        let at = 100 + 10 * row;
        expected[at..at + 6].copy_from_slice(&[0xef, 0xbe, 0xef, 0xbe, 0xef, 0xbe]);
    }
    expected[200..205].fill(0x5a);
    for row in 0..3 {
        expected[300 + 3 * row..302 + 3 * row].fill(0x77);
    }
    assert!(read_back(a, size) == expected, "rows as set");

    let refused = [
        (cuMemsetD2D16Async(a + 1, 2, 0, 1, 2, stream), "odd start"),
        (
            cuMemsetD2D32Async(a, 6, 0, 1, 2, stream),
            "pitch not 4-aligned",
        ),
        (
            cuMemsetD2D16Async(a, 4, 0, 3, 2, stream),
            "pitch under a row",
        ),
        (
            cuMemsetD2D32Async(a, 1024, 0, 4, 5, stream),
            "the last row past the end",
        ),
        (
            cuMemsetD2D8Async(a, usize::MAX / 2, 0, 1, 3, stream),
            "rows past the address space",
        ),
    ];
    for (code, why) in refused {
        assert_eq!(code, INVALID_VALUE, "{why}");
    }
    assert_eq!(cuMemsetD2D8Async(a, 1, 0, 0, 9, stream), 0, "no elements");
    assert_eq!(cuMemsetD2D8Async(a, 1, 0, 9, 0, stream), 0, "no rows");
    assert_eq!(cuStreamSynchronize(stream), 0);
    assert!(
        read_back(a, size) == expected,
        "refused calls wrote nothing"
    );
    assert_eq!(cuStreamDestroy_v2(stream), 0);
    assert_eq!(
        cuMemsetD2D8Async(a, 1, 0, 1, 1, stream),
        INVALID_HANDLE,
        "a destroyed stream"
    );
    assert_eq!(cuMemFree_v2(a), 0);
    assert_eq!(cuMemsetD2D8Async(a, 1, 0, 1, 1, 0), INVALID_VALUE, "freed");
}

/// Pinned device memory of device `device` (a `CUmemAllocationProp`).
fn pinned_on(device: c_int) -> AllocationProp {
    AllocationProp {
        kind: 1,
        requested_handle_types: 0,
        location: Location {
            kind: 1,
            id: device,
        },
        win32_handle_metadata: std::ptr::null_mut(),
        alloc_flags: [0; 8],
    }
}

fn read_write_on(device: c_int) -> AccessDesc {
    AccessDesc {
        location: Location {
            kind: 1,
            id: device,
        },
        flags: 3,
    }
}

/// The virtual memory management calls, as LLVM's plugin uses them for record and replay:
/// granularity, a reservation, physical memory, a mapping, access; then the range is device
/// memory (copies, memsets) until unmapped; then released and freed. With the driver's checks
/// on granules, ranges, whole mappings and handles.
#[test]
fn virtual_memory_is_reserved_mapped_granted_and_given_back() {
    with_context();
    let prop = pinned_on(0);
    let mut granule = 0usize;
    assert_eq!(cuMemGetAllocationGranularity(&mut granule, &prop, 0), 0);
    assert_eq!(granule, 2 << 20);
    assert_eq!(cuMemGetAllocationGranularity(&mut granule, &prop, 1), 0);
    assert_eq!(
        cuMemGetAllocationGranularity(&mut granule, &prop, 2),
        INVALID_VALUE
    );
    assert_eq!(
        cuMemGetAllocationGranularity(&mut granule, &pinned_on(7), 0),
        INVALID_DEVICE
    );

    let mut base = 0u64;
    assert_eq!(cuMemAddressReserve(&mut base, 3 * granule, 0, 0, 0), 0);
    assert_eq!(base % granule as u64, 0);
    assert_eq!(
        cuMemAddressReserve(&mut 0, granule + 1, 0, 0, 0),
        INVALID_VALUE,
        "not whole granules"
    );
    let mut handle = 0u64;
    assert_eq!(cuMemCreate(&mut handle, 2 * granule, &prop, 0), 0);
    assert_eq!(cuMemCreate(&mut 0, granule / 2, &prop, 0), INVALID_VALUE);
    assert_eq!(
        cuMemCreate(&mut 0, 5 << 30, &prop, 0),
        OUT_OF_MEMORY,
        "over the device's 4 GiB"
    );
    let mut shareable = prop;
    shareable.requested_handle_types = 1;
    assert_eq!(cuMemCreate(&mut 0, granule, &shareable, 0), NOT_SUPPORTED);

    let at = base + granule as u64;
    assert_eq!(
        cuMemMap(base + 2 * granule as u64, 2 * granule, 0, handle, 0),
        INVALID_VALUE,
        "past the reservation"
    );
    assert_eq!(
        cuMemMap(at, 2 * granule, granule, handle, 0),
        INVALID_VALUE,
        "offset"
    );
    assert_eq!(cuMemMap(at, 2 * granule, 0, 7, 0), INVALID_VALUE, "handle");
    assert_eq!(cuMemMap(at, 2 * granule, 0, handle, 0), 0);
    assert_eq!(
        cuMemMap(base, 2 * granule, 0, handle, 0),
        INVALID_VALUE,
        "overlap"
    );
    let mut data = vec![9u8; 64];
    assert_eq!(
        cuMemcpyHtoD_v2(at, data.as_ptr().cast(), 64),
        INVALID_VALUE,
        "mapped, not yet accessible"
    );
    let access = read_write_on(0);
    assert_eq!(
        cuMemSetAccess(at, granule, &access, 1),
        INVALID_VALUE,
        "part of a mapping"
    );
    assert_eq!(
        cuMemSetAccess(base, 3 * granule, &access, 1),
        INVALID_VALUE,
        "unmapped part"
    );
    let mut read_only = access;
    read_only.flags = 1;
    assert_eq!(
        cuMemSetAccess(at, 2 * granule, &read_only, 1),
        NOT_SUPPORTED
    );
    assert_eq!(cuMemSetAccess(at, 2 * granule, &access, 1), 0);

    let end = at + 2 * granule as u64;
    assert_eq!(cuMemcpyHtoD_v2(end - 64, data.as_ptr().cast(), 64), 0);
    assert_eq!(cuMemsetD32_v2(at, 0x0102_0304, 4), 0);
    assert_eq!(read_back(end - 64, 64), data);
    assert_eq!(read_back(at, 8), [4, 3, 2, 1, 4, 3, 2, 1]);
    assert_eq!(cuMemFree_v2(at), INVALID_VALUE, "not cuMemAlloc's");
    assert_eq!(
        cuMemAddressFree(base, 3 * granule),
        INVALID_VALUE,
        "still mapped"
    );

    assert_eq!(cuMemRelease(handle), 0, "the mapping keeps the memory");
    assert_eq!(read_back(at, 4), [4, 3, 2, 1]);
    assert_eq!(cuMemRelease(handle), INVALID_VALUE);
    assert_eq!(cuMemUnmap(at, granule), INVALID_VALUE, "part of a mapping");
    assert_eq!(cuMemUnmap(at, 2 * granule), 0);
    assert_eq!(
        cuMemcpyDtoH_v2(data.as_mut_ptr().cast(), at, 64),
        INVALID_VALUE,
        "unmapped"
    );
    assert_eq!(cuMemUnmap(at, 2 * granule), INVALID_VALUE);
    assert_eq!(
        cuMemAddressFree(base, 2 * granule),
        INVALID_VALUE,
        "not the whole"
    );
    assert_eq!(cuMemAddressFree(base, 3 * granule), 0);
    assert_eq!(cuMemAddressFree(base, 3 * granule), INVALID_VALUE);
}

/// Runs test `test` alone again in a child process marked by `child`, with `env`; answers its
/// output.
fn rerun(test: &str, child: &str, env: &[(&str, &str)]) -> std::process::Output {
    std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", test, "--nocapture"])
        .env(child, "1")
        .envs(env.iter().copied())
        .output()
        .unwrap()
}

const CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: c_int = 16;
const CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: c_int = 75;
const CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: c_int = 76;
/// What a coherent node answers with 1, an H100 on x86-64 with 0: host native atomics (86),
/// pageable memory access (88), through the host's page tables (100), managed memory read
/// in place by the host (101), host pointers for registered memory (91).
const COHERENT: [c_int; 5] = [86, 88, 100, 101, 91];
const CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS: c_int = 89;

fn attribute(attribute: c_int) -> c_int {
    let mut value = -1;
    assert_eq!(cuDeviceGetAttribute(&mut value, attribute, 0), 0);
    value
}

fn device_name() -> String {
    let mut name = [0 as std::ffi::c_char; 128];
    assert_eq!(
        cuDeviceGetName(name.as_mut_ptr(), name.len() as c_int, 0),
        0
    );
    // SAFETY: the driver wrote a NUL-terminated name into the buffer.
    unsafe { std::ffi::CStr::from_ptr(name.as_ptr()) }
        .to_string_lossy()
        .into_owned()
}

const PROFILE_CHILD: &str = "OMPTARGET_TEST_EMU_CUDA_PROFILE_CHILD";

/// `OMPTARGET_EMU_PROFILE=gh200` (read once per process, so in child processes) presents a
/// Grace Hopper node: the same sm_90 GPU with 132 SMs, whose attributes say it reaches the
/// host's pageable memory through the host's page tables. An unknown profile is one line on
/// stderr and the default H100, which this process, without the setting, also shows.
#[test]
fn a_gh200_profile_reports_a_coherent_node_and_an_unknown_one_the_h100() {
    const TEST: &str = "a_gh200_profile_reports_a_coherent_node_and_an_unknown_one_the_h100";
    assert_eq!(cuInit(0), 0);
    let profile = std::env::var("OMPTARGET_EMU_PROFILE").ok();
    let gh200 = profile.as_deref() == Some("gh200");
    let name = device_name();
    assert!(name.contains("not hardware"), "{name}");
    assert_eq!(attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT), 132);
    assert_eq!(attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR), 9);
    assert_eq!(attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR), 0);
    assert_eq!(attribute(CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS), 1);
    let mut total = 0usize;
    assert_eq!(cuDeviceTotalMem_v2(&mut total, 0), 0);
    println!("device memory: {total}");
    if gh200 {
        assert!(name.contains("GH200"), "{name}");
        for number in COHERENT {
            assert_eq!(attribute(number), 1, "attribute {number}");
        }
        return;
    }
    assert!(name.contains("H100"), "{name}");
    for number in COHERENT {
        assert_eq!(attribute(number), 0, "attribute {number}");
    }
    if std::env::var_os(PROFILE_CHILD).is_some() {
        return;
    }
    let memory_line = |out: &std::process::Output| {
        tests::text(&out.stdout)
            .lines()
            .find(|l| l.starts_with("device memory: "))
            .map(str::to_owned)
    };
    let own = Some(format!("device memory: {total}"));
    for setting in ["gh200", "no-such-node"] {
        let out = rerun(TEST, PROFILE_CHILD, &[("OMPTARGET_EMU_PROFILE", setting)]);
        let (stdout, stderr) = (tests::text(&out.stdout), tests::text(&out.stderr));
        assert!(
            out.status.success() && stdout.contains("1 passed"),
            "{setting}: {stdout}{stderr}"
        );
        assert_eq!(
            memory_line(&out),
            own,
            "the same memory size on both profiles"
        );
        let complaints = stderr
            .lines()
            .filter(|l| l.contains("OMPTARGET_EMU_PROFILE=no-such-node"))
            .count();
        assert_eq!(
            complaints,
            usize::from(setting == "no-such-node"),
            "{stderr}"
        );
    }
}

const PAGEABLE_CHILD: &str = "OMPTARGET_TEST_EMU_CUDA_PAGEABLE_CHILD";
const ILLEGAL_ADDRESS: u32 = 700;

/// A kernel given pageable host memory (here a heap array, as a program that requires
/// unified_shared_memory passes one): on `OMPTARGET_EMU_PROFILE=h100` it faults as on an H100
/// without HMM, its stream getting `CUDA_ERROR_ILLEGAL_ADDRESS` (a `kernel-fault` trace line
/// says so); on `gh200` it runs and writes the host's memory, stack and heap alike. On both, a
/// value under device memory (where the base pointer of a mapped section of device memory
/// lies) is no host memory: a device array with such a value beside it runs.
#[test]
fn pageable_host_memory_faults_a_kernel_on_the_h100_and_is_reached_on_a_gh200() {
    const TEST: &str = "pageable_host_memory_faults_a_kernel_on_the_h100_and_is_reached_on_a_gh200";
    let exe = tests::compile_cuda_twin("emu_params.c");
    let trace = tests::build_dir().join("emu-cuda-pageable-trace.txt");
    let mut in_child = false;
    for profile in ["h100", "gh200"] {
        let _ = std::fs::remove_file(&trace);
        let env = [
            ("OMPTARGET_EMU_PROFILE", profile.to_string()),
            ("OMPTARGET_EMU_TRACE", trace.display().to_string()),
        ];
        in_child = tests::emulated::in_child_with_twins(TEST, PAGEABLE_CHILD, &exe, &env);
        if in_child {
            break;
        }
        let trace = std::fs::read_to_string(&trace).unwrap();
        let faults: Vec<&str> = trace
            .lines()
            .filter(|l| l.starts_with("kernel-fault "))
            .collect();
        if profile == "h100" {
            assert!(
                faults.len() == 1
                    && faults[0].contains("pageable-host-memory")
                    && faults[0].ends_with("CUDA_ERROR_ILLEGAL_ADDRESS"),
                "{trace}"
            );
        } else {
            assert!(faults.is_empty(), "{trace}");
        }
    }
    if !in_child {
        return;
    }
    let gh200 = std::env::var("OMPTARGET_EMU_PROFILE").as_deref() == Ok("gh200");
    with_context();
    let (cubin, kernel) = tests::emulated::cuda_image_and_kernel(&exe);
    let module = load(&cubin).unwrap();
    let name = CString::new(kernel).unwrap();
    let mut function = 0usize;
    assert_eq!(cuModuleGetFunction(&mut function, module, name.as_ptr()), 0);
    let mut stream = 0usize;
    assert_eq!(cuStreamCreate(&mut stream, 1), 0);
    // The kernel's parameters: the launch environment, which the twin does not read, and the
    // array it writes 7, 14, 21, 28 into.
    let run = |environment: u64, array: u64| {
        let (mut environment, mut array) = (environment, array);
        let mut params: [*mut c_void; 2] = [
            (&mut environment as *mut u64).cast(),
            (&mut array as *mut u64).cast(),
        ];
        // SAFETY: the parameter pointers outlive the call (the values are copied at launch).
        let launched = unsafe {
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
        };
        assert_eq!(launched, 0, "the launch itself succeeds");
        cuStreamSynchronize(stream)
    };
    let written = [7, 14, 21, 28];

    let device = allocate(16);
    assert_eq!(run(device - 0x10_0000, device), 0);
    let mut back = [0i32; 4];
    assert_eq!(cuMemcpyDtoH_v2(back.as_mut_ptr().cast(), device, 16), 0);
    assert_eq!(back, written);

    let heap = vec![0i32; 4];
    if gh200 {
        assert_eq!(run(0, heap.as_ptr() as u64), 0);
        assert_eq!(heap, written, "the kernel wrote the host's heap");
        let stack = [0i32; 4];
        assert_eq!(run(0, stack.as_ptr() as u64), 0);
        // SAFETY: the kernel wrote the array before the synchronisation returned.
        assert_eq!(unsafe { std::ptr::read_volatile(&stack) }, written);
    } else {
        assert_eq!(run(0, heap.as_ptr() as u64), ILLEGAL_ADDRESS);
        assert_eq!(heap, [0; 4], "the kernel did not run");
        assert_eq!(
            cuMemcpyDtoH_v2(back.as_mut_ptr().cast(), device, 16),
            ILLEGAL_ADDRESS,
            "sticky"
        );
    }
}
