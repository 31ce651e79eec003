// RULE: four target nowait regions chained by depend, then taskwait, then reductions, declare-target globals and is_device_ptr kernels all complete (no lost or stuck deferred region)
// EXPECT: sum=523776 b0=4 c=2046 ok=1
// FLAGS: -O2
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#define N 1024
#pragma omp declare target
int scale = 2;
int counter[1];
#pragma omp end declare target

int main(void) {
  int a[N], b[N];
  for (int i = 0; i < N; i++) { a[i] = i; b[i] = 0; }
  long sum = 0;
#pragma omp target teams distribute parallel for reduction(+: sum) map(to: a)
  for (int i = 0; i < N; i++) sum += a[i];

#pragma omp target enter data map(to: b)
  for (int r = 0; r < 4; r++) {
#pragma omp target teams distribute parallel for nowait depend(inout: b[0]) map(alloc: b)
    for (int i = 0; i < N; i++) b[i] += 1;
  }
#pragma omp taskwait
#pragma omp target exit data map(from: b)

  int dev = omp_get_default_device();
  int *p = omp_target_alloc(N * sizeof(int), dev);
#pragma omp target teams distribute parallel for is_device_ptr(p)
  for (int i = 0; i < N; i++) p[i] = i * scale;
  long c = 0;
#pragma omp target teams distribute parallel for reduction(max: c) is_device_ptr(p)
  for (int i = 0; i < N; i++) c = p[i] > c ? p[i] : c;
  omp_target_free(p, dev);
  int ok = 1;
  for (int i = 0; i < N; i++) ok &= b[i] == 4;
  printf("sum=%ld b0=%d c=%ld ok=%d\n", sum, b[0], c, ok);
  return !(ok && sum == 523776 && c == 2046);
}
