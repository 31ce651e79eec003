// RULE: a target nowait region has finished, and its from-map copied back, after taskwait
// EXPECT: a[0]=1 a[255]=256
#include <stdio.h>

int main(void) {
  int a[256];
  for (int i = 0; i < 256; i++) a[i] = i;
#pragma omp target map(tofrom: a) nowait
  for (int i = 0; i < 256; i++) a[i] += 1;
#pragma omp taskwait
  printf("a[0]=%d a[255]=%d\n", a[0], a[255]);
  for (int i = 0; i < 256; i++) if (a[i] != i + 1) return 1;
  return 0;
}
