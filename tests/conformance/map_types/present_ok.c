// RULE: map(present, ...) succeeds on mapped data and then behaves like the plain map type
// EXPECT: sum=10 a[0]=0 a[3]=0
// REJECT-STDERR: omptarget
#include <stdio.h>

int main(void) {
  int a[4] = {1, 2, 3, 4}, sum = 0;
#pragma omp target data map(tofrom: a)
  {
#pragma omp target map(present, to: a) map(tofrom: sum)
    for (int i = 0; i < 4; i++) {
      sum += a[i];
      a[i] = 0;
    }
  }
  printf("sum=%d a[0]=%d a[3]=%d\n", sum, a[0], a[3]);
  return !(sum == 10 && a[0] == 0 && a[3] == 0);
}
