// RULE: release drops one reference and unmaps at zero; releasing or deleting data that is no longer mapped is silently ignored
// EXPECT: one=1 zero=0 x=1
// REJECT-STDERR: omptarget
#include <omp.h>
#include <stdio.h>

int main(void) {
  int x = 1, d = omp_get_default_device();
#pragma omp target enter data map(to: x)
#pragma omp target enter data map(to: x)
#pragma omp target exit data map(release: x)
  int one = omp_target_is_present(&x, d);
#pragma omp target exit data map(release: x)
  int zero = omp_target_is_present(&x, d);
#pragma omp target exit data map(release: x)
#pragma omp target exit data map(delete: x)
#pragma omp target exit data map(from: x)
  printf("one=%d zero=%d x=%d\n", one, zero, x);
  return !(one == 1 && zero == 0 && x == 1);
}
