// RULE: defaultmap(tofrom: scalar) maps an unlisted scalar tofrom, so the device write is copied back
// EXPECT: x=6 y=3.5
#include <stdio.h>

int main(void) {
  int x = 5;
  double y = 1.5;
#pragma omp target defaultmap(tofrom: scalar)
  {
    x += 1;
    y += 2.0;
  }
  printf("x=%d y=%.1f\n", x, y);
  return !(x == 6 && y == 3.5);
}
