// RULE: target update and exit data on a section larger than the mapping silently do nothing (no copy, no unmapping)
// EXPECT: dev=0 host=0 present=1 final=9
// REJECT-STDERR: omptarget
#include <omp.h>
#include <stdio.h>

int main(void) {
  int a[8] = {0}, r = -1, d = omp_get_default_device();
#pragma omp target enter data map(to: a[0:4])
  a[0] = 5;
#pragma omp target update to(a[0:8])
#pragma omp target map(tofrom: a[0:4]) map(from: r)
  {
    r = a[0];
    a[1] = 9;
  }
  a[0] = 0;
#pragma omp target exit data map(from: a[0:8])
  int present = omp_target_is_present(a, d), host = a[1];
#pragma omp target exit data map(from: a[0:4])
  printf("dev=%d host=%d present=%d final=%d\n", r, host, present, a[1]);
  return !(r == 0 && host == 0 && present == 1 && a[1] == 9);
}
