// The floor for the CUDA plugin: the same figures as omp_gpu.c, taken straight from the CUDA
// driver API with nothing in between (through cuda_driver.h: no CUDA headers exist here).
//
//   raw_driver [OMP_PROGRAM]
//
// Prints `raw <figure> <value>` lines: launch_us, launch_copy_us, {h2d,d2h}_{pageable,pinned}_gbs.
// The waits block (CU_CTX_SCHED_BLOCKING_SYNC), as the plugins' do (ours and LLVM's set it on
// the primary context): a floor that spins would be faster than any plugin can be for reasons
// that are not the plugin's. RAW_DRIVER_SCHED=spin measures the spinning floor instead.
// With OMP_PROGRAM (a clang-19 sm_90 offload binary), also loads the cubin embedded in it, and
// if that fails, tries the driver's linker on it first; `raw image_* ...` lines say how it went.
// That checks our toolchain's output (scripts/setup-nvptx-toolchain.sh) apart from the plugin.
// Exit status: 0 ok, 1 wrong data or a failed driver call, 2 no driver.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CU_CTX_SCHED_SPIN 0x1
#define CU_CTX_SCHED_BLOCKING_SYNC 0x4
#define CU_JIT_INPUT_CUBIN 0
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR 75
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR 76

// Every entry point used, with the symbol the driver exports it under.
#define DRIVER_API(X)                                                                            \
  X(cuInit, "cuInit", (unsigned))                                                                \
  X(cuGetErrorName, "cuGetErrorName", (CUresult, const char **))                                 \
  X(cuDriverGetVersion, "cuDriverGetVersion", (int *))                                           \
  X(cuDeviceGet, "cuDeviceGet", (CUdevice *, int))                                               \
  X(cuDeviceGetName, "cuDeviceGetName", (char *, int, CUdevice))                                 \
  X(cuDeviceGetAttribute, "cuDeviceGetAttribute", (int *, int, CUdevice))                        \
  X(cuDevicePrimaryCtxGetState, "cuDevicePrimaryCtxGetState", (CUdevice, unsigned *, int *))    \
  X(cuDevicePrimaryCtxSetFlags, "cuDevicePrimaryCtxSetFlags_v2", (CUdevice, unsigned))           \
  X(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", (CUcontext *, CUdevice))               \
  X(cuCtxSetCurrent, "cuCtxSetCurrent", (CUcontext))                                             \
  X(cuStreamCreate, "cuStreamCreate", (CUstream *, unsigned))                                    \
  X(cuStreamSynchronize, "cuStreamSynchronize", (CUstream))                                      \
  X(cuStreamDestroy, "cuStreamDestroy_v2", (CUstream))                                           \
  X(cuModuleLoadData, "cuModuleLoadData", (CUmodule *, const void *))                            \
  X(cuModuleGetFunction, "cuModuleGetFunction", (CUfunction *, CUmodule, const char *))          \
  X(cuLaunchKernel, "cuLaunchKernel",                                                            \
    (CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream, \
     void **, void **))                                                                          \
  X(cuMemAlloc, "cuMemAlloc_v2", (CUdeviceptr *, size_t))                                        \
  X(cuMemFree, "cuMemFree_v2", (CUdeviceptr))                                                    \
  X(cuMemAllocHost, "cuMemAllocHost_v2", (void **, size_t))                                      \
  X(cuMemFreeHost, "cuMemFreeHost", (void *))                                                    \
  X(cuMemcpyHtoD, "cuMemcpyHtoD_v2", (CUdeviceptr, const void *, size_t))                        \
  X(cuMemcpyDtoH, "cuMemcpyDtoH_v2", (void *, CUdeviceptr, size_t))                              \
  X(cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2", (CUdeviceptr, const void *, size_t, CUstream))    \
  X(cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2", (void *, CUdeviceptr, size_t, CUstream))          \
  X(cuLinkCreate, "cuLinkCreate_v2", (unsigned, int *, void **, CUlinkState *))                  \
  X(cuLinkAddData, "cuLinkAddData_v2",                                                           \
    (CUlinkState, int, void *, size_t, const char *, unsigned, int *, void **))                  \
  X(cuLinkComplete, "cuLinkComplete", (CUlinkState, void **, size_t *))                          \
  X(cuLinkDestroy, "cuLinkDestroy", (CUlinkState))

#include "cuda_driver.h"

enum { WARMUP = 1000, LAUNCHES = 20000, COPIES = 10 };
static const size_t BYTES = (size_t)256 << 20;

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, n, sizeof *v, by_value);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// A failed driver call ends the run: the figures after it would mean nothing.
#define CHECK(call)                                                                              \
  do {                                                                                           \
    CUresult r_ = (call);                                                                        \
    if (r_ != 0) {                                                                               \
      fprintf(stderr, "raw_driver: %s failed: %s (%d)\n", #call, error_name(r_), r_);            \
      exit(1);                                                                                   \
    }                                                                                            \
  } while (0)

static void load_driver(void) {
  int missing = load_driver_api("raw_driver");
  if (missing) exit(missing);
}

static void fill(int *p, size_t n, int base) {
  for (size_t i = 0; i < n; i++) p[i] = (int)i + base;
}

// A few sampled elements, both ends included: enough to catch a copy that did not happen.
static int check(const int *p, size_t n, int base, const char *what) {
  for (size_t k = 0; k <= 64; k++) {
    size_t i = k == 64 ? n - 1 : (k * 1048573u) % n;
    if (p[i] != (int)i + base) {
      fprintf(stderr, "raw_driver: %s: element %zu is %d, expected %d\n", what, i, p[i],
              (int)i + base);
      return 1;
    }
  }
  return 0;
}

static double gbs(double us) { return BYTES / (us * 1e3); }

// Median bandwidth of COPIES transfers of BYTES between host buffer `h` and `d`; pinned
// buffers go through the async calls and a stream sync, as a plugin does.
static int copies(const char *name, int to_device, int pinned, int *h, CUdeviceptr d,
                  CUstream s) {
  size_t n = BYTES / sizeof(int);
  double t[COPIES];
  fill(h, n, 7);
  if (!to_device) { // the device holds the pattern, the host zeros
    CHECK(cuMemcpyHtoD(d, h, BYTES));
    memset(h, 0, BYTES);
  }
  for (int i = -1; i < COPIES; i++) { // i == -1: warm-up
    double t0 = now_us();
    if (to_device && pinned) CHECK(cuMemcpyHtoDAsync(d, h, BYTES, s));
    if (to_device && !pinned) CHECK(cuMemcpyHtoD(d, h, BYTES));
    if (!to_device && pinned) CHECK(cuMemcpyDtoHAsync(h, d, BYTES, s));
    if (!to_device && !pinned) CHECK(cuMemcpyDtoH(h, d, BYTES));
    if (pinned) CHECK(cuStreamSynchronize(s));
    if (i >= 0) t[i] = now_us() - t0;
  }
  if (to_device) { // read back what the device got
    memset(h, 0, BYTES);
    CHECK(cuMemcpyDtoH(h, d, BYTES));
  }
  if (check(h, n, 7, name)) return 1;
  printf("raw %s %.3f\n", name, gbs(median(t, COPIES)));
  fflush(stdout);
  return 0;
}

// Finds the first EM_CUDA ELF inside an offload program and reports whether the driver loads
// it as is, and else whether linking it first with the driver's linker makes it loadable
// (it would for a relocatable cubin, ptxas -c output).
static void try_image(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    printf("raw image_found no (cannot open %s)\n", path);
    return;
  }
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  rewind(f);
  unsigned char *file = malloc(size);
  if (fread(file, 1, size, f) != (size_t)size) size = 0;
  fclose(f);
  for (long at = 1; at + 64 <= size; at++) {
    unsigned char *e = file + at;
    uint16_t machine, type, phentsize, phnum, shentsize, shnum;
    uint64_t phoff, shoff;
    if (memcmp(e, "\177ELF\2\1", 6)) continue;
    memcpy(&machine, e + 18, 2);
    if (machine != 190) continue; // EM_CUDA
    memcpy(&type, e + 16, 2);
    memcpy(&phoff, e + 0x20, 8);
    memcpy(&shoff, e + 0x28, 8);
    memcpy(&phentsize, e + 0x36, 2);
    memcpy(&phnum, e + 0x38, 2);
    memcpy(&shentsize, e + 0x3a, 2);
    memcpy(&shnum, e + 0x3c, 2);
    // The image ends with whichever header table comes last (ptxas puts program headers last).
    size_t len = shoff + (size_t)shnum * shentsize, ph_end = phoff + (size_t)phnum * phentsize;
    if (ph_end > len) len = ph_end;
    if (len > (size_t)(size - at)) len = size - at;
    printf("raw image_found yes (e_type %s, %zu bytes)\n",
           type == 1 ? "REL" : type == 2 ? "EXEC" : "other", len);
    void *copy = malloc(len); // the driver may want it aligned
    memcpy(copy, e, len);
    CUmodule m;
    CUresult r = cuModuleLoadData(&m, copy);
    printf("raw image_load_direct %s\n", r ? error_name(r) : "ok");
    if (!r) {
      free(copy);
      free(file);
      return;
    }
    CUlinkState link = NULL;
    void *linked;
    size_t linked_size;
    r = cuLinkCreate(0, NULL, NULL, &link);
    if (!r) r = cuLinkAddData(link, CU_JIT_INPUT_CUBIN, copy, len, "omp", 0, NULL, NULL);
    if (!r) r = cuLinkComplete(link, &linked, &linked_size);
    if (!r) r = cuModuleLoadData(&m, linked);
    printf("raw image_load_linked %s\n", r ? error_name(r) : "ok");
    if (link) cuLinkDestroy(link);
    free(copy);
    free(file);
    return;
  }
  printf("raw image_found no (no EM_CUDA ELF in %s)\n", path);
  free(file);
}

