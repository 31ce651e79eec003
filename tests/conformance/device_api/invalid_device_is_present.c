// RULE: omp_target_is_present with a device number past the last device is reported and answers 0
// LLVM-DIFFERS: LLVM 19 aborts the program (fatal error) on an invalid device number in the device-memory API; we report it and return the API's error value, which the routines define and a program can test
// EXPECT: x=3 present=0
// EXPECT-STDERR: Device number '7' out of range, only 4 devices available
#include <omp.h>
#include <stdio.h>

int main(void) {
  int x = 2;
#pragma omp target map(tofrom: x)
  x += 1;
  int r = omp_target_is_present(&x, 7);
  printf("x=%d present=%d\n", x, r);
  return !(x == 3 && r == 0);
}
// NEEDS: 4 devices
