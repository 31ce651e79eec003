// RULE: a declare target global written on the device keeps a separate device copy: the host value is unchanged until target update from
// EXPECT: after_kernel host=1 after_update host=50
#include <stdio.h>

#pragma omp declare target
int g = 1;
#pragma omp end declare target

int main(void) {
#pragma omp target
  g = 50;
  int h1 = g;
#pragma omp target update from(g)
  int h2 = g;
  printf("after_kernel host=%d after_update host=%d\n", h1, h2);
  return !(h1 == 1 && h2 == 50);
}
