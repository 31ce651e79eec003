// RULE: exit data map(release:) drops the last reference, removing the mapping without copying back
// EXPECT: before=1 after=0 x=3
#include <omp.h>
#include <stdio.h>

int main(void) {
  int x = 3, d = omp_get_default_device();
#pragma omp target enter data map(to: x)
#pragma omp target map(tofrom: x)
  x = 50;
  int before = omp_target_is_present(&x, d);
#pragma omp target exit data map(release: x)
  int after = omp_target_is_present(&x, d);
  printf("before=%d after=%d x=%d\n", before, after, x);
  return !(before == 1 && after == 0 && x == 3);
}
