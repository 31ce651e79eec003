// RULE: a map whose device allocation fails (a 2^46-element section) is a fatal error under the default policy
// EXPECT: small ok: 10
// EXIT: fail
// EXPECT-STDERR: omptarget error: Call to getTargetPointer returned null pointer (device failure or illegal mapping).
// EXPECT-STDERR: omptarget error: Call to targetDataBegin failed, abort target.
// EXPECT-STDERR: omptarget fatal error 1: failure of target construct while offloading is mandatory
#include <stdio.h>

int main(void) {
  int small[4] = {1, 2, 3, 4}, x = 0;
  int *p = small;
#pragma omp target map(to: p[0:4]) map(tofrom: x)
  x = p[0] + p[1] + p[2] + p[3];
  printf("small ok: %d\n", x);
  fflush(stdout);
  if (x != 10) return 1;
#pragma omp target map(alloc: p[0:(1L << 46)]) map(tofrom: x)
  x = 1;
  printf("not reached\n");
  return 0;
}
