// A kernel to record (LIBOMPTARGET_RECORD=1) and replay with llvm-omp-kernel-replay: its
// inputs are an array and a scalar, its output the array.
// EXPECT: 1 127 190
#include <stdio.h>

int main(void) {
  int n = 64, scale = 2, a[64];
  for (int i = 0; i < n; i++)
    a[i] = i;
#pragma omp target teams distribute parallel for map(tofrom : a[0 : n]) firstprivate(scale)
  for (int i = 0; i < n; i++)
    a[i] = a[i] * scale + 1;
  printf("%d %d %d\n", a[0], a[63], a[0] + a[63] + n - 2);
  return 0;
}
