// RULE: map(from:) copies the device value back after the region; host changes made inside an enclosing from-region are overwritten at its end
// EXPECT: a[0]=100 a[7]=107
// EXPECT: x=5
#include <stdio.h>

int main(void) {
  int a[8], x = 1;
  for (int i = 0; i < 8; i++) a[i] = -1;
#pragma omp target map(from: a)
  for (int i = 0; i < 8; i++) a[i] = 100 + i;
  printf("a[0]=%d a[7]=%d\n", a[0], a[7]);
#pragma omp target data map(from: x)
  {
#pragma omp target map(tofrom: x)
    x = 5;
    x = 42; /* host write, lost: the device copy comes back at the end */
  }
  printf("x=%d\n", x);
  return !(a[0] == 100 && a[7] == 107 && x == 5);
}
