// RULE: an array used in a target region without a map clause is mapped tofrom
// EXPECT: a[0]=1 a[31]=63
#include <stdio.h>

int main(void) {
  int a[32];
  for (int i = 0; i < 32; i++) a[i] = i;
#pragma omp target
  for (int i = 0; i < 32; i++) a[i] = a[i] * 2 + 1;
  printf("a[0]=%d a[31]=%d\n", a[0], a[31]);
  return !(a[0] == 1 && a[31] == 63);
}
