// An empty target region with one scalar map(tofrom:), in a loop: time per region.
#include "common.h"

int main(int argc, char **argv) {
  long n = arg_or(argc, argv, 1, 100000);
  int x = 0;
  for (int i = 0; i < 1000; i++) { // warm-up: image loaded, pools filled
#pragma omp target map(tofrom: x)
    x++;
  }
  double t0 = now_ns();
  for (long i = 0; i < n; i++) {
#pragma omp target map(tofrom: x)
    x++;
  }
  double t1 = now_ns();
  if (x != 1000 + n) return 1;
  result("empty_region", (t1 - t0) / n, "ns/op");
  return 0;
}
