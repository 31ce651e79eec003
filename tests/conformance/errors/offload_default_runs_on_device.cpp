// RULE: under the default policy with a device available, target runs on the device (not the initial device) on separate memory
// ENV: OMP_TARGET_OFFLOAD=default
// EXPECT: initial=0 x=1 initial_device=4
#include <omp.h>
#include <cstdio>

int main() {
  int x = 1, initial = -1;
#pragma omp target map(to: x) map(from: initial)
  {
    initial = omp_is_initial_device();
    x = 5;
  }
  int id = omp_get_initial_device();
  std::printf("initial=%d x=%d initial_device=%d\n", initial, x, id);
  return !(initial == 0 && x == 1 && id == 4);
}
// NEEDS: 4 devices
