// RULE: with OMP_TARGET_OFFLOAD=disabled target regions run on the host on host memory, and impossible maps are not attempted
// ENV: OMP_TARGET_OFFLOAD=disabled
// EXPECT: initial=1 x=5 big=1
// REJECT-STDERR: omptarget
#include <omp.h>
#include <stdio.h>

int main(void) {
  int x = 1, initial = -1, big = 0, small[2] = {0};
  int *p = small;
#pragma omp target map(to: x) map(from: initial)
  {
    initial = omp_is_initial_device();
    x = 5; /* map(to:) but host memory: the write is visible */
  }
#pragma omp target map(alloc: p[0:(1L << 46)]) map(tofrom: big)
  big = 1;
#pragma omp target enter data map(to: x)
  printf("initial=%d x=%d big=%d\n", initial, x, big);
  return !(initial == 1 && x == 5 && big == 1);
}
