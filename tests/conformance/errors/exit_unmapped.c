// RULE: exit data (from, release, delete) on data that was never mapped silently does nothing and leaves the host value alone
// EXPECT: dev=4 x=3 a[2]=2
// REJECT-STDERR: omptarget
#include <stdio.h>

int main(void) {
  int x = 3, a[4] = {0, 1, 2, 3}, dev = 0;
#pragma omp target map(from: dev)
  dev = 4;
#pragma omp target exit data map(from: x, a)
#pragma omp target exit data map(release: x) map(delete: a)
#pragma omp target exit data map(from: a[1:2])
  printf("dev=%d x=%d a[2]=%d\n", dev, x, a[2]);
  return !(dev == 4 && x == 3 && a[2] == 2);
}
