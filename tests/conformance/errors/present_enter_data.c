// RULE: map(present:) on absent data in enter data is fatal under OMP_TARGET_OFFLOAD=mandatory, after the 'present' message
// ENV: OMP_TARGET_OFFLOAD=mandatory
// EXPECT: device x=2
// EXIT: fail
// EXPECT-STDERR: device mapping required by 'present' map type modifier does not exist for host address
// EXPECT-STDERR: omptarget error: Call to getTargetPointer returned null pointer ('present' map type modifier).
// EXPECT-STDERR: omptarget fatal error 1: failure of target construct while offloading is mandatory
#include <stdio.h>

int main(void) {
  int x = 1, a[4] = {0};
#pragma omp target map(tofrom: x)
  x *= 2;
  printf("device x=%d\n", x);
  fflush(stdout);
  if (x != 2) return 1;
#pragma omp target enter data map(present, to: a)
  printf("not reached\n");
  return 0;
}
