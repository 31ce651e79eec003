// RULE: firstprivate(x) copies the value at region start; host changes afterwards and device writes do not interfere
// EXPECT: first=3 second=4 x=4
#include <stdio.h>

int main(void) {
  int x = 3, r1 = 0, r2 = 0;
#pragma omp target firstprivate(x) map(from: r1)
  {
    r1 = x;
    x = 77;
  }
  x = 4;
#pragma omp target firstprivate(x) map(from: r2)
  r2 = x;
  printf("first=%d second=%d x=%d\n", r1, r2, x);
  return !(r1 == 3 && r2 == 4 && x == 4);
}
