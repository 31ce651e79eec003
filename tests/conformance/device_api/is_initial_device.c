// RULE: omp_is_initial_device is false inside a target region on the host-offload device and true on the host
// EXPECT: host=1 target=0
#include <omp.h>
#include <stdio.h>

int main(void) {
  int h = omp_is_initial_device(), t = -1;
#pragma omp target map(from: t)
  t = omp_is_initial_device();
  printf("host=%d target=%d\n", h, t);
  return !(h == 1 && t == 0);
}
