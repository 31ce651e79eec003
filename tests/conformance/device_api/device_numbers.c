// RULE: the host plugin offers 4 devices and omp_get_initial_device() equals omp_get_num_devices()
// EXPECT: num=4 initial=4 default=0
#include <omp.h>
#include <stdio.h>

int main(void) {
  int n = omp_get_num_devices(), init = omp_get_initial_device(), def = omp_get_default_device();
  // every device runs a kernel
  int ok = 0;
  for (int dev = 0; dev < n; dev++) {
    int v = dev;
#pragma omp target map(tofrom: v) device(dev)
    v += 10;
    ok += v == dev + 10;
  }
  printf("num=%d initial=%d default=%d\n", n, init, def);
  return !(n == 4 && init == 4 && def == 0 && ok == 4);
}
// NOT-ON-GPU: it checks the host plugin's own four devices
