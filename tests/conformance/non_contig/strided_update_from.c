// RULE: target update from(a[0:3:3]) copies back only elements 0, 3 and 6; the other host elements are unchanged
// EXPECT: host=[-10,11,12,-13,14,15,-16,17,18]
// clang-19 drops the stride of a one-dimensional section (it emits a contiguous update of
// a[0:3]), so only clang-22 emits the non-contiguous descriptor; descriptor_1d.c pins the
// same transfer against LLVM 19's runtime through the entry point.
// COMPILERS: clang22
#include <stdio.h>

int main(void) {
  int a[9];
  for (int i = 0; i < 9; i++) a[i] = 10 + i;
#pragma omp target enter data map(to: a)
#pragma omp target
  for (int i = 0; i < 9; i++) a[i] = -a[i];
#pragma omp target update from(a[0:3:3])
#pragma omp target exit data map(delete: a)
  printf("host=[%d,%d,%d,%d,%d,%d,%d,%d,%d]\n", a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8]);
  for (int i = 0; i < 9; i++) if (a[i] != ((i % 3 == 0) ? -(10 + i) : 10 + i)) return 1;
  return 0;
}
