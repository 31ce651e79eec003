// RULE: a dynamic reference from enter data is dropped by delete inside an ompx_hold region, so the data goes away when the hold ends
// EXPECT: inside=1 end=0 y=1
#include <omp.h>
#include <cstdio>

int main() {
  int y = 1, d = omp_get_default_device();
#pragma omp target enter data map(to: y)
  int inside;
#pragma omp target data map(ompx_hold, tofrom: y)
  {
#pragma omp target exit data map(delete: y)
    inside = omp_target_is_present(&y, d);
#pragma omp target
    y = 5; /* implicit firstprivate: the device copy is unchanged */
  }
  int end = omp_target_is_present(&y, d);
  std::printf("inside=%d end=%d y=%d\n", inside, end, y);
  return !(inside == 1 && end == 0 && y == 1);
}
