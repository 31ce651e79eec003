// RULE: target update to/from on data that is not mapped does nothing and reports no error
// EXPECT: x=3 a[1]=2 present=0
// REJECT-STDERR: omptarget
#include <omp.h>
#include <cstdio>

int main() {
  int x = 3, a[2] = {1, 2}, d = omp_get_default_device();
#pragma omp target
  { /* initialise the device */ }
#pragma omp target update to(x, a)
#pragma omp target update from(x, a)
#pragma omp target update from(a[0:1])
  int present = omp_target_is_present(&x, d) + omp_target_is_present(a, d);
  std::printf("x=%d a[1]=%d present=%d\n", x, a[1], present);
  return !(x == 3 && a[1] == 2 && present == 0);
}
