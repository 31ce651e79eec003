// RULE: target update to(s) with a mapper sends the host's new pointee contents to the device
// EXPECT: device_sum=60 host=[10,20,30]
#include <stdio.h>

typedef struct { int n; int *p; } S;
#pragma omp declare mapper(S s) map(s, s.p[0:s.n])

int main(void) {
  int d[3] = {0, 0, 0};
  S s = {3, d};
  int sum = -1;
#pragma omp target enter data map(to: s)
  d[0] = 10; d[1] = 20; d[2] = 30;
#pragma omp target update to(s)
#pragma omp target map(alloc: s) map(from: sum)
  {
    sum = 0;
    for (int i = 0; i < s.n; i++) sum += s.p[i];
  }
#pragma omp target exit data map(delete: s)
  printf("device_sum=%d host=[%d,%d,%d]\n", sum, d[0], d[1], d[2]);
  return sum != 60;
}
