// RULE: a scalar used in a target region without a map clause is firstprivate: the device sees its value, writes stay on the device
// EXPECT: seen=8 x=8
#include <stdio.h>

int main(void) {
  int x = 8, seen = 0;
#pragma omp target map(from: seen)
  {
    seen = x;
    x = 1000;
  }
  printf("seen=%d x=%d\n", seen, x);
  return !(seen == 8 && x == 8);
}
