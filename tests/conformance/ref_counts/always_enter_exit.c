// RULE: enter data map(always, to:) re-sends and exit data map(always, from:) copies back even while other references keep the data mapped
// EXPECT: dev=2 host=3 present=1
#include <omp.h>
#include <stdio.h>

int main(void) {
  int x = 1, dev = 0, d = omp_get_default_device();
#pragma omp target enter data map(to: x)
  x = 2;
#pragma omp target enter data map(always, to: x)
#pragma omp target map(tofrom: x) map(from: dev)
  {
    dev = x;
    x = 3;
  }
  x = 0;
#pragma omp target exit data map(always, from: x)
  int present = omp_target_is_present(&x, d);
  printf("dev=%d host=%d present=%d\n", dev, x, present);
#pragma omp target exit data map(delete: x)
  return !(dev == 2 && x == 3 && present == 1);
}
