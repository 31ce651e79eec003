// RULE: omp_target_alloc of 0 bytes returns NULL, and omp_target_free(NULL) is a no-op
// EXPECT: zero=null x=5
#include <omp.h>
#include <stdio.h>

int main(void) {
  void *p = omp_target_alloc(0, 0);
  omp_target_free(NULL, 0);
  int x = 4;
#pragma omp target map(tofrom: x) device(0)
  x += 1;
  printf("zero=%s x=%d\n", p ? "nonnull" : "null", x);
  return !(p == NULL && x == 5);
}
