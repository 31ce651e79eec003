//! Before cuInit, the emulated CUDA driver answers CUDA_ERROR_NOT_INITIALIZED (its own process:
//! the other driver tests initialise it).

#[test]
fn calls_before_cu_init_are_refused() {
    let mut count = 0;
    assert_eq!(omptarget_emu_cuda::cuDeviceGetCount(&mut count), 3);
    let mut version = 0;
    assert_eq!(omptarget_emu_cuda::cuDriverGetVersion(&mut version), 0);
    assert_eq!(omptarget_emu_cuda::cuInit(0), 0);
    assert_eq!(omptarget_emu_cuda::cuDeviceGetCount(&mut count), 0);
    assert_eq!(count, 1);
}
