// The CUDA plugin's figures through our libomptarget, beside raw_driver.c's straight driver
// calls: the same names with the prefix `omp`, so run.sh can divide one by the other.
//   launch_us            an empty target region (median)           ~ raw launch_us
//   launch_map_us        a target region with map(tofrom: scalar)   ~ raw launch_copy_us
//                        (with GPU_BENCH_LAUNCHES_ONLY set, the program stops here)
//   {h2d,d2h}_pageable_gbs      target update to/from, 256 MiB of malloc'd memory
//   {h2d,d2h}_pinned_gbs        the same on omp_alloc(llvm_omp_target_host_mem_alloc) memory
//   {h2d,d2h}_pinned_memcpy_gbs omp_target_memcpy between that and omp_target_alloc memory
// Built with the sm_90 recipe (scripts/gpu-run.sh); run with OMP_TARGET_OFFLOAD=mandatory.
// Exit status: 0 ok, 1 wrong data, 2 no GPU to measure.
// OMP_GPU_SCHED=spin: before the runtime starts, the program makes device 0's primary context
// spin while it waits (a plugin keeps the flags of an active context, LLVM's and ours), so that
// both runtimes' launch latencies can be seen without the waiting thread's wake-up.
#include <dlfcn.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { WARMUP = 1000, LAUNCHES = 20000, COPIES = 10 };
static const size_t BYTES = (size_t)256 << 20;
static const size_t N = ((size_t)256 << 20) / sizeof(int);

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

static void report(const char *name, double value) {
  printf("omp %s %.3f\n", name, value);
  fflush(stdout);
}

static double gbs(double *t) { return BYTES / (median(t, COPIES) * 1e3); }

static void fill(int *p, int base) {
  for (size_t i = 0; i < N; i++) p[i] = (int)i + base;
}

// A few sampled elements, both ends included: enough to catch a copy that did not happen.
static int check(const int *p, int base, const char *what) {
  for (size_t k = 0; k <= 64; k++) {
    size_t i = k == 64 ? N - 1 : (k * 1048573u) % N;
    if (p[i] != (int)i + base) {
      fprintf(stderr, "omp_gpu: %s: element %zu is %d, expected %d\n", what, i, p[i],
              (int)i + base);
      return 1;
    }
  }
  return 0;
}

// Maps `a` once, then times COPIES `target update to` and COPIES `target update from`, with a
// kernel between that adds 1 on the device, so the values read back prove both directions.
static int mapped_copies(int *a, const char *h2d, const char *d2h) {
  double t[COPIES];
  fill(a, 0);
#pragma omp target enter data map(to : a[0 : N])
  for (int i = -1; i < COPIES; i++) { // i == -1: warm-up
    double t0 = now_us();
#pragma omp target update to(a[0 : N])
    if (i >= 0) t[i] = now_us() - t0;
  }
  report(h2d, gbs(t));
#pragma omp target teams distribute parallel for map(present, alloc : a[0 : N])
  for (size_t i = 0; i < N; i++) a[i] += 1;
  memset(a, 0, BYTES);
  for (int i = -1; i < COPIES; i++) {
    double t0 = now_us();
#pragma omp target update from(a[0 : N])
    if (i >= 0) t[i] = now_us() - t0;
  }
  report(d2h, gbs(t));
#pragma omp target exit data map(delete : a[0 : N])
  return check(a, 1, h2d);
}

// The device-memory API on the same kind of host buffer: no mapping table, just the copy.
static int api_copies(int *h, int dev) {
  int host = omp_get_initial_device();
  int *d = omp_target_alloc(BYTES, dev);
  double t[COPIES];
  if (!d) {
    fprintf(stderr, "omp_gpu: omp_target_alloc(256 MiB) failed\n");
    return 1;
  }
  fill(h, 0);
  for (int i = -1; i < COPIES; i++) {
    double t0 = now_us();
    int r = omp_target_memcpy(d, h, BYTES, 0, 0, dev, host);
    if (i >= 0) t[i] = now_us() - t0;
    if (r) return fprintf(stderr, "omp_gpu: omp_target_memcpy to the device: %d\n", r), 1;
  }
  report("h2d_pinned_memcpy_gbs", gbs(t));
#pragma omp target teams distribute parallel for is_device_ptr(d) device(dev)
  for (size_t i = 0; i < N; i++) d[i] += 2;
  memset(h, 0, BYTES);
  for (int i = -1; i < COPIES; i++) {
    double t0 = now_us();
    int r = omp_target_memcpy(h, d, BYTES, 0, 0, host, dev);
    if (i >= 0) t[i] = now_us() - t0;
    if (r) return fprintf(stderr, "omp_gpu: omp_target_memcpy from the device: %d\n", r), 1;
  }
  report("d2h_pinned_memcpy_gbs", gbs(t));
  omp_target_free(d, dev);
  return check(h, 2, "h2d_pinned_memcpy_gbs");
}

