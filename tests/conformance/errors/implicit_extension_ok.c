// RULE: an implicit map of a whole array over a mapped part of it is not an error: the region uses the existing device copy
// EXPECT: dev=1 host=5 back=9
// REJECT-STDERR: omptarget
#include <stdio.h>

int main(void) {
  int a[8] = {1, 0, 0, 0, 0, 0, 0, 0}, dev = 0;
#pragma omp target enter data map(to: a[0:4])
  a[0] = 5; /* host only */
#pragma omp target map(from: dev)
  {
    dev = a[0];
    a[1] = 9;
  }
  int host = a[0];
#pragma omp target exit data map(from: a[0:4])
  printf("dev=%d host=%d back=%d\n", dev, host, a[1]);
  return !(dev == 1 && host == 5 && a[1] == 9);
}
