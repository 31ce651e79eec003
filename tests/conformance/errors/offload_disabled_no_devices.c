// RULE: with OMP_TARGET_OFFLOAD=disabled there are no devices: the host is the initial and default device, so data is "present" there
// LLVM-DIFFERS: LLVM 19 still reports its 4 devices while offloading is disabled and answers 0 for the host data; OpenMP says a disabled program behaves "as if the only device is the host device", which is what we do
// ENV: OMP_TARGET_OFFLOAD=disabled
// EXPECT: devices=0 initial=0 present=1 ran_on_host=1
// REJECT-STDERR: omptarget
#include <omp.h>
#include <stdio.h>

int main(void) {
  int x = 1, on_host = 0;
#pragma omp target enter data map(to: x)
#pragma omp target map(from: on_host)
  on_host = omp_is_initial_device();
  int devices = omp_get_num_devices(), initial = omp_get_initial_device();
  int present = omp_target_is_present(&x, omp_get_default_device());
  printf("devices=%d initial=%d present=%d ran_on_host=%d\n", devices, initial, present, on_host);
  return !(devices == 0 && initial == 0 && present == 1 && on_host == 1);
}
