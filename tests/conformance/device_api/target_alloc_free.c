// RULE: omp_target_alloc returns device memory that memcpy and an is_device_ptr kernel use, and omp_target_free releases it
// EXPECT: alloc=ok b[0]=1 b[15]=31
#include <omp.h>
#include <stdio.h>

int main(void) {
  int dev = omp_get_default_device();
  int a[16], b[16];
  for (int i = 0; i < 16; i++) { a[i] = i; b[i] = -1; }
  int *d = (int *)omp_target_alloc(sizeof a, dev);
  if (!d) { printf("alloc=null\n"); return 1; }
  if (omp_target_memcpy(d, a, sizeof a, 0, 0, dev, omp_get_initial_device())) return 1;
#pragma omp target is_device_ptr(d) device(dev)
  for (int i = 0; i < 16; i++) d[i] = 2 * d[i] + 1;
  // the host copy is untouched: device memory is separate
  if (a[3] != 3) return 1;
  if (omp_target_memcpy(b, d, sizeof b, 0, 0, omp_get_initial_device(), dev)) return 1;
  omp_target_free(d, dev);
  printf("alloc=ok b[0]=%d b[15]=%d\n", b[0], b[15]);
  for (int i = 0; i < 16; i++) if (b[i] != 2 * i + 1) return 1;
  return 0;
}
