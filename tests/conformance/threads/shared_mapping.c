// RULE: an array mapped once with enter data is used by kernels from 4 threads, each updating its own quarter of the one device copy
// EXPECT: a[0]=100 a[127]=327 a[255]=655
#include <omp.h>
#include <stdio.h>

int main(void) {
  int a[256];
  for (int i = 0; i < 256; i++) a[i] = i;
#pragma omp target enter data map(to: a)
#pragma omp parallel num_threads(4)
  {
    int t = omp_get_thread_num();
    for (int rep = 0; rep < (t + 1); rep++) {
#pragma omp target map(to: t)
      for (int i = 64 * t; i < 64 * (t + 1); i++) a[i] += 100;
    }
  }
#pragma omp target exit data map(from: a)
  printf("a[0]=%d a[127]=%d a[255]=%d\n", a[0], a[127], a[255]);
  for (int i = 0; i < 256; i++) if (a[i] != i + 100 * (i / 64 + 1)) return 1;
  return 0;
}