// OMP_GPU_SCHED=spin (above): retains device 0's primary context with CU_CTX_SCHED_SPIN, through
// the driver the plugins open. Returns 0, or 1 when asked and it could not.
static int spin_if_asked(void) {
  const char *sched = getenv("OMP_GPU_SCHED");
  if (!sched || strcmp(sched, "spin") != 0) return 0;
  void *cuda = dlopen("libcuda.so.1", RTLD_NOW);
  if (!cuda) return fprintf(stderr, "omp_gpu: OMP_GPU_SCHED=spin: %s\n", dlerror()), 1;
  int (*init)(unsigned) = (int (*)(unsigned))dlsym(cuda, "cuInit");
  int (*get)(int *, int) = (int (*)(int *, int))dlsym(cuda, "cuDeviceGet");
  int (*set_flags)(int, unsigned) = (int (*)(int, unsigned))dlsym(cuda, "cuDevicePrimaryCtxSetFlags_v2");
  int (*retain)(void **, int) = (int (*)(void **, int))dlsym(cuda, "cuDevicePrimaryCtxRetain");
  int device = 0, r;
  void *ctx;
  if (!init || !get || !set_flags || !retain)
    return fprintf(stderr, "omp_gpu: OMP_GPU_SCHED=spin: driver entry points missing\n"), 1;
  if ((r = init(0)) || (r = get(&device, 0)) || (r = set_flags(device, 0x1 /* SCHED_SPIN */)) ||
      (r = retain(&ctx, device)))
    return fprintf(stderr, "omp_gpu: OMP_GPU_SCHED=spin: driver error %d\n", r), 1;
  printf("omp sched spin\n");
  return 0;
}

int main(void) {
  if (spin_if_asked()) return 1;
  int dev = omp_get_default_device(), on_host = 1;
  // Without a device a target region would stop the program (mandatory) or run on the host
  // (default); neither measures a GPU, so say so and stop.
  if (omp_get_num_devices() < 1) {
    fprintf(stderr, "omp_gpu: no offload device (is the CUDA plugin loaded? see omptarget-info)\n");
    return 2;
  }
#pragma omp target map(from : on_host)
  on_host = omp_is_initial_device();
  if (on_host) {
    fprintf(stderr, "omp_gpu: the target region ran on the host, not on a GPU\n");
    return 2;
  }

  static double t[LAUNCHES];
  for (int i = -WARMUP; i < LAUNCHES; i++) {
    double t0 = now_us();
#pragma omp target
    {}
    if (i >= 0) t[i] = now_us() - t0;
  }
  report("launch_us", median(t, LAUNCHES));
  // Sorted by median(): whether a slow process is slow throughout or now and then.
  report("launch_p10_us", t[LAUNCHES / 10]);
  report("launch_p90_us", t[LAUNCHES * 9 / 10]);

  int x = 0;
  for (int i = -WARMUP; i < LAUNCHES; i++) {
    double t0 = now_us();
#pragma omp target map(tofrom : x)
    x++;
    if (i >= 0) t[i] = now_us() - t0;
  }
  if (x != WARMUP + LAUNCHES) {
    fprintf(stderr, "omp_gpu: map(tofrom: x) gave %d, expected %d\n", x, WARMUP + LAUNCHES);
    return 1;
  }
  report("launch_map_us", median(t, LAUNCHES));
  // Launch latencies alone, for run.sh's alternating rounds (a VM's wake-ups vary by process).
  if (getenv("GPU_BENCH_LAUNCHES_ONLY")) return 0;

  int bad = 0;
  int *pageable = malloc(BYTES);
  bad |= !pageable || mapped_copies(pageable, "h2d_pageable_gbs", "d2h_pageable_gbs");
  free(pageable);

  // LLVM's allocator for page-locked host memory (the plugin's host allocation).
  int *pinned = omp_alloc(BYTES, llvm_omp_target_host_mem_alloc);
  if (!pinned) {
    fprintf(stderr, "omp_gpu: omp_alloc(llvm_omp_target_host_mem_alloc) returned NULL\n");
    return 1;
  }
  bad |= mapped_copies(pinned, "h2d_pinned_gbs", "d2h_pinned_gbs");
  bad |= api_copies(pinned, dev);
  omp_free(pinned, llvm_omp_target_host_mem_alloc);
  return bad;
}
