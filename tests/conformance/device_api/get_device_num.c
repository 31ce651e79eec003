// RULE: with the host-offload plugin, omp_get_device_num returns the initial device number on the host and also inside target regions on devices 0 and 1 (kernels run host code)
// NOT-ON-MPI: a host device's own behaviour: the kernel runs in the device process, whose initial device it reports
// EXPECT: host=4 dev0=4 dev1=4 ran=2
#include <omp.h>
#include <stdio.h>

int main(void) {
  int h = omp_get_device_num(), d0 = -1, d1 = -1, ran = 0;
#pragma omp target map(from: d0) map(tofrom: ran) device(0)
  { d0 = omp_get_device_num(); ran++; }
#pragma omp target map(from: d1) map(tofrom: ran) device(1)
  { d1 = omp_get_device_num(); ran++; }
  printf("host=%d dev0=%d dev1=%d ran=%d\n", h, d0, d1, ran);
  return !(h == omp_get_initial_device() && d0 == 4 && d1 == 4 && ran == 2);
}
// NOT-ON-GPU: on the host plugin a kernel runs host code, which reports the initial device; a GPU kernel reports its own device
