// RULE: target update to(g) sends a host change of a declare target global to the device copy; without it the device keeps the old value
// EXPECT: before_update=5 after_update=9
#include <stdio.h>

#pragma omp declare target
int g = 5;
#pragma omp end declare target

int main(void) {
  int before = 0, after = 0;
  g = 9;
#pragma omp target map(from: before)
  before = g;
#pragma omp target update to(g)
#pragma omp target map(from: after)
  after = g;
  printf("before_update=%d after_update=%d\n", before, after);
  return !(before == 5 && after == 9);
}
