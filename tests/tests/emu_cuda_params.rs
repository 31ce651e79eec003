//! The emulated CUDA driver's `kernelParams` launch path (one pointer per parameter, laid out
//! by the cubin's parameter records), which neither our CUDA plugin nor LLVM's uses (both pass
//! a packed `extra` buffer): a kernel launched by hand with it runs with those values. The test
//! runs itself again with the settings the driver reads when it loads: the program's file for
//! the kernels' twins, and the runtime the twin image needs on the loader's path.

use omptarget_emu_cuda::*;
use std::ffi::{c_void, CString};

const INVALID_VALUE: u32 = 1;

const CHILD: &str = "OMPTARGET_TEST_EMU_PARAMS_CHILD";

#[test]
fn a_launch_with_kernel_params_runs_the_kernel_with_those_values() {
    let exe = tests::compile_cuda_twin("emu_params.c");
    if !tests::emulated::in_child_with_twins(
        "a_launch_with_kernel_params_runs_the_kernel_with_those_values",
        CHILD,
        &exe,
        &[],
    ) {
        return;
    }
    assert_eq!(cuInit(0), 0);
    let mut context = 0usize;
    assert_eq!(cuDevicePrimaryCtxRetain(&mut context, 0), 0);
    assert_eq!(cuCtxSetCurrent(context), 0);

    let (cubin, kernel) = tests::emulated::cuda_image_and_kernel(&exe);
    let mut module = 0usize;
    assert_eq!(cuModuleLoadData(&mut module, cubin.as_ptr().cast()), 0);
    let name = CString::new(kernel).unwrap();
    let mut function = 0usize;
    assert_eq!(cuModuleGetFunction(&mut function, module, name.as_ptr()), 0);

    let mut array = 0u64;
    assert_eq!(cuMemAlloc_v2(&mut array, 16), 0);
    let zeros = [0i32; 4];
    assert_eq!(cuMemcpyHtoD_v2(array, zeros.as_ptr().cast(), 16), 0);
    let mut stream = 0usize;
    assert_eq!(cuStreamCreate(&mut stream, 0), 0);
    // The kernel's parameters: the launch environment (a host kernel reads none: null, as
    // the host plugin passes) and the array.
    let mut environment = 0u64;
    let mut params: [*mut c_void; 2] = [
        (&mut environment as *mut u64).cast(),
        (&mut array as *mut u64).cast(),
    ];
    let launch = |params: *mut *mut c_void, extra: *mut *mut c_void| {
        // SAFETY: the parameter pointers outlive the call (the values are copied at launch).
        unsafe { cuLaunchKernel(function, 1, 1, 1, 1, 1, 1, 0, stream, params, extra) }
    };
    assert_eq!(launch(params.as_mut_ptr(), std::ptr::null_mut()), 0);
    assert_eq!(cuStreamSynchronize(stream), 0);
    let mut values = [0i32; 4];
    assert_eq!(cuMemcpyDtoH_v2(values.as_mut_ptr().cast(), array, 16), 0);
    assert_eq!(values, [7, 14, 21, 28]);

    // The driver's rules for the parameter pointers.
    let mut null_param: [*mut c_void; 2] = [params[0], std::ptr::null_mut()];
    assert_eq!(
        launch(null_param.as_mut_ptr(), std::ptr::null_mut()),
        INVALID_VALUE
    );
    let mut end = [std::ptr::null_mut::<c_void>()];
    assert_eq!(
        launch(params.as_mut_ptr(), end.as_mut_ptr()),
        INVALID_VALUE,
        "kernelParams and extra together"
    );
    assert_eq!(cuStreamDestroy_v2(stream), 0);
    assert_eq!(cuMemFree_v2(array), 0);
    assert_eq!(cuModuleUnload(module), 0);
}
