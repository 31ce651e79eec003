// RULE: omp_target_memcpy copies from memory of device 0 into memory of device 1
// EXPECT: dev1 sum=45 last=9
#include <omp.h>
#include <stdio.h>

int main(void) {
  if (omp_get_num_devices() < 2) { printf("need 2 devices\n"); return 1; }
  int *d0 = (int *)omp_target_alloc(10 * sizeof(int), 0);
  int *d1 = (int *)omp_target_alloc(10 * sizeof(int), 1);
#pragma omp target is_device_ptr(d0) device(0)
  for (int i = 0; i < 10; i++) d0[i] = i;
  if (omp_target_memcpy(d1, d0, 10 * sizeof(int), 0, 0, 1, 0)) return 1;
  int sum = 0, last = -1;
#pragma omp target is_device_ptr(d1) map(tofrom: sum, last) device(1)
  {
    for (int i = 0; i < 10; i++) sum += d1[i];
    last = d1[9];
  }
  omp_target_free(d0, 0);
  omp_target_free(d1, 1);
  printf("dev1 sum=%d last=%d\n", sum, last);
  return !(sum == 45 && last == 9);
}
// NEEDS: 2 devices
