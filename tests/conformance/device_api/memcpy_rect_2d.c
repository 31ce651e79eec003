// RULE: omp_target_memcpy_rect copies a 2-D sub-rectangle host to device and back, at the given offsets
// EXPECT: rc=0,0 out[1][2]=12 out[2][4]=24 out[0][0]=-1
#include <omp.h>
#include <stdio.h>

int main(void) {
  int host = omp_get_initial_device(), dev = 0;
  int a[4][5], out[3][6];
  for (int i = 0; i < 4; i++) for (int j = 0; j < 5; j++) a[i][j] = 10 * i + j;
  for (int i = 0; i < 3; i++) for (int j = 0; j < 6; j++) out[i][j] = -1;
  int *d = (int *)omp_target_alloc(sizeof a, dev);
  // the 2x3 block a[1..2][2..4] goes to the same place on the device
  size_t vol[2] = {2, 3}, off[2] = {1, 2}, dims[2] = {4, 5};
  int r1 = omp_target_memcpy_rect(d, a, sizeof(int), 2, vol, off, off, dims, dims, dev, host);
  // and comes back into out[1..2][2..4] (a 3x6 array)
  size_t odims[2] = {3, 6};
  int r2 = omp_target_memcpy_rect(out, d, sizeof(int), 2, vol, off, off, odims, dims, host, dev);
  omp_target_free(d, dev);
  printf("rc=%d,%d out[1][2]=%d out[2][4]=%d out[0][0]=%d\n", r1, r2, out[1][2], out[2][4], out[0][0]);
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 6; j++) {
      int want = (i >= 1 && j >= 2 && j <= 4) ? 10 * i + j : -1;
      if (out[i][j] != want) return 1;
    }
  return r1 || r2;
}
