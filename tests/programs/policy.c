// Reports where a region ran, for OMP_TARGET_OFFLOAD tests.
#include <omp.h>
#include <stdio.h>
int main(void) {
  int initial = -1;
#pragma omp target map(from : initial)
  initial = omp_is_initial_device();
  printf("devices %d ran_on_host %d\n", omp_get_num_devices(), initial);
  return 0;
}
