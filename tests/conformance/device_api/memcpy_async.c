// RULE: omp_target_memcpy_async without depend objects returns 0 and the copy is complete after taskwait
// EXPECT: rc=0 back[0]=3 back[63]=66
#include <omp.h>
#include <stdio.h>

int main(void) {
  int host = omp_get_initial_device(), dev = 0;
  int a[64], back[64];
  for (int i = 0; i < 64; i++) { a[i] = i; back[i] = 0; }
  int *d = (int *)omp_target_alloc(sizeof a, dev);
  int rc = omp_target_memcpy_async(d, a, sizeof a, 0, 0, dev, host, 0, NULL);
#pragma omp taskwait
#pragma omp target is_device_ptr(d) device(dev)
  for (int i = 0; i < 64; i++) d[i] += 3;
  rc |= omp_target_memcpy_async(back, d, sizeof back, 0, 0, host, dev, 0, NULL);
#pragma omp taskwait
  omp_target_free(d, dev);
  printf("rc=%d back[0]=%d back[63]=%d\n", rc, back[0], back[63]);
  for (int i = 0; i < 64; i++) if (back[i] != i + 3) return 1;
  return rc;
}
