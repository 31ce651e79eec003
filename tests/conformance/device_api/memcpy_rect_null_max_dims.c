// RULE: omp_target_memcpy_rect and its async form with dst and src both NULL return the maximum number of dimensions, INT_MAX in LLVM
// EXPECT: max=2147483647 async_max=2147483647 x=2
#include <limits.h>
#include <omp.h>
#include <stdio.h>

int main(void) {
  int m = omp_target_memcpy_rect(NULL, NULL, 0, 0, NULL, NULL, NULL, NULL, NULL, 0, omp_get_initial_device());
  int ma = omp_target_memcpy_rect_async(NULL, NULL, 0, 0, NULL, NULL, NULL, NULL, NULL, 0,
                                        omp_get_initial_device(), 0, NULL);
  int x = 1;
#pragma omp target map(tofrom: x)
  x *= 2;
  printf("max=%d async_max=%d x=%d\n", m, ma, x);
  return !(m == INT_MAX && ma == INT_MAX && x == 2);
}
