// RULE: map(alloc:) neither sends the host value nor copies the device value back
// EXPECT: device=5 host=1
#include <stdio.h>

int main(void) {
  int x = 1, dev = 0;
#pragma omp target data map(alloc: x)
  {
#pragma omp target map(tofrom: x) /* already present: no copy either way */
    x = 5;
#pragma omp target map(tofrom: x) map(from: dev)
    dev = x;
  }
  printf("device=%d host=%d\n", dev, x);
  return !(dev == 5 && x == 1);
}
