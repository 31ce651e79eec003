// RULE: omp_target_memcpy copies between two allocations on the same device
// EXPECT: sum=120
#include <omp.h>
#include <stdio.h>

int main(void) {
  int host = omp_get_initial_device(), dev = 0;
  int *d1 = (int *)omp_target_alloc(16 * sizeof(int), dev);
  int *d2 = (int *)omp_target_alloc(16 * sizeof(int), dev);
#pragma omp target is_device_ptr(d1, d2) device(dev)
  for (int i = 0; i < 16; i++) { d1[i] = i; d2[i] = 100; }
  if (omp_target_memcpy(d2, d1, 16 * sizeof(int), 0, 0, dev, dev)) return 1;
  int sum = 0;
#pragma omp target is_device_ptr(d2) map(tofrom: sum) device(dev)
  for (int i = 0; i < 16; i++) sum += d2[i];
  omp_target_free(d1, dev);
  omp_target_free(d2, dev);
  printf("sum=%d\n", sum);
  return sum != 120;
}
