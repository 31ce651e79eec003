// RULE: exit data map(delete:) removes the mapping whatever its reference count, without copying back
// EXPECT: before=1 after=0 a[0]=1
#include <omp.h>
#include <cstdio>

int main() {
  int a[4] = {1, 2, 3, 4};
  int d = omp_get_default_device();
  for (int k = 0; k < 3; k++) {
#pragma omp target enter data map(to: a)
  }
#pragma omp target
  a[0] = 100;
  int before = omp_target_is_present(a, d);
#pragma omp target exit data map(delete: a)
  int after = omp_target_is_present(a, d);
  std::printf("before=%d after=%d a[0]=%d\n", before, after, a[0]);
  return !(before == 1 && after == 0 && a[0] == 1);
}
