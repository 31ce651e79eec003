// Two translation units, each with target regions and declare target data.
// EXPECT: two units ok
#include <stdio.h>
int scale_on_device(int *v, int n, int factor);
#pragma omp declare target
extern int shared_offset;
#pragma omp end declare target
int main(void) {
  int v[64];
  for (int i = 0; i < 64; i++) v[i] = i;
  int total = scale_on_device(v, 64, 3);
  int local = 0;
#pragma omp target map(from : local)
  local = shared_offset;
  int ok = total == 3 * 2016 + 64 * 5 && local == 5 && v[10] == 35;
  printf(ok ? "two units ok\n" : "FAIL total=%d local=%d v10=%d\n", total, local, v[10]);
  return !ok;
}
