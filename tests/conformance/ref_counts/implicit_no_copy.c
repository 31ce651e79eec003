// RULE: an implicitly mapped array that is already present is neither re-sent nor copied back at the end of the target region
// EXPECT: dev=1 host=5 final=6
#include <stdio.h>

int main(void) {
  int a[4] = {1, 1, 1, 1}, dev = 0;
#pragma omp target enter data map(to: a)
  a[0] = 5; /* host only */
#pragma omp target map(from: dev)
  {
    dev = a[0];
    a[0] = 6;
  }
  int host = a[0];
#pragma omp target exit data map(from: a)
  printf("dev=%d host=%d final=%d\n", dev, host, a[0]);
  return !(dev == 1 && host == 5 && a[0] == 6);
}
