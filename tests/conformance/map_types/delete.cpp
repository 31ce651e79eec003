// RULE: exit data map(delete:) removes the mapping without copying the device data back
// EXPECT: present=0 v[0]=1 v[3]=4
#include <omp.h>
#include <cstdio>

int main() {
  int v[4] = {1, 2, 3, 4};
  int d = omp_get_default_device();
#pragma omp target enter data map(to: v)
#pragma omp target map(tofrom: v)
  for (int i = 0; i < 4; i++) v[i] *= 10;
#pragma omp target exit data map(delete: v)
  int present = omp_target_is_present(v, d);
  std::printf("present=%d v[0]=%d v[3]=%d\n", present, v[0], v[3]);
  return !(present == 0 && v[0] == 1 && v[3] == 4);
}
