// RULE: the close modifier does not change the copy semantics of a tofrom map
// EXPECT: x=3 a[0]=10 a[15]=25
#include <stdio.h>

int main(void) {
  int x = 2, a[16];
  for (int i = 0; i < 16; i++) a[i] = i;
#pragma omp target map(close, tofrom: x, a)
  {
    x += 1;
    for (int i = 0; i < 16; i++) a[i] += 10;
  }
  printf("x=%d a[0]=%d a[15]=%d\n", x, a[0], a[15]);
  return !(x == 3 && a[0] == 10 && a[15] == 25);
}
