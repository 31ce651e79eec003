// RULE: LLVM 19 reads LIBOMPTARGET_INFO as a decimal number (std::stoi), so the hex spelling 0x20 means 0 and prints nothing
// ENV: LIBOMPTARGET_INFO=0x20
// EXPECT: a[3]=6
// REJECT-STDERR: info:
#include <stdio.h>

int main(void) {
  int a[4] = {0, 1, 2, 3};
#pragma omp target map(tofrom: a)
  for (int i = 0; i < 4; i++) a[i] *= 2;
  printf("a[3]=%d\n", a[3]);
  return a[3] != 6;
}
