// RULE: omp_target_memcpy returns non-zero for a NULL pointer and 0 (nothing to do) for zero length
// EXPECT: null=fail zero=ok x=3
// EXPECT-STDERR: Call to omp_target_memcpy with invalid arguments
#include <omp.h>
#include <stdio.h>

int main(void) {
  int host = omp_get_initial_device();
  int v = 1, x = 2;
  int *d = (int *)omp_target_alloc(sizeof(int), 0);
  int rnull = omp_target_memcpy(NULL, &v, sizeof v, 0, 0, 0, host);
  int rzero = omp_target_memcpy(d, &v, 0, 0, 0, 0, host);
#pragma omp target map(tofrom: x)
  x += 1;
  omp_target_free(d, 0);
  printf("null=%s zero=%s x=%d\n", rnull ? "fail" : "ok", rzero ? "fail" : "ok", x);
  return !(rnull != 0 && rzero == 0 && x == 3);
}
