// RULE: target update to(a[0:4:2]) sends only the even elements 0,2,4,6; the odd device elements keep their old values
// EXPECT: dev=[100,1,102,3,104,5,106,7]
// clang-19 drops the stride of a one-dimensional section (it emits a contiguous update of
// a[0:4]), so only clang-22 emits the non-contiguous descriptor; descriptor_1d.c pins the
// same transfer against LLVM 19's runtime through the entry point.
// COMPILERS: clang22
#include <stdio.h>

int main(void) {
  int a[8], out[8];
  for (int i = 0; i < 8; i++) a[i] = i;
#pragma omp target enter data map(to: a)
  for (int i = 0; i < 8; i++) a[i] = 100 + i;
#pragma omp target update to(a[0:4:2])
#pragma omp target map(from: out)
  for (int i = 0; i < 8; i++) out[i] = a[i];
#pragma omp target exit data map(delete: a)
  printf("dev=[%d,%d,%d,%d,%d,%d,%d,%d]\n", out[0], out[1], out[2], out[3], out[4], out[5], out[6], out[7]);
  for (int i = 0; i < 8; i++) if (out[i] != (i % 2 ? i : 100 + i)) return 1;
  return 0;
}
