// RULE: omp_target_alloc with a device number past the last device is reported, naming the device count, and returns NULL
// LLVM-DIFFERS: LLVM 19 aborts the program (fatal error) on an invalid device number in the device-memory API; we report it and return the API's error value, which the routines define and a program can test
// EXPECT: x=3 p=null
// EXPECT-STDERR: omptarget error: omp_target_alloc: Device number '99' out of range, only 4 devices available
#include <omp.h>
#include <stdio.h>

int main(void) {
  int x = 2;
#pragma omp target map(tofrom: x)
  x += 1;
  void *p = omp_target_alloc(16, 99);
  printf("x=%d p=%s\n", x, p ? "nonnull" : "null");
  return !(x == 3 && !p);
}
// NEEDS: 4 devices
