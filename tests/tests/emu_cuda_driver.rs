//! The emulated CUDA driver's rules, one by one, called in-process as a plugin would call the
//! driver: each is a rule of the real driver that a plugin bug would break (the codes are the
//! driver's). Modules use the sm_90 cubin of a real clang-19 program.

use omptarget_emu_cuda::*;
use std::ffi::{c_void, CString};
use std::sync::OnceLock;

const INVALID_VALUE: u32 = 1;
const OUT_OF_MEMORY: u32 = 2;
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
/// line of the trace with its element count and bytes.
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
    assert_eq!(cuStreamDestroy_v2(stream), 0);
    assert_eq!(cuMemFreeHost(pinned), 0);
    assert_eq!(cuMemFree_v2(device), 0);
}
