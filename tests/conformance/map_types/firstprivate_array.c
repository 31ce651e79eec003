// RULE: firstprivate(a) of an array gives the device a private copy with the host contents; device writes are not copied back
// EXPECT: sum=36 a[0]=1 a[7]=8
#include <stdio.h>

int main(void) {
  int a[8], sum = 0;
  for (int i = 0; i < 8; i++) a[i] = i + 1;
#pragma omp target firstprivate(a) map(tofrom: sum)
  for (int i = 0; i < 8; i++) {
    sum += a[i];
    a[i] = -1;
  }
  printf("sum=%d a[0]=%d a[7]=%d\n", sum, a[0], a[7]);
  return !(sum == 36 && a[0] == 1 && a[7] == 8);
}
