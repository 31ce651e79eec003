// RULE: map(present:) on absent data in a target construct reports the missing mapping and, with a device under the default policy, is a fatal error
// EXPECT: mapped ok: 3
// EXIT: fail
// EXPECT-STDERR: omptarget message: device mapping required by 'present' map type modifier does not exist for host address
// EXPECT-STDERR: (4 bytes)
// EXPECT-STDERR: omptarget error: Call to getTargetPointer returned null pointer ('present' map type modifier).
// EXPECT-STDERR: omptarget fatal error 1: failure of target construct while offloading is mandatory
#include <stdio.h>

int main(void) {
  int x = 1, y = 2;
#pragma omp target data map(to: y)
  {
#pragma omp target map(present, tofrom: y) map(tofrom: x)
    x += y;
  }
  printf("mapped ok: %d\n", x);
  fflush(stdout);
  if (x != 3) return 1;
#pragma omp target map(present, tofrom: x)
  x += 1;
  printf("not reached: %d\n", x);
  return 0;
}
