// RULE: exit data handles its map entries last to first; a from copies back only if it drops the last reference, so delete-then-from copies and from-then-delete does not
// EXPECT: delete,from: y=5 present=0
// EXPECT: from,delete: x=1 present=0
#include <omp.h>
#include <stdio.h>

int main(void) {
  int d = omp_get_default_device(), x = 1, y = 1;
#pragma omp target enter data map(to: x, y)
#pragma omp target map(tofrom: x, y)
  {
    x = 5;
    y = 5;
  }
#pragma omp target exit data map(delete: y) map(from: y)
  int py = omp_target_is_present(&y, d);
  printf("delete,from: y=%d present=%d\n", y, py);
#pragma omp target exit data map(from: x) map(delete: x)
  int px = omp_target_is_present(&x, d);
  printf("from,delete: x=%d present=%d\n", x, px);
  return !(y == 5 && py == 0 && x == 1 && px == 0);
}
