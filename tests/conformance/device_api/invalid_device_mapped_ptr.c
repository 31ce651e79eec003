// RULE: omp_get_mapped_ptr with a device number past the last device returns NULL without an error
// EXPECT: past=null x=3
// REJECT-STDERR: fatal
#include <omp.h>
#include <stdio.h>

int main(void) {
  int x = 2;
#pragma omp target enter data map(to: x)
  void *p = omp_get_mapped_ptr(&x, 5);
  void *q = omp_get_mapped_ptr(&x, 0);
#pragma omp target map(tofrom: x)
  x += 1;
#pragma omp target exit data map(from: x)
  printf("past=%s x=%d\n", p ? "nonnull" : "null", x);
  return !(p == NULL && q != NULL && x == 3);
}
