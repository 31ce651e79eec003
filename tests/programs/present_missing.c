// 'present' on unmapped data: LLVM's message, then a fatal error.
#include <stdio.h>
int main(void) {
  int x[4] = {0};
#pragma omp target map(present, tofrom : x)
  x[0] = 1;
  printf("not reached %d\n", x[0]);
  return 0;
}
