// RULE: a declare target global is mapped for the whole program: exit data delete does not remove it, target update moves its data both ways
// EXPECT: present=1 host=1 updated=2 device=10
#include <omp.h>
#include <stdio.h>

int g = 1;
#pragma omp declare target(g)

int main(void) {
  int d = omp_get_default_device(), r = 0;
#pragma omp target
  g += 1; /* device copy only */
#pragma omp target exit data map(delete: g)
  int present = omp_target_is_present(&g, d);
  int host = g;
#pragma omp target update from(g)
  int updated = g;
  g = 10;
#pragma omp target update to(g)
#pragma omp target map(from: r)
  r = g;
  printf("present=%d host=%d updated=%d device=%d\n", present, host, updated, r);
  return !(present == 1 && host == 1 && updated == 2 && r == 10);
}
