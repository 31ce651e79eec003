// RULE: map(to:) sends the host value before the region and never copies the device value back
// EXPECT: seen=7 host=7
#include <stdio.h>

int main(void) {
  int x = 7, seen = 0;
#pragma omp target map(to: x) map(from: seen)
  {
    seen = x;
    x = 99;
  }
  printf("seen=%d host=%d\n", seen, x);
  return !(seen == 7 && x == 7);
}
