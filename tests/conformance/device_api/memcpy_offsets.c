// RULE: omp_target_memcpy applies dst_offset and src_offset in bytes on both sides
// EXPECT: out=0,0,12,13,14,0
#include <omp.h>
#include <stdio.h>

int main(void) {
  int host = omp_get_initial_device(), dev = 0;
  int a[6] = {10, 11, 12, 13, 14, 15}, out[6] = {0};
  int *d = (int *)omp_target_alloc(sizeof a, dev);
#pragma omp target is_device_ptr(d) device(dev)
  for (int i = 0; i < 6; i++) d[i] = 0;
  // copy a[2..4] into d[2..4]
  if (omp_target_memcpy(d, a, 3 * sizeof(int), 2 * sizeof(int), 2 * sizeof(int), dev, host)) return 1;
  if (omp_target_memcpy(out, d, sizeof out, 0, 0, host, dev)) return 1;
  omp_target_free(d, dev);
  printf("out=%d,%d,%d,%d,%d,%d\n", out[0], out[1], out[2], out[3], out[4], out[5]);
  return !(out[0] == 0 && out[1] == 0 && out[2] == 12 && out[3] == 13 && out[4] == 14 && out[5] == 0);
}
