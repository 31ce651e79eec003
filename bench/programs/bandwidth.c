// A target teams distribute parallel for over a mapped array with tofrom: the copy bandwidth
// achieved (both copies over the region's time less the kernel's own time), beside a plain
// memcpy of the same size into fresh memory in the same process.
#include "common.h"
#include <string.h>

int main(int argc, char **argv) {
  long mib = arg_or(argc, argv, 1, 1024);
  size_t bytes = (size_t)mib << 20, n = bytes / sizeof(float);
  float *a = malloc(bytes);
  for (size_t i = 0; i < n; i++) a[i] = 1.0f;

  // The physical limit here: memcpy into fresh memory (as a device allocation is), and back.
  float *copy = malloc(bytes);
  double m0 = now_ns();
  memcpy(copy, a, bytes);
  double m1 = now_ns();
  memcpy(a, copy, bytes);
  double m2 = now_ns();
  free(copy);

  double t0 = now_ns();
#pragma omp target teams distribute parallel for map(tofrom: a[0:n])
  for (size_t i = 0; i < n; i++) a[i] += 1.0f;
  double t1 = now_ns();

  // The kernel alone, with the data already on the device.
#pragma omp target enter data map(to: a[0:n])
  double k0 = now_ns();
#pragma omp target teams distribute parallel for map(present, alloc: a[0:n])
  for (size_t i = 0; i < n; i++) a[i] += 1.0f;
  double k1 = now_ns();
#pragma omp target exit data map(from: a[0:n])

  if (a[0] != 3.0f || a[n - 1] != 3.0f) return 1;
  free(a);
  double gib = (double)bytes / (1 << 30);
  result("memcpy_bandwidth", 2 * gib / ((m2 - m0) / 1e9), "GiB/s");
  double copies = (t1 - t0) - (k1 - k0);
  result("mapped_bandwidth", 2 * gib / (copies / 1e9), "GiB/s");
  return 0;
}
