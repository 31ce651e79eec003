// Twenty team reductions, with LIBOMPTARGET_HEAP_SIZE set by the test: the plugin reuses the
// reduction kernels' buffers instead of allocating and freeing per launch, and gives the
// device-side heap size to the driver (whose heap CUDA's device malloc uses) instead of
// allocating a pool of its own.
#include <stdio.h>

int main(void) {
  long total = 0;
  for (int r = 0; r < 20; r++) {
    long sum = 0;
#pragma omp target teams distribute parallel for reduction(+ : sum) map(tofrom : sum)
    for (int i = 0; i < 10000; i++)
      sum += i;
    total += sum;
  }
  printf("total=%ld\n", total);
  return total != 20L * 49995000;
}
