// RULE: ompx_hold keeps data mapped until its region ends: exit data with delete or release leaves it present
// EXPECT: after_delete=1 after_release=1 x_inside=1
// EXPECT: end_present=0 x=11
#include <omp.h>
#include <stdio.h>

int main(void) {
  int x = 1, d = omp_get_default_device(), ad, ar, inside;
#pragma omp target data map(ompx_hold, tofrom: x)
  {
#pragma omp target exit data map(delete: x)
    ad = omp_target_is_present(&x, d);
#pragma omp target exit data map(release: x)
    ar = omp_target_is_present(&x, d);
#pragma omp target map(tofrom: x)
    x += 10;
    inside = x; /* still held: the inner tofrom did not copy back */
  }
  int ep = omp_target_is_present(&x, d);
  printf("after_delete=%d after_release=%d x_inside=%d\n", ad, ar, inside);
  printf("end_present=%d x=%d\n", ep, x);
  return !(ad == 1 && ar == 1 && inside == 1 && ep == 0 && x == 11);
}
