// RULE: a negative device number passed to omp_target_memcpy is reported as out of range and the copy fails with -1, touching nothing
// LLVM-DIFFERS: LLVM 19 aborts the program (fatal error) on an invalid device number in the device-memory API; we report it and return the API's error value, which the routines define and a program can test
// EXPECT: x=3 rc=-1 y=0
// EXPECT-STDERR: Device number '-1' out of range, only 4 devices available
#include <omp.h>
#include <stdio.h>

int main(void) {
  int x = 2, y = 0;
#pragma omp target map(tofrom: x)
  x += 1;
  int rc = omp_target_memcpy(&y, &x, sizeof x, 0, 0, -1, omp_get_initial_device());
  printf("x=%d rc=%d y=%d\n", x, rc, y);
  return !(x == 3 && rc == -1 && y == 0);
}
// NEEDS: 4 devices
