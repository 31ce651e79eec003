// RULE: is_device_ptr passes omp_target_alloc memory to the kernel as-is, and the data persists across kernels
// EXPECT: total=4950
#include <omp.h>
#include <stdio.h>

int main(void) {
  int n = 100, dev = omp_get_default_device(), total = 0;
  int *d = (int *)omp_target_alloc(n * sizeof(int), dev);
#pragma omp target is_device_ptr(d)
  for (int i = 0; i < n; i++) d[i] = i;
#pragma omp target is_device_ptr(d) map(tofrom: total)
  for (int i = 0; i < n; i++) total += d[i];
  omp_target_free(d, dev);
  printf("total=%d\n", total);
  return total != 4950;
}
