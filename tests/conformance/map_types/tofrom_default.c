// RULE: a scalar and an array mapped tofrom are sent before the region and copied back after it
// EXPECT: x=11 a[0]=1 a[9]=10
#include <stdio.h>

int main(void) {
  int x = 10, a[10];
  for (int i = 0; i < 10; i++) a[i] = i;
#pragma omp target map(tofrom: x, a)
  {
    x += 1;
    for (int i = 0; i < 10; i++) a[i] += 1;
  }
  printf("x=%d a[0]=%d a[9]=%d\n", x, a[0], a[9]);
  return !(x == 11 && a[0] == 1 && a[9] == 10);
}
