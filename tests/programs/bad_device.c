// Invalid device numbers: omp_target_alloc answers NULL; a target region is a fatal error.
#include <omp.h>
#include <stdio.h>
int main(void) {
  void *p = omp_target_alloc(64, 99);
  printf("alloc on device 99: %s\n", p == NULL ? "NULL" : "non-NULL");
  int rc = omp_target_memcpy(&p, &p, sizeof p, 0, 0, 99, omp_get_initial_device());
  printf("memcpy to device 99: %d\n", rc);
  fflush(stdout);
  int x = 1;
#pragma omp target device(99) map(tofrom : x)
  x++;
  printf("not reached %d\n", x);
  return 0;
}
