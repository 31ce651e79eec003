// Remote-device costs through the MPI plugin (run by mpi-bench under mpirun, with one device
// process): an empty target region (no data), one with a scalar map(tofrom:), and the
// bandwidth of a map(tofrom:) of `bytes` (default 1 GiB: that many bytes each way).
#include "common.h"
#include <string.h>

int main(int argc, char **argv) {
  long n = arg_or(argc, argv, 1, 20000);
  long bytes = arg_or(argc, argv, 2, 1L << 30);
  long rounds = arg_or(argc, argv, 3, 4);
  int x = 0;
  for (int i = 0; i < 200; i++) { // warm-up: image loaded, pools filled
#pragma omp target map(tofrom: x)
    x++;
  }
  double t0 = now_ns();
  for (long i = 0; i < n; i++) {
#pragma omp target
    { }
  }
  double t1 = now_ns();
  result("mpi_empty_region", (t1 - t0) / n, "ns/op");
  t0 = now_ns();
  for (long i = 0; i < n; i++) {
#pragma omp target map(tofrom: x)
    x++;
  }
  t1 = now_ns();
  if (x != 200 + n) return 1;
  result("mpi_scalar_region", (t1 - t0) / n, "ns/op");

  char *a = malloc(bytes);
  memset(a, 1, bytes);
  double best = 1e300;
  for (long r = 0; r < rounds; r++) {
    t0 = now_ns();
#pragma omp target map(tofrom: a[0:bytes])
    a[r] += 1;
    t1 = now_ns();
    if (t1 - t0 < best) best = t1 - t0;
  }
  for (long r = 0; r < rounds; r++)
    if (a[r] != 2) return 2;
  // Bytes moved both ways, per second of the best round.
  result("mpi_map_tofrom_bandwidth", 2.0 * bytes / best, "GB/s");
  free(a);
  return 0;
}
