// RULE: omp_get_mapped_ptr gives the device address of a mapped host address (offset included), NULL when unmapped, the host pointer for the initial device
// EXPECT: unmapped=null mapped=ok offset=ok host=same value=42
#include <omp.h>
#include <stdio.h>

int main(void) {
  int a[8] = {0};
  void *u = omp_get_mapped_ptr(a, 0);
#pragma omp target enter data map(to: a) device(0)
  int *m = (int *)omp_get_mapped_ptr(a, 0);
  int *m3 = (int *)omp_get_mapped_ptr(&a[3], 0);
  int value = 0;
  // the device address is what the kernel sees for a
#pragma omp target is_device_ptr(m) map(from: value) device(0)
  { m[3] = 42; value = m[3]; }
#pragma omp target update from(a[3:1]) device(0)
  void *h = omp_get_mapped_ptr(a, omp_get_initial_device());
  int ok = m != NULL && (void *)m != (void *)a && m3 == m + 3;
#pragma omp target exit data map(release: a) device(0)
  printf("unmapped=%s mapped=%s offset=%s host=%s value=%d\n", u ? "nonnull" : "null", m ? "ok" : "null",
         m3 == m + 3 ? "ok" : "bad", h == (void *)a ? "same" : "other", a[3]);
  return !(u == NULL && ok && h == (void *)a && value == 42 && a[3] == 42);
}
