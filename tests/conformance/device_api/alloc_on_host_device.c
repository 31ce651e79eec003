// RULE: omp_target_alloc and omp_target_memcpy with the initial device number work on plain host memory
// EXPECT: host=7
#include <omp.h>
#include <stdio.h>

int main(void) {
  int host = omp_get_initial_device();
  int *p = (int *)omp_target_alloc(4 * sizeof(int), host);
  if (!p) return 1;
  int src[4] = {4, 5, 6, 7};
  if (omp_target_memcpy(p, src, sizeof src, 0, 0, host, host)) return 1;
  // memory of the initial device is ordinary host memory
  int v = p[3];
  // and a kernel on device 0 can take it as a copy
  int r = 0;
#pragma omp target map(to: v) map(from: r) device(0)
  r = v;
  omp_target_free(p, host);
  printf("host=%d\n", r);
  return r != 7;
}
