// RULE: map(present:) on absent data in exit data reports the missing mapping and is fatal (no getTargetPointer error line here)
// EXPECT: released ok: 7
// EXIT: fail
// EXPECT-STDERR: device mapping required by 'present' map type modifier does not exist for host address
// EXPECT-STDERR: (16 bytes)
// EXPECT-STDERR: omptarget fatal error 1: failure of target construct while offloading is mandatory
// REJECT-STDERR: getTargetPointer
#include <stdio.h>

int main(void) {
  int a[4] = {7, 0, 0, 0}, b[4] = {0};
#pragma omp target enter data map(to: a)
#pragma omp target exit data map(present, from: a)
  printf("released ok: %d\n", a[0]);
  fflush(stdout);
  if (a[0] != 7) return 1;
#pragma omp target exit data map(present, from: b)
  printf("not reached\n");
  return 0;
}
