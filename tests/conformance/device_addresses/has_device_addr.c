// RULE: has_device_addr(x) in a target region nested in use_device_addr(x) lets the kernel use the device copy of x without a map
// EXPECT: x=42 a[3]=13
#include <omp.h>
#include <stdio.h>

int main(void) {
  int x = 0, a[4] = {10, 11, 12, 13};
#pragma omp target data map(tofrom: x, a)
  {
#pragma omp target data use_device_addr(x, a)
    {
#pragma omp target has_device_addr(x, a)
      x = 29 + a[3];
    }
  }
  printf("x=%d a[3]=%d\n", x, a[3]);
  return !(x == 42 && a[3] == 13);
}
