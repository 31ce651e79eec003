// RULE: target update to/from on mapped data copies at once, without changing the reference count
// EXPECT: dev=2 host=7 present=1
#include <omp.h>
#include <stdio.h>

int main(void) {
  int x = 1, dev = 0, d = omp_get_default_device();
#pragma omp target enter data map(to: x)
  x = 2;
#pragma omp target update to(x)
#pragma omp target map(from: dev) map(tofrom: x)
  {
    dev = x;
    x = 7;
  }
  x = 0;
#pragma omp target update from(x)
  int present = omp_target_is_present(&x, d);
  printf("dev=%d host=%d present=%d\n", dev, x, present);
#pragma omp target exit data map(release: x)
  return !(dev == 2 && x == 7 && present == 1 && !omp_target_is_present(&x, d));
}