int main(int argc, char **argv) {
  load_driver();
  CUdevice dev;
  CUcontext ctx;
  CUstream s;
  CUmodule module;
  CUfunction empty;
  char name[256] = "";
  int version = 0, major = 0, minor = 0;
  CHECK(cuInit(0));
  CHECK(cuDriverGetVersion(&version));
  CHECK(cuDeviceGet(&dev, 0));
  CHECK(cuDeviceGetName(name, sizeof name, dev));
  CHECK(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
  CHECK(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev));
  printf("raw device %s sm_%d%d driver %d.%d\n", name, major, minor, version / 1000,
         version % 1000 / 10);
  // The primary context is the one a plugin (LLVM's, and ours) uses, with the plugins' waits.
  const char *sched = getenv("RAW_DRIVER_SCHED");
  int spin = sched && strcmp(sched, "spin") == 0;
  unsigned flags = 0;
  int active = 0;
  CHECK(cuDevicePrimaryCtxGetState(dev, &flags, &active));
  if (!active)
    CHECK(cuDevicePrimaryCtxSetFlags(dev, spin ? CU_CTX_SCHED_SPIN : CU_CTX_SCHED_BLOCKING_SYNC));
  CHECK(cuDevicePrimaryCtxGetState(dev, &flags, &active));
  printf("raw sched %s\n", (flags & 0x7) == CU_CTX_SCHED_BLOCKING_SYNC ? "blocking"
                           : (flags & 0x7) == CU_CTX_SCHED_SPIN       ? "spin"
                                                                       : "other");
  CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CHECK(cuCtxSetCurrent(ctx));
  CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CHECK(cuModuleLoadData(&module, empty_ptx));
  CHECK(cuModuleGetFunction(&empty, module, "empty"));

  // Launch latency: one 1x1 launch and the wait for it, the floor under an empty target region.
  static double t[LAUNCHES];
  for (int i = -WARMUP; i < LAUNCHES; i++) {
    double t0 = now_us();
    CHECK(cuLaunchKernel(empty, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL));
    CHECK(cuStreamSynchronize(s));
    if (i >= 0) t[i] = now_us() - t0;
  }
  printf("raw launch_us %.3f\n", median(t, LAUNCHES));
  // Sorted by median(): whether a slow process is slow throughout or now and then.
  printf("raw launch_p10_us %.3f\nraw launch_p90_us %.3f\n", t[LAUNCHES / 10], t[LAUNCHES * 9 / 10]);

  // The same with a 4-byte copy each way around it: the floor under map(tofrom: scalar).
  CUdeviceptr scalar;
  CHECK(cuMemAlloc(&scalar, sizeof(int)));
  int x = 0;
  for (int i = -WARMUP; i < LAUNCHES; i++) {
    double t0 = now_us();
    x++;
    CHECK(cuMemcpyHtoDAsync(scalar, &x, sizeof x, s));
    CHECK(cuLaunchKernel(empty, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL));
    CHECK(cuMemcpyDtoHAsync(&x, scalar, sizeof x, s));
    CHECK(cuStreamSynchronize(s));
    if (i >= 0) t[i] = now_us() - t0;
  }
  if (x != WARMUP + LAUNCHES) {
    fprintf(stderr, "raw_driver: scalar round trip gave %d, expected %d\n", x, WARMUP + LAUNCHES);
    return 1;
  }
  printf("raw launch_copy_us %.3f\n", median(t, LAUNCHES));
  fflush(stdout);
  CHECK(cuMemFree(scalar));
  // Launch latencies alone, for run.sh's alternating rounds (a VM's wake-ups vary by process).
  if (getenv("GPU_BENCH_LAUNCHES_ONLY")) return 0;

  CUdeviceptr d;
  CHECK(cuMemAlloc(&d, BYTES));
  int *pageable = malloc(BYTES), *pinned = NULL;
  CHECK(cuMemAllocHost((void **)&pinned, BYTES));
  int bad = !pageable;
  bad = bad || copies("h2d_pageable_gbs", 1, 0, pageable, d, s);
  bad = bad || copies("d2h_pageable_gbs", 0, 0, pageable, d, s);
  bad = bad || copies("h2d_pinned_gbs", 1, 1, pinned, d, s);
  bad = bad || copies("d2h_pinned_gbs", 0, 1, pinned, d, s);
  free(pageable);
  CHECK(cuMemFreeHost(pinned));
  CHECK(cuMemFree(d));
  CHECK(cuStreamDestroy(s));

  if (argc > 1) try_image(argv[1]);
  return bad;
}
