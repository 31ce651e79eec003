// N separate arrays entered with `target enter data`, found by `target` regions with
// `present`, then exited: time per operation of each phase with N live mappings. Last, the
// regions' steps done on the host without offloading (`host_steps`): the cache misses the
// program pays among N arrays whatever the runtime, part of each region's cost.
#include "mapped_arrays.h"

#define LEN 16

int main(int argc, char **argv) {
  long n = arg_or(argc, argv, 1, 10000);
  long lookups = arg_or(argc, argv, 2, 20000);
  int **arrays = new_arrays(n, LEN);
  load_image();

  double t0 = now_ns();
  enter_arrays(arrays, n, LEN);
  double t1 = now_ns();
  // Regions that find existing mappings, spread over the whole table.
  unsigned long k = 12345;
  for (long i = 0; i < lookups; i++) {
    k = k * 6364136223846793005UL + 1442695040888963407UL;
    int *a = arrays[(k >> 33) % n];
#pragma omp target map(present, alloc: a[0:LEN])
    a[0] += 1;
  }
  double t2 = now_ns();
  exit_arrays(arrays, n, LEN);
  double t3 = now_ns();
  // The program's own part of a present region's cost: the same steps over the same arrays,
  // done on the host (find the array, then write the data as the kernel does), each step
  // waiting for the last as a region does. Not a target construct: no runtime is involved.
  k = 12345;
  for (long i = 0; i < lookups; i++) {
    k = k * 6364136223846793005UL + 1442695040888963407UL;
    int *a = arrays[(k >> 33) % n];
    a[0] += 1;
    k += (unsigned long)a[0] >> 31; // 0, but the next step must wait for this one's data
  }
  double t4 = now_ns();
  long sum = 0;
  for (long i = 0; i < n; i++) sum += arrays[i][0], free(arrays[i]);
  free(arrays);
  if (sum != 2 * lookups) return 1;
  char name[64];
  snprintf(name, sizeof name, "enter_data_%ld", n);
  result(name, (t1 - t0) / n, "ns/op");
  snprintf(name, sizeof name, "present_lookup_%ld", n);
  result(name, (t2 - t1) / lookups, "ns/op");
  snprintf(name, sizeof name, "exit_data_%ld", n);
  result(name, (t3 - t2) / n, "ns/op");
  snprintf(name, sizeof name, "host_steps_%ld", n);
  result(name, (t4 - t3) / lookups, "ns/op");
  return 0;
}
