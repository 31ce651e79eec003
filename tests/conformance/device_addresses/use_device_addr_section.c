// RULE: use_device_addr on an array section makes the array name refer to the device copy of the section's array
// EXPECT: a[2]=20 a[5]=50 a[0]=0
#include <omp.h>
#include <stdio.h>

int main(void) {
  int a[8];
  for (int i = 0; i < 8; i++) a[i] = i;
  int *da = NULL;
#pragma omp target data map(tofrom: a[2:4])
  {
#pragma omp target data use_device_addr(a[2:4])
    da = &a[2];
#pragma omp target is_device_ptr(da)
    for (int i = 0; i < 4; i++) da[i] *= 10;
  }
  printf("a[2]=%d a[5]=%d a[0]=%d\n", a[2], a[5], a[0]);
  for (int i = 0; i < 8; i++) if (a[i] != ((i >= 2 && i < 6) ? 10 * i : i)) return 1;
  return 0;
}
