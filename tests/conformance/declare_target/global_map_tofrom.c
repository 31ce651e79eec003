// RULE: map(tofrom:) on a declare target global does not copy (it is always present), so host changes stay on the host
// EXPECT: device_saw=3 host=100
#include <stdio.h>

#pragma omp declare target
int g = 3;
#pragma omp end declare target

int main(void) {
  int seen = 0;
  g = 100;
#pragma omp target map(tofrom: g) map(from: seen)
  { seen = g; g = -1; }
  printf("device_saw=%d host=%d\n", seen, g);
  return !(seen == 3 && g == 100);
}
