// RULE: with OMP_TARGET_OFFLOAD=disabled a target region runs on the host and the present modifier is not checked
// ENV: OMP_TARGET_OFFLOAD=disabled
// EXPECT: initial=1 x=2 a[0]=5
// REJECT-STDERR: omptarget
#include <omp.h>
#include <stdio.h>

int main(void) {
  int x = 1, a[4] = {0}, initial = -1;
#pragma omp target enter data map(present, to: a)
#pragma omp target map(present, tofrom: x) map(from: initial)
  {
    initial = omp_is_initial_device();
    x += 1;
  }
#pragma omp target update from(present: a)
#pragma omp target map(to: a)
  a[0] = 5; /* host memory: the to map does not isolate it */
  printf("initial=%d x=%d a[0]=%d\n", initial, x, a[0]);
  return !(initial == 1 && x == 2 && a[0] == 5);
}
