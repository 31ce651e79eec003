// A test double for the NVIDIA driver: built as a `libcuda.so.1` that the CUDA plugin finds
// on LD_LIBRARY_PATH. It has no GPU behind it; it lets the tests drive the plugin's start-up
// paths that need a driver:
//   FAKE_CUDA_INIT=<code>   what cuInit returns (default 0, success)
//   FAKE_CUDA_DEVICES=<n>   what cuDeviceGetCount reports (default 0)
// Built with -DFAKE_CUDA_OLD_DRIVER it lacks cuMemcpyPeerAsync, like a driver too old for
// the plugin. Every other entry point fails with CUDA_ERROR_NOT_INITIALIZED (3).
#include <stdlib.h>

typedef int CUresult;

static int env_int(const char *name, int fallback) {
    const char *v = getenv(name);
    return v ? atoi(v) : fallback;
}

CUresult cuInit(unsigned flags) { (void)flags; return env_int("FAKE_CUDA_INIT", 0); }
CUresult cuDriverGetVersion(int *v) { *v = 12020; return 0; }
CUresult cuDeviceGetCount(int *n) { *n = env_int("FAKE_CUDA_DEVICES", 0); return 0; }

CUresult cuGetErrorName(CUresult code, const char **name) {
    switch (code) {
    case 3: *name = "CUDA_ERROR_NOT_INITIALIZED"; return 0;
    case 100: *name = "CUDA_ERROR_NO_DEVICE"; return 0;
    case 999: *name = "CUDA_ERROR_UNKNOWN"; return 0;
    default: *name = 0; return 1;
    }
}
CUresult cuGetErrorString(CUresult code, const char **text) { return cuGetErrorName(code, text); }

#define FAILS(name) CUresult name(void) { return 3; }
FAILS(cuDeviceGet) FAILS(cuDeviceGetName) FAILS(cuDeviceGetAttribute) FAILS(cuDeviceTotalMem_v2)
FAILS(cuDeviceCanAccessPeer) FAILS(cuDevicePrimaryCtxGetState) FAILS(cuDevicePrimaryCtxSetFlags_v2)
FAILS(cuDevicePrimaryCtxRetain) FAILS(cuDevicePrimaryCtxRelease_v2) FAILS(cuCtxSetCurrent)
FAILS(cuCtxGetLimit) FAILS(cuCtxSetLimit) FAILS(cuCtxEnablePeerAccess) FAILS(cuMemGetInfo_v2)
FAILS(cuModuleLoadData) FAILS(cuModuleUnload) FAILS(cuModuleGetFunction) FAILS(cuModuleGetGlobal_v2)
FAILS(cuFuncGetAttribute) FAILS(cuLaunchKernel) FAILS(cuMemAlloc_v2) FAILS(cuMemFree_v2)
FAILS(cuMemAllocHost_v2) FAILS(cuMemFreeHost) FAILS(cuMemAllocManaged) FAILS(cuMemHostRegister_v2)
FAILS(cuMemHostUnregister) FAILS(cuMemcpyHtoDAsync_v2) FAILS(cuMemcpyDtoHAsync_v2)
FAILS(cuMemcpyDtoDAsync_v2) FAILS(cuStreamCreate) FAILS(cuStreamDestroy_v2)
FAILS(cuStreamSynchronize) FAILS(cuStreamQuery) FAILS(cuStreamWaitEvent) FAILS(cuEventCreate)
FAILS(cuEventRecord) FAILS(cuEventSynchronize) FAILS(cuEventDestroy_v2)
FAILS(cuMemHostGetDevicePointer_v2)
#ifndef FAKE_CUDA_OLD_DRIVER
FAILS(cuMemcpyPeerAsync)
#endif
