// RULE: an explicit map that extends past an existing mapping (a[0:8] over a[0:4]) is rejected with 'explicit extension not allowed' and is fatal
// EXPECT: sum=6
// EXIT: fail
// EXPECT-STDERR: omptarget message: explicit extension not allowed: host address specified is
// EXPECT-STDERR: (32 bytes), but device allocation maps to host at
// EXPECT-STDERR: (16 bytes)
// EXPECT-STDERR: omptarget error: Call to getTargetPointer returned null pointer (device failure or illegal mapping).
// EXPECT-STDERR: omptarget fatal error 1: failure of target construct while offloading is mandatory
#include <stdio.h>

int main(void) {
  int a[8] = {1, 2, 3, 0, 0, 0, 0, 0}, sum = 0;
#pragma omp target enter data map(to: a[0:4])
#pragma omp target map(tofrom: a[0:4], sum)
  sum = a[0] + a[1] + a[2];
  printf("sum=%d\n", sum);
  fflush(stdout);
  if (sum != 6) return 1;
#pragma omp target map(tofrom: a[0:8])
  a[7] = 1;
  printf("not reached\n");
  return 0;
}
