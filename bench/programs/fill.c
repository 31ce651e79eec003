// omp_target_memset of device memory beside a plain memset of host memory of the same size in
// the same process: the fill's bandwidth. Both buffers are touched first, so that neither
// timing includes page faults; each is the best of three.
#include "common.h"
#include <omp.h>
#include <string.h>

// Called through a volatile pointer: the compiler may not drop a fill that a later one
// overwrites.
static void *(*volatile host_memset)(void *, int, size_t) = memset;

int main(int argc, char **argv) {
  long mib = arg_or(argc, argv, 1, 1024);
  size_t bytes = (size_t)mib << 20;
  int dev = 0;
  unsigned char *host = malloc(bytes);
  unsigned char *d = omp_target_alloc(bytes, dev);
  if (!host || !d) return 1;
  host_memset(host, 1, bytes);
  omp_target_memset(d, 1, bytes, dev);

  double best_memset = 1e300, best_fill = 1e300;
  for (int round = 0; round < 3; round++) {
    double m0 = now_ns();
    host_memset(host, 2 + round, bytes);
    double m1 = now_ns();
    omp_target_memset(d, 2 + round, bytes, dev);
    double m2 = now_ns();
    if (m1 - m0 < best_memset) best_memset = m1 - m0;
    if (m2 - m1 < best_fill) best_fill = m2 - m1;
  }
  // The last fill reached the device: its first and last bytes read back.
  unsigned char first = 0, last = 0;
  omp_target_memcpy(&first, d, 1, 0, 0, omp_get_initial_device(), dev);
  omp_target_memcpy(&last, d, 1, 0, bytes - 1, omp_get_initial_device(), dev);
  if (first != 4 || last != 4 || host[bytes - 1] != 4) return 1;
  omp_target_free(d, dev);
  free(host);
  double gib = (double)bytes / (1 << 30);
  result("memset_bandwidth", gib / (best_memset / 1e9), "GiB/s");
  result("target_memset_bandwidth", gib / (best_fill / 1e9), "GiB/s");
  return 0;
}
