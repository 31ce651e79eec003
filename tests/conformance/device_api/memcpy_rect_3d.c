// RULE: omp_target_memcpy_rect copies a 3-D sub-volume into a differently shaped device array at other offsets
// EXPECT: rc=0 sum=2004 corner=111
#include <omp.h>
#include <stdio.h>

int main(void) {
  int host = omp_get_initial_device(), dev = 0;
  int a[3][4][5];
  for (int i = 0; i < 3; i++) for (int j = 0; j < 4; j++) for (int k = 0; k < 5; k++) a[i][j][k] = 100 * i + 10 * j + k;
  // device array is 2x3x4, zeroed; copy a[1..2][1..2][1..3] into d[0..1][1..2][0..2]
  int *d = (int *)omp_target_alloc(2 * 3 * 4 * sizeof(int), dev);
#pragma omp target is_device_ptr(d) device(dev)
  for (int i = 0; i < 24; i++) d[i] = 0;
  size_t vol[3] = {2, 2, 3}, soff[3] = {1, 1, 1}, doff[3] = {0, 1, 0};
  size_t sdims[3] = {3, 4, 5}, ddims[3] = {2, 3, 4};
  int rc = omp_target_memcpy_rect(d, a, sizeof(int), 3, vol, doff, soff, ddims, sdims, dev, host);
  int sum = 0, corner = 0, bad = 0;
#pragma omp target is_device_ptr(d) map(tofrom: sum, corner, bad) device(dev)
  {
    for (int i = 0; i < 2; i++)
      for (int j = 0; j < 3; j++)
        for (int k = 0; k < 4; k++) {
          int v = d[(i * 3 + j) * 4 + k];
          int want = (j >= 1 && k <= 2) ? 100 * (i + 1) + 10 * j + (k + 1) : 0;
          if (v != want) bad = 1;
          sum += v;
        }
    corner = d[(0 * 3 + 1) * 4 + 0];
  }
  omp_target_free(d, dev);
  printf("rc=%d sum=%d corner=%d\n", rc, sum, corner);
  return rc || bad || corner != 111;
}
