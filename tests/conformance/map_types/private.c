// RULE: private(x) gives the region its own uninitialised copy: device writes never reach the host variable
// EXPECT: r=12 x=4
#include <stdio.h>

int main(void) {
  int x = 4, r = 0;
#pragma omp target private(x) map(from: r)
  {
    x = 6;
    r = x * 2;
  }
  printf("r=%d x=%d\n", r, x);
  return !(r == 12 && x == 4);
}
