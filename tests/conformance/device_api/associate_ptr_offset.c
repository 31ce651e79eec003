// RULE: omp_target_associate_ptr with a device offset maps the host array at device_ptr + offset
// EXPECT: d[0]=-1 d[4]=10 d[7]=13
#include <omp.h>
#include <stdio.h>

int main(void) {
  int host = omp_get_initial_device(), dev = 0;
  int a[4] = {10, 11, 12, 13};
  int *d = (int *)omp_target_alloc(8 * sizeof(int), dev);
  omp_target_memset(d, 0xff, 8 * sizeof(int), dev);
  if (omp_target_associate_ptr(a, d, sizeof a, 4 * sizeof(int), dev)) return 1;
  // target update copies into the associated storage at d + 4
#pragma omp target update to(a) device(dev)
  int back[8];
  omp_target_memcpy(back, d, sizeof back, 0, 0, host, dev);
  omp_target_disassociate_ptr(a, dev);
  omp_target_free(d, dev);
  printf("d[0]=%d d[4]=%d d[7]=%d\n", back[0], back[4], back[7]);
  return !(back[0] == -1 && back[3] == -1 && back[4] == 10 && back[7] == 13);
}
