// Asks the CUDA driver the questions the emulated driver (emu-cuda) answers by a rule of its
// own, so that a real GPU can confirm or refute each rule: what a thread that never made a
// context current gets from calls on a stream and a function of the device's primary context.
// LLVM's CUDA plugin launches from such threads (its launch never makes the context current),
// and the emulator refuses those launches (INVALID_CONTEXT): whether the real driver does too
// decides whether LLVM's failures there are LLVM's or the emulator's.
//
//   driver_rules [CUBIN]      driver_rules --ptx
//
// Loads an empty kernel (`empty`) from CUBIN, else JIT-compiles it from its PTX (which `--ptx`
// prints, for ptxas: the emulator reads cubins only), then prints one line per question,
// `rule <call>_<thread> <result>`, where the thread is `no_context` (a new thread that never
// set one) or `current` (the thread that made the primary context current), and the result the
// driver's error name. Exit status: 0 when every question got an answer, 1 when the setup
// failed, 2 without a driver.
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DRIVER_API(X)                                                                            \
  X(cuInit, "cuInit", (unsigned))                                                                \
  X(cuGetErrorName, "cuGetErrorName", (CUresult, const char **))                                 \
  X(cuDeviceGet, "cuDeviceGet", (CUdevice *, int))                                               \
  X(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", (CUcontext *, CUdevice))               \
  X(cuCtxSetCurrent, "cuCtxSetCurrent", (CUcontext))                                             \
  X(cuStreamCreate, "cuStreamCreate", (CUstream *, unsigned))                                    \
  X(cuStreamSynchronize, "cuStreamSynchronize", (CUstream))                                      \
  X(cuStreamQuery, "cuStreamQuery", (CUstream))                                                  \
  X(cuModuleLoadData, "cuModuleLoadData", (CUmodule *, const void *))                            \
  X(cuModuleGetFunction, "cuModuleGetFunction", (CUfunction *, CUmodule, const char *))          \
  X(cuLaunchKernel, "cuLaunchKernel",                                                            \
    (CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream, \
     void **, void **))                                                                          \
  X(cuLaunchHostFunc, "cuLaunchHostFunc", (CUstream, CUhostFn, void *))                          \
  X(cuMemAlloc, "cuMemAlloc_v2", (CUdeviceptr *, size_t))                                        \
  X(cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2", (CUdeviceptr, const void *, size_t, CUstream))

#include "cuda_driver.h"

static CUfunction empty;
static CUstream stream;
static CUdeviceptr scalar;

static void nothing(void *unused) { (void)unused; }

// The same calls on the primary context's stream, from the calling thread, named by `thread`.
static void *ask(void *thread) {
  static int value;
  printf("rule launch_%s %s\n", (const char *)thread,
         error_name(cuLaunchKernel(empty, 1, 1, 1, 1, 1, 1, 0, stream, NULL, NULL)));
  printf("rule copy_to_device_%s %s\n", (const char *)thread,
         error_name(cuMemcpyHtoDAsync(scalar, &value, sizeof value, stream)));
  printf("rule host_function_%s %s\n", (const char *)thread,
         error_name(cuLaunchHostFunc(stream, nothing, NULL)));
  printf("rule stream_synchronize_%s %s\n", (const char *)thread,
         error_name(cuStreamSynchronize(stream)));
  printf("rule stream_query_%s %s\n", (const char *)thread, error_name(cuStreamQuery(stream)));
  fflush(stdout);
  return NULL;
}

static void *read_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  rewind(f);
  char *bytes = size > 0 ? malloc(size) : NULL;
  if (bytes && fread(bytes, 1, size, f) != (size_t)size) {
    free(bytes);
    bytes = NULL;
  }
  fclose(f);
  return bytes;
}

#define SETUP(call)                                                                              \
  do {                                                                                           \
    CUresult r_ = (call);                                                                        \
    if (r_ != 0) {                                                                               \
      fprintf(stderr, "driver_rules: %s failed: %s (%d)\n", #call, error_name(r_), r_);          \
      return 1;                                                                                  \
    }                                                                                            \
  } while (0)

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "--ptx") == 0) {
    fputs(empty_ptx, stdout);
    return 0;
  }
  int missing = load_driver_api("driver_rules");
  if (missing) return missing;
  CUdevice dev;
  CUcontext ctx;
  CUmodule module;
  SETUP(cuInit(0));
  SETUP(cuDeviceGet(&dev, 0));
  SETUP(cuDevicePrimaryCtxRetain(&ctx, dev));
  SETUP(cuCtxSetCurrent(ctx));
  SETUP(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
  SETUP(cuMemAlloc(&scalar, sizeof(int)));
  void *image = argc > 1 ? read_file(argv[1]) : (void *)empty_ptx;
  if (!image) {
    fprintf(stderr, "driver_rules: cannot read %s\n", argv[1]);
    return 1;
  }
  SETUP(cuModuleLoadData(&module, image));
  SETUP(cuModuleGetFunction(&empty, module, "empty"));
  // First from a thread that never made a context current, before this one uses the stream.
  pthread_t thread;
  if (pthread_create(&thread, NULL, ask, "no_context") != 0 || pthread_join(thread, NULL) != 0) {
    fprintf(stderr, "driver_rules: no thread\n");
    return 1;
  }
  ask("current");
  return 0;
}
